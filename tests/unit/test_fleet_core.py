"""The fleet core (airflow_zorder.core.fleet): its spec and discovery on real Delta and Iceberg tables, the ranking
by read savings per byte under a budget, plan trimming, the reasons, the starvation guard and the records."""

from __future__ import annotations

import json

import pytest

from airflow_zorder.core.errors import InvalidInputError
from airflow_zorder.core.fleet import records
from airflow_zorder.core.fleet.budget import Budget
from airflow_zorder.core.fleet.evaluation import evaluate_fleet
from airflow_zorder.core.fleet.gain import partition_gain, plan_gain, trim_plan
from airflow_zorder.core.fleet.selection import TableEvaluation, select
from airflow_zorder.core.fleet.spec import FleetTable, expand, parse_spec_text


def _partition(label: str | None, nbytes: int, saved: float) -> dict:
    """A plan partition whose two columns each save ``saved`` files read."""
    cols = [
        {"column": c, "files_read_before": 8.0, "files_read_after": 8.0 - saved, "ratio_before": 2.0, "ratio_after": 1}
        for c in ("a", "b")
    ]
    return {
        "partition": label,
        "num_files": 8,
        "bytes_total": nbytes,
        "files": 8,
        "bytes": nbytes,
        "num_output_files": 2,
        "ratio_before": 2.0,
        "ratio_after": 1.0,
        "columns": cols,
        "reasons": [],
        "bins": [{"paths": ["x"], "bytes": nbytes, "num_output_files": 2}],
    }


def _plan(*parts: dict) -> dict:
    return {
        "format": "airflow-zorder-incremental-plan",
        "version": 1,
        "columns": ["a", "b"],
        "files": sum(p["files"] for p in parts),
        "bytes": sum(p["bytes"] for p in parts),
        "num_output_files": sum(p["num_output_files"] for p in parts),
        "partitions": list(parts),
    }


def _eval(name: str, decision: str, plan: dict | None = None, weight: float | None = None) -> TableEvaluation:
    return TableEvaluation(FleetTable(name, read_weight=weight), payload={"decision": decision, "plan": plan})


def test_gain_is_the_plans_files_read_saved_and_a_trimmed_plan_keeps_the_best_partitions_per_byte():
    cheap, dear = _partition("d=1", 100, 3.0), _partition("d=2", 400, 4.0)
    plan = _plan(cheap, dear)
    assert partition_gain(cheap) == 3.0 and plan_gain(plan) == 7.0
    trimmed = trim_plan(plan, lambda n: n <= 450)
    assert [p["partition"] for p in trimmed["partitions"]] == ["d=1"]  # 0.03 saved per byte beats 0.01
    assert (trimmed["bytes"], trimmed["files"], trimmed["num_output_files"]) == (100, 8, 2)
    assert trim_plan(plan, lambda n: n <= 99) is None
    assert trim_plan(plan, lambda n: n <= 500)["bytes"] == 500


def test_tables_are_ranked_by_weighted_savings_per_byte_and_the_budget_is_never_exceeded():
    evals = [
        _eval("/t/dense", "recluster", _plan(_partition(None, 100, 4.0))),  # 0.04 per byte
        _eval("/t/heavy", "recluster", _plan(_partition(None, 300, 2.0)), weight=5.0),  # 10 / 300 = 0.033
        _eval("/t/thin", "recluster", _plan(_partition(None, 200, 1.0))),  # 0.005
        _eval("/t/split", "recluster", _plan(_partition("d=1", 150, 2.0), _partition("d=2", 150, 0.5))),
        _eval("/t/ok", "healthy"),
        _eval("/t/held", "hold"),
        TableEvaluation(FleetTable("/t/broken"), error="StatsNotFoundError: never collected"),
    ]
    plan = select(evals, Budget(max_bytes=600))
    by = {d["table"]: d for d in plan.decisions}
    ranked = sorted((d for d in plan.decisions if d["rank"]), key=lambda d: d["rank"])
    assert [d["table"] for d in ranked] == ["/t/dense", "/t/heavy", "/t/split", "/t/thin"]
    assert [d["score"] for d in ranked] == sorted((d["score"] for d in ranked), reverse=True)
    assert plan.totals()["bytes"] <= 600 and plan.totals()["bytes"] == sum(d["chosen_bytes"] for d in plan.chosen)
    assert by["/t/dense"]["reason"] == by["/t/heavy"]["reason"] == "chosen"
    split = by["/t/split"]  # 200 bytes left: one of its partitions fits, the better one
    assert split["reason"] == "chosen" and split["trimmed"] and split["partitions"] == ["d=1"]
    assert split["chosen_bytes"] == 150 and split["plan"]["bytes"] == 150
    thin = by["/t/thin"]
    assert thin["reason"] == "budget" and thin["skipped_runs"] == 1 and "does not fit" in thin["detail"]
    assert (by["/t/ok"]["reason"], by["/t/held"]["reason"], by["/t/broken"]["reason"]) == ("healthy", "hold", "error")
    assert "never collected" in by["/t/broken"]["detail"]
    assert [d["reason"] for d in plan.decisions][:3] == ["chosen"] * 3  # the record lists the chosen first
    # unbounded: every degraded table, whole
    free = select(evals, Budget())
    assert {d["table"] for d in free.chosen} == {"/t/dense", "/t/heavy", "/t/thin", "/t/split"}
    assert free.totals()["bytes"] == 100 + 300 + 200 + 300


def test_the_budget_buys_partitions_by_weighted_savings_per_byte_across_tables():
    """A whole plan that fits does not take the place of another table's better partitions: the budget is spent
    partition by partition, and what is left is filled with the partitions that still fit."""
    mixed = _plan(_partition("d=1", 100, 4.0), _partition("d=2", 300, 0.3))  # 4.3 / 400: ranked first
    other = _plan(_partition("d=1", 200, 2.0), _partition("d=2", 100, 0.1))  # 2.1 / 300: ranked second
    plan = select([_eval("/t/mixed", "recluster", mixed), _eval("/t/other", "recluster", other)], Budget(max_bytes=450))
    by = {d["table"]: d for d in plan.decisions}
    assert (by["/t/mixed"]["rank"], by["/t/other"]["rank"]) == (1, 2)
    # by partition: mixed d=1 (0.04 a byte), other d=1 (0.01), other d=2 (0.001); mixed d=2 (0.001) no longer fits
    assert by["/t/mixed"]["partitions"] == ["d=1"] and by["/t/other"]["partitions"] == ["d=1", "d=2"]
    assert not by["/t/other"]["trimmed"] and by["/t/other"]["plan"]["bytes"] == 300
    assert plan.totals()["bytes"] == 400 <= 450
    assert plan.totals()["gain"] == pytest.approx(4.0 + 2.1)  # the whole plan first: 4.3, and nothing else fit


def test_a_spark_time_budget_counts_each_jobs_overhead():
    evals = [_eval(f"/t/{i}", "recluster", _plan(_partition(None, 1000, 1.0 + i))) for i in range(4)]
    budget = Budget(max_spark_seconds=25.0, bytes_per_second=1000.0, job_overhead_s=10.0)  # 11 s a table
    plan = select(evals, budget)
    assert [d["table"] for d in plan.chosen] == ["/t/3", "/t/2"]
    assert plan.totals()["spark_seconds"] == 22.0
    assert Budget.of("2TB", "20h").max_bytes == 2 << 40 and Budget.of(None, "30m").max_spark_seconds == 1800
    with pytest.raises(InvalidInputError, match="Spark time"):
        Budget.of(None, "soon")


def test_a_table_skipped_for_budget_n_runs_in_a_row_is_served_first():
    evals = [
        _eval("/t/best", "recluster", _plan(_partition(None, 100, 5.0))),
        _eval("/t/poor", "recluster", _plan(_partition(None, 100, 1.0))),
    ]
    budget = Budget(max_bytes=100)
    skipped: dict[str, int] = {}
    waits = []
    for _ in range(6):
        plan = select(evals, budget, skipped_runs=skipped, starvation_runs=2)
        skipped = plan.skipped_runs()
        waits.append([d["table"] for d in plan.chosen])
        assert max(skipped.values()) <= 2  # never more than N runs without being re-clustered
    assert waits == [["/t/best"], ["/t/best"], ["/t/poor"], ["/t/best"], ["/t/best"], ["/t/poor"]]
    starved = select(evals, budget, skipped_runs={"/t/poor": 2}, starvation_runs=2)
    assert starved.chosen[0]["starved"] and "starved" in starved.chosen[0]["detail"]
    # a starved table of several partitions is served its best one first; the rest of its plan waits its rank
    wide = _eval("/t/wide", "recluster", _plan(_partition("d=1", 60, 1.0), _partition("d=2", 60, 2.0)))
    plan = select([evals[0], wide], Budget(max_bytes=200), skipped_runs={"/t/wide": 2}, starvation_runs=2)
    assert [(d["table"], d["partitions"], d["chosen_bytes"]) for d in plan.chosen] == [
        ("/t/wide", ["d=2"], 60),
        ("/t/best", [], 100),
    ]


def test_evaluations_run_on_threads_and_an_error_never_stops_the_fleet():
    import threading

    seen = set()

    def evaluate(t: FleetTable) -> dict:
        seen.add(threading.current_thread().name)
        if t.table.endswith("bad"):
            raise OSError("store unreachable")
        return {"decision": "healthy"}

    tables = [FleetTable(f"/t/{i}") for i in range(12)] + [FleetTable("/t/bad")]
    out = evaluate_fleet(tables, evaluate, max_workers=4)
    assert [e.table.table for e in out] == [t.table for t in tables]
    assert [e.decision for e in out].count("healthy") == 12
    assert out[-1].decision == "error" and out[-1].error == "OSError: store unreachable"
    assert all(n.startswith("zorder-fleet") for n in seen)


def test_evaluations_spread_over_forked_processes_come_back_in_order():
    import os

    def evaluate(t: FleetTable) -> dict:
        if t.table.endswith("7"):
            raise OSError("store unreachable")
        return {"decision": "healthy", "pid": os.getpid()}

    tables = [FleetTable(f"/t/{i}") for i in range(40)]
    out = evaluate_fleet(tables, evaluate, max_workers=4, processes=2)
    assert [e.table.table for e in out] == [t.table for t in tables]
    assert [e.decision for e in out].count("error") == 4 and out[7].error == "OSError: store unreachable"
    pids = {e.payload["pid"] for e in out if e.payload}
    assert len(pids) == 2 and os.getpid() not in pids  # one share per forked process, even under load
    few = evaluate_fleet(tables[:20], evaluate, max_workers=1, processes=2)  # too few to fork for
    assert {e.payload["pid"] for e in few if e.payload} == {os.getpid()}


def test_a_table_may_name_its_own_storage_connection():
    (entry,) = parse_spec_text('[{"table": "s3://lake/a", "conn_id": " aws_lake "}]')
    (table,), _ = expand([entry])
    assert table.conn_id == "aws_lake" and table.to_dict()["conn_id"] == "aws_lake"
    (plain,), _ = expand([{"table": "/t/b"}])
    assert plain.conn_id == ""


def test_the_spec_reads_json_and_yaml_and_refuses_what_it_cannot_use():
    text = '[{"table": "/a", "columns": "x, y", "read_weight": 3}, "/b"]'
    assert parse_spec_text(text) == [{"table": "/a", "columns": "x, y", "read_weight": 3}, {"table": "/b"}]
    yaml_text = "tables:\n  - table: /a\n    columns: [x, y]\n  - discover: delta\n    prefix: /lake\n"
    entries = parse_spec_text(yaml_text)
    tables, errors = expand(entries, list_delta=lambda prefix: [f"{prefix}/t1", f"{prefix}/t2"])
    assert [t.table for t in tables] == ["/a", "/lake/t1", "/lake/t2"] and not errors
    assert tables[0].columns == ("x", "y") and tables[0].weight == 1.0
    with pytest.raises(InvalidInputError, match="unknown key"):
        expand([{"table": "/a", "colums": ["x"]}])
    with pytest.raises(InvalidInputError, match="read_weight"):
        expand([{"table": "/a", "read_weight": -1}])
    with pytest.raises(InvalidInputError, match="discover must be"):
        parse_spec_text('[{"discover": "hudi"}]')
    _, errors = expand([{"discover": "iceberg", "catalog": "c"}])  # a failing rule is recorded, not raised
    assert "needs 'catalog' and 'namespace'" in errors[0]["error"]


def test_discovery_finds_real_delta_tables_under_a_prefix_and_an_iceberg_namespace(tmp_path):
    pytest.importorskip("deltalake")
    pytest.importorskip("pyiceberg")
    import pyarrow as pa
    from deltalake import write_deltalake
    from iceberg_tables import CATALOG, write_table

    from airflow_zorder.core.fleet.spec import discover_delta, discover_iceberg

    rows = pa.table({"a": [1, 2, 3]})
    for name in ("lake/sales", "lake/nested/events"):
        write_deltalake(str(tmp_path / name), rows)
        write_deltalake(str(tmp_path / name), rows, mode="append")  # several log entries, one table
    (tmp_path / "lake" / "plain").mkdir()
    (tmp_path / "lake" / "plain" / "x.parquet").write_bytes(b"not delta")
    assert discover_delta(str(tmp_path / "lake")) == [
        str(tmp_path / "lake/nested/events"),
        str(tmp_path / "lake/sales"),
    ]
    _, props = write_table(tmp_path / "ice", "ns.one", [rows])
    write_table(tmp_path / "ice", "ns.two", [rows])
    assert discover_iceberg(CATALOG, "ns", props) == ["ns.one", "ns.two"]
    tables, errors = expand(
        [{"discover": "iceberg", "catalog": CATALOG, "namespace": "ns", "columns": ["a"]}],
        list_iceberg=lambda c, n: discover_iceberg(c, n, props),
    )
    assert [(t.table, t.iceberg_catalog, t.columns) for t in tables] == [
        ("ns.one", CATALOG, ("a",)),
        ("ns.two", CATALOG, ("a",)),
    ]
    assert not errors


def test_records_keep_each_run_and_the_state_the_next_run_starts_from(tmp_path):
    home = records.fleet_home(str(tmp_path), "nightly")
    assert records.load_state(home) == {"skipped_runs": {}, "run_id": None} and records.load_runs(home) == []
    evals = [
        _eval("/t/a", "recluster", _plan(_partition(None, 100, 5.0))),
        _eval("/t/b", "recluster", _plan(_partition(None, 100, 1.0))),
    ]
    for i in range(3):
        state = records.load_state(home)
        plan = select(evals, Budget(max_bytes=100), skipped_runs=state["skipped_runs"], run_id=f"manual__{i}")
        records.write_run(home, json.loads(json.dumps(plan.to_dict())))
    runs = records.load_runs(home)
    assert [r["run_id"] for r in runs] == ["manual__0", "manual__1", "manual__2"]
    kept = runs[0]["decisions"][0]  # the chosen plan is counted, its file lists are not kept
    assert kept["reason"] == "chosen" and kept["plan"]["bytes"] == 100
    assert "bins" not in kept["plan"]["partitions"][0] and "bins" in evals[0].plan["partitions"][0]
    assert records.load_state(home) == {"run_id": "manual__2", "skipped_runs": {"/t/b": 3}}
    assert [r["run_id"] for r in records.load_runs(home, limit=1)] == ["manual__2"]
