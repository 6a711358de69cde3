"""Data-skipping (file pruning) evaluator over per-file footer statistics.

Airflow-free and Spark-free: numpy + pyarrow.  Given a predicate and a stats
table (:data:`~airflow_zorder.core.stats.stats_schema.FILE_STATS_SCHEMA`, one row per
(file, column)), :func:`prune` lists the files that *may* contain a row for
which the predicate is TRUE; every other file provably contains none.

Predicates
----------
Either the expression API::

    from airflow_zorder.evaluation.pruning import col
    p = (col("a") == 5) & (col("b") < "x") | ~col("c").isin([1, 2])
    p = col("s").startswith("ab") & col("d").between(date(2024, 1, 1), date(2024, 1, 31))
    p = col("x").is_null() | col("x").is_not_null() & col("s").like("ab%c")

or a SQL-like string (:func:`parse`)::

    "a = 5 AND (b < 'x' OR s LIKE 'ab%') AND NOT c IN (1, 2)"

Literals: integers, exact decimals (``1.50`` -> ``Decimal``), floats with an
exponent (``1.5e0``), ``'strings'`` (``''`` escapes a quote), ``DATE
'2024-01-01'``, ``TIMESTAMP '2024-01-01 10:00:00[.ffffff][Z|+hh:mm]'``,
``X'0aff'`` (bytes), ``TRUE``/``FALSE``, ``NULL``, ``CAST('NaN' AS DOUBLE)``.
Operators: ``= == != <> < <= > >=``, ``[NOT] IN (...)``, ``[NOT] BETWEEN a
AND b``, ``[NOT] LIKE 'p' [ESCAPE 'c']``, ``IS [NOT] NULL``, ``NOT``,
``AND``, ``OR``, parentheses, and a bare boolean column (``flag`` = ``flag =
TRUE``).  Column-to-column comparisons, ``ILIKE`` and literal-only
comparisons parse to :class:`Opaque` (never prunes).

Rules (DESIGN.md "Data skipping rules"; ``[min, max]`` are the file's bounds)
--------------------------------------------------------------------------
=========================  ============================================
``c = v``                  ``min <= v <= max``
``c != v`` (``NOT c = v``) not (``min == max == v``): a file whose values
                           all equal ``v`` is the only one without a match
``c < v`` / ``c <= v``     ``min < v`` / ``min <= v``
``c > v`` / ``c >= v``     ``max > v`` / ``max >= v``
``c IN (..)``              OR of ``=``; ``NOT IN``: AND of ``!=``
``c IS NULL``              ``null_count > 0``
``c IS NOT NULL``          ``null_count < value_count``
``c LIKE 'p%'``            ``max >= p`` and (``min < p`` or ``min``
                           starts with ``p``) -- *not* ``min <= p <= max``,
                           which wrongly prunes ``["abc", "abd"]`` for
                           ``'ab%'`` (Hudi #18791)
``c NOT LIKE 'p%'``        not (``min`` and ``max`` both start with ``p``):
                           strings starting with ``p`` form one interval
``c LIKE 'p...'``          other patterns: the literal prefix before the
                           first wildcard is a necessary condition;
                           ``NOT LIKE`` of such a pattern never prunes
                           (except all-null files)
=========================  ============================================

``NOT`` is pushed down to the atoms first (De Morgan, comparison inversion:
``NOT c < v`` -> ``c >= v``, ``NOT c IN`` -> AND of ``!=``, ...), which is
exact in SQL's three-valued logic: a row satisfies ``NOT p`` iff ``p`` is
FALSE, and a NULL makes every comparison UNKNOWN, so neither ``c < v`` nor
``c >= v`` is TRUE for a NULL ``c``.  Hence:

* a comparison with a NULL literal is never TRUE, nor is its negation
  (``c = NULL``, ``c NOT IN (1, NULL)``): no file is kept for it;
* all-null files (``has_stats`` with null bounds) match no atom but ``IS
  NULL``;
* files without usable stats for the column (``has_stats`` false, one bound
  null, NaN bound, ``min > max``), files without a stats row for the column
  (e.g. Hive partition columns) and atoms that cannot be translated exactly
  (type mismatch, naive literal on a UTC-adjusted timestamp column, LIKE on a
  non-string column, column-to-column comparison) are always kept;
* ``AND`` keeps a file only if every side may match, ``OR`` if any side may.

Truncated string bounds (parquet-rs writes a prefix as min and an
incremented prefix as max) are still valid bounds; every rule above only
relies on "all non-null values lie in ``[min, max]``", so they stay sound.

Floating point and NaN
----------------------
Parquet bounds exclude NaN and a footer cannot tell whether a file holds
NaN, so every non-empty file of a float column may contain NaN.  Whether a
NaN row matches depends on the engine: ``nan_semantics="total"`` (default:
Spark, DuckDB, PostgreSQL -- NaN is greater than every number and equal to
itself) or ``"ieee"`` (pyarrow compute, numpy, Python -- every comparison with
NaN is false except ``!=``).  With ``"total"``, ``c > v``, ``c >= v`` and
``c != v`` therefore never prune a float column; ``c < v``, ``c <= v``, ``c =
v`` still do.  Columns known to hold no NaN can be listed in
``nan_free_columns`` to prune on both sides.  ``-0.0 == 0.0``.

Mixed numeric types compare like the engines do: integers and decimals
exactly; with a float on either side in float64 (``prepare_bounds``).
"""

from __future__ import annotations

import datetime as dt
import math
import re
from collections.abc import Collection, Iterable
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from airflow_zorder.core.errors import InvalidInputError
from airflow_zorder.core.policy import file_bounds
from airflow_zorder.core.stats import stats_schema

__all__ = [
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
    "ParseError",
    "parse",
    "PruneResult",
    "prune",
    "like_prefix",
]


# --------------------------------------------------------------------------
# Expressions
# --------------------------------------------------------------------------

_OPS = ("=", "!=", "<", "<=", ">", ">=")
_INVERT = {"=": "!=", "!=": "=", "<": ">=", ">=": "<", ">": "<=", "<=": ">"}
_FLIP = {"=": "=", "!=": "!=", "<": ">", ">": "<", "<=": ">=", ">=": "<="}


class Expr:
    """Base of predicate expressions: combine with ``&``, ``|``, ``~``."""

    def __and__(self, other: Expr) -> Expr:
        return And((self, _as_expr(other)))

    def __rand__(self, other: Expr) -> Expr:
        return And((_as_expr(other), self))

    def __or__(self, other: Expr) -> Expr:
        return Or((self, _as_expr(other)))

    def __ror__(self, other: Expr) -> Expr:
        return Or((_as_expr(other), self))

    def __invert__(self) -> Expr:
        return Not(self)

    def __bool__(self) -> bool:
        raise TypeError("predicates have no truth value: combine them with &, | and ~ (not and/or/not)")

    def to_sql(self) -> str:  # pragma: no cover - overridden
        raise NotImplementedError

    def __str__(self) -> str:
        return self.to_sql()


def _as_expr(x: Any) -> Expr:
    if isinstance(x, Expr):
        return x
    if isinstance(x, bool) or x is None:
        return Const(x)
    raise TypeError(f"not a predicate: {x!r}")


def _quote_ident(name: str) -> str:
    if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name) and name.upper() not in _KEYWORDS:
        return name
    return '"' + name.replace('"', '""') + '"'


def sql_literal(v: Any) -> str:
    """SQL text of a Python literal (Spark/DuckDB syntax; :func:`parse` reads it back)."""
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
        if self.op not in _OPS:
            raise ValueError(f"unknown comparison {self.op!r}")

    def to_sql(self) -> str:
        return f"{_quote_ident(self.column)} {self.op} {sql_literal(self.value)}"


@dataclass(frozen=True, eq=True)
class In(Expr):
    column: str
    values: tuple

    def to_sql(self) -> str:
        if not self.values:
            return "FALSE"
        return f"{_quote_ident(self.column)} IN ({', '.join(sql_literal(v) for v in self.values)})"


@dataclass(frozen=True, eq=True)
class IsNull(Expr):
    column: str

    def to_sql(self) -> str:
        return f"{_quote_ident(self.column)} IS NULL"


@dataclass(frozen=True, eq=True)
class Like(Expr):
    column: str
    pattern: str
    escape: str | None = None

    def to_sql(self) -> str:
        esc = f" ESCAPE {sql_literal(self.escape)}" if self.escape is not None else ""
        return f"{_quote_ident(self.column)} LIKE {sql_literal(self.pattern)}{esc}"


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
            return Opaque(f"{_quote_ident(self.name)} {op} {_quote_ident(v.name)}")
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


# --------------------------------------------------------------------------
# SQL-like parser
# --------------------------------------------------------------------------


class ParseError(InvalidInputError):
    """A predicate the pruning evaluator cannot parse; the message points at the offending text."""


_KEYWORDS = {
    "AND",
    "OR",
    "NOT",
    "IN",
    "IS",
    "NULL",
    "TRUE",
    "FALSE",
    "LIKE",
    "ILIKE",
    "ESCAPE",
    "BETWEEN",
    "CAST",
    "AS",
}  # DATE, TIMESTAMP and X only introduce a literal when a 'string' follows

_TOKEN_RE = re.compile(
    r"""
    (?P<ws>\s+)
  | (?P<num>(?:\d+\.\d*|\.\d+|\d+)(?:[eE][+-]?\d+)?)
  | (?P<str>'(?:[^']|'')*')
  | (?P<qid>"(?:[^"]|"")*"|`(?:[^`]|``)*`)
  | (?P<id>[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)
  | (?P<op><=|>=|<>|!=|==|=|<|>|\(|\)|,|-|\+)
    """,
    re.VERBOSE,
)


@dataclass
class _Tok:
    kind: str  # num, str, qid, id, op, end
    text: str
    pos: int


def _tokenize(s: str) -> list[_Tok]:
    out: list[_Tok] = []
    i = 0
    while i < len(s):
        m = _TOKEN_RE.match(s, i)
        if not m:
            raise ParseError(f"unexpected character {s[i]!r} at {i}: {s!r}")
        kind = m.lastgroup
        if kind != "ws":
            out.append(_Tok(kind, m.group(), i))  # type: ignore[arg-type]
        i = m.end()
    out.append(_Tok("end", "", len(s)))
    return out


@dataclass
class _ColRef:
    name: str


_CAST_FLOAT = {"DOUBLE", "FLOAT", "REAL", "FLOAT8", "FLOAT4"}


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.toks = _tokenize(text)
        self.i = 0

    # helpers
    def peek(self, k: int = 0) -> _Tok:
        return self.toks[min(self.i + k, len(self.toks) - 1)]

    def kw(self, word: str, k: int = 0) -> bool:
        t = self.peek(k)
        return t.kind == "id" and t.text.upper() == word

    def accept_kw(self, word: str) -> bool:
        if self.kw(word):
            self.i += 1
            return True
        return False

    def expect_kw(self, word: str) -> None:
        if not self.accept_kw(word):
            self.fail(f"expected {word}")

    def accept_op(self, op: str) -> bool:
        t = self.peek()
        if t.kind == "op" and t.text == op:
            self.i += 1
            return True
        return False

    def expect_op(self, op: str) -> None:
        if not self.accept_op(op):
            self.fail(f"expected {op!r}")

    def fail(self, msg: str) -> None:
        t = self.peek()
        raise ParseError(f"{msg} at position {t.pos} (near {t.text!r}) in {self.text!r}")

    # grammar
    def parse(self) -> Expr:
        e = self.or_expr()
        if self.peek().kind != "end":
            self.fail("unexpected token")
        return e

    def or_expr(self) -> Expr:
        parts = [self.and_expr()]
        while self.accept_kw("OR"):
            parts.append(self.and_expr())
        return parts[0] if len(parts) == 1 else Or(tuple(parts))

    def and_expr(self) -> Expr:
        parts = [self.not_expr()]
        while self.accept_kw("AND"):
            parts.append(self.not_expr())
        return parts[0] if len(parts) == 1 else And(tuple(parts))

    def not_expr(self) -> Expr:
        if self.accept_kw("NOT"):
            return Not(self.not_expr())
        return self.predicate()

    def predicate(self) -> Expr:
        start = self.peek().pos
        if self.peek().kind == "op" and self.peek().text == "(":
            self.i += 1
            e = self.or_expr()
            self.expect_op(")")
            return e
        left = self.operand()
        negate = False
        if self.kw("NOT") and (self.kw("IN", 1) or self.kw("LIKE", 1) or self.kw("BETWEEN", 1) or self.kw("ILIKE", 1)):
            self.i += 1
            negate = True
        t = self.peek()
        e: Expr
        if t.kind == "op" and t.text in ("=", "==", "!=", "<>", "<", "<=", ">", ">="):
            self.i += 1
            op = {"==": "=", "<>": "!="}.get(t.text, t.text)
            right = self.operand()
            e = self._compare(left, op, right, start)
        elif self.accept_kw("IN"):
            self.expect_op("(")
            vals = [self.literal_value()]
            while self.accept_op(","):
                vals.append(self.literal_value())
            self.expect_op(")")
            if not isinstance(left, _ColRef):
                e = Opaque(self.text[start : self.peek().pos].strip())
            else:
                e = In(left.name, tuple(vals))
        elif self.accept_kw("BETWEEN"):
            low = self.operand()
            self.expect_kw("AND")
            high = self.operand()
            e = And((self._compare(left, ">=", low, start), self._compare(left, "<=", high, start)))
        elif self.kw("LIKE") or self.kw("ILIKE"):
            ilike = self.kw("ILIKE")
            self.i += 1
            pat = self.operand()
            esc = None
            if self.accept_kw("ESCAPE"):
                esc_v = self.literal_value()
                if not isinstance(esc_v, str) or len(esc_v) != 1:
                    self.fail("ESCAPE needs a one-character string")
                esc = esc_v
            if ilike or not isinstance(left, _ColRef) or not isinstance(pat, str):
                e = Opaque(self.text[start : self.peek().pos].strip())
            else:
                e = Like(left.name, pat, esc)
        elif self.accept_kw("IS"):
            neg_is = self.accept_kw("NOT")
            if self.accept_kw("NULL"):
                inner: Expr = IsNull(left.name) if isinstance(left, _ColRef) else Const(left is None)
            elif self.kw("TRUE") or self.kw("FALSE"):
                val = self.peek().text.upper() == "TRUE"
                self.i += 1
                if not isinstance(left, _ColRef):
                    return Opaque(self.text[start : self.peek().pos].strip())
                # c IS TRUE is never UNKNOWN: (c IS NOT NULL) AND (c = TRUE) is FALSE for a NULL c,
                # so its negation (c IS NOT TRUE) is TRUE for NULLs, as it must be
                inner = And((Not(IsNull(left.name)), Compare(left.name, "=", val)))
            else:
                self.fail("expected NULL, TRUE or FALSE after IS")
            e = Not(inner) if neg_is else inner
        else:
            if negate:
                self.fail("expected IN, LIKE or BETWEEN after NOT")
            if isinstance(left, _ColRef):
                return Compare(left.name, "=", True)  # bare boolean column
            if left is None:
                return Const(None)
            if isinstance(left, bool):
                return Const(left)
            self.fail("expected a predicate")
        return Not(e) if negate else e

    def _compare(self, left: Any, op: str, right: Any, start: int) -> Expr:
        lc, rc = isinstance(left, _ColRef), isinstance(right, _ColRef)
        if lc and not rc:
            return Compare(left.name, op, right)
        if rc and not lc:
            return Compare(right.name, _FLIP[op], left)
        return Opaque(self.text[start : self.peek().pos].strip())

    def operand(self) -> Any:
        t = self.peek()
        if t.kind == "qid":
            self.i += 1
            q = t.text[0]
            return _ColRef(t.text[1:-1].replace(q + q, q))
        if t.kind == "id" and t.text.upper() not in _KEYWORDS:
            if not (t.text.upper() in ("DATE", "TIMESTAMP", "X") and self.peek(1).kind == "str"):
                self.i += 1
                return _ColRef(t.text)
        return self.literal_value()

    def literal_value(self) -> Any:
        t = self.peek()
        if t.kind == "op" and t.text in ("-", "+"):
            self.i += 1
            v = self.literal_value()
            if isinstance(v, bool) or not isinstance(v, (int, float, Decimal)):
                self.fail("sign before a non-number")
            return -v if t.text == "-" else v
        if t.kind == "num":
            self.i += 1
            s = t.text
            if "e" in s or "E" in s:
                return float(s)
            if "." in s:
                return Decimal(s)
            return int(s)
        if t.kind == "str":
            self.i += 1
            return t.text[1:-1].replace("''", "'")
        if t.kind == "id":
            up = t.text.upper()
            if up in ("TRUE", "FALSE"):
                self.i += 1
                return up == "TRUE"
            if up == "NULL":
                self.i += 1
                return None
            if up in ("DATE", "TIMESTAMP") and self.peek(1).kind == "str":
                self.i += 1
                s = self.literal_value()
                try:
                    if up == "DATE":
                        return dt.date.fromisoformat(s.strip())
                    return dt.datetime.fromisoformat(s.strip())
                except ValueError:
                    self.fail(f"bad {up} literal {s!r}")
            if up == "X" and self.peek(1).kind == "str":
                self.i += 1
                s = self.literal_value()
                try:
                    return bytes.fromhex(s)
                except ValueError:
                    self.fail(f"bad hex literal {s!r}")
            if up == "CAST":
                self.i += 1
                self.expect_op("(")
                v = self.literal_value()
                self.expect_kw("AS")
                ty = self.peek()
                if ty.kind != "id":
                    self.fail("expected a type name")
                self.i += 1
                self.expect_op(")")
                tname = ty.text.upper()
                try:
                    if tname in _CAST_FLOAT:
                        return float(v)
                    if tname == "DATE":
                        return v if isinstance(v, dt.date) else dt.date.fromisoformat(str(v))
                    if tname == "TIMESTAMP":
                        return v if isinstance(v, dt.datetime) else dt.datetime.fromisoformat(str(v))
                except (ValueError, TypeError):
                    self.fail(f"cannot cast {v!r} to {tname}")
                self.fail(f"unsupported CAST type {tname}")
        self.fail("expected a literal")
        raise AssertionError  # unreachable


def parse(text: str) -> Expr:
    """Parse a SQL-like predicate (see the module docstring) into an :class:`Expr`."""
    return _Parser(text).parse()


# --------------------------------------------------------------------------
# Negation normal form
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class _Atom:
    expr: Expr  # Compare, In, IsNull or Like
    negated: bool

    def to_sql(self) -> str:
        return f"NOT ({self.expr.to_sql()})" if self.negated else self.expr.to_sql()


def _nnf(e: Expr, neg: bool = False) -> Any:
    """Push NOT down to the atoms (exact in three-valued logic)."""
    if isinstance(e, Not):
        return _nnf(e.child, not neg)
    if isinstance(e, And):
        kids = tuple(_nnf(c, neg) for c in e.children)
        return Or(kids) if neg else And(kids)
    if isinstance(e, Or):
        kids = tuple(_nnf(c, neg) for c in e.children)
        return And(kids) if neg else Or(kids)
    if isinstance(e, Const):
        return Const(None) if e.value is None else Const(e.value != neg)
    if isinstance(e, Opaque):
        return e
    if isinstance(e, (Compare, In, IsNull, Like)):
        return _Atom(e, neg)
    raise TypeError(f"not a predicate: {e!r}")


# --------------------------------------------------------------------------
# Evaluation
# --------------------------------------------------------------------------


@dataclass
class _ColumnStats:
    file_idx: np.ndarray  # file of each stats row
    mins: pa.Array
    maxs: pa.Array
    has: np.ndarray
    null_count: np.ndarray  # float64, NaN = unknown
    value_count: np.ndarray  # float64, NaN = unknown
    type: pa.DataType
    fb: file_bounds.FileBounds  # status masks (bounded / empty / unknown)
    min_text: pa.Array
    max_text: pa.Array


class _Evaluator:
    def __init__(self, table: pa.Table, nan_semantics: str, nan_free: Collection[str], explain: bool) -> None:
        if nan_semantics not in ("total", "ieee"):
            raise ValueError("nan_semantics must be 'total' or 'ieee'")
        self.sem = nan_semantics
        self.nan_free = set(nan_free)
        self.explain = explain
        enc = pc.dictionary_encode(table["path"]).combine_chunks() if table.num_rows else None
        if enc is None:
            self.files: list[str] = []
            file_of_row = np.zeros(0, dtype=np.int64)
        else:
            self.files = enc.dictionary.to_pylist()
            file_of_row = enc.indices.to_numpy(zero_copy_only=False).astype(np.int64)
        self.F = len(self.files)
        t = table.append_column("__file", pa.array(file_of_row))
        self.split = stats_schema.split_by_column(t, ["__file", "null_count", "value_count"])
        self.cols: dict[str, _ColumnStats | None] = {}
        self.warnings: list[str] = []
        self.memo: dict[int, np.ndarray] = {}

    def column(self, name: str) -> _ColumnStats | None:
        if name in self.cols:
            return self.cols[name]
        t = self.split.get(name)
        cs = None
        if t is None or t.num_rows == 0:
            self.warnings.append(f"no statistics for column {name!r}: its predicates prune nothing")
        else:
            try:
                mins, maxs, has = stats_schema.typed_bounds(t)
            except (TypeError, ValueError) as exc:
                self.warnings.append(f"column {name!r}: unusable bounds ({exc}): its predicates prune nothing")
            else:
                ty = mins.type
                fb, _, _ = file_bounds.prepare_bounds(mins, maxs, has)

                def counts(c: str) -> np.ndarray:
                    return pc.cast(t[c], pa.float64()).to_numpy(zero_copy_only=False).astype(np.float64)

                cs = _ColumnStats(
                    file_idx=t["__file"].to_numpy().astype(np.int64),
                    mins=mins,
                    maxs=maxs,
                    has=has,
                    null_count=counts("null_count"),
                    value_count=counts("value_count"),
                    type=ty,
                    fb=fb,
                    min_text=t["min_value"].combine_chunks(),
                    max_text=t["max_value"].combine_chunks(),
                )
        self.cols[name] = cs
        return cs

    def to_files(self, cs: _ColumnStats, row_keep: np.ndarray) -> np.ndarray:
        """A file may match if any of its rows for the column may; files without a row always may."""
        rows = np.bincount(cs.file_idx, minlength=self.F)
        hit = np.bincount(cs.file_idx, weights=row_keep.astype(np.float64), minlength=self.F)
        return (rows == 0) | (hit > 0)

    # ---- tree ----
    def eval(self, node: Any) -> np.ndarray:
        if isinstance(node, And):
            out = np.ones(self.F, dtype=bool)
            for c in node.children:
                out &= self.eval(c)
        elif isinstance(node, Or):
            out = np.zeros(self.F, dtype=bool)
            for c in node.children:
                out |= self.eval(c)
        elif isinstance(node, Const):
            out = np.full(self.F, node.value is True)
        elif isinstance(node, Opaque):
            self.warnings.append(f"untranslatable, never prunes: {node.text}")
            out = np.ones(self.F, dtype=bool)
        else:
            out = self.eval_atom(node)
        if self.explain:
            self.memo[id(node)] = out
        return out

    def eval_atom(self, atom: _Atom) -> np.ndarray:
        e = atom.expr
        cs = self.column(e.column)
        if cs is None:
            return np.ones(self.F, dtype=bool)
        if isinstance(e, IsNull):
            row = self._is_null(cs, atom.negated)
        elif isinstance(e, Compare):
            row = self._compare(cs, e.op, e.value, atom.negated, e)
        elif isinstance(e, In):
            row = self._in(cs, e.values, atom.negated, e)
        elif isinstance(e, Like):
            row = self._like(cs, e, atom.negated)
        else:  # pragma: no cover
            raise TypeError(e)
        return self.to_files(cs, row)

    # ---- atoms (row level) ----
    def _keep_all(self, cs: _ColumnStats, why: str) -> np.ndarray:
        self.warnings.append(why)
        return np.ones(cs.has.shape[0], dtype=bool)

    def _is_null(self, cs: _ColumnStats, negated: bool) -> np.ndarray:
        nc, vc = cs.null_count, cs.value_count
        with np.errstate(invalid="ignore"):
            if not negated:
                return np.isnan(nc) | (nc > 0)
            return np.isnan(nc) | np.isnan(vc) | (nc < vc)

    def _nan_rows(self, cs: _ColumnStats, name: str) -> np.ndarray:
        """Rows (files) that may hold NaN values: every non-empty file of a float column."""
        if not pa.types.is_floating(cs.type) or name in self.nan_free:
            return np.zeros(cs.has.shape[0], dtype=bool)
        return ~cs.fb.empty

    def _nan_row_matches(self, op: str, v_is_nan: bool) -> bool:
        """Is ``NaN op v`` TRUE?"""
        if self.sem == "ieee":
            return op == "!="
        if v_is_nan:  # NaN == NaN and NaN is the greatest value
            return op in ("=", "<=", ">=")
        return op in (">", ">=", "!=")

    def _nan_literal_matches(self, op: str) -> bool:
        """Is ``x op NaN`` TRUE for a number ``x``?"""
        if self.sem == "ieee":
            return op == "!="
        return op in ("<", "<=", "!=")

    def _prepare(self, cs: _ColumnStats, values: list, e: Expr) -> tuple[file_bounds.FileBounds, np.ndarray] | None:
        t = cs.type
        if pa.types.is_timestamp(t):
            for v in values:
                aware = isinstance(v, dt.datetime) and v.tzinfo is not None
                if (t.tz is None) == aware or (t.tz is not None and not isinstance(v, dt.datetime)):
                    self.warnings.append(
                        f"{e.to_sql()}: literal {v!r} and column type {t} disagree on time zones: never prunes"
                    )
                    return None
        try:
            fb, vk, _ = file_bounds.prepare_bounds(cs.mins, cs.maxs, cs.has, values)
        except (TypeError, ValueError, OverflowError, pa.ArrowException) as exc:
            self.warnings.append(f"{e.to_sql()}: not comparable with column type {t} ({exc}): never prunes")
            return None
        assert vk is not None
        return fb, vk

    def _compare(self, cs: _ColumnStats, op: str, v: Any, negated: bool, e: Expr) -> np.ndarray:
        n = cs.has.shape[0]
        if v is None:
            return np.zeros(n, dtype=bool)  # UNKNOWN, negated or not
        prep = self._prepare(cs, [v], e)
        if prep is None:
            return np.ones(n, dtype=bool)
        fb, vk = prep
        key = vk[0]
        v_nan = vk.dtype.kind == "f" and bool(np.isnan(key))
        if v_nan:
            part = self._nan_literal_matches(op) != negated
            interval = fb.bounded.copy() if part else np.zeros(n, dtype=bool)
        else:
            eff = _INVERT[op] if negated else op
            lo, hi = fb.lo, fb.hi
            if eff == "=":
                m = (lo <= key) & (key <= hi)
            elif eff == "!=":
                m = ~((lo == hi) & (lo == key))
            elif eff == "<":
                m = lo < key
            elif eff == "<=":
                m = lo <= key
            elif eff == ">":
                m = hi > key
            else:
                m = hi >= key
            interval = fb.bounded & m
        nan_rows = self._nan_rows(cs, e.column)
        if nan_rows.any() and (self._nan_row_matches(op, v_nan) != negated):
            interval |= nan_rows
        return fb.unknown | interval

    def _in(self, cs: _ColumnStats, values: tuple, negated: bool, e: Expr) -> np.ndarray:
        n = cs.has.shape[0]
        vals = [v for v in values if v is not None]
        if negated and len(vals) < len(values):
            return np.zeros(n, dtype=bool)  # c NOT IN (.., NULL) is never TRUE
        if not vals:
            # IN (): FALSE, NOT IN (): TRUE for every row; IN (NULL, ..): never TRUE
            return np.full(n, negated and not values)
        prep = self._prepare(cs, vals, e)
        if prep is None:
            return np.ones(n, dtype=bool)
        fb, vk = prep
        is_nan = np.isnan(vk) if vk.dtype.kind == "f" else np.zeros(vk.shape[0], dtype=bool)
        has_nan, has_num = bool(is_nan.any()), bool((~is_nan).any())
        s = np.sort(vk[~is_nan])
        lo, hi = fb.lo, fb.hi
        if not negated:
            # OR of c = v: some number v in [lo, hi], i.e. #(v <= hi) - #(v < lo) > 0
            m = (np.searchsorted(s, hi, side="right") - np.searchsorted(s, lo, side="left")) > 0
            interval = fb.bounded & m
            nan_ok = (has_nan and self._nan_row_matches("=", True)) or (has_num and self._nan_row_matches("=", False))
        else:
            # AND of c != v: only files whose values all equal one listed number are out
            interval = fb.bounded & ~((lo == hi) & np.isin(lo, s))
            nan_ok = (not has_nan or self._nan_row_matches("!=", True)) and (
                not has_num or self._nan_row_matches("!=", False)
            )
        nan_rows = self._nan_rows(cs, e.column)
        if nan_ok and nan_rows.any():
            interval |= nan_rows
        return fb.unknown | interval

    def _like(self, cs: _ColumnStats, e: Like, negated: bool) -> np.ndarray:
        if not pa.types.is_string(cs.type):
            return self._keep_all(cs, f"{e.to_sql()}: LIKE on a {cs.type} column: never prunes")
        prefix, kind = like_prefix(e.pattern, e.escape)
        if kind == "exact":
            return self._compare(cs, "=", prefix, negated, e)
        fb = cs.fb
        if negated:
            if kind == "other":
                return ~fb.empty  # only all-null files are sure not to match
            both = _fill(pc.starts_with(cs.mins, pattern=prefix)) & _fill(pc.starts_with(cs.maxs, pattern=prefix))
            return fb.unknown | (fb.bounded & ~both)
        if prefix == "":
            return ~fb.empty
        ge = _fill(pc.greater_equal(cs.maxs, pa.scalar(prefix, pa.string())))
        lt = _fill(pc.less(cs.mins, pa.scalar(prefix, pa.string())))
        sw = _fill(pc.starts_with(cs.mins, pattern=prefix))
        return fb.unknown | (fb.bounded & ge & (lt | sw))

    # ---- explanations ----
    def reason(self, node: Any, f: int) -> str:
        if isinstance(node, And):
            for c in node.children:
                if not self.memo[id(c)][f]:
                    return self.reason(c, f)
        if isinstance(node, Or):
            return " and ".join(f"[{self.reason(c, f)}]" for c in node.children) or "FALSE"
        if isinstance(node, Const):
            return "FALSE" if node.value is False else "UNKNOWN (NULL)"
        if isinstance(node, _Atom):
            cs = self.column(node.expr.column)
            assert cs is not None
            rows = np.flatnonzero(cs.file_idx == f)
            desc = []
            for r in rows:
                if cs.fb.empty[r]:
                    desc.append("all values null")
                else:
                    mn, mx = cs.min_text[int(r)].as_py(), cs.max_text[int(r)].as_py()
                    nc = cs.null_count[r]
                    desc.append(f"min={mn!r}, max={mx!r}, nulls={'?' if math.isnan(nc) else int(nc)}")
            return f"{node.to_sql()} cannot match ({'; '.join(desc)})"
        return "?"


def _fill(x: pa.Array | pa.ChunkedArray) -> np.ndarray:
    return pc.fill_null(x, False).to_numpy(zero_copy_only=False).astype(bool)


@dataclass
class PruneResult:
    """Outcome of :func:`prune`: which files must be read."""

    predicate: str
    files: list[str]
    keep: np.ndarray  # bool per file, aligned with ``files``
    reasons: dict[str, str] | None = None  # pruned file -> why (``explain=True``)
    warnings: list[str] = field(default_factory=list)

    @property
    def kept(self) -> list[str]:
        return [f for f, k in zip(self.files, self.keep) if k]

    @property
    def pruned(self) -> list[str]:
        return [f for f, k in zip(self.files, self.keep) if not k]

    @property
    def num_files(self) -> int:
        return len(self.files)

    @property
    def num_kept(self) -> int:
        return int(np.count_nonzero(self.keep))

    @property
    def num_pruned(self) -> int:
        return self.num_files - self.num_kept

    @property
    def fraction_kept(self) -> float:
        return self.num_kept / self.num_files if self.files else float("nan")

    def to_dict(self) -> dict[str, Any]:
        return {
            "predicate": self.predicate,
            "num_files": self.num_files,
            "num_kept": self.num_kept,
            "num_pruned": self.num_pruned,
            "kept": self.kept,
            "pruned": self.pruned,
            "reasons": self.reasons,
            "warnings": list(self.warnings),
        }


def prune(
    stats_table: pa.Table,
    predicate: Expr | str,
    *,
    nan_semantics: str = "total",
    nan_free_columns: Collection[str] = (),
    explain: bool = False,
) -> PruneResult:
    """Files of ``stats_table`` that may hold a row matching ``predicate``.

    ``stats_table``: :data:`~airflow_zorder.core.stats.stats_schema.FILE_STATS_SCHEMA`
    rows (:func:`~airflow_zorder.core.stats.footer_stats.read_footers`, or a snapshot); files are
    its distinct ``path`` values in order of appearance.  ``predicate``: an
    :class:`Expr` or SQL-like text (:func:`parse`).  ``nan_semantics`` /
    ``nan_free_columns``: see the module docstring.  ``explain=True`` fills
    :attr:`PruneResult.reasons` (one line per pruned file).

    Vectorised: every atom is evaluated for all files at once on the sort keys
    of :func:`~airflow_zorder.core.policy.file_bounds.prepare_bounds` (exact across
    types) or Arrow string kernels (LIKE).  Never prunes a file that could
    match (see the module docstring for the exact rules).
    """
    expr = parse(predicate) if isinstance(predicate, str) else _as_expr(predicate)
    ev = _Evaluator(stats_table, nan_semantics, nan_free_columns, explain)
    tree = _nnf(expr)
    keep = ev.eval(tree)
    reasons = None
    if explain:
        reasons = {ev.files[f]: ev.reason(tree, f) for f in np.flatnonzero(~keep)}
    return PruneResult(
        predicate=expr.to_sql(),
        files=ev.files,
        keep=keep,
        reasons=reasons,
        warnings=list(dict.fromkeys(ev.warnings)),
    )
