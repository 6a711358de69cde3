"""The one value-order codec: numpy keys, binary keys and text agree with each other and with Python's order."""

from __future__ import annotations

import math
from decimal import Decimal

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from airflow_zorder.core.layout import ranges
from airflow_zorder.core.policy import file_bounds
from airflow_zorder.core.stats import value_order
from airflow_zorder.core.storage.locations import parse_partition_path

SPECIAL = [-math.inf, -1e300, -1.5, -0.0, 0.0, 5e-324, 1.5, 1e300, math.inf, math.nan, -math.nan]


def _rank(keys) -> list[int]:
    """Dense ranks of a list of comparable keys."""
    order = sorted(set(keys))
    return [order.index(k) for k in keys]


@settings(max_examples=50, deadline=None)
@given(st.lists(st.floats(allow_nan=True, allow_infinity=True) | st.sampled_from(SPECIAL), min_size=1, max_size=40))
def test_float_numpy_and_binary_keys_share_one_order(values):
    arr = pa.array(values, pa.float64())
    _, int_keys = value_order.float_keys(arr)
    byte_keys = value_order.order_keys(arr).to_pylist()
    assert _rank(int_keys.tolist()) == _rank(byte_keys)
    # Spark's order: -0.0 == 0.0, every NaN equal and above +inf
    spark = [(1, 0.0) if math.isnan(v) else (0, v + 0.0) for v in values]
    assert _rank(int_keys.tolist()) == _rank(spark)


@settings(max_examples=50, deadline=None)
@given(st.lists(st.decimals(min_value=-(10**12), max_value=10**12, places=3, allow_nan=False), min_size=1, max_size=40))
def test_decimal_numpy_and_binary_keys_share_one_order(values):
    for t in (pa.decimal128(18, 3), pa.decimal128(38, 3)):
        arr = pa.array(values, t)
        np_keys = value_order.decimal_keys(arr).tolist()
        assert _rank(np_keys) == _rank(value_order.order_keys(arr).to_pylist()) == _rank([Decimal(v) for v in values])


def test_sort_keys_follow_the_value_order_for_every_fixed_width_kind():
    cases = [
        pa.array([3, -2, 0, 2**62], pa.int64()),
        pa.array([3, 0, 2**64 - 1], pa.uint64()),
        pa.array([True, False, True]),
        pa.array([20000, -1, 0], pa.int32()).cast(pa.date32()),
        pa.array([5, -7, 0], pa.timestamp("ns", "UTC")),
        pa.array([1.5, -0.0, 0.0, math.nan, -math.inf], pa.float32()),
        pa.array([Decimal("1.5"), Decimal("-2.25"), Decimal("0")], pa.decimal256(40, 2)),
    ]
    for arr in cases:
        keys = value_order.sort_keys(arr).tolist()
        assert _rank(keys) == _rank(value_order.order_keys(arr).to_pylist()), arr.type
    with pytest.raises(TypeError):
        value_order.sort_keys(pa.array(["a"]))


def test_ranges_and_metrics_order_through_the_codec():
    """Range ids and the metrics' bounds agree with the codec on the tricky float values."""
    vals = pa.array([-0.0, 0.0, math.nan, math.inf, -1.0])
    bounds = ranges.compute_boundaries(vals, 16)
    ids = ranges.range_ids(vals, bounds)
    assert ids[0] == ids[1] and ids[2] > ids[3] > ids[0] > ids[4]  # -0.0 == 0.0, NaN above +inf
    fb, keys, _ = file_bounds.prepare_bounds(pa.array([-0.0, 1.0]), pa.array([0.0, 2.0]), None, [0.0, -0.0])
    assert fb.bounded.tolist() == [True, True] and keys.tolist() == [0.0, 0.0]
    assert np.signbit(fb.lo).tolist() == [False, False]  # normalised: -0.0 -> 0.0


def test_text_round_trip_and_type_names():
    for arr in (
        pa.array([1, None, -3], pa.int64()),
        pa.array([b"\x00\xff", None]),
        pa.array([1, 2], pa.time32("ms")),
        pa.array([Decimal("-4.56")], pa.decimal128(5, 2)),
        pa.array([1.5, -0.0]),
    ):
        t = value_order.parse_arrow_type(str(arr.type))
        assert value_order.decode_bounds(value_order.bounds_to_text(arr), t).equals(arr.cast(t))
    assert value_order.bounds_to_text(pa.array([0], pa.timestamp("s", "Europe/Paris"))).to_pylist() == [
        "1970-01-01 00:00:00Z"
    ]
    assert value_order.decimal_type(39, 2) == pa.decimal256(39, 2)


def test_parse_partition_path_strict_and_lenient():
    assert parse_partition_path("dt=2024-01-01/city=New%20York") == {"dt": "2024-01-01", "city": "New York"}
    assert parse_partition_path("") == {}
    assert parse_partition_path("dt=1/plain") == {}  # strict: not a partition directory
    assert parse_partition_path("a=b=c") == {"a": "b=c"}
    assert parse_partition_path("/data/tbl/dt=1/=x/plain", strict=False) == {"dt": "1"}
    assert parse_partition_path("C:\\tbl\\k=__HIVE_DEFAULT_PARTITION__", strict=False) == {
        "k": "__HIVE_DEFAULT_PARTITION__"
    }
