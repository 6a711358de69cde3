"""Tests for airflow_zorder.core.policy.incremental: which files an incremental re-clustering rewrites."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json

import numpy as np
import pyarrow as pa
import pytest

from airflow_zorder.core.policy import metrics
from airflow_zorder.core.policy.file_names import clustered_file_name, run_id_of
from airflow_zorder.core.policy.incremental import IncrementalParams, UnitFiles, plan
from airflow_zorder.core.policy.incremental_stats import PLAN_FORMAT, check_plan, plan_from_stats, plan_table
from airflow_zorder.core.stats.stats_schema import file_stats_table

pytestmark = pytest.mark.usefixtures("perfect_grid_curve")  # the rule's logic; the curve's costs: test_curve_cost

COLS = ("a", "b", "c")
TARGET = 1000  # bytes per output file in every test


def grid(label: str | None, side: int, size: int = TARGET) -> list[tuple]:
    """``side ** 3`` files cutting [0, 999]^3 into a perfect grid: ``(path, bytes, run, lo[3], hi[3])``."""
    w = 1000 // side
    return [
        (f"{label}-{i}{j}{k}", size, label, [i * w, j * w, k * w], [(i + 1) * w - 1, (j + 1) * w - 1, (k + 1) * w - 1])
        for i in range(side)
        for j in range(side)
        for k in range(side)
    ]


def unsorted(n: int, tag: str = "new", size: int = TARGET) -> list[tuple]:
    """``n`` never-clustered files spanning the whole range of every column."""
    return [(f"{tag}-{i}", size, None, [0, 0, 0], [999, 999, 999]) for i in range(n)]


def unit(files: list[tuple]) -> UnitFiles:
    """UnitFiles from the tuples above (int64 numpy bounds, stats for every file)."""
    lo = np.array([f[3] for f in files], dtype=np.int64).reshape(-1, 3)
    hi = np.array([f[4] for f in files], dtype=np.int64).reshape(-1, 3)
    bounds = {c: (lo[:, j], hi[:, j], np.ones(len(files), dtype=bool)) for j, c in enumerate(COLS)}
    return UnitFiles([f[0] for f in files], [f[1] for f in files], [f[2] for f in files], bounds)


def params(**kw) -> IncrementalParams:
    """Test parameters: 1000-byte files; nothing sealed unless asked."""
    base = {"target_file_size": TARGET, "min_new_bytes": 100 * TARGET, "seal_bytes": None}
    return IncrementalParams(**{**base, **kw})


def paths(files: list[tuple]) -> set[str]:
    return {f[0] for f in files}


def test_well_clustered_unit_without_new_files_gives_an_empty_plan() -> None:
    p = plan(unit(grid("r1", 4)), params())
    assert p.empty and p.bytes == 0 and p.num_output_files == 0 and p.bins == ()
    assert p.worst_ratio_before == pytest.approx(1.0) == p.worst_ratio_after
    assert p.reasons[0].startswith("healthy")


def test_few_new_files_below_the_minimums_wait() -> None:
    files = grid("r1", 4) + unsorted(2)
    p = plan(unit(files), params(target_ratio=1.09, min_new_files=4))
    assert p.worst_ratio_before > 1.09  # degraded, but only by the pending new files
    assert p.empty
    assert any("wait" in r for r in p.reasons)
    # once they may be clustered, exactly they are
    p2 = plan(unit(files), params(target_ratio=1.09, min_new_files=2))
    assert set(p2.paths) == paths(unsorted(2))


def test_enough_new_files_are_clustered_among_themselves_and_sealed_groups_stay() -> None:
    base, new = grid("r1", 4), unsorted(12)
    p = plan(unit(base + new), params(min_new_files=4, seal_bytes=50 * TARGET, target_ratio=1.3))
    assert set(p.paths) == paths(new)
    assert len(p.bins) == 1 and p.num_output_files == 12 and p.bytes == 12 * TARGET
    assert not set(p.paths) & paths(base)
    assert p.reasons[-1].startswith("cluster the new files")
    assert p.worst_ratio_after <= 1.3 < p.worst_ratio_before


def test_sealed_group_is_only_rewritten_by_the_full_candidate() -> None:
    base, new, r2 = grid("r1", 4), unsorted(12), grid("r2", 2)
    sealed = params(min_new_files=4, seal_bytes=50 * TARGET, target_ratio=1.15)
    # the new files alone do not reach 1.15; with the base sealed only a full rewrite does
    p = plan(unit(base + r2 + new), sealed)
    assert set(p.paths) == paths(base + r2 + new) and p.reasons[-1].startswith("full rewrite")
    # with full out of budget, the plan merges the open groups and leaves the sealed base alone
    q = plan(unit(base + r2 + new), IncrementalParams(**{**sealed.__dict__, "max_bytes": 30 * TARGET}))
    assert set(q.paths) == paths(r2 + new)
    assert q.worst_ratio_after < q.worst_ratio_before


def test_many_small_groups_merge_smallest_first() -> None:
    a, b, c = grid("a", 2, 1000), grid("b", 2, 1100), grid("c", 2, 1200)
    big = grid("d", 3)  # 27 files at the target: larger than a, b, c (files bigger than the target are degraded)
    base = grid("base", 4)
    p = plan(unit(base + a + b + c + big), params(seal_bytes=50 * TARGET, target_ratio=1.4))
    assert set(p.paths) == paths(a + b + c + big)  # the small groups merged, not the sealed base
    assert p.reasons[-1].startswith("merge the 4 smallest groups")
    assert len(p.bins) == 1 and p.bins[0].num_output_files == round(8 * (1.0 + 1.1 + 1.2) + 27)
    # rewritten groups are always a prefix of the groups ordered by size
    for target in (1.5, 1.45, 1.4, 1.35, 1.3, 1.2):
        q = plan(unit(base + a + b + c + big), params(seal_bytes=50 * TARGET, target_ratio=target))
        done = [g for g in (a, b, c, big) if paths(g) <= set(q.paths)]
        assert done == [a, b, c, big][: len(done)]


def test_byte_budget_is_respected() -> None:
    a, b, c = grid("a", 2, 1000), grid("b", 2, 1100), grid("c", 2, 1200)
    files = grid("base", 4) + a + b + c + unsorted(12)
    free = plan(unit(files), params(min_new_files=4))
    assert free.bytes > 20 * TARGET
    for budget in (20 * TARGET, 12 * TARGET):
        p = plan(unit(files), params(min_new_files=4, max_bytes=budget))
        assert 0 < p.bytes <= budget
    none = plan(unit(files), params(min_new_files=4, max_bytes=TARGET))
    assert none.empty and "byte budget" in none.reasons[-1]


@pytest.mark.parametrize(
    "files",
    [
        grid("r1", 4) + unsorted(12),
        grid("r1", 4) + grid("r2", 2) + grid("r3", 2, 1500) + unsorted(6),
        grid("r1", 4) + grid("r2", 4),
        unsorted(30),
    ],
)
def test_estimated_ratios_never_get_worse(files: list[tuple]) -> None:
    for target in (1.0, 1.2, 1.4):
        p = plan(unit(files), params(min_new_files=2, target_ratio=target))
        assert p.worst_ratio_after <= p.worst_ratio_before + 1e-9
        assert p.num_files_after == p.num_files_before - len(p.paths) + p.num_output_files
        if not p.empty:
            assert p.worst_ratio_after < p.worst_ratio_before
        for c in p.columns:  # symmetric layouts: every column improves alike
            assert c.ratio_after <= c.ratio_before + 1e-9


def test_full_rewrite_when_nothing_else_helps() -> None:
    r1, r2 = grid("r1", 4), grid("r2", 4)  # two sealed cubes overlapping everywhere (Delta's ZCube problem)
    p = plan(unit(r1 + r2), params(seal_bytes=10 * TARGET, target_ratio=1.1))
    assert set(p.paths) == paths(r1 + r2) and p.num_output_files == 128
    assert p.reasons[-1].startswith("full rewrite")
    assert p.worst_ratio_after == pytest.approx(1.0)
    assert plan(unit(r1 + r2), params(seal_bytes=10 * TARGET, target_ratio=1.3)).empty  # 1.26: healthy
    assert plan(unit(r1 + r2), params(seal_bytes=10 * TARGET, target_ratio=1.1, max_bytes=100 * TARGET)).empty


def test_unsorted_table_is_clustered_whole() -> None:
    new = unsorted(30)
    p = plan(unit(new), params(min_new_files=4))
    assert set(p.paths) == paths(new) and p.num_output_files == 30
    assert p.worst_ratio_before == pytest.approx(30 / 30 ** (2 / 3))


def test_files_without_stats_are_always_read() -> None:
    u = unit(grid("r1", 4))
    mins, maxs, has = u.bounds["a"]
    has = has.copy()
    has[:8] = False
    bounds = {**u.bounds, "a": (mins, maxs, has)}
    p = plan(UnitFiles(u.paths, u.bytes, u.membership, bounds), params(target_ratio=2.0))
    a = next(c for c in p.columns if c.column == "a")
    assert a.files_read_before == pytest.approx(8 + 56 * 0.25)


@pytest.mark.parametrize(
    ("kw", "message"),
    [
        ({"target_ratio": 0.5}, "target_ratio must be >= 1"),
        ({"target_ratio": float("nan")}, "target_ratio must be a finite number"),
        ({"target_ratio": "1.2"}, "target_ratio must be a finite number"),
        ({"target_file_size": 0}, "target_file_size must be a positive integer, not 0"),
        ({"min_new_files": -1}, "min_new_files must be a positive integer"),
        ({"min_new_bytes": 1.5}, "min_new_bytes must be a positive integer"),
        ({"seal_bytes": 0}, "seal_bytes must be a positive integer or None"),
        ({"max_bytes": True}, "max_bytes must be a positive integer or None"),
        ({"lookahead_runs": 4}, r"lookahead_runs must be an integer in 0..3"),
        ({"lookahead_runs": -1}, r"lookahead_runs must be an integer in 0..3"),
    ],
)
def test_bad_parameters_raise_clear_errors(kw: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        IncrementalParams(**kw)


def test_bad_inputs_raise_clear_errors() -> None:
    u = unit(grid("r1", 2))
    with pytest.raises(ValueError, match="differ in length"):
        UnitFiles(u.paths, u.bytes[:-1], u.membership, u.bounds)
    with pytest.raises(ValueError, match="bounds is empty"):
        UnitFiles(u.paths, u.bytes, u.membership, {})
    with pytest.raises(ValueError, match="num_clustering_columns must be >= 1"):
        plan(u, params(), num_clustering_columns=-1)


def stats_rows(files: list[tuple]):
    """FILE_STATS_SCHEMA rows (one per file and column) for the tuples above."""
    cols: dict[str, list] = {k: [] for k in ("path", "file_size", "column_name", "min_value", "max_value")}
    for path, size, _, lo, hi in files:
        for j, c in enumerate(COLS):
            for k, v in zip(cols, (path, size, c, str(lo[j]), str(hi[j]))):
                cols[k].append(v)
    n = len(cols["path"])
    cols.update(snapshot_id=[1] * n, table_name=["t"] * n, arrow_type=["int64"] * n, has_stats=[True] * n)
    cols.update(collected_at=[dt.datetime(2025, 1, 1, tzinfo=dt.UTC)] * n)
    return file_stats_table(cols, n)


def test_plan_from_stats_rows_matches_plan_and_the_sensor_metric() -> None:
    files = grid("r1", 4) + grid("r2", 2) + unsorted(6)
    rows = stats_rows(files)
    runs = {f[0]: f[2] for f in files}
    p = plan_from_stats(rows, runs, params=params(min_new_files=4))
    assert p == plan(unit(files), params(min_new_files=4))
    sensor = next(iter(metrics.partition_clustering(rows, COLS).values()))
    for c in p.columns:
        assert c.ratio_before == pytest.approx(sensor[c.column].ratio_to_ideal)
    # membership as a column added in memory
    with_col = rows.append_column("cluster_run_id", pa.array([runs[x] for x in rows["path"].to_pylist()], pa.string()))
    assert plan_from_stats(with_col, "cluster_run_id", params=params(min_new_files=4)) == p
    # by default, membership is the run each file's name carries (the clustering job names its files so)
    named = [
        (f"/t/{clustered_file_name(i, f[2])}" if f[2] else f"/t/part-{i:05d}-c000.parquet", *f[1:])
        for i, f in enumerate(files)
    ]
    assert run_id_of(named[0][0]) == "r1" and run_id_of(named[-1][0]) is None
    by_name = plan_from_stats(stats_rows(named), params=params(min_new_files=4))
    assert by_name.to_dict()["columns"] == p.to_dict()["columns"]
    assert p.paths and sorted(by_name.paths) == sorted(named[i][0] for i, f in enumerate(files) if f[0] in set(p.paths))
    assert plan_from_stats(rows, runs, columns=["a"], params=params(min_new_files=4)).columns[0].column == "a"
    json.dumps(p.to_dict())  # the XCom form


def test_plan_from_stats_errors() -> None:
    rows = stats_rows(grid("r1", 2))
    with pytest.raises(ValueError, match="no membership column 'cluster_run_id'"):
        plan_from_stats(rows, "cluster_run_id")
    with pytest.raises(ValueError, match=r"no stats rows for columns \['zz'\]"):
        plan_from_stats(rows, {}, columns=["zz"])


def test_plan_table_plans_each_partition_and_lists_only_those_with_work() -> None:
    healthy = [(f"/t/day=1/{clustered_file_name(i, 'r1')}", *f[1:]) for i, f in enumerate(grid("r1", 2))]
    busy = [(f"/t/day=2/{clustered_file_name(i, 'r1')}", *f[1:]) for i, f in enumerate(grid("r1", 2))]
    busy += [(f"/t/day=2/new-{i}.parquet", *f[1:]) for i, f in enumerate(unsorted(6))]
    rows = stats_rows(healthy + busy)
    part = ["day=1" if "/day=1/" in p else "day=2" for p in rows["path"].to_pylist()]
    rows = rows.set_column(rows.schema.get_field_index("partition"), "partition", pa.array(part))
    doc = plan_table(rows, list(COLS), params=params(min_new_files=4))
    assert check_plan(json.loads(json.dumps(doc))) == doc
    assert doc["partitions_evaluated"] == 2 and [e["partition"] for e in doc["partitions"]] == ["day=2"]
    (entry,) = doc["partitions"]
    alone = plan_from_stats(rows.filter(pa.compute.equal(rows["partition"], "day=2")), params=params(min_new_files=4))
    assert entry["files"] == len(alone.paths) == doc["files"] and entry["bytes"] == alone.bytes == doc["bytes"]
    assert sorted(p for b in entry["bins"] for p in b["paths"]) == sorted(alone.paths)
    assert {p.rsplit("/", 1)[1] for p in alone.paths} == {f"new-{i}.parquet" for i in range(6)}
    assert entry["num_files"] == 14 and entry["bytes_total"] == 14 * TARGET
    assert doc["ratio_after"] < doc["ratio_before"] == pytest.approx(entry["ratio_before"], abs=1e-4)
    only = plan_table(rows, list(COLS), partitions=["day=1"], params=params(min_new_files=4))
    assert only["partitions_evaluated"] == 1 and only["partitions"] == [] and only["files"] == 0


def test_check_plan_refuses_what_it_cannot_run() -> None:
    with pytest.raises(ValueError, match="not an incremental plan"):
        check_plan({"partitions": []})
    with pytest.raises(ValueError, match="version 9 is not supported"):
        check_plan({"format": PLAN_FORMAT, "version": 9})
    bad = {"format": PLAN_FORMAT, "version": 1, "partitions": [{"partition": None, "bins": [{"paths": ["x"]}]}]}
    with pytest.raises(ValueError, match="malformed bin"):
        check_plan(bad)
    bin_ = {"paths": ["x"], "num_output_files": 2}
    for on in (["b", "a"], ["c"]):  # a curve order of the plan's columns; a subset
        check_plan(
            {**bad, "columns": ["a", "b", "c"], "partitions": [{"partition": None, "bins": [{**bin_, "columns": on}]}]}
        )
    for on in (["a", "A"], ["a", "z"], []):
        doc = {
            **bad,
            "columns": ["a", "b", "c"],
            "partitions": [{"partition": None, "bins": [{**bin_, "columns": on}]}],
        }
        with pytest.raises(ValueError, match="distinct columns of the plan's"):
            check_plan(doc)


def test_new_files_narrow_in_a_column_are_clustered_on_the_others() -> None:
    """Appends in a fresh slab of an ingestion-date column c (#37): clustering them on a, b only costs sqrt(k)
    files per query there instead of k ** (2/3); the bin says so, and the document carries its columns."""
    base = grid("r1", 4)  # c in [0, 999]
    fresh = [(f"day-{i}", TARGET, None, [0, 0, 1000], [999, 999, 1009]) for i in range(16)]
    p = plan(unit(base + fresh), params(min_new_files=4))
    (b,) = p.bins
    assert set(b.paths) == paths(fresh) and b.columns == ("a", "b")
    assert any("on a, b (narrow in the others)" in r for r in p.reasons), p.reasons
    # uniform appends span c as well: clustered on every column (no columns in the bin)
    q = plan(unit(base + unsorted(16)), params(min_new_files=4))
    assert q.bins and all(x.columns is None for x in q.bins)
    runs = {f[0]: f[2] for f in base + fresh}
    doc = plan_table(stats_rows(base + fresh), list(COLS), params=params(min_new_files=4), membership=runs)
    assert [x.get("columns") for x in doc["partitions"][0]["bins"]] == [["a", "b"]]
    assert check_plan(json.loads(json.dumps(doc)))["partitions"][0]["bins"][0]["columns"] == ["a", "b"]


def test_the_bins_of_one_run_stay_separate_groups() -> None:
    """A run's bins were clustered apart: their names carry the bin, and the rule sees two groups, not one whose
    span is the union of both (#37)."""
    from airflow_zorder.core.policy.file_names import membership_of

    name = clustered_file_name(3, "20260101T000000-aaaa0001", bin=2)
    assert name == "part-00003-b2-zorder-20260101T000000-aaaa0001.parquet"
    assert run_id_of(f"/t/{name}") == "20260101T000000-aaaa0001"
    assert membership_of(f"/t/{name}") == "20260101T000000-aaaa0001/b2"
    assert membership_of(f"/t/{clustered_file_name(3, 'r9')}") == "r9" and membership_of("/t/x.parquet") is None
    with pytest.raises(ValueError, match="bin"):
        clustered_file_name(0, "r1", bin=-1)
    # two bins of one run: each a perfect 2x2x2 grid, one in the low half of c, one in the high half
    low = [
        (f"/t/{clustered_file_name(i, 'r1', 0)}", TARGET, None, f[3], [f[4][0], f[4][1], f[4][2] // 2])
        for i, f in enumerate(grid("x", 2))
    ]
    high = [
        (
            f"/t/{clustered_file_name(i, 'r1', 1)}",
            TARGET,
            None,
            [f[3][0], f[3][1], 500 + f[3][2] // 2],
            [f[4][0], f[4][1], 500 + f[4][2] // 2],
        )
        for i, f in enumerate(grid("y", 2))
    ]
    from airflow_zorder.core.policy.incremental_stats import unit_files

    groups = set(unit_files(stats_rows(low + high), None, list(COLS)).membership)
    assert groups == {"r1/b0", "r1/b1"}


def test_output_files_are_sized_by_what_clustered_rows_weigh() -> None:
    """Unsorted appends weigh more per row than clustered files (Spark's lineitem: 5-15%): the new files' bin is
    cut for the bytes its rows take once clustered, so that its files come out at the target, not below it."""
    files = grid("r1", 2) + unsorted(16, size=1250)  # 8 clustered files of 100 rows (10 B/row); 16 of 12.5 B/row
    u = unit(files)
    as_bytes = plan(u, params(min_new_files=4))
    by_rows = plan(dataclasses.replace(u, rows=[100] * len(files)), params(min_new_files=4))
    (b,) = [b for b in as_bytes.bins if b.paths[0].startswith("new")]
    (r,) = [b for b in by_rows.bins if b.paths[0].startswith("new")]
    assert b.bytes == r.bytes == 16 * 1250
    assert b.num_output_files == 20 and r.num_output_files == 16  # 1600 rows x 10 B / 1000 B per file
    unknown = plan(dataclasses.replace(u, rows=[100] * 8 + [0] * 16), params(min_new_files=4))
    assert [x.num_output_files for x in unknown.bins] == [20]  # rows not known for every new file: its bytes
    with pytest.raises(ValueError, match="rows differ in length"):
        dataclasses.replace(u, rows=[1])
