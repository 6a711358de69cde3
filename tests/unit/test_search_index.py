"""Bucketed start points (core.search_index): the bucketed count equals a plain count of boundaries <= value."""

from __future__ import annotations

import numpy as np
from hypothesis import example, given, settings
from hypothesis import strategies as st

from airflow_zorder.core.layout import search_index

INT64 = st.integers(min_value=search_index.INT64_MIN, max_value=search_index.INT64_MAX)


def _check(per_unit: dict[int, np.ndarray], values: np.ndarray) -> search_index.SearchIndex:
    ix = search_index.build(per_unit, max(per_unit) + 1)
    assert ix is not None
    for u, b in per_unit.items():
        got = search_index.count_le(ix, u, b, values)
        assert (got == np.searchsorted(b, values, side="right")).all()
    return ix


@settings(max_examples=300, deadline=None)
@example([[-1, 15 << 59, search_index.INT64_MAX]], [])  # INT64_MAX shares the top bucket: probes must count it
@given(st.lists(st.lists(INT64, min_size=1, max_size=300), min_size=1, max_size=3), st.lists(INT64, max_size=200))
def test_equals_plain_count_for_any_int64_boundaries(units, extra):
    per_unit = {u: np.sort(np.asarray(b, dtype=np.int64)) for u, b in enumerate(units)}
    probe = [search_index.INT64_MIN, search_index.INT64_MAX, *extra]
    for b in per_unit.values():  # each boundary and its neighbours, without int64 wrap-around
        probe += [
            int(x) + d for x in b for d in (-1, 0, 1) if search_index.INT64_MIN <= int(x) + d <= search_index.INT64_MAX
        ]
    _check(per_unit, np.asarray(probe, dtype=np.int64))


def test_uniform_keys_need_few_probes_and_skew_falls_back_to_more():
    rng = np.random.default_rng(3)
    uniform = np.unique(rng.integers(1, 200_001, 1024))  # like sampled l_partkey boundaries
    ix = _check({0: uniform}, rng.integers(-5, 200_010, 20_000))
    assert ix.probes <= 3 < search_index.MAX_BUCKET_BITS  # vs 11 steps of a plain binary search
    heavy = np.sort(np.concatenate([np.zeros(900, np.int64), rng.integers(0, 2**62, 100)]))
    ix = _check({0: heavy}, np.concatenate([heavy, rng.integers(-10, 10, 1000)]))
    assert ix.probes >= 10  # 900 equal boundaries share one bucket: the caller keeps the plain search


def test_units_share_one_bucket_width_within_the_table_budget():
    rng = np.random.default_rng(5)
    per_unit = {u: np.sort(rng.integers(u * 10**6, u * 10**6 + 5000, 300)) for u in range(64)}
    ix = _check(per_unit, rng.integers(0, 64 * 10**6, 5000))
    assert len(per_unit) << ix.bucket_bits <= 1 << search_index.TABLE_BUDGET_BITS
    assert search_index.build({0: np.array([], dtype=np.int64)}, 1) is None
