"""Tests for core.policy's metrics: point-query fractions (point_queries, file_bounds) against brute force,
column_clustering and the table-level report (metrics)."""

from __future__ import annotations

import datetime as dt
import math
import time
from decimal import Decimal
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from airflow_zorder.core.policy.file_bounds import prepare_bounds
from airflow_zorder.core.policy.point_queries import (
    files_fraction_for_columns,
    ideal_point_query_fraction,
    mean_point_query_fraction,
    point_query_fractions,
)
from airflow_zorder.core.stats import footer_stats, stats_schema, value_order


def brute_force(mins: list, maxs: list, has: list[bool], values: list) -> list[float]:
    """The definition, one file and one value at a time."""
    n = len(mins)
    out = []
    for v in values:
        if v is None:
            out.append(math.nan)
            continue
        c = 0
        for lo, hi, h in zip(mins, maxs, has):
            if not h:
                c += 1  # missing stats: never pruned
            elif lo is None and hi is None:
                c += 0  # all-null file: no value
            elif lo is None or hi is None or lo > hi:
                c += 1  # untrustworthy: never pruned
            elif isinstance(v, float) and math.isnan(v):
                c += 1  # bounds exclude NaN
            elif lo <= v <= hi:
                c += 1
        out.append(c / n)
    return out


def _files(draw: Any, elem: st.SearchStrategy, max_files: int = 40) -> tuple[list, list, list]:
    n = draw(st.integers(1, max_files))
    mins, maxs, has = [], [], []
    for _ in range(n):
        a, b = draw(elem), draw(elem)
        lo, hi = (a, b) if a <= b else (b, a)
        kind = draw(st.sampled_from(["ok", "ok", "ok", "missing", "all_null"]))
        if kind == "missing":
            mins.append(None)
            maxs.append(None)
            has.append(False)
        elif kind == "all_null":
            mins.append(None)
            maxs.append(None)
            has.append(True)
        else:
            mins.append(lo)
            maxs.append(hi)
            has.append(True)
    return mins, maxs, has


ELEMENTS: dict[str, tuple[st.SearchStrategy, pa.DataType]] = {
    "int64": (st.integers(-(2**63), 2**63 - 1), pa.int64()),
    "small_int": (st.integers(-5, 5), pa.int32()),
    "uint64": (st.integers(0, 2**64 - 1), pa.uint64()),
    "float": (st.floats(allow_nan=False, allow_infinity=True, width=64) | st.sampled_from([0.0, -0.0]), pa.float64()),
    "decimal": (
        st.decimals(min_value=-(10**20), max_value=10**20, places=3, allow_nan=False, allow_infinity=False),
        pa.decimal128(24, 3),
    ),
    "small_decimal": (
        st.decimals(min_value=-999, max_value=999, places=2, allow_nan=False, allow_infinity=False),
        pa.decimal128(5, 2),
    ),
    "date": (st.dates(dt.date(1, 1, 1), dt.date(9999, 12, 31)), pa.date32()),
    "timestamp": (st.datetimes(dt.datetime(1700, 1, 1), dt.datetime(2200, 1, 1)), pa.timestamp("us")),
    "string": (st.text(max_size=12), pa.string()),
    "short_string": (st.text(alphabet="ab", max_size=4), pa.string()),
    "binary": (st.binary(max_size=6), pa.binary()),
    "bool": (st.booleans(), pa.bool_()),
}


@pytest.mark.parametrize("kind", sorted(ELEMENTS))
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_point_query_fractions_match_brute_force(kind: str, data: st.DataObject) -> None:
    elem, typ = ELEMENTS[kind]
    mins, maxs, has = _files(data.draw, elem)
    # query values: the bounds themselves (boundary cases) and fresh values
    bound_vals = [v for v in mins + maxs if v is not None]
    values = data.draw(st.lists(elem | st.sampled_from(bound_vals) if bound_vals else elem, min_size=1, max_size=30))
    expected = brute_force(mins, maxs, has, values)
    got = point_query_fractions(pa.array(mins, typ), pa.array(maxs, typ), np.array(has), pa.array(values, typ))
    np.testing.assert_array_equal(got, np.array(expected))


@settings(max_examples=100, deadline=None)
@given(data=st.data())
def test_numpy_inputs_match_brute_force(data: st.DataObject) -> None:
    mins, maxs, has = _files(data.draw, st.integers(-1000, 1000))
    values = data.draw(st.lists(st.integers(-1100, 1100), min_size=1, max_size=50))
    # numpy input cannot carry nulls for ints: missing/all-null files get arbitrary bounds + has_stats
    lo = np.array([0 if v is None else v for v in mins], dtype=np.int64)
    hi = np.array([0 if v is None else v for v in maxs], dtype=np.int64)
    fixed_mins = [0 if (m is None and h) else m for m, h in zip(mins, has)]
    fixed_maxs = [0 if (m is None and h) else m for m, h in zip(maxs, has)]
    expected = brute_force(fixed_mins, fixed_maxs, has, values)
    got = point_query_fractions(lo, hi, np.array(has), np.array(values))
    np.testing.assert_array_equal(got, np.array(expected))


def test_missing_stats_are_never_pruned_and_all_null_files_never_match() -> None:
    mins = pa.array([1, None, None, 10], pa.int64())
    maxs = pa.array([5, None, None, 20], pa.int64())
    has = np.array([True, False, True, True])
    got = point_query_fractions(mins, maxs, has, [3, 7, 15, None])
    np.testing.assert_array_equal(got[:3], [0.5, 0.25, 0.5])
    assert math.isnan(got[3])


def test_inconsistent_or_half_bounds_are_not_trusted() -> None:
    got = point_query_fractions([5, 1, None], [1, None, 3], [True, True, True], [100])
    np.testing.assert_array_equal(got, [1.0])  # min > max and half-null bounds: "may contain"
    got = point_query_fractions([5, 1], [1, 2], [True, True], [100])
    np.testing.assert_array_equal(got, [0.5])


def test_float_nan_and_signed_zero() -> None:
    mins = [-0.0, 1.0, float("nan"), None]
    maxs = [0.0, 2.0, 3.0, None]
    has = [True, True, True, True]
    got = point_query_fractions(mins, maxs, has, [0.0, -0.0, 1.5, float("nan")])
    # file 2 has a NaN bound -> unknown; file 3 all-null -> never; NaN query prunes nothing but all-null files
    np.testing.assert_array_equal(got, [0.5, 0.5, 0.5, 0.75])


def test_mixed_query_types_are_exact() -> None:
    # decimals vs ints / finer-scale decimals, timestamps vs dates, uint64 vs big ints
    dmin = pa.array([Decimal("1.10"), Decimal("5.00")], pa.decimal128(5, 2))
    dmax = pa.array([Decimal("2.00"), Decimal("7.00")], pa.decimal128(5, 2))
    np.testing.assert_array_equal(
        point_query_fractions(dmin, dmax, None, [Decimal("1.099"), Decimal("1.1"), 5, 8]), [0, 0.5, 0.5, 0]
    )
    tmin = pa.array([dt.datetime(2020, 1, 1)], pa.timestamp("us"))
    np.testing.assert_array_equal(
        point_query_fractions(
            tmin, tmin, None, pa.array([1577836800000000000, 1577836800000000001], pa.timestamp("ns"))
        ),
        [1.0, 0.0],
    )
    umin = pa.array([2**63, 1], pa.uint64())
    umax = pa.array([2**64 - 1, 3], pa.uint64())
    np.testing.assert_array_equal(point_query_fractions(umin, umax, None, [2**64 - 1, -1, 2]), [0.5, 0, 0.5])
    with pytest.raises(TypeError):
        point_query_fractions(pa.array(["a"]), pa.array(["b"]), None, [dt.date(2020, 1, 1)])


def test_query_value_lists_are_converted_exactly() -> None:
    # ints mixed with a fractional Decimal must not be truncated to the bounds' int type
    np.testing.assert_array_equal(point_query_fractions([5], [5], None, [10, 0, Decimal("5.5")]), [0, 0, 0])
    np.testing.assert_array_equal(point_query_fractions([5], [6], None, [Decimal("5.5"), 6]), [1, 1])
    # [date, datetime] lists: pyarrow alone would infer date32 and drop the time of day
    d0 = dt.date(2024, 1, 1)
    ts = pa.array([dt.datetime(2024, 1, 1, 0, 0, 3)], pa.timestamp("us"))
    np.testing.assert_array_equal(point_query_fractions(ts, ts, None, [d0, dt.datetime(2024, 1, 1, 0, 0, 3)]), [0, 1])
    # a timestamp queried on a date column compares as a timestamp (midnight), not truncated
    dates = pa.array([d0], pa.date32())
    np.testing.assert_array_equal(
        point_query_fractions(dates, dates, None, [dt.datetime(2024, 1, 1), dt.datetime(2024, 1, 1, 10)]), [1, 0]
    )


def test_mean_and_empty_inputs() -> None:
    assert mean_point_query_fraction([0, 10], [9, 19], None, [5, 15, None]) == 0.5
    assert math.isnan(mean_point_query_fraction([0], [1], None, [None]))
    out = point_query_fractions(pa.array([], pa.int64()), pa.array([], pa.int64()), None, [1, 2])
    assert out.shape == (2,) and np.isnan(out).all()


def test_prepare_bounds_masks() -> None:
    fb, _, _ = prepare_bounds(pa.array([1, None, None, 4]), pa.array([2, None, None, 3]), [True, False, True, True])
    assert fb.bounded.tolist() == [True, False, False, False]
    assert fb.empty.tolist() == [False, False, True, False]
    assert fb.unknown.tolist() == [False, True, False, True]


def test_ideal_fraction() -> None:
    assert ideal_point_query_fraction(64, 3) == pytest.approx(0.25)
    assert ideal_point_query_fraction(1000, 1) == pytest.approx(0.001)
    assert ideal_point_query_fraction(10_000, 2) == pytest.approx(0.01)
    assert ideal_point_query_fraction(1, 4) == 1.0
    # more clustering columns -> each one is pruned less
    assert (
        ideal_point_query_fraction(4096, 2) < ideal_point_query_fraction(4096, 3) < ideal_point_query_fraction(4096, 4)
    )
    with pytest.raises(ValueError):
        ideal_point_query_fraction(0, 2)
    with pytest.raises(ValueError):
        ideal_point_query_fraction(10, 0)


def test_perfect_grid_reaches_the_ideal_fraction() -> None:
    # 64 files laid out as a 4x4x4 grid over (a, b, c): every query on one column reads a quarter
    edges = np.arange(5) * 100
    mins, maxs = {k: [] for k in "abc"}, {k: [] for k in "abc"}
    for i in range(4):
        for j in range(4):
            for k in range(4):
                for col, idx in zip("abc", (i, j, k)):
                    mins[col].append(edges[idx])
                    maxs[col].append(edges[idx + 1] - 1)
    rng = np.random.default_rng(0)
    for col in "abc":
        frac = mean_point_query_fraction(np.array(mins[col]), np.array(maxs[col]), None, rng.integers(0, 400, 500))
        assert frac == pytest.approx(ideal_point_query_fraction(64, 3))


def test_large_inputs_are_fast() -> None:
    rng = np.random.default_rng(0)
    n, q = 1_000_000, 100_000
    lo = rng.integers(0, 10**12, n)
    hi = lo + rng.integers(0, 10**6, n)
    has = rng.random(n) > 0.01
    vals = rng.integers(0, 10**12, q)
    point_query_fractions(lo[:1000], hi[:1000], has[:1000], vals[:10])  # warm-up
    t0 = time.perf_counter()
    frac = point_query_fractions(pa.array(lo), pa.array(hi), has, pa.array(vals))
    elapsed = time.perf_counter() - t0
    assert frac.shape == (q,)
    # spot-check against the definition
    for i in range(5):
        v = vals[i]
        expected = (np.count_nonzero(has & (lo <= v) & (v <= hi)) + np.count_nonzero(~has)) / n
        assert frac[i] == expected
    assert elapsed < 2.0, f"{elapsed:.2f}s for N=1e6, Q=1e5"


def test_files_fraction_for_columns(tmp_path: Path) -> None:
    # 16 files, sorted by "a" (disjoint ranges), "b" random (every file spans everything)
    rng = np.random.default_rng(1)
    n_files, rows = 16, 200
    a = np.arange(n_files * rows)
    b = rng.integers(0, 1000, n_files * rows)
    d = [dt.date(2020, 1, 1) + dt.timedelta(days=int(x)) for x in a]
    for i in range(n_files):
        sl = slice(i * rows, (i + 1) * rows)
        part = tmp_path / f"p={i % 2}"
        part.mkdir(exist_ok=True)
        pq.write_table(pa.table({"a": a[sl], "b": b[sl], "d": d[sl]}), part / f"f{i:02d}.parquet")
    out = files_fraction_for_columns(
        str(tmp_path),
        ["a", "b", "d"],
        {"a": rng.integers(0, n_files * rows, 100), "b": [100, 500, 900], "d": [d[5], d[-1]]},
    )
    assert out["a"] == pytest.approx(1 / n_files)
    assert out["d"] == pytest.approx(1 / n_files)
    assert out["b"] > 0.9
    # same answer from a file list, a stats table, and values given as a sequence
    files = footer_stats.list_parquet_files(str(tmp_path))
    assert len(files) == n_files
    stats = footer_stats.read_footers(files, ["a", "b"])
    assert files_fraction_for_columns(stats, ["a"], [[0, 3199]]) == {"a": pytest.approx(1 / n_files)}
    assert files_fraction_for_columns(files, ["a"], {"a": [0, 3199]}) == {"a": pytest.approx(1 / n_files)}
    with pytest.raises(ValueError):
        files_fraction_for_columns(files, ["p"], {"p": [0]})  # partition column: no footer stats


# --------------------------------------------------------------------------
# Clustering information (overlaps, depth, histogram, uniform point query)
# --------------------------------------------------------------------------

import json  # noqa: E402
import sys  # noqa: E402

from airflow_zorder.core.policy.column_clustering import (  # noqa: E402
    ColumnClustering,
    column_clustering,
    depth_histogram_keys,
    file_overlaps_and_depths,
)
from airflow_zorder.core.policy.metrics import partition_clustering, table_clustering  # noqa: E402

INF = float("inf")


def brute_overlaps_depths(mins: list, maxs: list, has: list[bool]) -> tuple[list[int], list[int]]:
    """O(N^2) definition: unknown files span (-inf, inf), all-null files have no range (0, 0)."""
    n = len(mins)
    kind = []
    for lo, hi, h in zip(mins, maxs, has):
        if h and lo is None and hi is None:
            kind.append("empty")
        elif (
            not h
            or lo is None
            or hi is None
            or lo > hi
            or (isinstance(lo, float) and (math.isnan(lo) or math.isnan(hi)))
        ):
            kind.append("unknown")
        else:
            kind.append("bounded")

    def contains(j: int, x: Any) -> bool:
        return kind[j] == "unknown" or (kind[j] == "bounded" and mins[j] <= x <= maxs[j])

    def meets(i: int, j: int) -> bool:
        if "empty" in (kind[i], kind[j]):
            return False
        if "unknown" in (kind[i], kind[j]):
            return True
        return mins[i] <= maxs[j] and mins[j] <= maxs[i]

    points = [mins[j] for j in range(n) if kind[j] == "bounded"] + [maxs[j] for j in range(n) if kind[j] == "bounded"]
    n_unknown = kind.count("unknown")
    ov, dp = [], []
    for i in range(n):
        if kind[i] == "empty":
            ov.append(0)
            dp.append(0)
            continue
        ov.append(sum(1 for j in range(n) if j != i and meets(i, j)))
        cand = points if kind[i] == "unknown" else [x for x in points if mins[i] <= x <= maxs[i]]
        dp.append(max((sum(1 for j in range(n) if contains(j, x)) for x in cand), default=n_unknown))
    return ov, dp


def test_fully_overlapping_and_disjoint_files() -> None:
    for n in (1, 2, 7, 40):
        full = column_clustering([0] * n, [100] * n, None, 1)
        assert full.average_overlaps == n - 1 and full.max_overlaps == n - 1
        assert full.average_depth == n and full.max_depth == n
        assert full.expected_files_read == n and full.expected_fraction == 1.0
        disjoint = column_clustering([10 * i for i in range(n)], [10 * i + 9 for i in range(n)], None, 1)
        assert disjoint.average_overlaps == 0 and disjoint.average_depth == 1 and disjoint.max_depth == 1
        assert disjoint.expected_files_read == pytest.approx(1.0)  # ranges tile [0, 10n - 1]
        assert disjoint.expected_fraction == pytest.approx(1 / n) and disjoint.ratio_to_ideal == pytest.approx(1.0)
        assert disjoint.depth_histogram["00001"] == n
    assert column_clustering([0] * 40, [1] * 40).depth_histogram["00064"] == 40


def test_staircase_nested_and_local_depth() -> None:
    ov, dp = file_overlaps_and_depths([0, 6, 12, 18], [10, 16, 22, 28])
    assert ov.tolist() == [1, 2, 2, 1] and dp.tolist() == [2, 2, 2, 2]
    ov, dp = file_overlaps_and_depths([0, 5, 10, 15], [10, 15, 20, 25])  # closed intervals: touching counts
    assert ov.tolist() == [2, 3, 3, 2] and dp.tolist() == [3, 3, 3, 3]
    ov, dp = file_overlaps_and_depths([0, 10, 20, 30], [100, 90, 80, 70])  # nested
    assert ov.tolist() == [3, 3, 3, 3] and dp.tolist() == [4, 4, 4, 4]
    ov, dp = file_overlaps_and_depths([0, 10, 30], [100, 20, 40])  # one wide file over two siblings
    assert ov.tolist() == [2, 1, 1] and dp.tolist() == [2, 2, 2]
    # depth is local to the file's own range
    ov, dp = file_overlaps_and_depths([0, 5, 5, 20], [10, 6, 7, 30])
    assert ov.tolist() == [2, 2, 2, 0] and dp.tolist() == [3, 3, 3, 1]
    cc = column_clustering([0, 5, 5, 20], [10, 6, 7, 30])
    assert cc.average_depth == 2.5 and cc.max_depth == 3 and cc.average_overlaps == 1.5


def test_constant_files() -> None:
    cc = column_clustering([5, 5, 6], [5, 5, 6])
    assert cc.constant_files == 3
    assert cc.average_overlaps == pytest.approx(2 / 3) and cc.max_depth == 2
    # v uniform over {5, 6}: v=5 reads 2 files, v=6 reads 1
    assert cc.expected_files_read == pytest.approx(1.5) and cc.expected_fraction == pytest.approx(0.5)
    assert cc.fraction_space == "value"
    # a single constant file is read by every query on its (one-value) range
    assert column_clustering([7], [7]).expected_fraction == 1.0
    # dates: resolution one day
    d0 = dt.date(2024, 1, 1)
    cc = column_clustering(pa.array([d0, d0 + dt.timedelta(1)]), pa.array([d0, d0 + dt.timedelta(3)]))
    assert cc.expected_files_read == pytest.approx((1 + 3) / 4) and cc.constant_files == 1


def test_missing_stats_overlap_everything_and_all_null_files_are_left_out() -> None:
    mins = pa.array([0, 10, 20, None, None], pa.int64())
    maxs = pa.array([9, 19, 29, None, None], pa.int64())
    has = [True, True, True, False, True]  # file 3: no stats, file 4: all null
    ov, dp = file_overlaps_and_depths(mins, maxs, has)
    assert ov.tolist() == [1, 1, 1, 3, 0] and dp.tolist() == [2, 2, 2, 2, 0]
    cc = column_clustering(mins, maxs, has, 1)
    assert (cc.num_files, cc.files_with_stats, cc.files_without_stats, cc.all_null_files) == (5, 4, 1, 1)
    assert cc.average_overlaps == 1.5 and cc.average_depth == 2.0 and cc.max_depth == 2
    assert sum(cc.depth_histogram.values()) == 4 and cc.depth_histogram["00000"] == 0
    # 3 disjoint files tile [0, 29]: 1 file + the unknown one per query; the all-null file is never read
    assert cc.expected_files_read == pytest.approx(2.0) and cc.expected_fraction == pytest.approx(2 / 5)
    # untrustworthy bounds (min > max, one bound null) count as missing
    cc = column_clustering(pa.array([5, 1, 0]), pa.array([1, None, 3]), [True, True, True])
    assert cc.files_without_stats == 2 and cc.average_overlaps == 2 and cc.average_depth == 3
    # nothing usable at all
    cc = column_clustering(pa.nulls(3, pa.int64()), pa.nulls(3, pa.int64()), [False, False, True])
    assert cc.average_overlaps == 1 and cc.average_depth == 2 and cc.expected_files_read == 2
    assert cc.fraction_space is None
    cc = column_clustering(pa.array([], pa.int64()), pa.array([], pa.int64()))
    assert cc.num_files == 0 and cc.average_depth is None and cc.expected_fraction is None


def test_depth_histogram_buckets() -> None:
    assert depth_histogram_keys(0) == list(range(17)) == depth_histogram_keys(16)
    assert depth_histogram_keys(17)[-2:] == [16, 32]
    assert depth_histogram_keys(32)[-1] == 32 and depth_histogram_keys(33)[-2:] == [32, 64]
    # depths 1, 16, 17, 32, 33 -> buckets 1, 16, 32, 32, 64
    mins, maxs = [], []
    for depth_, base in ((16, 1000), (17, 2000), (32, 3000), (33, 4000)):
        mins += [base] * depth_
        maxs += [base] * depth_
    mins.append(0)
    maxs.append(0)
    cc = column_clustering(mins, maxs)
    h = cc.depth_histogram
    assert list(h) == [f"{k:05d}" for k in depth_histogram_keys(33)]
    assert h["00001"] == 1 and h["00016"] == 16 and h["00032"] == 17 + 32 and h["00064"] == 33
    assert sum(h.values()) == len(mins)


def test_to_dict_is_json_and_round_trips() -> None:
    cc = column_clustering(pa.array(["a", "b", None]), pa.array(["c", "d", None]), [True, True, False], 2, column="s")
    d = json.loads(json.dumps(cc.to_dict()))
    assert d["column"] == "s" and d["arrow_type"] == "string" and d["fraction_space"] == "rank"
    assert ColumnClustering.from_dict(d) == cc
    assert d["ideal_fraction"] == pytest.approx(3**-0.5)
    assert d["ratio_to_ideal"] == pytest.approx(d["expected_fraction"] / d["ideal_fraction"])


def test_uniform_fraction_spaces() -> None:
    # strings: v uniform over the distinct bound values {a, b, c, d}
    cc = column_clustering(pa.array(["a", "c"]), pa.array(["b", "d"]))
    assert cc.fraction_space == "rank" and cc.expected_files_read == pytest.approx(1.0)
    cc = column_clustering(pa.array(["a", "a"]), pa.array(["d", "b"]))  # points a, b, d: 2, 2, 1
    assert cc.expected_files_read == pytest.approx(5 / 3)
    # floats: continuous value space; constant files weigh one ulp
    cc = column_clustering([0.0, 0.5, 0.25], [0.5, 1.0, 0.25])
    assert cc.fraction_space == "value" and cc.expected_files_read == pytest.approx(1.0)
    # infinite float range: rank space
    cc = column_clustering([-INF, 0.0], [0.0, INF])
    assert cc.fraction_space == "rank" and cc.expected_files_read == pytest.approx(4 / 3)
    # extreme integer ranges stay exact
    cc = column_clustering(pa.array([-(2**63)], pa.int64()), pa.array([2**63 - 1], pa.int64()))
    assert cc.expected_fraction == 1.0
    cc = column_clustering(pa.array([0, 2**63], pa.uint64()), pa.array([2**63 - 1, 2**64 - 1], pa.uint64()))
    assert cc.expected_files_read == 1.0
    # nanosecond timestamps far from 0: widths exact in integer arithmetic
    t0 = 1_700_000_000_000_000_000
    cc = column_clustering(pa.array([t0, t0 + 10], pa.timestamp("ns")), pa.array([t0 + 9, t0 + 19], pa.timestamp("ns")))
    assert cc.expected_files_read == 1.0
    # wide decimals: value space in float64 (approximate), resolution 10**-scale
    typ = pa.decimal128(30, 2)
    cc = column_clustering(
        pa.array([Decimal("0.00"), Decimal("1.00")], typ), pa.array([Decimal("0.99"), Decimal("1.99")], typ)
    )
    assert cc.fraction_space == "value" and cc.expected_files_read == pytest.approx(1.0)
    # bool
    assert column_clustering([False, True], [True, True]).expected_files_read == pytest.approx(1.5)


def brute_files_read(mins: list, maxs: list, has: list[bool], domain: list) -> float:
    """Mean over v in ``domain`` of the files a point query reads (definition, one value at a time)."""
    return float(np.mean([brute_force(mins, maxs, has, [v])[0] * len(mins) for v in domain]))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_overlaps_depth_and_fraction_match_brute_force(data: st.DataObject) -> None:
    elem_kind = data.draw(st.sampled_from(["int", "str", "float"]))
    elem = {
        "int": st.integers(-30, 30),
        "str": st.text(alphabet="abc", max_size=3),
        "float": st.floats(-5, 5, width=32),
    }[elem_kind]
    mins, maxs, has = _files(data.draw, elem, max_files=30)
    typ = {"int": pa.int64(), "str": pa.string(), "float": pa.float64()}[elem_kind]
    lo, hi = pa.array(mins, typ), pa.array(maxs, typ)
    ov, dp = file_overlaps_and_depths(lo, hi, np.array(has))
    eov, edp = brute_overlaps_depths(mins, maxs, has)
    assert ov.tolist() == eov and dp.tolist() == edp
    cc = column_clustering(lo, hi, np.array(has), 2)
    ranged = [i for i in range(len(mins)) if not (has[i] and mins[i] is None)]
    assert cc.max_depth == max((edp[i] for i in ranged), default=0)
    if ranged:
        assert cc.average_overlaps == pytest.approx(np.mean([eov[i] for i in ranged]))
        assert cc.average_depth == pytest.approx(np.mean([edp[i] for i in ranged]))
    hist = {}
    for i in ranged:
        key = next(k for k in depth_histogram_keys(edp[i]) if k >= edp[i])
        hist[f"{key:05d}"] = hist.get(f"{key:05d}", 0) + 1
    assert {k: v for k, v in cc.depth_histogram.items() if v} == hist
    bounded = [i for i in range(len(mins)) if has[i] and mins[i] is not None]
    if bounded and elem_kind != "float":
        if elem_kind == "int":
            domain = list(range(min(mins[i] for i in bounded), max(maxs[i] for i in bounded) + 1))
        else:
            domain = sorted({mins[i] for i in bounded} | {maxs[i] for i in bounded})
        assert cc.expected_files_read == pytest.approx(brute_files_read(mins, maxs, has, domain))
    # the per-partition pass gives the same answers as each partition alone
    groups = data.draw(st.lists(st.integers(0, 3), min_size=len(mins), max_size=len(mins)))
    table = _stats_table_from_bounds("c", lo, hi, has, [None if p == 0 else f"p={p}" for p in groups])
    parts = partition_clustering(table, ["c"])
    for p in set(groups):
        idx = [i for i, x in enumerate(groups) if x == p]
        alone = column_clustering(lo.take(pa.array(idx)), hi.take(pa.array(idx)), np.array(has)[idx], 1, column="c")
        got = parts[None if p == 0 else f"p={p}"]["c"]
        assert _same(got, alone)


def _same(a: ColumnClustering, b: ColumnClustering) -> bool:
    da, db = a.to_dict(), b.to_dict()
    for k in da:
        if isinstance(da[k], float) and isinstance(db[k], float):
            assert da[k] == pytest.approx(db[k], rel=1e-12), k
        else:
            assert da[k] == db[k], k
    return True


def _stats_table_from_bounds(column: str, lo: pa.Array, hi: pa.Array, has: list[bool], partitions: list) -> pa.Table:
    """A stats table (FILE_STATS_SCHEMA) for one column, in read_footers' text encoding."""
    n = len(lo)
    text = value_order.bounds_to_text
    cols = dict(
        path=pa.array([f"{p or ''}/f{i}.parquet" for i, p in enumerate(partitions)]),
        column_name=pa.array([column] * n),
        arrow_type=pa.array([str(lo.type)] * n),
        min_value=text(lo),
        max_value=text(hi),
        has_stats=pa.array(has, pa.bool_()),
        partition=pa.array(partitions, pa.string()),
    )
    return stats_schema.file_stats_table(cols, n)


def test_table_clustering_on_real_footers(tmp_path: Path) -> None:
    # two partitions of 8 files; "a" sorted inside each partition, "b" random, "s" strings with a shared prefix
    rng = np.random.default_rng(3)
    for p in range(2):
        part = tmp_path / f"dt=2024-01-0{p + 1}"
        part.mkdir()
        a = np.arange(800)
        for i in range(8):
            sl = slice(i * 100, (i + 1) * 100)
            pq.write_table(
                pa.table(
                    {
                        "a": a[sl],
                        "b": rng.integers(0, 10_000, 100),
                        "s": [f"key-{x:05d}" for x in a[sl]],
                    }
                ),
                part / f"f{i}.parquet",
            )
    files = footer_stats.list_parquet_files(str(tmp_path))
    stats = footer_stats.read_footers(files, ["a", "b", "s"])
    out = table_clustering(stats, ["a", "b", "s"])
    json.dumps(out)
    assert out["num_files"] == 16 and out["num_clustering_columns"] == 3
    # table-wide, both partitions hold the same values of "a": every value is in 2 files
    assert out["per_column"]["a"]["average_overlaps"] == 1 and out["per_column"]["a"]["average_depth"] == 2
    assert set(out["partitions"]) == {"dt=2024-01-01", "dt=2024-01-02"}
    pa_ = out["partitions"]["dt=2024-01-01"]["columns"]["a"]
    assert (
        pa_["average_overlaps"] == 0 and pa_["average_depth"] == 1 and pa_["expected_fraction"] == pytest.approx(1 / 8)
    )
    assert out["partitions"]["dt=2024-01-01"]["columns"]["s"]["average_depth"] == 1
    assert out["partitions"]["dt=2024-01-01"]["num_files"] == 8
    assert out["worst_column"] == "b" and out["headline"] == out["partition_ratio"]["b"]
    assert out["partition_ratio"]["b"] > 1.5 > out["partition_ratio"]["a"]
    # agrees with column_bounds + column_clustering
    mins, maxs, has = stats_schema.column_bounds(stats, "b")
    sizes = stats.filter(pc.equal(stats["column_name"], "b"))["file_size"]
    assert out["per_column"]["b"] == column_clustering(mins, maxs, has, 3, column="b", file_sizes=sizes).to_dict()
    parts = partition_clustering(stats, ["a", "b"])
    assert set(parts) == {"dt=2024-01-01", "dt=2024-01-02"} and set(parts["dt=2024-01-02"]) == {"a", "b"}
    # unpartitioned table: headline == worst ratio_to_ideal
    flat = table_clustering(
        stats.drop_columns(["partition"])
        .append_column("partition", pa.nulls(stats.num_rows, pa.string()))
        .select(stats_schema.FILE_STATS_SCHEMA.names),
        ["a", "b"],
    )
    assert list(flat["partitions"]) == [""]
    assert flat["headline"] == pytest.approx(max(flat["per_column"][c]["ratio_to_ideal"] for c in ("a", "b")))


def test_table_clustering_is_fast() -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
    from bench_metrics import build_stats_table

    stats = build_stats_table(100_000, 50)  # 400k stats rows
    table_clustering(stats.slice(0, 4000), ["id", "k", "x", "d"])  # warm-up
    t0 = time.perf_counter()
    out = table_clustering(stats, ["id", "k", "x", "d"])
    elapsed = time.perf_counter() - t0
    assert out["per_column"]["id"]["num_files"] == 100_000
    assert elapsed < 3.0, f"{elapsed:.2f}s for 400k stats rows"


def test_bytes_read_ratio_weighs_files_by_size_against_a_grid_of_target_files():
    """Equal files at the target: the bytes ratio equals the files ratio; a file twice as wide and big costs its
    bytes; files 4x the target are measured against a grid of files 1.25x the target (#37)."""
    mins, maxs = [0, 50], [49, 99]
    same = column_clustering(mins, maxs, None, 1, file_sizes=[10, 10], target_file_size=10)
    assert same.bytes_ratio_to_ideal == pytest.approx(same.ratio_to_ideal) == pytest.approx(1.0)
    # one narrow small file, one file spanning everything and 3x the bytes
    skew = column_clustering([0, 0], [9, 99], None, 1, file_sizes=[10, 30])
    assert skew.expected_bytes_read == pytest.approx(0.1 * 10 + 1.0 * 30)
    assert skew.ideal_bytes_read == pytest.approx(40 / 2)  # n = 2 files, d = 1
    big = column_clustering(mins, maxs, None, 2, file_sizes=[40, 40], target_file_size=10)
    # 80 bytes = 8 target files, 6.4 with the 25% allowance: ideal bytes 80 * 6.4 ** -0.5; read 0.5 * 40 * 2 = 40
    assert big.bytes_ratio_to_ideal == pytest.approx(40 / (80 * 6.4**-0.5))
    # files 1.25x the target pass as target-sized
    near = column_clustering(mins, maxs, None, 1, file_sizes=[12.5, 12.5], target_file_size=10)
    assert near.bytes_ratio_to_ideal == pytest.approx(near.ratio_to_ideal)
    # the sensor's sized ratio: files over 1.25x the target count as several; none here, so the files ratio
    assert near.sized_ratio_to_ideal == pytest.approx(near.ratio_to_ideal)
    # 40-byte files = 3.2 target files each: a query reads 0.5 x 2 x 3.2 = 3.2 of 6.4, ideal 6.4 ** 0.5 (d = 2)
    assert big.sized_ratio_to_ideal == pytest.approx(3.2 / 6.4**0.5)
    assert big.ratio_to_ideal == pytest.approx(1.0 / 2**0.5)
    assert column_clustering(mins, maxs, None, 1).bytes_ratio_to_ideal is None
