"""Data-skipping (file pruning) evaluator over per-file footer statistics.

Airflow-free and Spark-free: numpy + pyarrow.  Given a predicate
(:mod:`~airflow_zorder.core.skipping.predicates`, or SQL text read by
:mod:`~airflow_zorder.core.skipping.predicate_sql`) and a stats table
(:data:`~airflow_zorder.core.stats.stats_schema.FILE_STATS_SCHEMA`, one row per
(file, column)), :func:`prune` lists the files that *may* contain a row for
which the predicate is TRUE; every other file provably contains none.

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
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from airflow_zorder.core.errors import InvalidInputError
from airflow_zorder.core.policy import file_bounds
from airflow_zorder.core.skipping.negation_normal_form import Atom, negation_normal_form
from airflow_zorder.core.skipping.predicate_sql import parse
from airflow_zorder.core.skipping.predicates import (
    NEGATED_COMPARISON,
    And,
    Compare,
    Const,
    Expr,
    In,
    IsNull,
    Like,
    Opaque,
    Or,
    as_expr,
    like_prefix,
)
from airflow_zorder.core.stats import stats_schema

__all__ = ["PruneResult", "kept_fractions", "prune"]


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
    # literals prepared ahead (:meth:`_Evaluator.prime`): per literal type, the bounds and each literal's key
    primed: dict[type, tuple[file_bounds.FileBounds, dict[Any, Any]]] = field(default_factory=dict)


class _Evaluator:
    def __init__(self, table: pa.Table, nan_semantics: str, nan_free: Collection[str], explain: bool) -> None:
        if nan_semantics not in ("total", "ieee"):
            raise InvalidInputError("nan_semantics must be 'total' or 'ieee'")
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

    def eval_atom(self, atom: Atom) -> np.ndarray:
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

    def prime(self, trees: Sequence[Any]) -> None:
        """Prepare the literals of many predicates (NNF ``trees``) at once, per column and literal type: one
        :func:`~airflow_zorder.core.policy.file_bounds.prepare_bounds` call each instead of one per atom."""
        wanted: dict[str, dict[type, set]] = {}

        def walk(node: Any) -> None:
            if isinstance(node, (And, Or)):
                for c in node.children:
                    walk(c)
            elif isinstance(node, Atom) and isinstance(node.expr, (Compare, In)):
                values = (node.expr.value,) if isinstance(node.expr, Compare) else node.expr.values
                per_type = wanted.setdefault(node.expr.column, {})
                for v in values:
                    if v is not None:
                        per_type.setdefault(type(v), set()).add(v)

        for t in trees:
            walk(t)
        for name, per_type in wanted.items():
            cs = self.column(name)
            if cs is None:
                continue
            for ty, values in per_type.items():
                vals = list(values)
                try:
                    fb, vk, _ = file_bounds.prepare_bounds(cs.mins, cs.maxs, cs.has, vals)
                except (TypeError, ValueError, OverflowError, pa.ArrowException):
                    continue  # each atom prepares (and warns about) its own literal
                assert vk is not None
                cs.primed[ty] = (fb, dict(zip(vals, vk)))

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
        primed = cs.primed.get(type(values[0])) if values else None
        if primed is not None and all(type(v) is type(values[0]) and v in primed[1] for v in values):
            keys = primed[1]
            return primed[0], np.array([keys[v] for v in values])
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
            eff = NEGATED_COMPARISON[op] if negated else op
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
        if isinstance(node, Atom):
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
    :class:`~airflow_zorder.core.skipping.predicates.Expr` or SQL
    text (:func:`~airflow_zorder.core.skipping.predicate_sql.parse`).  ``nan_semantics`` /
    ``nan_free_columns``: see the module docstring.  ``explain=True`` fills
    :attr:`PruneResult.reasons` (one line per pruned file).

    Vectorised: every atom is evaluated for all files at once on the sort keys
    of :func:`~airflow_zorder.core.policy.file_bounds.prepare_bounds` (exact across
    types) or Arrow string kernels (LIKE).  Never prunes a file that could
    match (see the module docstring for the exact rules).
    """
    expr = parse(predicate) if isinstance(predicate, str) else as_expr(predicate)
    ev = _Evaluator(stats_table, nan_semantics, nan_free_columns, explain)
    tree = negation_normal_form(expr)
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


def kept_fractions(
    stats_table: pa.Table,
    predicates: Sequence[Expr],
    *,
    nan_semantics: str = "total",
) -> np.ndarray:
    """The share of files :func:`prune` keeps for each of many ``predicates`` over one stats table: the table's
    columns are read once for all of them (a workload of thousands of queries); NaN for a table without files."""
    ev = _Evaluator(stats_table, nan_semantics, (), False)
    if ev.F == 0:
        return np.full(len(predicates), np.nan)
    trees = [negation_normal_form(as_expr(p)) for p in predicates]
    ev.prime(trees)
    return np.array([ev.eval(t).mean() for t in trees], dtype=np.float64)
