"""The predicate language of the pruning evaluator: expressions built in Python or read from SQL, and their SQL text.

::

    from airflow_zorder.core.skipping.predicates import col
    p = (col("a") == 5) & (col("b") < "x") | ~col("c").isin([1, 2])
    p = col("s").startswith("ab") & col("d").between(date(2024, 1, 1), date(2024, 1, 31))
    p = col("x").is_null() | col("x").is_not_null() & col("s").like("ab%c")

Atoms: :class:`Compare`, :class:`In`, :class:`IsNull`, :class:`Like`; :class:`Const` (TRUE, FALSE, NULL),
:class:`Not`, :class:`And`, :class:`Or`; :class:`Opaque` for what cannot be translated (never prunes).
:meth:`Expr.to_sql` writes the Spark/DuckDB text that :mod:`~airflow_zorder.core.skipping.predicate_sql` reads back.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Iterable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import numpy as np

from airflow_zorder.core.errors import InvalidInputError
from airflow_zorder.core.skipping.sql_dialect import quote_identifier

__all__ = [
    "COMPARISONS",
    "NEGATED_COMPARISON",
    "MIRRORED_COMPARISON",
    "Expr",
    "Column",
    "col",
    "Const",
    "Compare",
    "In",
    "IsNull",
    "Like",
    "Not",
    "And",
    "Or",
    "Opaque",
    "as_expr",
    "sql_literal",
    "like_prefix",
]

COMPARISONS = ("=", "!=", "<", "<=", ">", ">=")
#: ``NOT (c op v)`` as ``c NEGATED_COMPARISON[op] v`` (exact in three-valued logic)
NEGATED_COMPARISON = {"=": "!=", "!=": "=", "<": ">=", ">=": "<", ">": "<=", "<=": ">"}
#: ``v op c`` as ``c MIRRORED_COMPARISON[op] v``
MIRRORED_COMPARISON = {"=": "=", "!=": "!=", "<": ">", ">": "<", "<=": ">=", ">=": "<="}


class Expr:
    """Base of predicate expressions: combine with ``&``, ``|``, ``~``."""

    def __and__(self, other: Expr) -> Expr:
        return And((self, as_expr(other)))

    def __rand__(self, other: Expr) -> Expr:
        return And((as_expr(other), self))

    def __or__(self, other: Expr) -> Expr:
        return Or((self, as_expr(other)))

    def __ror__(self, other: Expr) -> Expr:
        return Or((as_expr(other), self))

    def __invert__(self) -> Expr:
        return Not(self)

    def __bool__(self) -> bool:
        raise TypeError("predicates have no truth value: combine them with &, | and ~ (not and/or/not)")

    def to_sql(self) -> str:  # pragma: no cover - overridden
        raise NotImplementedError

    def __str__(self) -> str:
        return self.to_sql()


def as_expr(x: Any) -> Expr:
    if isinstance(x, Expr):
        return x
    if isinstance(x, bool) or x is None:
        return Const(x)
    raise TypeError(f"not a predicate: {x!r}")


def sql_literal(v: Any) -> str:
    """SQL text of a Python literal (Spark/DuckDB syntax, which :mod:`~airflow_zorder.core.skipping.predicate_sql` reads)."""
    if v is None:
        return "NULL"
    if isinstance(v, bool) or isinstance(v, np.bool_):
        return "TRUE" if v else "FALSE"
    if isinstance(v, (int, np.integer)):
        return str(int(v))
    if isinstance(v, (float, np.floating)):
        f = float(v)
        if math.isnan(f):
            return "CAST('NaN' AS DOUBLE)"
        if math.isinf(f):
            return "CAST('Infinity' AS DOUBLE)" if f > 0 else "CAST('-Infinity' AS DOUBLE)"
        r = repr(f)
        return r if ("e" in r or "E" in r) else r + "e0"
    if isinstance(v, Decimal):
        return format(v, "f")
    if isinstance(v, dt.datetime):
        return f"TIMESTAMP '{v.isoformat(sep=' ')}'"
    if isinstance(v, dt.date):
        return f"DATE '{v.isoformat()}'"
    if isinstance(v, (bytes, bytearray)):
        return f"X'{bytes(v).hex()}'"
    if isinstance(v, str):
        return "'" + v.replace("'", "''") + "'"
    raise TypeError(f"no SQL literal for {type(v).__name__}")


@dataclass(frozen=True, eq=True)
class Const(Expr):
    """TRUE, FALSE or UNKNOWN (``None``, SQL NULL as a predicate)."""

    value: bool | None

    def to_sql(self) -> str:
        return sql_literal(self.value)


@dataclass(frozen=True, eq=True)
class Compare(Expr):
    column: str
    op: str
    value: Any

    def __post_init__(self) -> None:
        if self.op not in COMPARISONS:
            raise InvalidInputError(f"unknown comparison {self.op!r}")

    def to_sql(self) -> str:
        return f"{quote_identifier(self.column)} {self.op} {sql_literal(self.value)}"


@dataclass(frozen=True, eq=True)
class In(Expr):
    column: str
    values: tuple

    def to_sql(self) -> str:
        if not self.values:
            return "FALSE"
        return f"{quote_identifier(self.column)} IN ({', '.join(sql_literal(v) for v in self.values)})"


@dataclass(frozen=True, eq=True)
class IsNull(Expr):
    column: str

    def to_sql(self) -> str:
        return f"{quote_identifier(self.column)} IS NULL"


@dataclass(frozen=True, eq=True)
class Like(Expr):
    column: str
    pattern: str
    escape: str | None = None

    def to_sql(self) -> str:
        esc = f" ESCAPE {sql_literal(self.escape)}" if self.escape is not None else ""
        return f"{quote_identifier(self.column)} LIKE {sql_literal(self.pattern)}{esc}"


@dataclass(frozen=True, eq=True)
class Not(Expr):
    child: Expr

    def to_sql(self) -> str:
        return f"NOT ({self.child.to_sql()})"


@dataclass(frozen=True, eq=True)
class And(Expr):
    children: tuple

    def to_sql(self) -> str:
        return "(" + " AND ".join(c.to_sql() for c in self.children) + ")" if self.children else "TRUE"


@dataclass(frozen=True, eq=True)
class Or(Expr):
    children: tuple

    def to_sql(self) -> str:
        return "(" + " OR ".join(c.to_sql() for c in self.children) + ")" if self.children else "FALSE"


@dataclass(frozen=True, eq=True)
class Opaque(Expr):
    """Something the evaluator cannot translate: it may match anything (never prunes), negated too."""

    text: str

    def to_sql(self) -> str:
        return f"({self.text})"


class Column:
    """``col("a")``: build predicates with Python operators and methods."""

    __hash__ = None  # type: ignore[assignment]

    def __init__(self, name: str) -> None:
        self.name = name

    def _cmp(self, op: str, v: Any) -> Expr:
        if isinstance(v, Column):
            return Opaque(f"{quote_identifier(self.name)} {op} {quote_identifier(v.name)}")
        return Compare(self.name, op, v)

    def __eq__(self, v: Any) -> Expr:  # type: ignore[override]
        return self._cmp("=", v)

    def __ne__(self, v: Any) -> Expr:  # type: ignore[override]
        return self._cmp("!=", v)

    def __lt__(self, v: Any) -> Expr:
        return self._cmp("<", v)

    def __le__(self, v: Any) -> Expr:
        return self._cmp("<=", v)

    def __gt__(self, v: Any) -> Expr:
        return self._cmp(">", v)

    def __ge__(self, v: Any) -> Expr:
        return self._cmp(">=", v)

    def isin(self, values: Iterable[Any]) -> Expr:
        return In(self.name, tuple(values))

    def notin(self, values: Iterable[Any]) -> Expr:
        return Not(In(self.name, tuple(values)))

    def is_null(self) -> Expr:
        return IsNull(self.name)

    def is_not_null(self) -> Expr:
        return Not(IsNull(self.name))

    def between(self, low: Any, high: Any) -> Expr:
        return And((Compare(self.name, ">=", low), Compare(self.name, "<=", high)))

    def like(self, pattern: str, escape: str | None = None) -> Expr:
        return Like(self.name, pattern, escape)

    def startswith(self, prefix: str) -> Expr:
        """``LIKE 'prefix%'`` (wildcards in ``prefix`` are taken literally)."""
        esc = "\\"
        pat = "".join(esc + ch if ch in "%_\\" else ch for ch in prefix) + "%"
        return Like(self.name, pat, esc)

    def __repr__(self) -> str:
        return f"col({self.name!r})"


def col(name: str) -> Column:
    return Column(name)


def like_prefix(pattern: str, escape: str | None = None) -> tuple[str, str]:
    """``(literal prefix, kind)`` of a LIKE pattern.

    ``kind``: ``"exact"`` (no wildcard: the pattern is one string),
    ``"prefix"`` (``prefix`` followed by a single ``%``), ``"other"`` (any
    other pattern; ``prefix`` is still a prefix of every match).  Without an
    ``ESCAPE`` clause a backslash ends the prefix and makes the pattern
    ``"other"``: engines disagree on whether it escapes (Spark: yes, DuckDB:
    no), and the text before it is literal either way.
    """
    out: list[str] = []
    i = 0
    n = len(pattern)
    while i < n:
        ch = pattern[i]
        if escape is not None and ch == escape:
            if i + 1 >= n:
                return "".join(out), "other"
            out.append(pattern[i + 1])
            i += 2
            continue
        if ch in "%_" or (escape is None and ch == "\\"):
            break
        out.append(ch)
        i += 1
    rest = pattern[i:]
    if rest == "":
        return "".join(out), "exact"
    if rest == "%":
        return "".join(out), "prefix"
    return "".join(out), "other"
