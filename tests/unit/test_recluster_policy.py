"""core.policy.recluster_policy: decisions on hand-built stats snapshots with known answers (every guard, thresholds, partitions)."""

from __future__ import annotations

import datetime as dt
import json
from datetime import timedelta

import pyarrow as pa
import pytest

from airflow_zorder.core.policy import recluster_policy
from airflow_zorder.core.policy.incremental_stats import check_plan
from airflow_zorder.core.policy.recluster_policy import HealthPolicy, IncrementalParams, evaluate
from airflow_zorder.core.stats import stats_schema, stats_store

UTC = dt.UTC
T0 = dt.datetime(2026, 3, 1, 12, 0, tzinfo=UTC)  # stats collected
NOW = T0 + timedelta(hours=1)


def snapshot(files: list[dict], collected_at: dt.datetime = T0) -> pa.Table:
    """FILE_STATS rows: each file {path, cols: {column: (min, max)}, partition?, size?, mtime?}."""
    rows = []
    for f in files:
        part = f.get("partition")
        for c, (lo, hi) in f["cols"].items():
            rows.append(
                {
                    "snapshot_id": 3,
                    "table_name": "t",
                    "path": f["path"],
                    "partition": part,
                    "partition_values": [tuple(part.split("=", 1))] if part else None,
                    "file_size": f.get("size", 1000),
                    "file_mtime_ms": int(f.get("mtime", T0 - timedelta(days=1)).timestamp() * 1000),
                    "file_rows": 10,
                    "num_row_groups": 1,
                    "created_by": "test",
                    "column_name": c,
                    "arrow_type": "int64",
                    "physical_type": "INT64",
                    "min_value": None if lo is None else str(lo),
                    "max_value": None if hi is None else str(hi),
                    "null_count": 0,
                    "value_count": 10,
                    "has_stats": lo is not None,
                    "min_exact": True,
                    "max_exact": True,
                    "method": "footer",
                    "collected_at": collected_at,
                }
            )
    t = pa.Table.from_pylist(rows, schema=stats_schema.FILE_STATS_SCHEMA)
    for k, v in stats_schema.bound_columns(t["min_value"], t["max_value"], t["arrow_type"]).items():
        t = t.set_column(t.schema.get_field_index(k), stats_schema.FILE_STATS_SCHEMA.field(k), v)
    return t


def grid(n_side: int = 4, scramble: tuple[str, ...] = (), partition: str | None = None, **kw) -> list[dict]:
    """n_side**2 files on a grid over a, b in [0, 25*n_side - 1]; scrambled columns span the whole range."""
    top = 25 * n_side - 1
    out = []
    for f in range(n_side * n_side):
        cells = {"a": f // n_side, "b": f % n_side}
        cols = {c: (0, top) if c in scramble else (25 * k, 25 * k + 24) for c, k in cells.items()}
        path = f"{partition}/f{f}.parquet" if partition else f"f{f}.parquet"
        out.append({"path": path, "cols": cols, "partition": partition, **kw})
    return out


def cluster_event(at: dt.datetime, columns=("a", "b"), status: str = "clustered") -> dict:
    return {"kind": "cluster", "at": at, "status": status, "columns": list(columns), "partitions": []}


# --------------------------------------------------------------------------- known answers


def test_fully_overlapping_files_recluster_with_numbers_in_the_reason():
    files = [{"path": f"f{i}", "cols": {"x": (0, 99)}} for i in range(8)]
    p = evaluate(snapshot(files), now=NOW, table="t", stats_location="loc")
    c = p["columns"]["x"]
    assert p["decision"] == "recluster" and p["degraded"]
    # N fully overlapping files: overlaps N-1, depth N, every query reads all files; ideal (d=1) is 1/N
    assert (c["average_overlaps"], c["average_depth"], c["max_depth"]) == (7.0, 8.0, 8)
    assert c["expected_fraction"] == 1.0 and c["ideal_fraction"] == pytest.approx(1 / 8)
    assert c["ratio_to_ideal"] == pytest.approx(8.0) and c["over_threshold"]
    assert p["reasons"] == ["x: a point query reads 100% of 8 files, 8.0x the ideal 12% (threshold 2.0x)"]
    assert p["worst_column"] == "x" and p["headline"] == pytest.approx(8.0)
    assert p["num_files"] == 8 and p["total_bytes"] == 8000 and p["partitions"] == []
    assert (p["table"], p["stats_location"], p["snapshot_id"]) == ("t", "loc", 3)
    assert p["stats_collected_at"] == "2026-03-01T12:00:00.000000Z" and p["stats_age_s"] == 3600.0
    json.dumps(p)  # JSON-serialisable as is


def test_disjoint_files_are_healthy_and_say_why():
    files = [{"path": f"f{i}", "cols": {"x": (10 * i, 10 * i + 9)}} for i in range(8)]
    p = evaluate(snapshot(files), now=NOW)
    c = p["columns"]["x"]
    assert p["decision"] == "healthy" and not p["degraded"]
    assert (c["average_overlaps"], c["average_depth"], c["ratio_to_ideal"]) == (0.0, 1.0, pytest.approx(1.0))
    assert p["reasons"][0].startswith("healthy: worst column x: a point query reads 12% of 8 files, 1.0x the ideal")


def test_grid_layout_one_scrambled_column_of_two():
    p = evaluate(snapshot(grid(scramble=("b",))), now=NOW)
    a, b = p["columns"]["a"], p["columns"]["b"]
    assert p["num_clustering_columns"] == 2  # ideal 16 ** (-1/2) = 25%
    assert a["ratio_to_ideal"] == pytest.approx(1.0) and not a["over_threshold"]
    assert b["expected_fraction"] == 1.0 and b["ratio_to_ideal"] == pytest.approx(4.0) and b["over_threshold"]
    assert p["decision"] == "recluster" and p["worst_column"] == "b"
    assert p["reasons"] == ["b: a point query reads 100% of 16 files, 4.0x the ideal 25% (threshold 2.0x)"]


# --------------------------------------------------------------------------- thresholds


def test_relative_threshold_is_strict_and_per_column_overrides_it():
    snap = snapshot(grid(scramble=("b",)))  # b is exactly 4.0x
    assert evaluate(snap, policy=HealthPolicy(max_ratio_to_ideal=4.0), now=NOW)["decision"] == "healthy"
    assert evaluate(snap, policy=HealthPolicy(max_ratio_to_ideal=3.9), now=NOW)["decision"] == "recluster"
    p = evaluate(snap, policy=HealthPolicy(max_ratio_to_ideal=1.5, per_column={"b": 5.0}), now=NOW)
    assert p["decision"] == "healthy" and p["columns"]["b"]["threshold"] == 5.0
    p = evaluate(snap, policy=HealthPolicy(max_ratio_to_ideal=5.0, per_column={"b": 3.0}), now=NOW)
    assert p["decision"] == "recluster" and "(threshold 3.0x)" in p["reasons"][0]


def test_absolute_depth_and_files_fraction_thresholds():
    snap = snapshot(grid())  # every column at the ideal: ratio 1, depth 4, 25% of files
    relaxed = dict(max_ratio_to_ideal=10.0)
    assert evaluate(snap, policy=HealthPolicy(**relaxed, max_average_depth=4.0), now=NOW)["decision"] == "healthy"
    p = evaluate(snap, policy=HealthPolicy(**relaxed, max_average_depth=3.0), now=NOW)
    assert p["decision"] == "recluster"
    assert p["reasons"][0] == "a: average depth 4.0 files (max_average_depth 3.0), max depth 4"
    p = evaluate(snap, policy=HealthPolicy(**relaxed, max_files_fraction=0.2), now=NOW)
    assert p["decision"] == "recluster"
    assert p["reasons"][0] == "a: a point query reads 25% of 16 files (max_files_fraction 20%)"
    assert evaluate(snap, policy=HealthPolicy(**relaxed, max_files_fraction=0.3), now=NOW)["decision"] == "healthy"


def test_aggregate_mean_over_columns():
    snap = snapshot(grid(scramble=("b",)))  # a: 1.0x, b: 4.0x
    # worst: b at 4.0x > 3.0; mean of (1/3, 4/3) = 0.83 <= 1
    assert evaluate(snap, policy=HealthPolicy(max_ratio_to_ideal=3.0), now=NOW)["decision"] == "recluster"
    p = evaluate(snap, policy=HealthPolicy(max_ratio_to_ideal=3.0, aggregate="mean"), now=NOW)
    assert p["decision"] == "healthy" and any("mean over columns" in r and "0.83" in r for r in p["reasons"])
    # mean of (1/2, 4/2) = 1.25 > 1
    assert evaluate(snap, policy=HealthPolicy(aggregate="mean"), now=NOW)["decision"] == "recluster"


def test_policy_validation_and_round_trip():
    pol = HealthPolicy(max_stats_age=600, min_interval_since_cluster=None, per_column={"a": 3})
    assert pol.max_stats_age == timedelta(minutes=10) and pol.per_column == {"a": 3.0}
    assert HealthPolicy.from_dict(json.loads(json.dumps(pol.to_dict()))) == pol
    for bad in (
        dict(aggregate="median"),
        dict(max_ratio_to_ideal=0),
        dict(per_column={"a": -1}),
        dict(min_new_data_fraction=1.5),
        dict(max_partitions=0),
        dict(max_stats_age="1h"),
    ):
        with pytest.raises(ValueError):
            HealthPolicy(**bad)
    with pytest.raises(ValueError, match="max_ratio"):
        HealthPolicy.from_dict({"max_ratio": 2})


# --------------------------------------------------------------------------- guards


def test_stale_stats_hold_even_when_degraded():
    snap = snapshot(grid(scramble=("b",)))
    p = evaluate(snap, now=T0 + timedelta(hours=30))
    assert p["decision"] == "hold" and p["degraded"]
    assert p["reasons"][0].startswith("stats are 30.0 h old") and "max_stats_age 24.0 h" in p["reasons"][0]
    assert (
        evaluate(snap, policy=HealthPolicy(max_stats_age=None), now=T0 + timedelta(days=30))["decision"] == "recluster"
    )
    # stats confirmed current by a later collection run (nothing new found) are fresh
    p = evaluate(snap, now=T0 + timedelta(hours=30), collected_at=T0 + timedelta(hours=29))
    assert p["decision"] == "recluster" and p["stats_age_s"] == 3600.0


def test_healthy_table_with_stale_stats_is_hold_too():
    p = evaluate(snapshot(grid()), now=T0 + timedelta(days=2))
    assert p["decision"] == "hold" and not p["degraded"]


def test_stats_older_than_the_last_clustering_hold():
    ev = [cluster_event(T0 + timedelta(minutes=10))]
    p = evaluate(snapshot(grid(scramble=("b",))), events=ev, now=T0 + timedelta(hours=5))
    assert p["decision"] == "hold" and p["last_cluster_at"] == "2026-03-01T12:10:00.000000Z"
    assert any("before the last re-clustering" in r for r in p["reasons"])


def test_too_few_files_or_bytes_hold():
    few = [{"path": f"f{i}", "cols": {"x": (0, 99)}} for i in range(5)]
    p = evaluate(snapshot(few), now=NOW)
    assert p["decision"] == "hold" and p["degraded"]
    assert p["reasons"][0] == "only 5 files (min_files 8): too small to re-cluster"
    assert evaluate(snapshot(few), policy=HealthPolicy(min_files=5), now=NOW)["decision"] == "recluster"
    p = evaluate(snapshot(grid(scramble=("b",))), policy=HealthPolicy(min_bytes=16001), now=NOW)
    assert p["decision"] == "hold" and "only 16000 bytes (min_bytes 16001)" in p["reasons"][0]


def test_recent_clustering_holds_a_degraded_table():
    stats_at = T0 + timedelta(minutes=30)  # collected after the clustering
    snap = snapshot(grid(scramble=("b",)), collected_at=stats_at)
    ev = [cluster_event(T0 + timedelta(minutes=20))]
    p = evaluate(snap, events=ev, now=T0 + timedelta(minutes=40))
    assert p["decision"] == "hold"
    assert p["reasons"][0] == (
        "degraded, but held: the last re-clustering finished 20 min ago (min_interval_since_cluster 60 min)"
    )
    assert evaluate(snap, events=ev, now=T0 + timedelta(minutes=81))["decision"] == "recluster"
    # a failed / no-op clustering run is not a re-clustering
    ev_noop = [cluster_event(T0 + timedelta(minutes=20), status="noop")]
    assert evaluate(snap, events=ev_noop, now=T0 + timedelta(minutes=40))["decision"] == "recluster"


def test_too_little_new_data_since_the_last_clustering_holds():
    cl = T0 - timedelta(hours=5)
    files = grid(scramble=("b",), mtime=cl - timedelta(minutes=1))
    for f in files[:4]:  # 4 of 16 equal-sized files written after the clustering: 25% new
        f["mtime"] = cl + timedelta(hours=1)
    ev = [cluster_event(cl)]
    p = evaluate(snapshot(files), events=ev, policy=HealthPolicy(min_new_data_fraction=0.3), now=NOW)
    assert p["decision"] == "hold" and p["new_data_fraction"] == pytest.approx(0.25)
    assert (
        "only 25% of the bytes were written since the last re-clustering (min_new_data_fraction 30%)" in p["reasons"][0]
    )
    p = evaluate(snapshot(files), events=ev, policy=HealthPolicy(min_new_data_fraction=0.2), now=NOW)
    assert p["decision"] == "recluster"


# --------------------------------------------------------------------------- columns


def test_default_columns_come_from_the_last_clustering_and_set_d():
    files = grid(scramble=("b",))
    for f in files:
        f["cols"]["c"] = (0, 99)  # not a clustering column: fully overlapping
    snap = snapshot(files)
    assert evaluate(snap, now=NOW)["columns"].keys() == {"a", "b", "c"}  # no clustering yet: every column
    ev = [cluster_event(T0 - timedelta(days=2), columns=("b", "a"))]
    p = evaluate(snap, events=ev, now=NOW)
    assert list(p["columns"]) == ["b", "a"] and p["columns_source"] == "last_cluster_event"
    # watching one of the two clustering columns still compares with the 2-column ideal
    p = evaluate(snap, ["a"], events=ev, now=NOW)
    assert p["num_clustering_columns"] == 2 and p["columns"]["a"]["ratio_to_ideal"] == pytest.approx(1.0)
    assert evaluate(snap, "a", num_clustering_columns=1, now=NOW)["columns"]["a"]["ideal_fraction"] == 1 / 16
    assert list(evaluate(snap, "a, c", now=NOW)["columns"]) == ["a", "c"]  # templated comma lists work


def test_unknown_columns_name_the_available_ones():
    with pytest.raises(ValueError, match=r"unknown column\(s\) \['zz'\]: the statistics of t have \['a', 'b'\]"):
        evaluate(snapshot(grid()), ["a", "zz"], table="t", now=NOW)


def test_files_without_stats_are_counted_as_read_and_noted():
    files = grid()
    files[0]["cols"]["a"] = (None, None)
    snap = snapshot(files)
    p = evaluate(snap, now=NOW)
    assert p["columns"]["a"]["files_without_stats"] == 1
    assert any("a: 1 of 16 files have no usable statistics" in r for r in p["reasons"])


# --------------------------------------------------------------------------- partitions


def test_partition_output_lists_only_degraded_partitions_worst_first():
    files = (
        grid(partition="day=2026-01-01")
        + grid(partition="day=2026-01-02", scramble=("a", "b"))
        + grid(partition="day=2026-01-03", scramble=("b",))
        + grid(partition="day=2026-01-04")
    )
    p = evaluate(snapshot(files), now=NOW)
    assert p["decision"] == "recluster" and p["num_partitions"] == 4
    assert p["partitions"] == ["day=2026-01-02", "day=2026-01-03"]  # both 4.0x: ties by name
    assert p["partitions_degraded"] == 2 and p["partitions_evaluated"] == 4
    assert [w["partition"] for w in p["worst_partitions"]][:2] == ["day=2026-01-02", "day=2026-01-03"]
    assert p["reasons"][0].startswith("2 of 4 partitions need re-clustering: day=2026-01-02 (")
    # within partitions: b reads 2 of 4 partitions fully -> (4+16+16+4)/(4*4) = 2.5x
    assert p["columns"]["b"]["partition_ratio"] == pytest.approx(2.5)
    assert any(
        r.startswith("b: within partitions, a point query reads 62% of a partition's files, 2.5x") for r in p["reasons"]
    )
    # the clustering job's --partitions accepts the list as JSON (what an XCom renders to)
    from airflow_zorder.core.jobs.options import parse_partitions

    assert parse_partitions([json.dumps(p["partitions"])]) == p["partitions"]


def test_healthy_partitioned_table_lists_nothing():
    files = grid(partition="day=1") + grid(partition="day=2")
    p = evaluate(snapshot(files), now=NOW)
    assert p["decision"] == "healthy" and p["partitions"] == [] and p["partitions_evaluated"] == 2
    assert p["reasons"][0] == "no partition over its thresholds (2 evaluated)"


def test_new_partition_degrades_while_the_table_average_is_fine():
    """Thirty clustered days and one new scrambled day: the new day is re-clustered, not the table."""
    files = [f for d in range(1, 31) for f in grid(partition=f"day={d:02d}")] + grid(
        partition="day=31", scramble=("a", "b")
    )
    p = evaluate(snapshot(files), now=NOW)
    assert p["columns"]["a"]["partition_ratio"] < 1.2  # the table-level figure alone would say healthy
    assert p["decision"] == "recluster" and p["partitions"] == ["day=31"]


def test_small_partitions_are_not_listed_and_the_list_is_capped():
    files = [f for d in range(6) for f in grid(partition=f"day={d}", scramble=("b",))]
    files += [{"path": "day=9/only.parquet", "partition": "day=9", "cols": {"a": (0, 99), "b": (0, 99)}}]
    p = evaluate(snapshot(files), policy=HealthPolicy(max_partitions=4), now=NOW)
    assert "day=9" not in p["partitions"] and p["partitions_evaluated"] == 6
    assert len(p["partitions"]) == 4 and p["partitions_degraded"] == 6
    assert any("listing the worst 4 of 6 degraded partitions (max_partitions)" in r for r in p["reasons"])


def test_thousands_of_partitions_keep_the_payload_small():
    files = [
        {"path": f"day={d}/f{i}", "partition": f"day={d}", "cols": {"a": (0, 99)}}
        for d in range(3000)
        for i in range(2)
    ]
    p = evaluate(snapshot(files), policy=HealthPolicy(max_ratio_to_ideal=1.5, max_partitions=None), now=NOW)
    assert p["partitions_degraded"] == 3000 and len(p["partitions"]) == 3000
    assert len(p["worst_partitions"]) == recluster_policy.WORST_PARTITIONS_LISTED and p["worst_partitions_truncated"]
    assert len(json.dumps(p)) < 100_000
    p = evaluate(snapshot(files), policy=HealthPolicy(max_ratio_to_ideal=1.5), now=NOW)
    assert len(p["partitions"]) == 1000  # the default max_partitions


# --------------------------------------------------------------------------- decision events


def test_record_and_read_the_last_decision(tmp_path):
    loc = str(tmp_path / "stats")
    assert recluster_policy.last_decision(loc) is None
    first = evaluate(snapshot(grid()), now=NOW, table="t", stats_location=loc)
    second = evaluate(snapshot(grid(scramble=("a",))), now=NOW + timedelta(minutes=5), table="t", stats_location=loc)
    recluster_policy.record_decision(loc, first, source="dag.task")
    recluster_policy.record_decision(loc, second, source="dag.task")
    assert recluster_policy.last_decision(loc) == second
    ev = stats_store.load_events(loc, kind="decision").to_pylist()
    assert [e["status"] for e in ev] == ["healthy", "recluster"] and ev[1]["columns"] == ["a", "b"]
    assert ev[1]["run_id"] == "dag.task"
    with pytest.raises(ValueError):
        recluster_policy.record_decision(loc, {"decision": "maybe"})


def test_a_recorded_decision_keeps_the_plan_totals_but_not_its_file_lists(tmp_path):
    loc = str(tmp_path / "stats")
    p = evaluate(snapshot(grid(scramble=("a",))), now=NOW, table="t", stats_location=loc, incremental=SMALL)
    assert p["plan"]["partitions"] and p["plan"]["partitions"][0]["bins"][0]["paths"]
    recluster_policy.record_decision(loc, p, source="dag.task")
    kept = recluster_policy.last_decision(loc)["plan"]
    assert kept["files"] == p["plan"]["files"] and kept["bytes"] == p["plan"]["bytes"]
    assert all("paths" not in b for e in kept["partitions"] for b in e["bins"])
    assert [b["num_output_files"] for b in kept["partitions"][0]["bins"]] == [
        b["num_output_files"] for b in p["plan"]["partitions"][0]["bins"]
    ]


# --------------------------------------------------------------------------- when the clock alone changes the decision


def test_next_recheck_at_is_the_first_time_based_guard_ahead():
    ts = dt.datetime.timestamp
    # healthy, fresh stats: only max_stats_age can change it (to hold), 24 h after the collection (+1 s slack)
    p = evaluate(snapshot(grid()), now=NOW)
    assert p["decision"] == "healthy" and recluster_policy.next_recheck_at(p) == ts(T0 + timedelta(hours=24)) + 1
    assert recluster_policy.next_recheck_at(p, slack_s=0) == ts(T0 + timedelta(hours=24))
    assert recluster_policy.next_recheck_at(p, HealthPolicy(max_stats_age=None)) is None
    assert evaluate(snapshot(grid()), now=T0 + timedelta(hours=24, seconds=1))["decision"] == "hold"  # indeed
    # degraded but held by min_interval_since_cluster: the interval running out comes first
    snap = snapshot(grid(scramble=("b",)), collected_at=T0 + timedelta(minutes=30))
    ev = [cluster_event(T0 + timedelta(minutes=20))]
    p = evaluate(snap, events=ev, now=T0 + timedelta(minutes=40))
    assert p["decision"] == "hold" and recluster_policy.next_recheck_at(p) == ts(T0 + timedelta(minutes=80)) + 1
    assert evaluate(snap, events=ev, now=T0 + timedelta(minutes=80, seconds=1))["decision"] == "recluster"
    # the payload's own policy is the default; another policy or clock can be given
    p = evaluate(
        snap,
        events=ev,
        policy=HealthPolicy(min_interval_since_cluster=timedelta(hours=2)),
        now=T0 + timedelta(minutes=40),
    )
    assert recluster_policy.next_recheck_at(p) == ts(T0 + timedelta(minutes=140)) + 1
    assert (
        recluster_policy.next_recheck_at(p, now=T0 + timedelta(minutes=141))
        == ts(T0 + timedelta(hours=24, minutes=30)) + 1
    )
    # a healthy table's last clustering does not matter: only the stats' age
    p = evaluate(snapshot(grid(), collected_at=T0 + timedelta(minutes=30)), events=ev, now=T0 + timedelta(minutes=40))
    assert (
        p["decision"] == "healthy"
        and recluster_policy.next_recheck_at(p) == ts(T0 + timedelta(hours=24, minutes=30)) + 1
    )
    # stale already, or collected before the last clustering: only new stats help, the clock does not
    p = evaluate(snapshot(grid(scramble=("b",))), now=T0 + timedelta(hours=30))
    assert p["decision"] == "hold" and recluster_policy.next_recheck_at(p) is None
    p = evaluate(
        snapshot(grid(scramble=("b",))),
        events=[cluster_event(T0 + timedelta(minutes=10))],
        policy=HealthPolicy(min_interval_since_cluster=None, max_stats_age=None),
        now=NOW,
    )
    assert p["decision"] == "hold" and recluster_policy.next_recheck_at(p) is None
    # a minimal payload (e.g. a decision event without details) has nothing to go on
    assert (
        recluster_policy.next_recheck_at({"decision": "healthy", "policy": HealthPolicy().to_dict()}, now=NOW) is None
    )


# --------------------------------------------------------------------------- the steps on their own


def test_format_percent_is_the_one_share_formatter():
    from airflow_zorder.core.policy.formatting import format_percent

    # fixed decimals (the UI, the demo report): what f"{x:.1%}" gives
    for x in (0.4349, 0.0, 1.0, 0.00049, 2, 0.123456):
        assert format_percent(x) == f"{x:.1%}"
    assert format_percent(0.4349, 0) == "43%"
    # two significant digits (the decision's reasons)
    assert [format_percent(x, None) for x in (0.41, 0.041, 0.00041, 0.1)] == ["41%", "4.1%", "0.041%", "10%"]
    # missing values
    assert format_percent(None) == format_percent(float("nan")) == "—"
    assert format_percent(None, missing="-") == "-"


def test_choose_columns_and_guards_as_steps():
    from airflow_zorder.core.policy.column_choice import choose_columns
    from airflow_zorder.core.policy.guards import GuardFindings

    # the last clustering's columns that have stats, d from the clustering (its third column has no stats)
    last = cluster_event(T0, columns=("a", "b", "c"))
    choice = choose_columns(["a", "b"], None, [last], last_cluster=last)
    assert (choice.columns, choice.source, choice.num_clustering_columns) == (["a", "b"], "last_cluster_event", 3)
    assert choice.notes == ["columns of the last re-clustering without statistics (not evaluated): ['c']"]
    assert choose_columns(["a", "b"], "b", None, last_cluster=None).num_clustering_columns == 1
    with pytest.raises(ValueError, match=r"unknown column\(s\) \['x'\].* of t have \['a', 'b'\]"):
        choose_columns(["a", "b"], ["x"], None, last_cluster=None, table="t")
    # stale and small hold whatever the score; thrash only holds a degraded table
    assert GuardFindings(stale=["old"]).decision(degraded=True) == "hold"
    assert GuardFindings(small=["tiny"]).decision(degraded=False) == "hold"
    assert GuardFindings(thrash=["just now"]).decision(degraded=False) == "healthy"
    assert GuardFindings(thrash=["just now"]).decision(degraded=True) == "hold"
    assert GuardFindings().decision(degraded=True) == "recluster"


# --------------------------------------------------------------------------- the incremental plan in the payload

SMALL = IncrementalParams(target_file_size=1000, min_new_bytes=4000)  # 1000-byte files, as snapshot() writes


def test_plan_is_attached_only_to_recluster_and_only_when_asked():
    degraded, healthy = snapshot(grid(scramble=("b",))), snapshot(grid())
    p = evaluate(degraded, now=NOW, incremental=SMALL)
    plan = check_plan(p["plan"])
    assert p["decision"] == "recluster" and list(p)[-1] == "plan"  # the last key, in a fixed place
    assert (plan["columns"], plan["num_clustering_columns"], plan["snapshot_id"]) == (["a", "b"], 2, 3)
    assert plan["params"]["target_file_size"] == 1000 and plan["partitions_evaluated"] == 1
    # unpartitioned: one unit, the whole table; never-clustered files are clustered among themselves
    (unit,) = plan["partitions"]
    assert unit["partition"] is None and plan["files"] == 16 and plan["bytes"] == 16000
    assert sorted(x for b in unit["bins"] for x in b["paths"]) == sorted(f"f{i}.parquet" for i in range(16))
    assert plan["ratio_before"] == pytest.approx(p["columns"]["b"]["ratio_to_ideal"]) and plan["ratio_after"] < 1.35
    assert p["reasons"][-1] == (
        f"incremental plan: rewrite 16 files (15.6 KiB) of 16, worst ratio 4.00 -> {plan['ratio_after']:.2f} (estimated)"
    )
    json.dumps(p)
    # no plan without parameters, nor on healthy or hold
    without = evaluate(degraded, now=NOW)
    assert without["plan"] is None and without["reasons"] == p["reasons"][:-1]
    assert evaluate(healthy, now=NOW, incremental=SMALL)["plan"] is None
    held = evaluate(degraded, policy=HealthPolicy(min_files=100), now=NOW, incremental=SMALL)
    assert held["decision"] == "hold" and held["plan"] is None
    assert not any(r.startswith("incremental plan") for r in held["reasons"])


def test_plan_covers_exactly_the_listed_degraded_partitions():
    files = (
        grid(scramble=("b",), partition="day=1")
        + grid(partition="day=2")
        + grid(scramble=("a", "b"), partition="day=3")
        + grid(scramble=("a",), partition="day=4")
    )
    p = evaluate(snapshot(files), now=NOW, incremental=SMALL)
    assert p["decision"] == "recluster" and sorted(p["partitions"]) == ["day=1", "day=3", "day=4"]
    plan = p["plan"]
    assert plan["partitions_evaluated"] == 3
    assert [e["partition"] for e in plan["partitions"]] == ["day=1", "day=3", "day=4"]
    for e in plan["partitions"]:  # every path is one of that partition's files; day=2 (healthy) is not touched
        assert all(x.startswith(e["partition"] + "/") for b in e["bins"] for x in b["paths"])
    assert plan["files"] == 48 and p["reasons"][-1].startswith(
        "incremental plan: rewrite 48 files (46.9 KiB) of 48 in 3"
    )
    # max_partitions: the plan follows the payload's cut
    capped = evaluate(snapshot(files), policy=HealthPolicy(max_partitions=1), now=NOW, incremental=SMALL)
    assert len(capped["partitions"]) == 1  # the worst (tied here: the first by name)
    assert [e["partition"] for e in capped["plan"]["partitions"]] == capped["partitions"]
    assert capped["plan"]["partitions_evaluated"] == 1 and capped["reasons"][-1].endswith("(estimated)")


def test_plan_reads_only_the_chosen_columns_and_the_membership_in_file_names(perfect_grid_curve):
    """Files an earlier run wrote (named by the job) stay; only the new, unsorted ones are planned; extra columns in
    the snapshot change nothing."""
    from airflow_zorder.core.policy.file_names import clustered_file_name

    clustered = [{**f, "path": clustered_file_name(i, "20260101T000000-aaaa0001")} for i, f in enumerate(grid(4))]
    new = [{"path": f"new-{i}.parquet", "cols": {"a": (0, 99), "b": (0, 99)}} for i in range(12)]
    files = [{**f, "cols": {**f["cols"], "c": (0, 5)}} for f in clustered + new]
    events = [cluster_event(T0 - timedelta(days=1))]
    sealed = IncrementalParams(target_file_size=1000, min_new_bytes=4000, seal_bytes=10_000, target_ratio=1.5)
    p = evaluate(snapshot(files), ["a", "b"], now=NOW, events=events, incremental=sealed)
    assert p["decision"] == "recluster"
    planned = {x for e in p["plan"]["partitions"] for b in e["bins"] for x in b["paths"]}
    assert planned == {f["path"] for f in new}
    # the plan is amortised against the sensor's threshold: the step, then what it buys
    *steps, last = p["plan"]["partitions"][0]["reasons"]
    assert steps[-1].startswith("cluster the new files") and last.startswith("amortised: ")
    assert p["plan"]["params"]["trigger_ratio"] == 2.0  # the sensor's threshold, passed to the rule
    only_ab = snapshot(clustered + new)
    same = evaluate(only_ab, ["a", "b"], now=NOW, events=events, incremental=sealed)
    assert same["plan"] == p["plan"]
    # the rule plans for the curve the table's last run cut it by (the event says), unless given
    assert p["plan"]["params"]["curve"] is None  # no curve in the event: the jobs' default
    hilbert = [{**events[0], "curve": "hilbert"}]
    assert evaluate(only_ab, ["a", "b"], now=NOW, events=hilbert, incremental=sealed)["plan"]["params"]["curve"] == (
        "hilbert"
    )
    given = IncrementalParams(**{**sealed.__dict__, "curve": "zorder"})
    assert evaluate(only_ab, ["a", "b"], now=NOW, events=hilbert, incremental=given)["plan"]["params"]["curve"] == (
        "zorder"
    )


def test_plan_that_cannot_be_made_leaves_the_decision_and_says_why():
    """A degraded partition without rows for a chosen column: no plan, the job plans for itself."""
    files = grid(scramble=("b",), partition="day=1") + [
        {"path": f"day=2/g{i}.parquet", "cols": {"a": (0, 99)}, "partition": "day=2"} for i in range(8)
    ]
    p = evaluate(snapshot(files), now=NOW, incremental=SMALL)
    assert p["decision"] == "recluster" and "day=2" in p["partitions"]
    assert p["plan"] is None
    assert p["reasons"][-1].startswith("incremental plan not computed (no stats rows for columns ['b']")
    assert p["reasons"][-1].endswith("an incremental run plans for itself")


def test_bigger_files_than_the_target_cannot_pass_the_ratio():
    """A perfect 2x2 grid of 4 files passes on files read, but each file is 4x the target: a grid of 16
    files 1.25x the target reads 1/1.79 as much: over the threshold (#37)."""
    files = grid(2, size=4000)
    on_files = evaluate(snapshot(files), ["a", "b"], HealthPolicy(min_files=1, target_file_size=None), now=NOW)
    assert on_files["decision"] == "healthy"
    judged = evaluate(
        snapshot(files), ["a", "b"], HealthPolicy(min_files=1, max_ratio_to_ideal=1.5, target_file_size=1000), now=NOW
    )
    assert judged["decision"] == "recluster"
    assert judged["columns"]["a"]["ratio_to_ideal"] == pytest.approx(1.0)
    # each file counts as 4 / 1.25 = 3.2 target files: a query reads 2 x 3.2 of 12.8, ideal 12.8 ** 0.5
    assert judged["columns"]["a"]["sized_ratio_to_ideal"] == pytest.approx(6.4 / 12.8**0.5)  # 1.79
    assert any("the files are bigger than the target" in r for r in judged["reasons"]), judged["reasons"]
    # the same layout of target-sized files is healthy under the same policy
    small = evaluate(
        snapshot(grid(2, size=1000)),
        ["a", "b"],
        HealthPolicy(min_files=1, max_ratio_to_ideal=1.5, target_file_size=1000),
        now=NOW,
    )
    assert small["decision"] == "healthy"


def test_target_file_size_must_be_positive():
    with pytest.raises(ValueError, match="target_file_size"):
        HealthPolicy(target_file_size=0)
