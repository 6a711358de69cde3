"""How much of a column a filter selects, estimated from the table's statistics (no data read).

Each file's rows are taken as spread evenly between its column's min and max, so the share of the table's rows
below a value is the sum over files of ``rows * clip((v - min) / (max - min), 0, 1)``: exact for a table clustered
on the column (narrow files), the uniform assumption over the column's range for a table that is not. A point
(``=``, each ``IN`` value) selects the rows of the files holding only that value, and at least one of the
column's values when it has few (:func:`_distinct`). What a filter costs after clustering is that share plus one file slice
per separate piece it asks for (:mod:`~airflow_zorder.core.policy.clustered_reads`), so a filter is reduced to
``(share, pieces)``; a filter it cannot read (``!=``, ``NOT``, ``IS NULL``, ``LIKE`` not a prefix) selects
everything (``(1, 0)``, the column does not help it).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from airflow_zorder.core.skipping.predicates import And, Compare, Expr, In, Like, Or, like_prefix
from airflow_zorder.core.stats import stats_schema

__all__ = ["ColumnProfile", "UNRESTRICTED", "profiles", "restriction"]

UNRESTRICTED = (1.0, 0.0)  # (share of rows, pieces): a filter the column cannot serve
_PREFIX_BYTES = 7  # strings compare on this many leading bytes, as one integer (exact in a float64)
_BLOCK = 2048  # values per block of the (values x files) share computation
_MAX_DISTINCT = 1 << 20  # a discrete column's range up to this many values bounds a value's share of the rows
_FEW_VALUES = 10  # the values a column whose files all share a few bounds is taken to hold


@dataclass(frozen=True)
class ColumnProfile:
    """One column as the statistics describe it: per-file bounds as numbers, rows per file, distinct bounds."""

    name: str
    type: pa.DataType
    lo: np.ndarray  # float64 per file with usable bounds
    hi: np.ndarray
    rows: np.ndarray  # their row counts
    unknown_rows: float  # rows of files without usable bounds (they may hold any value)
    total_rows: float
    distinct: int | None  # about this many distinct values, when few (:func:`_distinct`)

    def numbers(self, values: list[Any]) -> np.ndarray:
        """``values`` (a filter's literals) on the column's number line; NaN where one does not convert."""
        return _numbers(values, self.type)

    def below(self, x: np.ndarray) -> np.ndarray:
        """Share of the table's rows below each of ``x`` (numbers of :meth:`numbers`)."""
        out = np.empty(x.shape[0])
        width = np.maximum(self.hi - self.lo, 0.0)
        for i in range(0, x.shape[0], _BLOCK):
            v = x[i : i + _BLOCK, None]
            with np.errstate(invalid="ignore", divide="ignore"):
                part = np.where(width > 0, (v - self.lo) / np.where(width > 0, width, 1.0), (v > self.lo) * 1.0)
            out[i : i + _BLOCK] = np.clip(part, 0.0, 1.0) @ self.rows
        return out / max(self.total_rows, 1.0)

    def point_share(self, x: np.ndarray) -> np.ndarray:
        """Share of rows equal to each of ``x``: its constant files' rows, or one of few distinct values."""
        const = self.lo == self.hi
        out = np.array([self.rows[const & (self.lo == v)].sum() for v in x]) / max(self.total_rows, 1.0)
        if self.distinct:
            out = np.maximum(out, 1.0 / self.distinct)
        return out


def profiles(stats: pa.Table, columns: list[str] | None = None) -> dict[str, ColumnProfile]:
    """A :class:`ColumnProfile` per column of a stats snapshot (FILE_STATS_SCHEMA rows), or of ``columns``."""
    out = {}
    for name, rows in stats_schema.split_by_column(stats, ["file_rows"]).items():
        if columns is not None and name not in columns:
            continue
        mins, maxs, has = stats_schema.typed_bounds(rows)
        n_rows = pc.fill_null(rows["file_rows"], 0).to_numpy(zero_copy_only=False).astype(np.float64)
        lo, hi = _numbers(mins, mins.type), _numbers(maxs, maxs.type)
        ok = has & ~np.isnan(lo) & ~np.isnan(hi) & (lo <= hi)
        distinct = _distinct(mins.type, lo[ok], hi[ok])
        out[name] = ColumnProfile(
            name=name,
            type=mins.type,
            lo=lo[ok],
            hi=hi[ok],
            rows=n_rows[ok],
            unknown_rows=float(n_rows[~ok].sum()),
            total_rows=float(n_rows.sum()),
            distinct=distinct,
        )
    return out


def _distinct(type_: pa.DataType, lo: np.ndarray, hi: np.ndarray) -> int | None:
    """About how many values a column holds, when few: an integer, date or boolean column's range says at most
    how many; a column whose files all share a few bounds (every file spans the same few values, the mark of a
    column far poorer than a file's rows: a status, a mode, a flag) holds at least those, taken as
    :data:`_FEW_VALUES` when the bounds cannot say more (a decimal's range in its units caps it)."""
    if lo.size == 0:
        return None
    span = float(hi.max() - lo.min() + 1)
    if pa.types.is_integer(type_) or pa.types.is_date(type_) or pa.types.is_boolean(type_):
        return int(span) if span <= _MAX_DISTINCT else None
    bounds = np.unique(np.concatenate([lo, hi])).size
    if bounds > max(2, lo.size // 8):
        return None
    few = max(bounds, _FEW_VALUES)
    if pa.types.is_decimal(type_):
        few = min(few, int((hi.max() - lo.min()) * 10**type_.scale) + 1)
    return few


def restriction(profile: ColumnProfile, e: Expr) -> tuple[float, float]:
    """``(share of rows, pieces)`` one column's filter selects (the module docstring)."""
    if isinstance(e, Compare):
        if e.op == "=":
            return _points(profile, [e.value])
        if e.op in ("<", "<=", ">", ">="):
            lo, hi = (None, e.value) if e.op in ("<", "<=") else (e.value, None)
            return _interval(profile, lo, hi)
        return UNRESTRICTED
    if isinstance(e, In):
        return _points(profile, [v for v in e.values if v is not None])
    if isinstance(e, Like):
        prefix, kind = like_prefix(e.pattern, e.escape)
        if kind == "exact":
            return _points(profile, [prefix])
        if (
            not prefix
            or kind != "prefix"
            or not pa.types.is_string(profile.type)
            and not pa.types.is_large_string(profile.type)
        ):
            return UNRESTRICTED
        return _interval(profile, prefix, prefix + "\U0010ffff")
    if isinstance(e, And):
        return _and(profile, e)
    if isinstance(e, Or):
        parts = [restriction(profile, c) for c in e.children]
        if any(p == UNRESTRICTED for p in parts):
            return UNRESTRICTED
        return min(1.0, sum(s for s, _ in parts)), sum(k for _, k in parts)
    return UNRESTRICTED


def _and(profile: ColumnProfile, e: And) -> tuple[float, float]:
    """Conjuncts on one column: their bounds intersected into one interval, or the narrowest part."""
    lo = hi = None
    lo_x, hi_x = -np.inf, np.inf
    rest: list[tuple[float, float]] = []
    for c in e.children:
        if isinstance(c, Compare) and c.op in ("<", "<=", ">", ">="):
            x = profile.numbers([c.value])[0]
            if np.isnan(x):
                continue
            if c.op in (">", ">=") and x > lo_x:
                lo, lo_x = c.value, x
            elif c.op in ("<", "<=") and x < hi_x:
                hi, hi_x = c.value, x
        else:
            rest.append(restriction(profile, c))
    if lo is not None or hi is not None:
        rest.append(_interval(profile, lo, hi))
    return min(rest, key=lambda p: p[0] + p[1] * 1e-3) if rest else UNRESTRICTED


def _interval(profile: ColumnProfile, lo: Any, hi: Any) -> tuple[float, float]:
    xs = profile.numbers([lo if lo is not None else None, hi if hi is not None else None])
    a = 0.0 if lo is None or np.isnan(xs[0]) else float(profile.below(xs[:1])[0])
    b = 1.0 if hi is None or np.isnan(xs[1]) else float(profile.below(xs[1:])[0])
    share = max(b - a, 0.0) + profile.unknown_rows / max(profile.total_rows, 1.0)
    return min(share, 1.0), 1.0


def _points(profile: ColumnProfile, values: list[Any]) -> tuple[float, float]:
    if not values:
        return 0.0, 0.0
    xs = profile.numbers(values)
    xs = xs[~np.isnan(xs)]
    if xs.size == 0:
        return UNRESTRICTED
    share = float(profile.point_share(xs).sum()) + profile.unknown_rows / max(profile.total_rows, 1.0)
    return min(share, 1.0), float(xs.size)


def _numbers(values: Any, type_: pa.DataType) -> np.ndarray:
    """Values of a column of ``type_`` on one number line (order kept): numbers as floats, dates in days,
    times and timestamps in their unit, strings and binary as their first bytes; NaN where none."""
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    if not isinstance(values, pa.Array):
        values = _arrow(list(values), type_)
    if len(values) == 0:
        return np.zeros(0)
    t = values.type
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return np.array(
            [
                np.nan
                if v is None
                else float(
                    int.from_bytes(
                        (v.encode() if isinstance(v, str) else v)[:_PREFIX_BYTES].ljust(_PREFIX_BYTES, b"\0")
                    )
                )
                for v in values.to_pylist()
            ]
        )
    if pa.types.is_date(t):
        values = values.cast(pa.date32()).cast(pa.int32())
    elif pa.types.is_timestamp(t) or pa.types.is_time(t) or pa.types.is_duration(t):
        values = values.cast(pa.int64())
    elif pa.types.is_boolean(t):
        values = values.cast(pa.int8())
    try:
        return pc.cast(values, pa.float64()).to_numpy(zero_copy_only=False).astype(np.float64)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
        return np.full(len(values), np.nan)


def _arrow(values: list[Any], type_: pa.DataType) -> pa.Array:
    """Literals as an array of the column's type (text parsed as the type, as engines cast it); None-filled
    where a literal does not convert."""
    out = []
    for v in values:
        if v is None:
            out.append(None)
            continue
        try:
            if isinstance(v, str) and not (pa.types.is_string(type_) or pa.types.is_large_string(type_)):
                out.append(pa.array([v]).cast(type_)[0].as_py())
            elif isinstance(v, (Decimal, float, int)) and pa.types.is_decimal(type_):
                out.append(Decimal(str(v)))
            elif isinstance(v, dt.datetime) and pa.types.is_date(type_):
                out.append(v.date())
            else:
                out.append(v)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError, ValueError):
            out.append(None)
    try:
        return pa.array(out, type_)
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, OverflowError, TypeError):
        return pa.nulls(len(out), type_)
