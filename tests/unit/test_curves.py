"""Tests for airflow_zorder.core.layout.curves against pure-Python references and curve properties."""

from __future__ import annotations

import itertools

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hilbertcurve.hilbertcurve import HilbertCurve
from hypothesis import given, settings
from hypothesis import strategies as st

from airflow_zorder.core.layout.curves import (
    CURVES,
    curve_keys,
    hilbert_keys,
    key_width,
    keys_to_arrow,
    linear_keys,
    zorder_keys,
)

# --------------------------------------------------------------------------- helpers


@st.composite
def id_arrays(draw, max_d: int = 16, max_bits: int = 32, max_n: int = 20):
    """(ids, bits) with ids an (n, d) uint64 array of values in [0, 2**bits)."""
    d = draw(st.integers(1, max_d))
    bits = draw(st.integers(1, max_bits))
    n = draw(st.integers(0, max_n))
    values = draw(st.lists(st.lists(st.integers(0, 2**bits - 1), min_size=d, max_size=d), min_size=n, max_size=n))
    return np.array(values, dtype=np.uint64).reshape(n, d), bits


def ref_zorder_bytes(point: list[int], bits: int) -> bytes:
    """Per-point reference: interleave the bit strings, pad with zero bits, big-endian bytes."""
    strings = [format(v, f"0{bits}b") for v in point]
    key = "".join(s[i] for i in range(bits) for s in strings)
    return _bitstring_to_bytes(key)


def ref_linear_bytes(point: list[int], bits: int) -> bytes:
    """Per-point reference: concatenate the bit strings, column 0 first."""
    return _bitstring_to_bytes("".join(format(v, f"0{bits}b") for v in point))


def _bitstring_to_bytes(key: str) -> bytes:
    key += "0" * (-len(key) % 8)
    return int(key, 2).to_bytes(len(key) // 8, "big") if key else b""


def key_ints(keys: np.ndarray, d: int, bits: int) -> list[int]:
    """Curve index of each key row (big-endian bytes, minus the zero padding bits)."""
    pad = 8 * key_width(d, bits) - d * bits
    return [int.from_bytes(row.tobytes(), "big") >> pad for row in keys]


# --------------------------------------------------------------------------- key_width


@pytest.mark.parametrize(
    ("d", "bits", "width"),
    [(1, 1, 1), (1, 8, 1), (1, 9, 2), (3, 10, 4), (2, 32, 8), (16, 32, 64), (3, 3, 2)],
)
def test_key_width(d: int, bits: int, width: int) -> None:
    assert key_width(d, bits) == width


# --------------------------------------------------------------------------- Z-order


@settings(max_examples=300, deadline=None)
@given(id_arrays())
def test_zorder_matches_reference(case) -> None:
    ids, bits = case
    keys = zorder_keys(ids, bits)
    n, d = ids.shape
    assert keys.dtype == np.uint8
    assert keys.shape == (n, key_width(d, bits))
    assert [row.tobytes() for row in keys] == [ref_zorder_bytes([int(v) for v in p], bits) for p in ids]


def test_zorder_known_value() -> None:
    # x = 10b, y = 01b -> x1 y1 x0 y0 = 1 0 0 1, padded to 1001_0000.
    assert zorder_keys(np.array([[0b10, 0b01]]), 2).tolist() == [[0b1001_0000]]
    # 3 columns x 3 bits = 9 bits: all ones -> 0xFF, 0x80 (unused low bits zero).
    assert zorder_keys(np.array([[7, 7, 7]]), 3).tolist() == [[0xFF, 0x80]]


# --------------------------------------------------------------------------- Hilbert


@settings(max_examples=300, deadline=None)
@given(id_arrays())
def test_hilbert_matches_hilbertcurve_package(case) -> None:
    ids, bits = case
    n, d = ids.shape
    keys = hilbert_keys(ids, bits)
    assert keys.dtype == np.uint8
    assert keys.shape == (n, key_width(d, bits))
    curve = HilbertCurve(bits, d)
    pad = 8 * key_width(d, bits) - d * bits
    expected = [
        (curve.distance_from_point([int(v) for v in p]) << pad).to_bytes(key_width(d, bits), "big") for p in ids
    ]
    assert [row.tobytes() for row in keys] == expected


@settings(max_examples=100, deadline=None)
@given(id_arrays(max_d=1))
def test_hilbert_one_column_is_identity(case) -> None:
    ids, bits = case
    assert key_ints(hilbert_keys(ids, bits), 1, bits) == [int(v) for v in ids[:, 0]]


@pytest.mark.parametrize(
    ("d", "bits"),
    [(1, 4), (2, 1), (2, 2), (2, 3), (2, 5), (2, 7), (3, 1), (3, 2), (3, 3), (4, 2), (5, 2)],
)
def test_hilbert_is_a_continuous_bijective_path(d: int, bits: int) -> None:
    cells = np.indices((2**bits,) * d).reshape(d, -1).T  # every cell of the grid
    index = np.array(key_ints(hilbert_keys(cells, bits), d, bits), dtype=object)
    order = np.argsort(index.astype(np.uint64), kind="stable")
    assert sorted(index.tolist()) == list(range(2 ** (d * bits)))
    path = cells[order].astype(np.int64)
    steps = np.abs(np.diff(path, axis=0))
    assert (steps.sum(axis=1) == 1).all(), "consecutive cells must be unit neighbours"
    assert (steps.max(axis=1) == 1).all()


def test_zorder_is_bijective_but_not_continuous() -> None:
    """Sanity check that the adjacency test above can fail: Z-order jumps."""
    d, bits = 2, 3
    cells = np.indices((2**bits,) * d).reshape(d, -1).T
    index = key_ints(zorder_keys(cells, bits), d, bits)
    assert sorted(index) == list(range(2 ** (d * bits)))
    path = cells[np.argsort(index)]
    assert (np.abs(np.diff(path, axis=0)).sum(axis=1) > 1).any()


# --------------------------------------------------------------------------- linear


@settings(max_examples=200, deadline=None)
@given(id_arrays())
def test_linear_matches_reference_and_tuple_order(case) -> None:
    ids, bits = case
    keys = linear_keys(ids, bits)
    rows = [tuple(int(v) for v in p) for p in ids]
    assert [row.tobytes() for row in keys] == [ref_linear_bytes(list(r), bits) for r in rows]
    by_key = sorted(range(len(rows)), key=lambda i: (keys[i].tobytes(), i))
    by_tuple = sorted(range(len(rows)), key=lambda i: (rows[i], i))
    assert by_key == by_tuple


@pytest.mark.parametrize(("d", "bits"), [(3, 30), (5, 13), (16, 32), (2, 32), (3, 22)])
def test_linear_fields_straddling_words(d: int, bits: int) -> None:
    rng = np.random.default_rng(d * 100 + bits)
    ids = rng.integers(0, 2**bits, size=(50, d), dtype=np.uint64)
    ids[0] = 2**bits - 1
    ids[1] = 0
    for curve, ref in (("linear", ref_linear_bytes), ("zorder", ref_zorder_bytes)):
        keys = curve_keys(curve, ids, bits)
        assert [r.tobytes() for r in keys] == [ref([int(v) for v in p], bits) for p in ids]


# --------------------------------------------------------------------------- ordering


@settings(max_examples=200, deadline=None)
@given(id_arrays(max_n=30), st.sampled_from(CURVES))
def test_byte_order_equals_numeric_order(case, curve: str) -> None:
    ids, bits = case
    n, d = ids.shape
    keys = curve_keys(curve, ids, bits)
    ints = key_ints(keys, d, bits)
    assert all(0 <= v < 2 ** (d * bits) for v in ints)
    for i, j in itertools.combinations(range(n), 2):
        a, b = keys[i].tobytes(), keys[j].tobytes()
        assert (a < b) == (ints[i] < ints[j])
        assert (a == b) == (ints[i] == ints[j])
    # pyarrow sorts the binary column the same way (what Spark's binary ordering does)
    arrow_order = pc.sort_indices(keys_to_arrow(keys)).to_pylist()
    assert [ints[i] for i in arrow_order] == sorted(ints)


# --------------------------------------------------------------------------- dtypes, dispatch


@pytest.mark.parametrize("dtype", [np.uint8, np.uint16, np.uint32, np.int8, np.int16, np.int32, np.int64])
@pytest.mark.parametrize("curve", CURVES)
def test_any_integer_dtype_gives_same_keys(dtype, curve: str) -> None:
    rng = np.random.default_rng(7)
    ids = rng.integers(0, 2**7, size=(100, 3), dtype=np.uint64)
    expected = curve_keys(curve, ids, 7)
    assert np.array_equal(curve_keys(curve, ids.astype(dtype), 7), expected)


def test_curve_keys_dispatch() -> None:
    assert CURVES == ("zorder", "hilbert", "linear")
    ids = np.array([[1, 2], [3, 0], [2, 2]], dtype=np.uint32)
    for curve, fn in zip(CURVES, (zorder_keys, hilbert_keys, linear_keys)):
        assert np.array_equal(curve_keys(curve, ids, 2), fn(ids, 2))
    assert not np.array_equal(zorder_keys(ids, 2), hilbert_keys(ids, 2))


def test_empty_input() -> None:
    ids = np.zeros((0, 3), dtype=np.uint32)
    for curve in CURVES:
        keys = curve_keys(curve, ids, 10)
        assert keys.shape == (0, 4) and keys.dtype == np.uint8
        arr = keys_to_arrow(keys)
        assert arr.type == pa.binary() and len(arr) == 0


# --------------------------------------------------------------------------- keys_to_arrow


@settings(max_examples=100, deadline=None)
@given(id_arrays(), st.sampled_from(CURVES))
def test_keys_to_arrow_round_trip(case, curve: str) -> None:
    ids, bits = case
    keys = curve_keys(curve, ids, bits)
    arr = keys_to_arrow(keys)
    assert arr.type == pa.binary()
    assert arr.null_count == 0
    assert arr.to_pylist() == [row.tobytes() for row in keys]
    if len(arr):
        back = np.frombuffer(b"".join(arr.to_pylist()), dtype=np.uint8).reshape(keys.shape)
        assert np.array_equal(back, keys)


def test_keys_to_arrow_non_contiguous_input() -> None:
    keys = np.arange(24, dtype=np.uint8).reshape(6, 4)[::2, 1:3]
    assert keys_to_arrow(keys).to_pylist() == [bytes([1, 2]), bytes([9, 10]), bytes([17, 18])]


# --------------------------------------------------------------------------- validation


@pytest.mark.parametrize(
    ("d", "bits", "match"),
    [
        (0, 8, "columns"),
        (17, 8, "columns"),
        (2, 0, "bits"),
        (2, 33, "bits"),
        (2, True, "bits"),
        (2, 8.0, "bits"),
    ],
)
def test_key_width_validation(d, bits, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        key_width(d, bits)


@pytest.mark.parametrize("curve", CURVES)
@pytest.mark.parametrize(
    ("ids", "bits", "match"),
    [
        (np.array([1, 2, 3]), 4, "2-D"),
        (np.zeros((2, 0), dtype=np.uint8), 4, "columns"),
        (np.zeros((2, 17), dtype=np.uint8), 4, "columns"),
        (np.zeros((2, 2), dtype=np.float64), 4, "integer dtype"),
        (np.zeros((2, 2), dtype=bool), 4, "integer dtype"),
        (np.array([[1, -1]]), 4, r"\[0, 2\*\*4\)"),
        (np.array([[1, 16]]), 4, r"\[0, 2\*\*4\)"),
        (np.array([[2**32, 0]], dtype=np.uint64), 32, r"\[0, 2\*\*32\)"),
        (np.array([[1, 2]]), 0, "bits"),
        (np.array([[1, 2]]), 33, "bits"),
    ],
)
def test_ids_validation(curve: str, ids, bits: int, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        curve_keys(curve, ids, bits)


def test_max_values_accepted() -> None:
    ids = np.full((2, 16), 2**32 - 1, dtype=np.uint64)
    for curve in CURVES:
        assert curve_keys(curve, ids, 32).shape == (2, 64)
    assert zorder_keys(ids, 32)[0].tolist() == [0xFF] * 64


@pytest.mark.parametrize("curve", ["morton", "", "Hilbert", None, 1])
def test_unknown_curve(curve) -> None:
    with pytest.raises(ValueError, match="unknown curve"):
        curve_keys(curve, np.zeros((1, 2), dtype=np.uint8), 4)


@pytest.mark.parametrize(
    "keys",
    [np.zeros(4, dtype=np.uint8), np.zeros((2, 2), dtype=np.int64), np.zeros((2, 0), np.uint8)],
)
def test_keys_to_arrow_validation(keys) -> None:
    with pytest.raises(ValueError):
        keys_to_arrow(keys)
