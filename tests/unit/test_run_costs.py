"""The cost of re-clustering runs (``core.policy.metrics``: bytes added, write amplification) and each run's figures
over a table's snapshots and events (``core.policy.history.clustering_runs``): store tables and Delta tables."""

from __future__ import annotations

import datetime as dt
import json

import pyarrow as pa
import pytest

from airflow_zorder.core.policy import history, write_amplification
from airflow_zorder.core.policy.file_names import clustered_file_name
from airflow_zorder.core.stats.stats_schema import FILE_STATS_SCHEMA

T0 = dt.datetime(2026, 3, 1, tzinfo=dt.UTC)


def h(n: float) -> dt.datetime:
    return T0 + dt.timedelta(hours=n)


def snapshot(files: dict[str, int], columns=("x", "y")) -> pa.Table:
    """FILE_STATS rows: one per file and column (only what the rule reads)."""
    rows = [{"path": p, "file_size": size, "column_name": c} for p, size in files.items() for c in columns]
    return pa.Table.from_pylist(rows, schema=FILE_STATS_SCHEMA)


def zorder(run: str, k: int) -> str:
    return f"/t/day=1/{clustered_file_name(k, run)}"


def event(run_id: str, at: dt.datetime, bytes_before: int, duration_s: float = 60.0, **details) -> dict:
    """A ``cluster`` event as ``stats_store.cluster_event`` writes it (``details``: JSON text)."""
    return {
        "kind": "cluster",
        "run_id": run_id,
        "at": at,
        "status": "clustered",
        "bytes_before": bytes_before,
        "files_before": 3,
        "files_after": 1,
        "duration_s": duration_s,
        "details": json.dumps(details),
    }


# --------------------------------------------------------------------------- the rule


def test_unclustered_files_are_those_no_clustering_run_named():
    snap = snapshot({"/t/a.parquet": 100, zorder("r1", 0): 900, "/t/part-00001-abc-c000.snappy.parquet": 50})
    assert write_amplification.unclustered_file_bytes(snap) == {
        "/t/a.parquet": 100,
        "/t/part-00001-abc-c000.snappy.parquet": 50,
    }
    assert write_amplification.unclustered_file_bytes(snapshot({})) == {}


def test_bytes_added_counts_each_new_file_once():
    first = {"/t/a": 100, "/t/b": 200}
    assert write_amplification.bytes_added(first, None) == 300  # the first run: every byte no run wrote
    # b was left pending by the previous run (still there, not counted again); c and d are new
    assert write_amplification.bytes_added({"/t/b": 200, "/t/c": 40, "/t/d": 60}, first) == 100
    assert write_amplification.bytes_added({}, first) == 0


@pytest.mark.parametrize(
    "rewritten,added,want",
    [(10_000, 4_000, 2.5), (300, 300, 1.0), (0, 100, 0.0), (100, 0, None), (100, None, None)],
)
def test_write_amplification_is_rewritten_over_added(rewritten, added, want):
    assert write_amplification.write_amplification(rewritten, added) == want


# --------------------------------------------------------------------------- runs over a store's snapshots


def store_runs(snaps: dict[int, tuple[dt.datetime, dict[str, int]]], events: list[dict], ratios=None, **kw):
    loaded: list[int] = []

    def unclustered_of(sid: int):
        loaded.append(sid)
        if sid not in snaps:
            return None  # pruned
        return write_amplification.unclustered_file_bytes(snapshot(snaps[sid][1]))

    out = history.clustering_runs(
        events,
        [(sid, at) for sid, (at, _) in snaps.items()],
        unclustered_of=unclustered_of,
        ratio_of=lambda sid: (ratios or {}).get(sid),
        **kw,
    )
    return out, loaded


def test_store_runs_bytes_added_write_amplification_and_ratios():
    ingest = {"/t/day=1/i0": 1000, "/t/day=1/i1": 1000, "/t/day=1/i2": 1300}
    grid = {zorder("r1", 0): 1650, zorder("r1", 1): 1650}
    appends = {"/t/day=1/a0": 1500, "/t/day=1/a1": 2500}
    snaps = {
        1: (h(0), ingest),
        2: (h(2), grid),
        3: (h(3), {**grid, **appends}),
        4: (h(5), {zorder("r2", 0): 7300}),
    }
    events = [
        event("r1", h(1), 3300, mode="full"),
        event("r2", h(4), 7300, mode="incremental", rewritten={"files": 4, "bytes": 7300, "output_files": 1}),
    ]
    out, _ = store_runs(snaps, events, ratios={1: 3.0, 2: 1.0, 3: 1.8, 4: 1.05})
    r1, r2 = out["runs"]
    assert (r1["mode"], r1["bytes_rewritten"], r1["bytes_added"], r1["write_amplification"]) == (
        "full",
        3300,
        3300,
        1.0,
    )
    assert r1["bytes_added_note"].startswith("first run")
    assert (r1["snapshot_before"], r1["snapshot_after"], r1["ratio_before"], r1["ratio_after"]) == (1, 2, 3.0, 1.0)
    assert (r2["mode"], r2["files_rewritten"], r2["output_files"]) == ("incremental", 4, 1)
    assert r2["bytes_added"] == 4000 and r2["write_amplification"] == pytest.approx(7300 / 4000)
    assert (r2["snapshot_before"], r2["snapshot_after"], r2["previous_run_id"]) == (3, 4, "r1")
    t = out["totals"]
    assert (t["bytes_rewritten"], t["bytes_added"]) == (10600, 7300)
    assert t["write_amplification"] == pytest.approx(10600 / 7300)  # the sums' ratio, as the benchmark's totals


def test_files_a_run_left_pending_are_counted_once():
    a = {"/t/day=1/a0": 100, "/t/day=1/a1": 100}
    snaps = {1: (h(0), a), 2: (h(2), {**a, "/t/day=1/a2": 300})}  # r1 rewrote nothing new; a2 appended
    events = [event("r1", h(1), 50), event("r2", h(3), 600)]
    out, _ = store_runs(snaps, events)
    assert [r["bytes_added"] for r in out["runs"]] == [200, 300]
    assert out["runs"][1]["write_amplification"] == 2.0


def test_unknown_bytes_added_say_why():
    files = {"/t/day=1/a": 100}
    # no snapshot before r1; r2 and r3 with no stats collected in between; r4's previous snapshot was pruned
    snaps = {2: (h(2), files), 5: (h(8), {**files, "/t/day=1/b": 5})}
    events = [event("r1", h(1), 10), event("r2", h(3), 10), event("r3", h(4), 10), event("r4", h(9), 10)]
    out, _ = store_runs(snaps, events)
    notes = {r["run_id"]: (r["bytes_added"], r["bytes_added_note"], r["write_amplification"]) for r in out["runs"]}
    assert notes["r1"] == (None, "no stats snapshot before this run", None)
    assert notes["r2"] == (None, "no stats snapshot before the previous run", None)
    assert notes["r3"] == (None, "no stats were collected between the previous run and this one", None)
    assert notes["r4"][0] == 5  # snapshot 5 against snapshot 2 (r3 started from it): b is new
    assert out["totals"]["runs_with_bytes_added"] == 1 and out["totals"]["write_amplification"] == 2.0
    # a snapshot collected while the run ran tells neither before nor after
    out, _ = store_runs({1: (h(0), files), 2: (h(1) - dt.timedelta(seconds=30), files)}, [event("r", h(1), 10)])
    assert (out["runs"][0]["snapshot_before"], out["runs"][0]["snapshot_after"]) == (1, None)
    # the snapshot before a run was pruned: unknown, not an older one
    out, _ = store_runs({2: (h(2), files)}, [event("r1", h(1), 10), event("r2", h(3), 10)])
    assert out["runs"][1]["bytes_added_note"] == "no stats snapshot before the previous run"


def test_limit_keeps_the_previous_runs_state_and_noop_runs_are_not_runs():
    snaps = {i: (h(2 * i), {f"/t/day=1/f{j}": 10 for j in range(i + 1)}) for i in range(4)}
    events = [event(f"r{i}", h(2 * i + 1), 10) for i in range(4)]
    events.append({**event("noop", h(20), 0), "status": "noop"})
    out, loaded = store_runs(snaps, events, limit=2)
    assert [r["run_id"] for r in out["runs"]] == ["r2", "r3"] and out["runs_total"] == 4
    assert [r["bytes_added"] for r in out["runs"]] == [10, 10]  # one new file of 10 bytes each time
    assert out["runs"][0]["previous_run_id"] == "r1"
    assert sorted(set(loaded)) == [1, 2, 3]  # only the snapshots the listed runs need


def test_after_snapshot_must_not_show_the_next_run():
    f = {"/t/day=1/a": 10}
    snaps = {1: (h(0), f), 2: (h(5), f)}
    out, _ = store_runs(snaps, [event("r1", h(1), 10), event("r2", h(3), 10)])
    assert [r["snapshot_after"] for r in out["runs"]] == [None, 2]


# --------------------------------------------------------------------------- Delta: versions from the events


def test_delta_runs_use_the_versions_they_read_and_committed():
    versions = {
        3: {"/d/part-00000-aaa-c000.snappy.parquet": 400, "/d/part-00000-bbb-c000.snappy.parquet": 600},
        4: {"/d/" + clustered_file_name(0, "d1"): 900},
        6: {"/d/" + clustered_file_name(0, "d1"): 900, "/d/part-00000-ccc-c000.snappy.parquet": 250},
        7: {"/d/" + clustered_file_name(0, "d2"): 1100},
    }
    events = [
        event("d1", h(1), 1000, delta={"read_version": 3, "version": 4}),
        event("d2", h(2), 1150, delta={"read_version": 5, "version": 7}),
        event("d0", h(0), 10),  # recorded before the job kept its versions: unknown
    ]
    out = history.clustering_runs(
        events,
        None,
        unclustered_of=lambda v: (
            write_amplification.unclustered_file_bytes(snapshot(versions[v])) if v in versions else None
        ),
        ratio_of=lambda v: {3: 2.0, 4: 1.0, 6: 1.5, 7: 1.0}.get(v),
    )
    d0, d1, d2 = out["runs"]
    assert d0["bytes_added"] is None and "table version was not recorded" in d0["bytes_added_note"]
    assert d1["bytes_added"] is None and "previous run's table version" in d1["bytes_added_note"]
    assert (d2["snapshot_before"], d2["snapshot_after"]) == (6, 7)
    assert d2["bytes_added"] == 250 and d2["write_amplification"] == pytest.approx(1150 / 250)
    assert (d2["ratio_before"], d2["ratio_after"]) == (1.5, 1.0)
    # without the older event, d1 is the first run: the 1,000 bytes delta-rs wrote
    out = history.clustering_runs(
        events[:2],
        None,
        unclustered_of=lambda v: write_amplification.unclustered_file_bytes(snapshot(versions[v])),
        ratio_of=lambda v: None,
    )
    assert [r["bytes_added"] for r in out["runs"]] == [1000, 250]


def test_the_jobs_event_keeps_what_the_rule_reads(tmp_path):
    """``stats_store.cluster_event`` of a job result keeps ``rewritten`` and the Delta versions in ``details``."""
    from airflow_zorder.core.stats import stats_store

    result = {
        "status": "clustered",
        "run_id": "d9",
        "table": "/d",
        "kind": "delta",
        "mode": "incremental",
        "before": {"files": 3, "bytes": 1150, "rows": 30},
        "after": {"files": 1, "bytes": 1100, "rows": 30},
        "rewritten": {"files": 3, "bytes": 1150, "output_files": 1},
        "delta": {"read_version": 5, "version": 7},
        "duration_s": 2.0,
    }
    loc = str(tmp_path / "stats")
    stats_store.record_event(loc, stats_store.cluster_event(result))
    (ev,) = stats_store.load_events(loc, kind="cluster").to_pylist()
    details = json.loads(ev["details"])
    assert details["rewritten"] == result["rewritten"] and details["delta"] == result["delta"]
    out = history.clustering_runs([ev], None, unclustered_of=lambda v: {}, ratio_of=lambda v: None)
    (run,) = out["runs"]
    assert (run["mode"], run["files_rewritten"], run["bytes_rewritten"]) == ("incremental", 3, 1150)
    assert (run["snapshot_before"], run["snapshot_after"]) == (6, 7)
