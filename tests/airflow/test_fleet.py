"""The fleet on real tables: FleetHook plans a fleet of Parquet, Delta and Iceberg tables without Spark, and the
example DAG ``zorder_fleet`` re-clusters what its byte budget buys in a real ``dag.test()``."""

from __future__ import annotations

import json

import pytest
from fleet_tables import write_fleet

from airflow_zorder.core.fleet.budget import Budget
from airflow_zorder.core.fleet.spec import expand

pytest.importorskip("deltalake")
pytest.importorskip("pyiceberg")


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    root = tmp_path_factory.mktemp("fleet")
    mp = pytest.MonkeyPatch()
    entries, env = write_fleet(root)
    for k, v in env.items():
        mp.setenv(k, v)
    yield root, entries
    mp.undo()


def _check_choice(record: dict, budget: int) -> dict:
    """What any run must satisfy, whatever the tables: the budget holds, the ranking is by score (starved aside),
    and every degraded table left out had nothing that fit what the run left."""
    by = {d["table"]: d for d in record["decisions"]}
    chosen = [d for d in record["decisions"] if d["reason"] == "chosen"]
    assert sum(d["chosen_bytes"] for d in chosen) == record["totals"]["bytes"] <= budget
    ranked = sorted((d for d in record["decisions"] if d["rank"]), key=lambda d: d["rank"])
    assert [d["score"] for d in ranked] == sorted((d["score"] for d in ranked), reverse=True)
    spent = record["totals"]["bytes"]
    for d in ranked:
        if d["reason"] == "chosen":
            assert d["plan"]["bytes"] == d["chosen_bytes"] <= d["planned_bytes"]
        else:  # the budget is spent partition by partition: nothing of it fits beside what the run spent
            assert d["reason"] == "budget" and not d["chosen_bytes"] and d["planned_bytes"] > budget - spent
    return by


def test_the_hook_plans_a_real_fleet_without_spark(fleet):
    from airflow_zorder.hooks.fleet import FleetHook

    root, entries = fleet
    tables, errors = expand(entries)
    assert not errors and len(tables) == 9
    budget = 400 << 10
    plan = FleetHook(max_workers=4, record_decisions=False).plan(tables, Budget(max_bytes=budget))
    record = json.loads(json.dumps(plan.to_dict()))
    by = _check_choice(record, budget)
    assert by[str(root / "p_grid")]["reason"] == "healthy"
    for name in ("p_nostats", "p_missing"):  # errors are recorded with their reason; the fleet went on
        d = by[str(root / name)]
        assert d["reason"] == "error" and "StatsNotFoundError" in d["detail"], d
    assert "never collected" in by[str(root / "p_nostats")]["detail"]
    degraded = [d for d in record["decisions"] if d["rank"]]
    assert len(degraded) == 6  # every scrambled table, whatever its format
    assert {d["reason"] for d in degraded} == {"chosen", "budget"}
    # the heavily read table's savings weigh 3x: it ranks above its unweighted twin
    events, delta = by[str(root / "p_events")], by[str(root / "d_events")]
    assert events["weighted_gain"] == pytest.approx(3 * events["planned_gain"], rel=1e-3)
    assert events["rank"] < delta["rank"]
    # unbounded: every degraded table's whole plan
    free = FleetHook(max_workers=4, record_decisions=False).plan(tables, Budget())
    assert {d["table"] for d in free.chosen} == {d["table"] for d in degraded}
    assert free.totals()["bytes"] == sum(d["planned_bytes"] for d in degraded) > budget


def test_each_table_is_planned_and_rewritten_with_its_own_connection(monkeypatch):
    """A table's ``conn_id`` (the fleet spec's, or ``[zorder] tables``' third field) opens its store when it is
    planned and is its re-cluster and stats tasks' ``storage_conn_id``; a table without one uses the fleet's."""
    from airflow_zorder.core.fleet.spec import FleetTable
    from airflow_zorder.fleet_dag import collect_kwargs, load_entries, recluster_kwargs
    from airflow_zorder.hooks.fleet import FleetHook

    monkeypatch.setenv("AIRFLOW__ZORDER__TABLES", "s3://lake/a|s3://lake/a/_zorder/stats|aws_lake, /t/b")
    entries, source = load_entries(config_tables=True)
    assert source == "[zorder] tables"
    (own, plain), _ = expand(entries)
    assert (own.conn_id, plain.conn_id) == ("aws_lake", "")
    hook = FleetHook("fleet_conn", record_decisions=False)
    assert hook.stats_hook(own).conn_id == "aws_lake" and hook.stats_hook(plain).conn_id == "fleet_conn"
    assert FleetHook(record_decisions=False).stats_hook(FleetTable("/t/c")).conn_id is None
    plan = {"columns": ["a"], "partitions": []}
    chosen = {"spec": own.to_dict(), "plan": plan, "partitions": [], "health": {"stats_source": "store"}}
    assert recluster_kwargs(chosen)["storage_conn_id"] == "aws_lake"
    assert collect_kwargs(chosen)["storage_conn_id"] == "aws_lake"
    assert "storage_conn_id" not in recluster_kwargs({**chosen, "spec": plain.to_dict()})


def test_the_record_marks_a_chosen_table_whose_rewrite_failed():
    """``record`` (trigger rule all_done): a chosen table whose re-cluster task failed left no result and is
    recorded ``failed``; the bytes rewritten count only what was rewritten."""
    from airflow_zorder.fleet_dag import record_outcomes

    planned = {
        "totals": {"bytes": 300},
        "decisions": [
            {"table": "/t/ok", "reason": "chosen", "chosen_bytes": 100},
            {"table": "/t/broken", "reason": "chosen", "chosen_bytes": 200},
            {"table": "/t/later", "reason": "budget", "chosen_bytes": 0},
        ],
    }
    ok = {"table": "/t/ok", "status": "clustered", "rewritten": {"files": 4, "bytes": 100}, "run_id": "r1"}
    rec = record_outcomes(planned, [ok, None])  # the failed map index pushed nothing
    by = {d["table"]: d for d in rec["decisions"]}
    assert by["/t/ok"]["outcome"]["status"] == "clustered" and by["/t/ok"]["outcome"]["bytes"] == 100
    assert by["/t/broken"]["outcome"] == {"status": "failed", "bytes": 0}
    assert "outcome" not in by["/t/later"]
    assert (rec["totals"]["bytes_rewritten"], rec["totals"]["rewrites_failed"]) == (100, 1)
    assert record_outcomes(planned, ok)["totals"]["rewrites_failed"] == 1  # one mapped result: not a list


@pytest.mark.spark
def test_the_fleet_dag_rewrites_what_its_byte_budget_buys(fleet, airflow_db, tmp_path):
    """``zorder_fleet`` in a real ``dag.test()`` (spark-submit on local Spark): the plan task's choice holds the
    budget and the ranking, errors are recorded with their reason, each chosen table is rewritten by its (trimmed)
    plan, and the record written for the UI says so; tables not chosen are untouched."""
    from test_dags import load_dagbag, xcoms

    from airflow_zorder.core.fleet import records
    from airflow_zorder.hooks.fleet import FleetHook

    root, entries = fleet
    budget = 400 << 10
    home = str(tmp_path / "records")
    tables, _ = expand(entries)
    before = {t.table: FleetHook(record_decisions=False).evaluate_table(t) for t in tables[:2] + tables[5:]}
    mp = pytest.MonkeyPatch()
    mp.setenv("ZORDER_FLEET_SPEC", str(root / "fleet.json"))
    mp.setenv("ZORDER_FLEET_BUDGET", str(budget))
    mp.setenv("ZORDER_FLEET_HOME", home)
    mp.setenv("AIRFLOW_CONN_SPARK_DEFAULT", '{"conn_type": "spark", "host": "local[2]"}')
    try:
        bag, _ = load_dagbag()
        run = bag.dags["zorder_fleet"].test()
    finally:
        mp.undo()
    from airflow.utils.session import create_session

    with create_session() as session:
        states = {(ti.task_id, ti.map_index): ti.state for ti in run.get_task_instances(session=session)}
    assert run.state == "success", states
    record = xcoms(run, "plan")["record"]
    by = _check_choice(record, budget)
    chosen = [d for d in record["decisions"] if d["reason"] == "chosen"]
    assert 2 <= len(chosen) < 6 and {s for (t, _), s in states.items() if t == "recluster"} == {"success"}
    assert len([k for k in states if k[0] == "recluster"]) == len(chosen)
    # the rewritten Parquet tables' statistics are collected again (Delta and Iceberg keep theirs in their metadata)
    parquet = sorted(d["table"] for d in chosen if "/p_" in d["table"])
    assert parquet and sorted(k["table"] for k in xcoms(run, "to_collect")["return_value"]) == parquet
    assert [s for (t, _), s in states.items() if t == "collect_stats"] == ["success"] * len(parquet)
    for name in ("p_nostats", "p_missing"):
        assert by[str(root / name)]["reason"] == "error"
    # what the UI reads: the record with each rewrite's outcome, and the state of the tables skipped for budget
    (kept,) = records.load_runs(home)
    assert kept["run_id"] == run.run_id
    outcomes = {d["table"]: d["outcome"] for d in kept["decisions"] if d["reason"] == "chosen"}
    for d in chosen:
        assert outcomes[d["table"]]["status"] == "clustered" and outcomes[d["table"]]["bytes"] == d["chosen_bytes"]
    assert kept["totals"]["bytes_rewritten"] == record["totals"]["bytes"] <= budget
    skipped = {d["table"] for d in record["decisions"] if d["reason"] == "budget"}
    assert set(records.load_state(home)["skipped_runs"]) == skipped
    # independently of the record: the chosen tables read fewer files now, the others are as they were
    for t in tables[:2] + tables[5:]:
        now = FleetHook(record_decisions=False).evaluate_table(t)
        if t.table in outcomes:
            assert now["headline"] < before[t.table]["headline"], t.table
        else:
            assert (now["headline"], now["num_files"]) == (before[t.table]["headline"], before[t.table]["num_files"])
