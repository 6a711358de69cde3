"""Curve keys for clustering: sampled range boundaries -> per-column range ids -> curve key bytes.

One `KeyPlan` is built on the Spark driver from a small sample and shipped to the
executors, where `compute_keys` and `file_ids` run vectorised on Arrow batches.
The same functions run on the driver over the sample, so the file boundaries are
quantiles of exactly the keys the executors will compute.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from airflow_zorder.core.errors import InvalidInputError
from airflow_zorder.core.layout import curves, ranges

DEFAULT_SALT_BITS = 16
MAX_BITS_PER_COLUMN = 16


@dataclass(frozen=True)
class KeyPlan:
    """Everything an executor needs to turn clustering-column values into a curve key and a file id."""

    curve: str
    columns: tuple[str, ...]
    boundaries: tuple[pa.Array, ...]
    positions: tuple[np.ndarray, ...]  # per column: range id -> curve coordinate (uint64, < 2**bits)
    bits: int
    salt_bits: int
    file_bounds: np.ndarray  # sorted keys as_sortable(); file id = number of bounds <= key
    slots: tuple[int, ...] | None = None  # per column: its place in the curve's column order (None: the columns')

    @property
    def num_files(self) -> int:
        """Number of output files (ranges of the curve) this plan routes rows to."""
        return len(self.file_bounds) + 1

    @property
    def key_width(self) -> int:
        """Bytes per key: the curve bytes plus the salt bytes below them."""
        return curves.key_width(len(self.columns), self.bits) + (self.salt_bits + 7) // 8

    def describe(self) -> dict[str, object]:
        """A JSON-friendly summary for the job's result."""
        return {
            "curve": self.curve,
            "columns": list(self.columns),
            "ranges_per_column": {c: ranges.num_ids(b) for c, b in zip(self.columns, self.boundaries)},
            "bits_per_column": self.bits,
            "salt_bits": self.salt_bits,
            "key_bytes": self.key_width,
            "num_files": self.num_files,
            **(
                {}
                if self.slots is None
                else {"curve_order": [self.columns[self.slots.index(i)] for i in range(len(self.columns))]}
            ),
        }

    def slot(self, j: int) -> int:
        """Where column ``j`` sits in the curve's column order (slot 0: its top bits come first)."""
        return j if self.slots is None else self.slots[j]


def curve_slots(columns: Sequence[str], order: Sequence[str] | None) -> tuple[int, ...] | None:
    """Each column's place in the curve when the columns ``order`` (a subset, case-insensitive) come in that order.

    The ordered columns take the places they hold in ``columns`` among themselves, in their new order; the rest
    keep theirs.  A rule may orient groups of one table apart (:mod:`airflow_zorder.core.policy.incremental`): a
    curve reads unequal files per column, and groups oriented apart even out the columns' sums.  None: unchanged.
    """
    if not order:
        return None
    lower = [c.lower() for c in columns]
    picked = [lower.index(c.lower()) if c.lower() in lower else -1 for c in order]
    if -1 in picked or len(set(picked)) != len(picked):
        missing = [c for c, i in zip(order, picked) if i < 0]
        raise InvalidInputError(
            f"curve order {list(order)} must name distinct clustering columns ({', '.join(columns)})"
            + (f"; not one: {', '.join(missing)}" if missing else "")
        )
    slots = list(range(len(columns)))
    for place, j in zip(sorted(picked), picked):
        slots[j] = place
    return None if slots == list(range(len(columns))) else tuple(slots)


def column_boundaries(
    sample: pa.Table, columns: Sequence[str], num_ranges: int = ranges.DEFAULT_NUM_RANGES
) -> tuple[pa.Array, ...]:
    """Per clustering column, the sample-quantile range boundaries a plan uses."""
    return tuple(ranges.compute_boundaries(sample.column(c), num_ranges) for c in columns)


def plan_bits(boundaries: Sequence[pa.Array]) -> int:
    """Bits per column a plan with these boundaries needs (one more than its most ranges take)."""
    most = max(ranges.num_ids(b) for b in boundaries)
    return max(1, min(MAX_BITS_PER_COLUMN, ranges.bits_for(most) + 1))


def mass_positions(sample_ids: np.ndarray, num_ids: int, bits: int) -> np.ndarray:
    """Curve coordinate of each range id: the midpoint of its share of the sample's rows.

    Spreading ids by row mass (not by id count) keeps the curve balanced on skewed
    columns: when one value holds 25% of rows, the column's top bit still splits the
    rows in half instead of putting nearly everything in the lower half. Adding the id
    itself keeps the mapping strictly increasing, so distinct ranges never merge.
    """
    counts = np.bincount(sample_ids.astype(np.int64), minlength=num_ids).astype(np.float64)
    total = counts.sum()
    spare = (1 << bits) - num_ids
    if total == 0 or spare <= 0:
        return ranges.scale_ids(np.arange(num_ids), num_ids, bits)
    mid = (np.cumsum(counts) - counts / 2.0) / total
    return (np.minimum(np.floor(mid * spare), spare - 1) + np.arange(num_ids)).astype(np.uint64)


def _salt_bytes(salt: pa.Array | np.ndarray | None, n: int, salt_bits: int) -> np.ndarray:
    """Big-endian salt bytes (n, ceil(salt_bits/8)) from the low bits of a row hash."""
    nbytes = (salt_bits + 7) // 8
    if nbytes == 0:
        return np.zeros((n, 0), dtype=np.uint8)
    if salt is None:
        raise ValueError("this key plan uses a salt: pass the row hash column")
    raw = salt.to_numpy(zero_copy_only=False) if isinstance(salt, (pa.Array, pa.ChunkedArray)) else salt
    values = np.asarray(raw).astype(np.int64, copy=False).view(np.uint64) & np.uint64((1 << salt_bits) - 1)
    be = values.astype(">u8").view(np.uint8).reshape(n, 8)
    return be[:, 8 - nbytes :]


def compute_keys(
    plan: KeyPlan,
    values: Sequence[pa.Array],
    salt: pa.Array | np.ndarray | None,
    range_ids: Sequence[np.ndarray] | None = None,
) -> np.ndarray:
    """Key bytes (n, key_width) for one batch: range ids, scaled, curve-encoded, salt appended.

    ``range_ids``: each column's ``ranges.range_ids`` of ``values`` when already known.
    """
    if len(values) != len(plan.columns):
        raise ValueError(f"expected {len(plan.columns)} columns, got {len(values)}")
    n = len(values[0])
    ids = np.empty((n, len(plan.columns)), dtype=np.uint64)
    for j, (arr, bounds) in enumerate(zip(values, plan.boundaries)):
        ids[:, plan.slot(j)] = plan.positions[j][ranges.range_ids(arr, bounds) if range_ids is None else range_ids[j]]
    curve_bytes = curves.curve_keys(plan.curve, ids, plan.bits)
    if plan.salt_bits == 0:
        return np.ascontiguousarray(curve_bytes)
    return np.ascontiguousarray(np.hstack([curve_bytes, _salt_bytes(salt, n, plan.salt_bits)]))


def is_compact(plan: KeyPlan) -> bool:
    """Keys of at most 8 bytes travel as one 64-bit integer: cheaper to shuffle, sort and search."""
    return plan.key_width <= 8


def as_sortable(keys: np.ndarray) -> np.ndarray:
    """Keys in a numpy form that sorts like their bytes: uint64 for <= 8 bytes, else fixed-width bytes."""
    keys = np.ascontiguousarray(keys, dtype=np.uint8)
    n, w = keys.shape
    if w <= 8:
        padded = np.zeros((n, 8), dtype=np.uint8)
        padded[:, 8 - w :] = keys
        return padded.view(">u8").reshape(n).astype(np.uint64)
    return keys.view(f"S{w}").reshape(n)


def to_signed(sortable: np.ndarray) -> np.ndarray:
    """uint64 keys as int64 with the same order (sign bit flipped), for a Spark LongType column."""
    return (sortable ^ np.uint64(1 << 63)).view(np.int64)


def file_ids(plan: KeyPlan, keys: np.ndarray) -> np.ndarray:
    """Output file of each key: its position among the plan's sorted file boundaries."""
    if plan.num_files == 1:
        return np.zeros(keys.shape[0], dtype=np.int32)
    return np.searchsorted(plan.file_bounds, as_sortable(keys), side="right").astype(np.int32)


def _words(keys: np.ndarray) -> np.ndarray:
    """(n, w) key bytes -> (n, m) big-endian uint64 words (right-padded with zeros: order kept)."""
    n, w = keys.shape
    m = max(1, (w + 7) // 8)
    padded = np.zeros((n, m * 8), dtype=np.uint8)
    padded[:, :w] = keys
    return padded.view(">u8").reshape(n, m).astype(np.uint64)


def _msb(x: np.ndarray) -> np.ndarray:
    """Index of the highest set bit of each uint64 (x > 0)."""
    out = np.zeros(x.shape, dtype=np.int64)
    x = x.copy()
    for shift in (32, 16, 8, 4, 2, 1):
        big = x >= (np.uint64(1) << np.uint64(shift))
        out[big] += shift
        x[big] >>= np.uint64(shift)
    return out


def aligned_bounds(sorted_keys: np.ndarray, num_files: int, tolerance: float = 0.2) -> np.ndarray:
    """File boundaries (as key bytes) near the sample quantiles, snapped to coarse curve cells.

    Plain quantiles cut the curve anywhere, so a file straddling two large cells spans
    the whole range of the curve's lowest-order column inside them. Within +-tolerance
    of each quantile we cut where neighbouring keys differ at the highest bit, and place
    the boundary on the cell edge there (the key with the bits below cleared).
    """
    n, w = sorted_keys.shape
    words = _words(sorted_keys)
    m = words.shape[1]
    diff = words[1:] ^ words[:-1]  # pair j-1, j  -> index j-1
    nz = diff != 0
    has = nz.any(axis=1)
    q = np.argmax(nz, axis=1)
    top = diff[np.arange(n - 1), q]
    score = np.where(has, (m - 1 - q) * 64 + _msb(np.where(has, top, np.uint64(1))), -1)
    half = max(1, int(tolerance * n / num_files))
    out = np.zeros((num_files - 1, w), dtype=np.uint8)
    for k in range(1, num_files):
        target = (k * n) // num_files
        lo, hi = max(1, target - half), min(n - 1, target + half)
        if lo > hi:
            j = min(max(target, 1), n - 1)
        else:
            cand = np.arange(lo, hi + 1)
            s = score[cand - 1]
            best = s.max()
            j = int(cand[s == best][np.argmin(np.abs(cand[s == best] - target))]) if best >= 0 else target
        jj = min(max(j, 1), n - 1)
        b_words = words[jj].copy()
        if score[jj - 1] >= 0:
            qj = int(q[jj - 1])
            bit = int(score[jj - 1] - (m - 1 - qj) * 64)
            b_words[qj] &= ~np.uint64((1 << bit) - 1) if bit < 64 else np.uint64(0)
            b_words[qj + 1 :] = 0
        out[k - 1] = b_words.astype(">u8").view(np.uint8)[:w]
    return out


def build_plan(
    sample: pa.Table,
    columns: Sequence[str],
    curve: str,
    num_files: int,
    num_ranges: int = ranges.DEFAULT_NUM_RANGES,
    salt_bits: int = DEFAULT_SALT_BITS,
    salt_column: str | None = None,
    min_bits: int = 1,
    boundaries: Sequence[pa.Array] | None = None,
    order: Sequence[str] | None = None,
) -> KeyPlan:
    """Build a plan from a sample of the clustering columns (and the row-hash column used as salt).

    Boundaries per column are sample quantiles; file boundaries are quantiles of the
    sample's own keys, so every output file receives about the same number of rows.
    ``order``: the curve's column order (see :func:`curve_slots`; None: ``columns``').
    """
    if curve not in curves.CURVES:
        raise InvalidInputError(f"unknown curve {curve!r}: use one of {', '.join(curves.CURVES)}")
    if num_files < 1:
        raise ValueError(f"num_files must be >= 1, got {num_files}")
    if not 0 <= salt_bits <= 32:
        raise ValueError(f"salt_bits must be between 0 and 32, got {salt_bits}")
    cols = tuple(columns)
    slots = curve_slots(cols, order)
    bounds = tuple(boundaries) if boundaries is not None else column_boundaries(sample, cols, num_ranges)
    bits = max(plan_bits(bounds), min(int(min_bits), MAX_BITS_PER_COLUMN))
    rids = [ranges.range_ids(sample.column(c), b) for c, b in zip(cols, bounds)]
    positions = tuple(mass_positions(r, ranges.num_ids(b), bits) for r, b in zip(rids, bounds))
    partial = KeyPlan(curve, cols, bounds, positions, bits, salt_bits, np.zeros(0, dtype=np.uint64), slots)
    if num_files == 1 or sample.num_rows == 0:
        return partial
    salt = sample.column(salt_column) if (salt_bits and salt_column) else None
    if salt_bits and salt is None:
        raise ValueError("salt_bits > 0 needs the sample's row-hash column (salt_column)")
    keys = compute_keys(
        partial,
        [sample.column(c).combine_chunks() for c in cols],
        salt.combine_chunks() if salt is not None else None,
        rids,
    )
    ordered = keys[np.argsort(as_sortable(keys), kind="stable")]
    file_bounds = np.sort(as_sortable(aligned_bounds(ordered, num_files)))
    return KeyPlan(curve, cols, bounds, positions, bits, salt_bits, file_bounds, slots)
