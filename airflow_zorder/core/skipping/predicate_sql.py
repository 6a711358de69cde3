"""SQL text to the project's predicate expressions, through sqlglot's syntax tree.

:func:`parse` reads a WHERE condition, :func:`where_predicate` the WHERE clause of a SELECT statement (a
user's query), both in the dialect of :mod:`~airflow_zorder.core.skipping.sql_dialect`::

    "a = 5 AND (b < 'x' OR s LIKE 'ab%') AND NOT c IN (1, 2)"

Literals: integers, exact decimals (``1.50`` -> ``Decimal``), floats with an exponent (``1.5e0``),
``'strings'`` (``''`` escapes a quote), ``DATE '2024-01-01'``, ``TIMESTAMP '2024-01-01
10:00:00[.ffffff][Z|+hh:mm]'``, ``X'0aff'`` (bytes), ``TRUE``/``FALSE``, ``NULL``, ``CAST('NaN' AS DOUBLE)``
(``CAST`` to DOUBLE/FLOAT, DATE or TIMESTAMP).  Operators: ``= == != <> < <= > >=``, ``[NOT] IN (...)``,
``[NOT] BETWEEN a AND b``, ``[NOT] LIKE 'p' [ESCAPE 'c']``, ``IS [NOT] NULL|TRUE|FALSE``, ``NOT``, ``AND``,
``OR``, parentheses, and a bare boolean column (``flag`` = ``flag = TRUE``).  Column-to-column comparisons,
``ILIKE`` and literal-only comparisons become :class:`~airflow_zorder.core.skipping.predicates.Opaque` (never
prunes); anything else (functions, arithmetic, subqueries, ...) is a :class:`ParseError` that names it.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from sqlglot import exp
from sqlglot.errors import ParseError as SqlglotParseError
from sqlglot.errors import SqlglotError

from airflow_zorder.core.errors import ParseError
from airflow_zorder.core.skipping.predicates import (
    MIRRORED_COMPARISON,
    And,
    Compare,
    Const,
    Expr,
    In,
    IsNull,
    Like,
    Not,
    Opaque,
    Or,
)
from airflow_zorder.core.skipping.sql_dialect import DIALECT

__all__ = ["parse", "translate", "where_predicate"]


_COMPARISONS: dict[type[exp.Expression], str] = {
    exp.EQ: "=",
    exp.NEQ: "!=",
    exp.LT: "<",
    exp.LTE: "<=",
    exp.GT: ">",
    exp.GTE: ">=",
}
_CAST_FLOAT = {"DOUBLE", "FLOAT"}  # sqlglot's names for DOUBLE, FLOAT, REAL, FLOAT8, FLOAT4


def parse(text: str) -> Expr:
    """A WHERE condition (SQL text, see the module docstring) as a predicate expression."""
    return _Translator(text).predicate(_parse_one(text))


def translate(node: exp.Expression, text: str = "") -> Expr:
    """A condition already parsed by sqlglot (in any dialect) as a predicate; ``text`` is quoted in errors.

    The workload advisor (:mod:`airflow_zorder.core.advisor`) parses whole statements in their engine's
    dialect and hands each condition here, so that both read predicates through this one translator."""
    return _Translator(text or node.sql()).predicate(node)


def where_predicate(statement: str) -> Expr:
    """The WHERE clause of one SELECT statement as a predicate (``Const(True)`` when it has none)."""
    tree = _parse_one(statement)
    if not isinstance(tree, exp.Select):
        raise ParseError(f"expected one SELECT statement, got {type(tree).__name__}: {statement!r}")
    where = tree.args.get("where")
    return Const(True) if where is None else _Translator(statement).predicate(where.this)


def _parse_one(text: str) -> exp.Expression:
    try:
        trees = [t for t in DIALECT.parse(text) if t is not None]
    except SqlglotParseError as exc:
        first = exc.errors[0] if exc.errors else {}
        where = f" at line {first['line']}, column {first['col']}" if "line" in first else ""
        raise ParseError(f"{first.get('description', exc)}{where} in {text!r}") from exc
    except SqlglotError as exc:  # the tokenizer's errors
        raise ParseError(f"{exc} in {text!r}") from exc
    if len(trees) != 1:
        raise ParseError(f"expected one predicate, got {len(trees)} statements in {text!r}")
    return trees[0]


@dataclass(frozen=True)
class _ColRef:
    name: str


class _Translator:
    """sqlglot nodes to predicates; ``text`` is only quoted in errors."""

    def __init__(self, text: str) -> None:
        self.text = text

    def fail(self, msg: str, node: exp.Expression) -> ParseError:
        return ParseError(f"{msg}: {node.sql(dialect=DIALECT)!r} in {self.text!r}")

    def predicate(self, node: exp.Expression) -> Expr:
        if isinstance(node, exp.Paren):
            return self.predicate(node.this)
        if isinstance(node, (exp.And, exp.Or)):
            kids = tuple(self.predicate(k) for k in _chain(node))
            return And(kids) if isinstance(node, exp.And) else Or(kids)
        if isinstance(node, exp.Not):
            return Not(self.predicate(node.this))
        e = self.atom(node)
        negated = node.this if isinstance(node, exp.Escape) else node  # NOT LIKE .. ESCAPE: the LIKE says NOT
        return Not(e) if negated.args.get("negate") else e

    def atom(self, node: exp.Expression) -> Expr:
        op = _COMPARISONS.get(type(node))
        if op is not None:
            return self.compare(self.operand(node.this), op, self.operand(node.expression), node)
        if isinstance(node, exp.Between):
            if node.args.get("symmetric"):
                raise self.fail("BETWEEN SYMMETRIC is not supported", node)
            left = self.operand(node.this)
            low, high = self.operand(node.args["low"]), self.operand(node.args["high"])
            return And((self.compare(left, ">=", low, node), self.compare(left, "<=", high, node)))
        if isinstance(node, exp.In):
            if any(node.args.get(k) is not None for k in ("query", "unnest", "field")):
                raise self.fail("IN needs a list of literals", node)
            if not node.expressions:
                raise self.fail("IN needs at least one value", node)
            left = self.operand(node.this)
            values = tuple(self.literal(v) for v in node.expressions)
            return In(left.name, values) if isinstance(left, _ColRef) else Opaque(node.sql(dialect=DIALECT))
        if isinstance(node, (exp.Like, exp.ILike, exp.Escape)):
            return self.like(node)
        if isinstance(node, exp.Is):
            return self.is_(node)
        if isinstance(node, exp.Column):
            return Compare(self.column(node).name, "=", True)  # bare boolean column
        if isinstance(node, exp.Boolean):
            return Const(bool(node.this))
        if isinstance(node, exp.Null):
            return Const(None)
        raise self.fail(f"not a predicate ({type(node).__name__})", node)

    def compare(self, left: Any, op: str, right: Any, node: exp.Expression) -> Expr:
        lc, rc = isinstance(left, _ColRef), isinstance(right, _ColRef)
        if lc and not rc:
            return Compare(left.name, op, right)
        if rc and not lc:
            return Compare(right.name, MIRRORED_COMPARISON[op], left)
        return Opaque(node.sql(dialect=DIALECT))  # column to column, or literals only

    def like(self, node: exp.Expression) -> Expr:
        escape = None
        if isinstance(node, exp.Escape):
            escape = self.literal(node.expression)
            if not isinstance(escape, str) or len(escape) != 1:
                raise self.fail("ESCAPE needs a one-character string", node)
            node = node.this
            if not isinstance(node, (exp.Like, exp.ILike)):
                raise self.fail("ESCAPE without LIKE", node)
        left, pattern = self.operand(node.this), self.operand(node.expression)
        if isinstance(node, exp.ILike) or not isinstance(left, _ColRef) or not isinstance(pattern, str):
            plain = node.copy()
            plain.set("negate", None)  # NOT applies outside, as for LIKE
            return Opaque(plain.sql(dialect=DIALECT))
        return Like(left.name, pattern, escape)

    def is_(self, node: exp.Is) -> Expr:
        left, right = self.operand(node.this), node.expression
        if isinstance(right, exp.Null):
            return IsNull(left.name) if isinstance(left, _ColRef) else Const(left is None)
        if isinstance(right, exp.Boolean):
            if not isinstance(left, _ColRef):
                return Opaque(node.sql(dialect=DIALECT))
            # c IS TRUE is never UNKNOWN: (c IS NOT NULL) AND (c = TRUE) is FALSE for a NULL c,
            # so its negation (c IS NOT TRUE) is TRUE for NULLs, as it must be
            return And((Not(IsNull(left.name)), Compare(left.name, "=", bool(right.this))))
        raise self.fail("expected NULL, TRUE or FALSE after IS", node)

    def column(self, node: exp.Column) -> _ColRef:
        if isinstance(node.this, exp.Star):
            raise self.fail("expected a column", node)
        return _ColRef(".".join(part.name for part in node.parts))

    def operand(self, node: exp.Expression) -> Any:
        """A column (:class:`_ColRef`) or a literal's Python value."""
        return self.column(node) if isinstance(node, exp.Column) else self.literal(node)

    def literal(self, node: exp.Expression) -> Any:
        if isinstance(node, exp.Literal):
            s = node.this
            if node.is_string:
                return s
            if "e" in s or "E" in s:
                return float(s)
            return Decimal(s) if "." in s else int(s)
        if isinstance(node, exp.Neg):
            v = self.literal(node.this)
            if isinstance(v, bool) or not isinstance(v, (int, float, Decimal)):
                raise self.fail("sign before a non-number", node)
            return -v
        if isinstance(node, exp.Boolean):
            return bool(node.this)
        if isinstance(node, exp.Null):
            return None
        if isinstance(node, exp.HexString):
            try:
                return bytes.fromhex(node.this)
            except ValueError:
                raise self.fail("bad hex literal", node) from None
        if isinstance(node, exp.Cast):
            return self.cast(node)
        raise self.fail(f"expected a literal ({type(node).__name__})", node)

    def cast(self, node: exp.Cast) -> Any:
        """``DATE '..'``, ``TIMESTAMP '..'`` and ``CAST(literal AS DOUBLE|FLOAT|DATE|TIMESTAMP)``."""
        v = self.literal(node.this)
        tname = node.to.this.name
        try:
            if tname in _CAST_FLOAT:
                return float(v)
            if tname == "DATE":
                return v if isinstance(v, dt.date) else dt.date.fromisoformat(str(v).strip())
            if tname == "TIMESTAMP":
                return v if isinstance(v, dt.datetime) else dt.datetime.fromisoformat(str(v).strip())
        except (ValueError, TypeError):
            raise self.fail(f"bad {tname} literal", node) from None
        raise self.fail(f"unsupported CAST type {tname}", node)


def _chain(node: exp.Expression) -> list[exp.Expression]:
    """The operands of a chain of one connective (``a AND b AND c``), left to right; parentheses end it."""
    out: list[exp.Expression] = []
    stack = [node]
    while stack:
        n = stack.pop()
        if type(n) is type(node):
            stack += [n.expression, n.this]
        else:
            out.append(n)
    return out
