"""Bucketed start points for counting sorted integer boundaries <= a value in a few probes.

The JVM key engine turns each clustering value into a range id = the number of the unit's
sorted range boundaries <= the value. A plain branchless binary search over 1,024
boundaries costs 11 dependent probes per column per row; with this index it is one table
lookup plus a probe or two: the value's bucket (its top bits, ``value >> shift``, clamped to
the unit's 2**bucket_bits buckets) gives the count of boundaries below the bucket, and a
short binary search over the few boundaries inside the bucket finishes it.

Everything is integer arithmetic that cannot overflow 64 bits (shifts, clamps, then one
subtraction of the clamp's lower end), so it runs as ANSI-mode Spark expressions. Pure
numpy here; :func:`count_le` is the reference the Spark expressions must equal.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1
MAX_BUCKET_BITS = 13  # 8,192 buckets per unit: 8 per boundary at the default 1,024 ranges
TABLE_BUDGET_BITS = 18  # at most 2**18 start counts over all units of a batch (2 MiB of plan literal)


@dataclass(frozen=True)
class SearchIndex:
    """Per unit: the first bucket and 2**bucket_bits start counts; ``probes`` steps finish any bucket."""

    shift: int  # a value's bucket is value >> shift
    bucket_bits: int
    lo: dict[int, int]  # per unit: bucket number of its smallest boundary (bucket 0 of its table)
    starts: dict[int, np.ndarray]  # per unit: int64[2**bucket_bits], boundaries < each bucket's first value
    probes: int  # 2**probes > the most boundaries any one bucket holds

    @property
    def num_buckets(self) -> int:
        return 1 << self.bucket_bits

    def hi(self, unit: int) -> int:
        """Bucket number of the unit's last table entry (values above it clamp to it); never past int64."""
        return min(self.lo[unit] + self.num_buckets - 1, INT64_MAX >> self.shift)


def _span(per_unit: Mapping[int, np.ndarray], shift: int) -> int:
    """Most buckets of width 2**shift that one unit's boundaries spread over."""
    return max((int(b[-1]) >> shift) - (int(b[0]) >> shift) + 1 for b in per_unit.values())


def build(per_unit: Mapping[int, Sequence[int]], num_units: int) -> SearchIndex | None:
    """The index over each unit's sorted int64 boundaries; None when a unit has none (nothing to search)."""
    bounds = {u: np.asarray(v, dtype=np.int64) for u, v in per_unit.items()}
    if not bounds or any(len(b) == 0 for b in bounds.values()):
        return None
    longest = max(len(b) for b in bounds.values())
    unit_bits = max(0, int(num_units) - 1).bit_length()
    bucket_bits = max(1, min(MAX_BUCKET_BITS, (8 * longest - 1).bit_length(), TABLE_BUDGET_BITS - unit_bits))
    shift = 0
    while _span(bounds, shift) > 1 << bucket_bits:  # smallest bucket width covering every unit's boundaries
        shift += 1
    lo, starts, most = {}, {}, 0
    for u, b in bounds.items():
        lo[u] = int(b[0]) >> shift
        top = INT64_MAX >> shift  # the last bucket any int64 value falls in
        first = [(lo[u] + k) << shift for k in range(1 << bucket_bits) if lo[u] + k <= top]
        s = np.searchsorted(b, np.asarray(first, dtype=np.int64), side="left").astype(np.int64)
        # buckets past the last int64 value never see one: they start after every boundary, so the last real
        # bucket (holding INT64_MAX itself, if it is a boundary) counts all of its boundaries for ``probes``
        s = np.append(s, np.full((1 << bucket_bits) - len(s), len(b), dtype=np.int64))
        inside = np.diff(np.append(s, len(b)))
        most = max(most, int(inside.max()))
        starts[u] = s
    return SearchIndex(shift, bucket_bits, lo, starts, most.bit_length())


def bucket_of(ix: SearchIndex, unit: int, values: np.ndarray) -> np.ndarray:
    """Table slot of each value: its bucket relative to the unit's first, clamped to the table."""
    v = np.asarray(values, dtype=np.int64) >> np.int64(ix.shift)
    return np.clip(v, ix.lo[unit], ix.hi(unit)) - ix.lo[unit]


def count_le(ix: SearchIndex, unit: int, bounds: Sequence[int], values: np.ndarray) -> np.ndarray:
    """Reference: number of ``bounds`` <= each value, found as the Spark expressions find it."""
    b = np.asarray(bounds, dtype=np.int64)
    padded = np.concatenate([[0], b, np.full(1 << ix.probes, INT64_MAX, dtype=np.int64)])  # slot i = i-th bound
    valid = np.concatenate([[False], np.ones(len(b), bool), np.zeros(1 << ix.probes, bool)])
    v = np.asarray(values, dtype=np.int64)
    pos = ix.starts[unit][bucket_of(ix, unit, v)]
    for p in range(ix.probes - 1, -1, -1):
        cand = pos + (1 << p)
        take = valid[cand] & (padded[cand] <= v)
        pos = np.where(take, cand, pos)
    return pos
