"""Tests for airflow_zorder.core.layout.hilbert_table: the state tables give Skilling's Hilbert keys exactly."""

from __future__ import annotations

import numpy as np
import pytest
from hilbertcurve.hilbertcurve import HilbertCurve
from hypothesis import given, settings
from hypothesis import strategies as st

from airflow_zorder.core.layout import hilbert_table
from airflow_zorder.core.layout.curves import hilbert_keys, zorder_keys


def _as_int(keys: np.ndarray, total_bits: int) -> np.ndarray:
    """Big-endian key bytes -> the key's ``total_bits`` as uint64."""
    n, w = keys.shape
    padded = np.zeros((n, 8), dtype=np.uint8)
    padded[:, 8 - w :] = keys
    return padded.view(">u8").ravel().astype(np.uint64) >> np.uint64(8 * w - total_bits)


@settings(max_examples=150, deadline=None)
@given(d=st.integers(2, 4), bits=st.integers(1, 16), seed=st.integers(0, 2**32 - 1))
def test_tables_equal_skilling(d, bits, seed):
    table = hilbert_table.build(d, bits)
    assert table is not None
    ids = np.random.default_rng(seed).integers(0, 1 << bits, size=(300, d), dtype=np.uint64)
    ids[0] = 0
    ids[1] = (1 << bits) - 1  # the corners
    z = _as_int(zorder_keys(ids, bits), d * bits)
    expected = _as_int(hilbert_keys(ids, bits), d * bits)
    assert np.array_equal(hilbert_table.hilbert_from_z(z, table), expected)


@pytest.mark.parametrize("d,bits", [(2, 32), (4, 16)])
def test_full_64_bit_keys(d, bits):
    """Keys using all 64 bits (top bit set): shifts stay unsigned."""
    table = hilbert_table.build(d, bits)
    ids = np.random.default_rng(3).integers(0, 1 << bits, size=(2000, d), dtype=np.uint64)
    ids[0] = (1 << bits) - 1
    got = hilbert_table.hilbert_from_z(_as_int(zorder_keys(ids, bits), 64), table)
    assert np.array_equal(got, _as_int(hilbert_keys(ids, bits), 64))
    curve = HilbertCurve(bits, d)
    assert [int(x) for x in got[:20]] == [curve.distance_from_point([int(v) for v in row]) for row in ids[:20]]


def test_every_point_of_a_small_cube_is_visited_once_in_steps_of_one():
    """d=3, 3 bits: the table order is a Hamiltonian path of unit steps (a Hilbert curve's defining property)."""
    d, bits = 3, 3
    table = hilbert_table.build(d, bits)
    grid = np.array(np.meshgrid(*[np.arange(8)] * 3, indexing="ij"), dtype=np.uint64).reshape(3, -1).T
    h = hilbert_table.hilbert_from_z(_as_int(zorder_keys(grid, bits), d * bits), table)
    assert sorted(h.tolist()) == list(range(8**3))
    path = grid[np.argsort(h)].astype(np.int64)
    assert (np.abs(np.diff(path, axis=0)).sum(axis=1) == 1).all()


def test_table_shapes_and_limits():
    t3 = hilbert_table.build(3, 10)
    assert (t3.levels, t3.first_levels) == (2, 2)  # 48 states x 64 chunks = 3,072 entries: 5 lookups
    assert t3.shifts() == [24, 18, 12, 6, 0]
    assert len(t3.table) <= hilbert_table.MAX_ENTRIES
    assert hilbert_table.build(2, 10).levels == 5
    assert hilbert_table.build(4, 10).levels == 1
    assert hilbert_table.build(5, 10) is None  # 3,840 states: Skilling's steps instead
    assert hilbert_table.build(1, 10) is None
    assert hilbert_table.build(5, 10, max_entries=1 << 17) is not None
