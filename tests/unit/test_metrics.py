"""Tests for airflow_zorder.core.metrics: point-query pruning fractions against brute force."""

from __future__ import annotations

import datetime as dt
import math
import time
from decimal import Decimal
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from airflow_zorder.core import footer_stats
from airflow_zorder.core.metrics import (
    files_fraction_for_columns,
    ideal_point_query_fraction,
    mean_point_query_fraction,
    point_query_fractions,
    prepare_bounds,
)


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
        point_query_fractions(tmin, tmin, None, pa.array([1577836800000000000, 1577836800000000001], pa.timestamp("ns"))),
        [1.0, 0.0],
    )
    umin = pa.array([2**63, 1], pa.uint64())
    umax = pa.array([2**64 - 1, 3], pa.uint64())
    np.testing.assert_array_equal(point_query_fractions(umin, umax, None, [2**64 - 1, -1, 2]), [0.5, 0, 0.5])
    with pytest.raises(TypeError):
        point_query_fractions(pa.array(["a"]), pa.array(["b"]), None, [dt.date(2020, 1, 1)])


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
    assert ideal_point_query_fraction(4096, 2) < ideal_point_query_fraction(4096, 3) < ideal_point_query_fraction(4096, 4)
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
        str(tmp_path), ["a", "b", "d"], {"a": rng.integers(0, n_files * rows, 100), "b": [100, 500, 900], "d": [d[5], d[-1]]}
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
