"""What a curve's files cost a point query: the expected files read per column when ``k`` files are cut along it.

The incremental rule estimates a rewrite's result with it, and picks the file count the curve cuts best: a
Hilbert or Z-order curve cut into ``2 ** (d * j)`` files gives a perfect grid, other counts give files that
straddle the curve's cells (Z-order on 3 columns: 32 files read 1.59x the ideal in the worst column, 64 files
1.0x).  Measured, not modelled: uniform rows cut by the job's own key plan (:func:`curve_keys.build_plan`), so
the figures follow the curve's code.
"""

from __future__ import annotations

import functools

import numpy as np
import pyarrow as pa

from airflow_zorder.core.layout import curve_keys, curves

__all__ = ["files_read", "preferred_counts"]

_DOMAIN = 1 << 20
_ROWS_PER_FILE, _ROWS = 1_000, (20_000, 100_000)  # rows cut per measurement: 1,000 a file, clipped (~0.1 s) ...
_MIN_ROWS_PER_FILE = 100  # ... but never fewer than this a file
_SEARCH_ALL = 128  # preferred_counts: every count up to this many files, beyond it the powers of two


@functools.lru_cache(maxsize=4096)
def _measure(curve: str, k: int, d: int) -> tuple[float, ...]:
    n = max(k * _MIN_ROWS_PER_FILE, min(max(k * _ROWS_PER_FILE, _ROWS[0]), _ROWS[1]))
    rows = np.random.default_rng([k, d]).integers(0, _DOMAIN, (n, d))
    names = [f"c{j}" for j in range(d)]
    table = pa.table({c: rows[:, j] for j, c in enumerate(names)})
    plan = curve_keys.build_plan(table, names, curve, k, salt_bits=0)
    keys = curve_keys.compute_keys(plan, [table.column(c).combine_chunks() for c in names], None)
    fid = curve_keys.file_ids(plan, keys)
    lo = np.full((k, d), np.inf)
    hi = np.full((k, d), -np.inf)
    for j in range(d):
        np.minimum.at(lo[:, j], fid, rows[:, j])
        np.maximum.at(hi[:, j], fid, rows[:, j])
    used = np.isfinite(lo[:, 0])
    return tuple(float(x) for x in ((hi[used] - lo[used] + 1) / _DOMAIN).sum(axis=0))


def files_read(curve: str, k: int, d: int) -> np.ndarray:
    """Expected files a point query on each of ``d`` columns (in the curve's column order) reads among ``k``
    files cut along ``curve`` from data spread evenly over those columns; the ideal is ``k ** (1 - 1/d)``."""
    if curve not in curves.CURVES:
        raise ValueError(f"unknown curve {curve!r}: use one of {', '.join(curves.CURVES)}")
    if k < 1 or d < 1:
        raise ValueError(f"k and d must be >= 1, not {k!r} and {d!r}")
    if k == 1:
        return np.ones(d)
    if d == 1:  # a sort: each file holds one slice of the range
        return np.full(1, 1.0 + (k - 1) / _DOMAIN)
    return np.array(_measure(curve, int(k), int(d)))


def preferred_counts(exact: float, low: float = 0.8, high: float = 1.1) -> list[int]:
    """File counts worth comparing for ``exact`` target-sized files, each keeping the mean file within ``[low,
    high]`` x the target: all of them up to 128 files; beyond, the nearest and the powers of two (the counts a
    curve cuts on its cells' edges), so that a large rewrite measures a few counts, not hundreds."""
    nearest = max(1, int(np.floor(exact + 0.5)))
    out = {nearest}
    first, last = max(1, int(np.ceil(exact / high - 1e-9))), int(np.floor(exact / low + 1e-9))
    if last <= _SEARCH_ALL:
        return sorted(out | set(range(first, last + 1)))
    j = 1
    while j <= exact / low:
        if j >= exact / high:
            out.add(j)
        j *= 2
    return sorted(out)
