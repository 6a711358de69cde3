"""What a curve's files cost a point query: the expected files read per column when ``k`` files are cut along it.

The incremental rule estimates a rewrite's result with it, and picks the file count the curve cuts best: a
Hilbert or Z-order curve cut into ``2 ** (d * j)`` files gives a perfect grid, other counts give files that
straddle the curve's cells (Z-order on 3 columns: 32 files read 1.59x the ideal in the worst column, 64 files
1.0x).  Measured, not modelled: uniform rows cut by the job's own key plan (:func:`curve_keys.build_plan`), so
the figures follow the curve's code.  Measuring costs ~0.1 s per count, so the counts a plan usually compares
(every count up to 128, the powers of two to 16,384 and 8 counts an octave between them, on 2-4 columns) ship
measured in ``curve_cost.json``; others are measured when asked and cached for the process.  Regenerate the
file after a change to the curves:

    .venv/bin/python -m airflow_zorder.core.layout.curve_cost
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pyarrow as pa

from airflow_zorder.core.errors import InvalidInputError
from airflow_zorder.core.layout import curve_keys, curves

__all__ = ["best_count", "files_read", "preferred_counts"]

_DOMAIN = 1 << 20
_ROWS_PER_FILE, _ROWS = 1_000, (20_000, 100_000)  # rows cut per measurement: 1,000 a file, clipped (~0.1 s) ...
_MIN_ROWS_PER_FILE = 20  # ... and beyond 100 files this many a file (the widths are corrected for the sample)
_SEARCH_ALL = 128  # preferred_counts: every count up to this many files, beyond it the powers of two
_BOUND_SLACK = 1e-4  # preferred_counts: a mean file within 0.01% of a bound is within it (sizes are estimates)
_TABLE = Path(__file__).with_name("curve_cost.json")
_TABLE_DIMS, _TABLE_MAX_POWER = (2, 3, 4), 14  # shipped: d = 2..4, k <= 128 and the powers of two to 2 ** 14


@functools.cache
def _table() -> dict[str, list[float]]:
    """The shipped measurements, ``"curve/d/k" -> files read per column`` (empty when the file is missing)."""
    return json.loads(_TABLE.read_text()) if _TABLE.exists() else {}


@functools.lru_cache(maxsize=4096)
def _measure(curve: str, k: int, d: int) -> tuple[float, ...]:
    n = max(k * _MIN_ROWS_PER_FILE, min(max(k * _ROWS_PER_FILE, _ROWS[0]), _ROWS[1]))  # k = 2048: 40,960 rows
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
    # m uniform draws span (m - 1) / (m + 1) of their range on average: scale the widths back
    m = np.bincount(fid, minlength=k)[used].astype(np.float64)[:, None]
    widths = (hi[used] - lo[used] + 1) / _DOMAIN * np.where(m > 1, (m + 1) / np.maximum(m - 1, 1), 1.0)
    return tuple(float(x) for x in np.minimum(widths, 1.0).sum(axis=0))


def files_read(curve: str, k: int, d: int) -> np.ndarray:
    """Expected files a point query on each of ``d`` columns (in the curve's column order) reads among ``k``
    files cut along ``curve`` from data spread evenly over those columns; the ideal is ``k ** (1 - 1/d)``."""
    if curve not in curves.CURVES:
        raise InvalidInputError(f"unknown curve {curve!r}: use one of {', '.join(curves.CURVES)}")
    if k < 1 or d < 1:
        raise ValueError(f"k and d must be >= 1, not {k!r} and {d!r}")
    if k == 1:
        return np.ones(d)
    if d == 1:  # a sort: each file holds one slice of the range
        return np.full(1, 1.0 + (k - 1) / _DOMAIN)
    k = int(k)
    if k > _SEARCH_ALL and k & (k - 1) and k <= 1 << _TABLE_MAX_POWER:  # between the shipped powers of two
        g = min(_grid_counts(), key=lambda g: abs(np.log(k / g)))
        return _exact(curve, g, d) * (k / g) ** (1.0 - 1.0 / d)
    return _exact(curve, k, d)


def _exact(curve: str, k: int, d: int) -> np.ndarray:
    """Files read at exactly ``k`` files: shipped, or measured now (cached)."""
    shipped = _table().get(f"{curve}/{d}/{k}")
    return np.array(shipped if shipped is not None else _measure(curve, k, d))


@functools.cache
def _grid_counts() -> tuple[int, ...]:
    """Counts between the powers of two beyond 128 files, 8 an octave, none a power of two: a count there costs
    what its nearest grid count costs, scaled by ``(k / g) ** (1 - 1/d)`` (a measurement takes ~0.15 s a count,
    and a plan compares hundreds of large counts)."""
    low = _SEARCH_ALL.bit_length() - 1
    return tuple(round(2 ** (low + (i + 0.5) / 8)) for i in range(8 * (_TABLE_MAX_POWER - low)))


def preferred_counts(exact: float, low: float = 0.8, high: float = 1.1) -> list[int]:
    """File counts worth comparing for ``exact`` target-sized files, each keeping the mean file within ``[low,
    high]`` x the target: all of them up to 128 files; beyond, the nearest and the powers of two (the counts a
    curve cuts on its cells' edges), so that a large rewrite measures a few counts, not hundreds."""
    nearest = max(1, int(np.floor(exact + 0.5)))
    out = {nearest}
    lo, hi = exact / high * (1 - _BOUND_SLACK), exact / low * (1 + _BOUND_SLACK)
    first, last = max(1, int(np.ceil(lo))), int(np.floor(hi))
    if last <= _SEARCH_ALL:
        return sorted(out | set(range(first, last + 1)))
    j = 1
    while j <= hi:
        if j >= lo:
            out.add(j)
        j *= 2
    return sorted(out)


def best_count(exact: float, score: Callable[[int], float]) -> int:
    """Of :func:`preferred_counts` for ``exact`` target-sized files, the count with the least ``score`` (the worst
    column's files read over ``k ** (1 - 1/d)``); a tie within 1e-9 goes to the count nearest ``exact``."""
    best: tuple[float, int] | None = None
    for k in sorted(preferred_counts(exact), key=lambda k: (abs(k - exact), k)):
        s = score(k)
        if best is None or s < best[0] - 1e-9:
            best = (s, k)
    assert best is not None
    return best[1]


def _table_counts() -> list[int]:
    """The counts the shipped table holds: every one up to 128, then the powers of two and the grid between."""
    powers = [1 << j for j in range(_SEARCH_ALL.bit_length(), _TABLE_MAX_POWER + 1)]
    return sorted({*range(2, _SEARCH_ALL + 1), *powers, *_grid_counts()})


def write_table(path: Path = _TABLE) -> int:
    """Measure every shipped count and write the table; returns the entries written."""
    out = {
        f"{curve}/{d}/{k}": [round(x, 6) for x in _measure(curve, k, d)]
        for curve in curves.CURVES
        for d in _TABLE_DIMS
        for k in _table_counts()
    }
    path.write_text(json.dumps(out, separators=(",", ":"), sort_keys=True) + "\n")
    return len(out)


if __name__ == "__main__":
    print(f"{write_table()} measurements written to {_TABLE}")
