"""Tests for airflow_zorder.core.layout.ranges: the ORDER contract checked against Python's own ordering."""

from __future__ import annotations

import datetime as dt
import math
import struct
from collections.abc import Callable
from decimal import Decimal
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from airflow_zorder.core.errors import UnsupportedColumnType
from airflow_zorder.core.layout import ranges
from airflow_zorder.core.layout.ranges import (
    DEFAULT_NUM_RANGES,
    bits_for,
    check_arrow_type,
    check_clusterable_type,
    compute_boundaries,
    num_ids,
    range_ids,
    scale_ids,
)

SETTINGS = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# --------------------------------------------------------------------------- python-side order keys


def float_key(x: float) -> tuple[int, float]:
    """The contract's float order in Python: -0.0 == 0.0, every NaN equal and above +inf."""
    if math.isnan(x):
        return (1, 0.0)
    return (0, x + 0.0)


def identity(x: Any) -> Any:
    return x


# --------------------------------------------------------------------------- value strategies


def _nan_with_bits(bits: int) -> float:
    return struct.unpack("<d", struct.pack("<Q", bits))[0]


NAN_VARIANTS = [
    float("nan"),
    -float("nan"),
    _nan_with_bits(0x7FF0000000000001),  # signalling-pattern payload
    _nan_with_bits(0xFFFFFFFFFFFFFFFF),  # negative NaN, full payload
]
FLOAT_EDGES = [0.0, -0.0, math.inf, -math.inf, 5e-324, -5e-324, 1.7976931348623157e308, -1.7976931348623157e308]

float64_values = st.one_of(st.sampled_from(FLOAT_EDGES + NAN_VARIANTS), st.floats(allow_nan=True, allow_infinity=True))
float32_values = st.one_of(
    st.sampled_from(
        [0.0, -0.0, math.inf, -math.inf, math.nan, -math.nan, 1.401298464324817e-45, 3.4028234663852886e38]
    ),
    st.floats(width=32, allow_nan=True, allow_infinity=True),
)
float16_values = st.one_of(st.sampled_from([0.0, -0.0, math.inf, -math.nan, 65504.0]), st.floats(width=16))


def int_values(bits: int, signed: bool = True) -> st.SearchStrategy[int]:
    lo, hi = (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1) if signed else (0, 2**bits - 1)
    return st.one_of(st.sampled_from([lo, hi, 0, -1 if signed else 1, lo + 1, hi - 1]), st.integers(lo, hi))


def decimal_values(precision: int, scale: int) -> st.SearchStrategy[Decimal]:
    top = 10**precision - 1
    unscaled = st.one_of(
        st.sampled_from([top, -top, 0, 1, -1, 2**63, -(2**63), 2**63 - 1, 2**64, -(2**64) + 1]).filter(
            lambda u: abs(u) <= top
        ),
        st.integers(-top, top),
        st.integers(-1000, 1000),  # many values sharing the high 64-bit word (0 / -1)
    )
    return unscaled.map(lambda u: Decimal(f"{u}e-{scale}"))  # exact (scaleb would round to 28 digits)


dates = st.one_of(st.sampled_from([dt.date(1969, 12, 31), dt.date(1970, 1, 1), dt.date(1, 1, 1)]), st.dates())
naive_datetimes = st.one_of(
    st.sampled_from(
        [
            dt.datetime(1969, 12, 31, 23, 59, 59, 999999),
            dt.datetime(1970, 1, 1),
            dt.datetime(1970, 1, 1, 0, 0, 0, 1),
            dt.datetime(1, 1, 1),
        ]
    ),
    st.datetimes(),
)
FIXED_ZONES = [dt.UTC, dt.timezone(dt.timedelta(hours=-5)), dt.timezone(dt.timedelta(hours=5, minutes=30))]
aware_datetimes = st.datetimes(
    min_value=dt.datetime(1, 1, 2), max_value=dt.datetime(9999, 12, 30), timezones=st.sampled_from(FIXED_ZONES)
)

ALPHABET = ["a", "b", "z", "\x00", "\x7f", "é", "ÿ", "€", "\uffff", "😀", "\U0010ffff", "A"]
texts = st.one_of(
    st.sampled_from(["", "a", "b", "ab", "ba", "abc", "\x00", "a\x00", "é", "😀", "\U0010ffff"]),
    st.text(alphabet=st.sampled_from(ALPHABET), max_size=6),
    # long common prefixes: far beyond 8 bytes, differing only at the end
    st.tuples(st.integers(0, 40), st.text(alphabet=st.sampled_from(ALPHABET), max_size=3)).map(
        lambda t: "https://example.com/" + "x" * t[0] + t[1]
    ),
    st.text(max_size=8),
)
BYTE_ALPHABET = [b"\x00", b"\x01", b"\x7f", b"\x80", b"\xfe", b"\xff", b"a"]
binaries = st.one_of(
    st.sampled_from([b"", b"\x00", b"\x00\x00", b"\xff", b"\xff\x00", b"a", b"ab", b"b"]),
    st.lists(st.sampled_from(BYTE_ALPHABET), max_size=6).map(b"".join),
    st.tuples(st.integers(0, 30), st.binary(max_size=3)).map(lambda t: b"\xff" * t[0] + t[1]),
    st.binary(max_size=8),
)


# type id -> (arrow type, value strategy, python order key)
CASES: dict[str, tuple[pa.DataType, st.SearchStrategy[Any], Callable[[Any], Any]]] = {
    "int8": (pa.int8(), int_values(8), identity),
    "int16": (pa.int16(), int_values(16), identity),
    "int32": (pa.int32(), int_values(32), identity),
    "int64": (pa.int64(), int_values(64), identity),
    "uint8": (pa.uint8(), int_values(8, signed=False), identity),
    "uint64": (pa.uint64(), int_values(64, signed=False), identity),
    "float16": (pa.float16(), float16_values, float_key),
    "float32": (pa.float32(), float32_values, float_key),
    "float64": (pa.float64(), float64_values, float_key),
    "decimal(5,0)": (pa.decimal128(5, 0), decimal_values(5, 0), identity),
    "decimal(12,2)": (pa.decimal128(12, 2), decimal_values(12, 2), identity),
    "decimal(18,4)": (pa.decimal128(18, 4), decimal_values(18, 4), identity),
    "decimal(19,0)": (pa.decimal128(19, 0), decimal_values(19, 0), identity),
    "decimal(38,10)": (pa.decimal128(38, 10), decimal_values(38, 10), identity),
    "decimal(38,0)": (pa.decimal128(38, 0), decimal_values(38, 0), identity),
    "decimal(38,38)": (pa.decimal128(38, 38), decimal_values(38, 38), identity),
    "decimal256(76,20)": (pa.decimal256(76, 20), decimal_values(76, 20), identity),
    "date32": (pa.date32(), dates, identity),
    "date64": (pa.date64(), dates, identity),
    "timestamp[us]": (pa.timestamp("us"), naive_datetimes, identity),
    "timestamp[us,UTC]": (pa.timestamp("us", tz="UTC"), aware_datetimes, identity),
    "timestamp[us,NY]": (pa.timestamp("us", tz="America/New_York"), aware_datetimes, identity),
    "string": (pa.string(), texts, identity),
    "large_string": (pa.large_string(), texts, identity),
    "binary": (pa.binary(), binaries, identity),
    "large_binary": (pa.large_binary(), binaries, identity),
    "fixed_size_binary[3]": (pa.binary(3), st.binary(min_size=3, max_size=3), identity),
    "bool": (pa.bool_(), st.booleans(), identity),
}

FORMS = ["plain", "sliced", "chunked", "dictionary"]


def _make(values: list[Any], typ: pa.DataType, form: str, pad: list[Any]) -> pa.Array | pa.ChunkedArray:
    """Build the array in one of the shapes Spark can hand over (offsets, chunks, dictionaries)."""
    if form == "sliced":
        return pa.array(pad + values + pad, type=typ).slice(len(pad), len(values))
    if form == "chunked":
        cut = len(values) // 2
        return pa.chunked_array([pa.array(values[:cut], type=typ), pa.array(values[cut:], type=typ)], type=typ)
    plain = pa.array(values, type=typ)
    if form == "dictionary":
        try:
            return pc.dictionary_encode(plain)
        except pa.ArrowNotImplementedError:
            return plain
    return plain


def _check_ids(values: list[Any], ids: np.ndarray, key: Callable[[Any], Any]) -> None:
    """Nulls 0, non-null >= 1, and ids monotone / equal-for-equal in the Python order."""
    assert ids.dtype == np.uint32
    assert len(ids) == len(values)
    nonnull = [(key(v), int(i)) for v, i in zip(values, ids) if v is not None]
    for v, i in zip(values, ids):
        if v is None:
            assert i == 0
    nonnull.sort(key=lambda t: t[0])
    for (ka, ia), (kb, ib) in zip(nonnull, nonnull[1:]):
        assert ia >= 1 and ib >= 1
        if ka == kb:
            assert ia == ib, (ka, kb, ia, ib)
        else:
            assert ia <= ib, (ka, kb, ia, ib)


def _check_boundaries(bounds: pa.Array, typ: pa.DataType, key: Callable[[Any], Any], num_ranges: int) -> None:
    assert bounds.type.equals(typ)
    assert bounds.null_count == 0
    assert len(bounds) <= max(0, num_ranges - 1)
    keys = [key(b) for b in bounds.to_pylist()]
    assert all(a < b for a, b in zip(keys, keys[1:])), "boundaries must be strictly increasing"


@pytest.mark.parametrize("case", sorted(CASES))
@SETTINGS
@given(data=st.data())
def test_range_ids_follow_python_order(case: str, data: st.DataObject) -> None:
    typ, values_st, key = CASES[case]
    values = data.draw(st.lists(st.one_of(st.none(), values_st, values_st, values_st), min_size=1, max_size=60))
    form = data.draw(st.sampled_from(FORMS))
    pad = data.draw(st.lists(st.one_of(st.none(), values_st), max_size=3))
    arr = _make(values, typ, form, pad)

    # boundaries from a random sub-sample (with repeats), random range count
    picks = data.draw(st.lists(st.integers(0, len(values) - 1), max_size=len(values)))
    sample = pa.array([values[i] for i in picks], type=typ)
    num_ranges = data.draw(st.integers(1, 12))
    bounds = compute_boundaries(sample, num_ranges)
    _check_boundaries(bounds, typ, key, num_ranges)
    ids = range_ids(arr, bounds)
    _check_ids(values, ids, key)
    assert int(ids.max(initial=0)) < num_ids(bounds)

    # boundaries from the full data with enough ranges: strictly order preserving
    distinct = len({key(v) for v in values if v is not None})
    full_ranges = max(1, distinct) + data.draw(st.integers(0, 3))
    full_bounds = compute_boundaries(arr, full_ranges)
    _check_boundaries(full_bounds, typ, key, full_ranges)
    full_ids = range_ids(arr, full_bounds)
    _check_ids(values, full_ids, key)
    by_key: dict[Any, int] = {}
    for v, i in zip(values, full_ids):
        if v is not None:
            by_key.setdefault(key(v), int(i))
    ordered = [by_key[k] for k in sorted(by_key)]
    assert ordered == sorted(set(ordered)), "distinct values must get distinct, increasing ids"
    if ordered:
        assert ordered[0] == 1 and ordered[-1] == num_ids(full_bounds) - 1  # the whole id range is used


@pytest.mark.parametrize("unit", ["s", "ms", "us", "ns"])
@SETTINGS
@given(data=st.data())
def test_integer_backed_temporals(unit: str, data: st.DataObject) -> None:
    """Timestamps of any unit, and times, order by their stored integer (incl. before 1970)."""
    ints = data.draw(st.lists(st.one_of(st.none(), int_values(64)), min_size=1, max_size=40))
    for typ in (pa.timestamp(unit), pa.timestamp(unit, tz="Europe/Paris")):
        arr = pa.array(ints, type=pa.int64()).cast(typ)
        bounds = compute_boundaries(arr.slice(0, max(1, len(ints) // 2)), data.draw(st.integers(1, 8)))
        _check_ids(ints, range_ids(arr, bounds), identity)
    small = [None if v is None else v % 86_400_000_000 for v in ints]
    times = pa.array(small, type=pa.int64()).cast(pa.time64("us"))
    _check_ids(small, range_ids(times, compute_boundaries(times, 5)), identity)


# --------------------------------------------------------------------------- specific contract points


def test_float_rules() -> None:
    vals = [math.nan, math.inf, -math.inf, -0.0, 0.0, -1.0, 1.0, -math.nan, None]
    for typ in (pa.float32(), pa.float64()):
        arr = pa.array(vals, type=typ)
        bounds = compute_boundaries(arr, 100)
        # -0.0 and 0.0 are one value, and the returned boundary is +0.0; NaN is one value, last
        got = bounds.to_pylist()
        assert got[:-1] == [-1.0, 0.0, 1.0, math.inf]
        assert math.isnan(got[-1])
        assert all(math.copysign(1.0, b) == 1.0 for b in got if b == 0.0)
        ids = range_ids(arr, bounds).tolist()
        assert ids[3] == ids[4]  # -0.0 == 0.0
        assert ids[0] == ids[7] == max(ids)  # all NaNs equal, above +inf
        assert ids[0] > ids[1] > ids[4] > ids[5] > ids[2] >= 1
        assert ids[8] == 0


def test_strings_compare_in_full_and_by_code_point() -> None:
    prefix = "p" * 50
    vals = ["b", "ab", "", prefix + "a", prefix + "b", prefix, "\uffff", "😀", "é", "z"]
    arr = pa.array(vals)
    ids = range_ids(arr, compute_boundaries(arr, 100)).tolist()
    order = sorted(range(len(vals)), key=lambda i: vals[i])
    assert [ids[i] for i in order] == sorted(ids) and len(set(ids)) == len(vals)
    assert ids[1] < ids[0]  # "ab" < "b" (no left padding)
    assert ids[5] < ids[3] < ids[4]  # prefix < prefix+"a" < prefix+"b" beyond 8 bytes
    assert ids[6] < ids[7]  # U+FFFF < U+1F600 (UTF-16 order would say otherwise)


def test_binary_unsigned_and_prefix() -> None:
    vals = [b"\xff", b"\x00", b"", b"\x7f", b"\x80", b"\x00\x00", b"\xff\x00"]
    arr = pa.array(vals, type=pa.binary())
    ids = range_ids(arr, compute_boundaries(arr, 100)).tolist()
    assert ids == [6, 2, 1, 4, 5, 3, 7]


def test_int8_negative_below_positive_and_bool() -> None:
    arr = pa.array([127, -128, -1, 0, 1, None], type=pa.int8())
    assert range_ids(arr, compute_boundaries(arr, 10)).tolist() == [5, 1, 2, 3, 4, 0]
    b = pa.array([True, None, False, True])
    assert range_ids(b, compute_boundaries(b, 10)).tolist() == [2, 0, 1, 2]


def test_decimal_exact_beyond_float_precision() -> None:
    # differ only in the 30th significant digit: a float64 conversion would merge them
    digits = "1234567890123456789012345678.000000000"  # 38 significant digits with the last one
    vals = [Decimal(f"{digits}0"), Decimal(f"{digits}1"), Decimal(f"-{digits}0"), Decimal(f"-{digits}1"), Decimal(0)]
    assert vals[0] != vals[1] and float(vals[0]) == float(vals[1])  # Decimal unary minus would round: use literals
    arr = pa.array(vals, type=pa.decimal128(38, 10))
    assert range_ids(arr, compute_boundaries(arr, 100)).tolist() == [4, 5, 2, 1, 3]


def test_empty_and_all_null() -> None:
    for typ in (pa.int64(), pa.string(), pa.float64(), pa.decimal128(38, 2), pa.bool_()):
        empty = pa.array([], type=typ)
        nulls = pa.array([None, None], type=typ)
        assert len(compute_boundaries(empty, 10)) == 0
        assert compute_boundaries(nulls, 10).type.equals(typ)
        assert len(compute_boundaries(nulls, 10)) == 0
        assert range_ids(empty, compute_boundaries(nulls, 10)).tolist() == []
        assert range_ids(nulls, compute_boundaries(nulls, 10)).tolist() == [0, 0]
        assert num_ids(compute_boundaries(nulls, 10)) == 2
    assert range_ids(pa.chunked_array([], type=pa.int32()), pa.array([1], pa.int32())).tolist() == []


def test_num_ranges_one_gives_no_boundaries() -> None:
    arr = pa.array([3, 1, 2])
    assert len(compute_boundaries(arr, 1)) == 0
    assert range_ids(arr, compute_boundaries(arr, 1)).tolist() == [1, 1, 1]
    with pytest.raises(ValueError):
        compute_boundaries(arr, 0)


def test_quantile_boundaries_evenly_split() -> None:
    arr = pa.array(np.random.default_rng(1).permutation(100_000))
    bounds = compute_boundaries(arr, 1000)
    assert len(bounds) == 999
    counts = np.bincount(range_ids(arr, bounds))
    assert counts[0] == 0 and len(counts) == 1001
    assert counts[1:].min() == counts[1:].max() == 100


def test_boundaries_type_coercion_and_validation() -> None:
    vals = pa.array(["a", "c", None], type=pa.large_string())
    assert range_ids(vals, pa.array(["b"])).tolist() == [1, 2, 0]
    with pytest.raises(ValueError, match="sorted"):
        range_ids(pa.array([1, 2]), pa.array([5, 3]))
    with pytest.raises(ValueError, match="null"):
        range_ids(pa.array([1, 2]), pa.array([None, 3]))
    with pytest.raises(TypeError):
        range_ids(pa.array([1, 2]), pa.array(["a"]))
    with pytest.raises(TypeError):
        range_ids([1, 2], pa.array([1]))  # type: ignore[arg-type]


def test_chunked_dictionary_with_different_dictionaries() -> None:
    c1 = pc.dictionary_encode(pa.array(["x", "a", None]))
    c2 = pc.dictionary_encode(pa.array(["m", "x"]))
    chunked = pa.chunked_array([c1, c2])
    bounds = compute_boundaries(chunked, 10)
    assert bounds.type == pa.string() and bounds.to_pylist() == ["m", "x"]
    assert range_ids(chunked, bounds).tolist() == [3, 1, 0, 2, 3]


# --------------------------------------------------------------------------- skew and scaling


def test_dominated_column_yields_sensible_ids() -> None:
    rng = np.random.default_rng(7)
    n = 100_000
    vals = np.full(n, 500, dtype=np.int64)
    others = rng.random(n) < 0.01
    vals[others] = rng.integers(0, 1000, others.sum())
    arr = pa.array(vals)
    bounds = compute_boundaries(arr, DEFAULT_NUM_RANGES)
    assert 2 <= len(bounds) < DEFAULT_NUM_RANGES - 1  # deduplicated
    ids = range_ids(arr, bounds)
    dominant = ids[vals == 500]
    assert (dominant == dominant[0]).all()
    assert ids[vals < 500].max() < dominant[0] < ids[vals > 500].min()  # both tails keep their own ids
    assert len(np.unique(ids[vals < 500])) >= 2 and len(np.unique(ids[vals > 500])) >= 2
    # monotone over the whole column
    order = np.argsort(vals, kind="stable")
    assert (np.diff(ids[order].astype(np.int64)) >= 0).all()


def test_dominant_minimum_is_not_a_boundary() -> None:
    """A quantile boundary equal to the minimum would leave id 1 empty: it is dropped."""
    vals = np.concatenate([np.zeros(9000, dtype=np.int64), np.arange(1, 1001)])
    arr = pa.array(vals)
    bounds = compute_boundaries(arr, 100)
    assert bounds.to_pylist()[0] > 0
    ids = range_ids(arr, bounds)
    assert (ids[vals == 0] == 1).all() and ids.max() == num_ids(bounds) - 1


@pytest.mark.parametrize("values", [np.arange(10**9, 10**9 + 1001), np.linspace(1e9, 1e9 + 1000, 5000)])
def test_non_zero_based_range_uses_whole_curve(values: np.ndarray) -> None:
    arr = pa.array(values)
    bounds = compute_boundaries(arr, DEFAULT_NUM_RANGES)
    ids = range_ids(arr, bounds)
    total = num_ids(bounds)
    bits = bits_for(total)
    scaled = scale_ids(ids, total, bits)
    top = 2**bits
    assert scaled.max() >= top - top // total - 1  # top ids reached
    assert scaled.min() < top // 512  # and the bottom
    assert (scaled >= top // 2).mean() == pytest.approx(0.5, abs=0.01)  # top bit = upper half of the values


@SETTINGS
@given(total=st.integers(1, 5000), bits=st.integers(1, 20))
def test_scale_ids_monotone_and_top_bit(total: int, bits: int) -> None:
    ids = np.arange(total, dtype=np.uint32)
    scaled = scale_ids(ids, total, bits)
    assert scaled.dtype == np.uint64
    assert (np.diff(scaled.astype(np.int64)) >= 0).all()
    assert int(scaled.max()) < 2**bits and int(scaled[0]) == 0
    if total >= 2:
        # top bit set exactly for the upper half of the ids
        top_bit = (scaled >> np.uint64(bits - 1)) & np.uint64(1)
        assert (top_bit.astype(bool) == (ids >= total / 2)).all()
    if total <= 2**bits:
        assert (np.diff(scaled.astype(np.int64)) > 0).all()  # strictly monotone when it fits


def test_scale_ids_validation_and_wide() -> None:
    with pytest.raises(ValueError):
        scale_ids(np.array([5]), 5, 8)
    with pytest.raises(ValueError):
        scale_ids(np.array([0]), 2**40, 32)
    wide = scale_ids(np.array([0, 2**32 - 1], dtype=np.uint32), 2**32, 32)
    assert wide.tolist() == [0, 2**32 - 1]


def test_bits_for() -> None:
    assert [bits_for(n) for n in (1, 2, 3, 4, 5, 1024, 1025, 1026)] == [1, 1, 2, 2, 3, 10, 11, 11]
    assert bits_for(num_ids(pa.array(range(DEFAULT_NUM_RANGES - 1)))) == 11
    with pytest.raises(ValueError):
        bits_for(0)


# --------------------------------------------------------------------------- type checks

SPARK_OK = [
    "tinyint", "smallint", "int", "bigint", "float", "double", "decimal(10,2)", "decimal(38,18)",
    "date", "timestamp", "timestamp_ntz", "time(6)", "string", "varchar(10)", "char(3)", "boolean",
    "binary", "BIGINT", " string ", "string collate UTF8_BINARY",
]  # fmt: skip


@pytest.mark.parametrize("spark_type", SPARK_OK)
def test_check_clusterable_type_accepts_atomic(spark_type: str) -> None:
    check_clusterable_type("c", spark_type)


@pytest.mark.parametrize(
    ("spark_type", "hint"),
    [
        ("array<int>", "element_at"),
        ("array<struct<a:int>>", "element_at"),
        ("map<string,int>", "element_at"),
        ("struct<a:int,b:string>", "field"),
        ("variant", "variant_get"),
        ("void", "values"),
        ("interval day to second", "Parquet"),
        ("interval year to month", "Parquet"),
        ("interval", "Parquet"),
        ("geometry(4326)", "derived"),
        ("string collate UTF8_LCASE", "lower("),
        ("mystery", "supported"),
    ],
)
def test_check_clusterable_type_rejects(spark_type: str, hint: str) -> None:
    with pytest.raises(UnsupportedColumnType) as err:
        check_clusterable_type("my_col", spark_type)
    msg = str(err.value)
    assert "'my_col'" in msg and spark_type in msg and hint in msg and "Fix:" in msg
    assert isinstance(err.value, ValueError)


@pytest.mark.parametrize(
    "typ", [t for t, _, _ in CASES.values()] + [pa.time32("s"), pa.dictionary(pa.int8(), pa.string())]
)
def test_check_arrow_type_accepts(typ: pa.DataType) -> None:
    check_arrow_type("c", typ)


@pytest.mark.parametrize(
    "typ",
    [
        pa.list_(pa.int32()),
        pa.map_(pa.string(), pa.int32()),
        pa.struct([("a", pa.int32())]),
        pa.null(),
        pa.duration("us"),
        pa.string_view(),
    ],
)
def test_check_arrow_type_rejects(typ: pa.DataType) -> None:
    with pytest.raises(UnsupportedColumnType, match="'my_col'"):
        check_arrow_type("my_col", typ)
    with pytest.raises(UnsupportedColumnType):
        compute_boundaries(pa.array([], type=typ), 4)


def test_module_does_not_import_pyspark() -> None:
    with open(ranges.__file__, encoding="utf-8") as fh:
        source = fh.read()
    assert "import pyspark" not in source and "from pyspark" not in source
