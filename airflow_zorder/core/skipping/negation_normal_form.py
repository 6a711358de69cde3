"""Negation normal form: NOT pushed down to the atoms, which is exact in SQL's three-valued logic.

A row satisfies ``NOT p`` iff ``p`` is FALSE, and a NULL makes every comparison UNKNOWN, so ``NOT c < v`` is
``c >= v`` (De Morgan for AND/OR; ``NOT c IN`` is an AND of ``!=``). The evaluator then judges each atom,
negated or not, on its own.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from airflow_zorder.core.skipping.predicates import And, Compare, Const, Expr, In, IsNull, Like, Not, Opaque, Or

__all__ = ["Atom", "negation_normal_form"]


@dataclass(frozen=True)
class Atom:
    expr: Expr  # Compare, In, IsNull or Like
    negated: bool

    def to_sql(self) -> str:
        return f"NOT ({self.expr.to_sql()})" if self.negated else self.expr.to_sql()


def negation_normal_form(e: Expr, neg: bool = False) -> Any:
    """Push NOT down to the atoms (exact in three-valued logic)."""
    if isinstance(e, Not):
        return negation_normal_form(e.child, not neg)
    if isinstance(e, And):
        kids = tuple(negation_normal_form(c, neg) for c in e.children)
        return Or(kids) if neg else And(kids)
    if isinstance(e, Or):
        kids = tuple(negation_normal_form(c, neg) for c in e.children)
        return And(kids) if neg else Or(kids)
    if isinstance(e, Const):
        return Const(None) if e.value is None else Const(e.value != neg)
    if isinstance(e, Opaque):
        return e
    if isinstance(e, (Compare, In, IsNull, Like)):
        return Atom(e, neg)
    raise TypeError(f"not a predicate: {e!r}")
