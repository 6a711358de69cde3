"""The example DAGs: they parse cleanly, and run end to end with real spark-submit on local Spark and a real
SQLite metadata DB (``dag.test()``), against a small scrambled sample table.
"""

from __future__ import annotations

import copy
import json
import warnings
from pathlib import Path
from urllib.parse import quote

import pyarrow.dataset as ds
import pytest

from airflow_zorder.evaluation.layout_report import point_query_report
from airflow_zorder.evaluation.sample_data import write_table

REPO = Path(__file__).resolve().parents[2]
DAGS = REPO / "dags"
COLUMNS = ["user_id", "product_id"]
SAMPLE_TARGET = "9KB"  # the sample's files are ~9 KB: the plan keeps about 8 files per partition


def load_dagbag():
    from airflow.dag_processing.dagbag import DagBag

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        bag = DagBag(dag_folder=str(DAGS))
    return bag, [w for w in caught if str(DAGS) in str(w.filename)]


def test_every_dag_loads_without_errors_or_warnings(airflow_db):
    bag, ours = load_dagbag()
    assert bag.import_errors == {}
    assert not bag.captured_warnings and not ours, (bag.captured_warnings, [str(w.message) for w in ours])
    expected = {p.stem for p in DAGS.glob("*.py")}
    assert expected <= set(bag.dags) and expected == {
        "zorder_recluster_table",
        "zorder_recluster_delta_table",
        "zorder_recluster_iceberg_table",
        "zorder_recluster_hudi_table",
        "zorder_maintain_tables",
        "zorder_fleet",
    }
    assert [t.task_id for t in bag.dags["zorder_fleet"].topological_sort()] == [
        "plan",
        "recluster",
        "to_collect",
        "collect_stats",
        "record",
    ]
    assert [t.task_id for t in bag.dags["zorder_recluster_delta_table"].topological_sort()] == [
        "check_overlap",
        "recluster",
        "measure_after",
        "compare",
    ]
    recluster = bag.dags["zorder_recluster_table"]
    assert [t.task_id for t in recluster.topological_sort()] == [
        "collect_stats",
        "check_overlap",
        "recluster",
        "collect_stats_after",
        "compare",
    ]
    maintain = bag.dags["zorder_maintain_tables"]
    assert {t.task_id for t in maintain.tasks} == {
        "load_tables",
        "maintain_table.collect_stats",
        "maintain_table.check_overlap",
        "maintain_table.recluster",
        "maintain_table.collect_stats_after",
    }


def test_maintain_config_entries_are_checked(tmp_path):
    import importlib.util

    spec = importlib.util.spec_from_file_location("zorder_maintain_tables_mod", DAGS / "zorder_maintain_tables.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    got = mod.normalize_entry({"table": "../t", "columns": "a, b", "num_files": 4}, tmp_path / "dags")
    assert got == {
        "table": str((tmp_path / "t").resolve()),
        "columns": ["a", "b"],
        "curve": "zorder",
        "num_files": 4,
        "target_file_size": "",
        "stats_location": "",
    }
    assert mod.normalize_entry({"table": "db.t", "columns": ["a"]}, tmp_path)["table"] == "db.t"
    with pytest.raises(ValueError, match="needs 'table' and 'columns'"):
        mod.normalize_entry({"table": "/t"}, tmp_path)
    with pytest.raises(ValueError, match="unknown key"):
        mod.normalize_entry({"table": "/t", "columns": ["a"], "curv": "hilbert"}, tmp_path)
    shipped = json.loads((DAGS / "zorder_tables.json").read_text())
    assert [mod.normalize_entry(e, DAGS)["table"] for e in shipped] == [str(REPO / ".demo" / "events")]


@pytest.fixture(scope="module")
def sample_table(tmp_path_factory):
    """A scrambled table: 4 daily partitions x 8 files, 6,000 rows; its layout before and its rows."""
    table = str(tmp_path_factory.mktemp("dagtest") / "events")
    write_table(table, rows=6000, files_per_partition=8)
    before = point_query_report(table, COLUMNS, n_values=300, seed=3)
    ids = sorted(
        ds.dataset(table, format="parquet", partitioning="hive").to_table(columns=["event_id"])["event_id"].to_pylist()
    )
    return table, before, ids


@pytest.fixture(scope="module")
def recluster_run(sample_table, airflow_db):
    """One real ``dag.test()`` of zorder_recluster_table against the sample table."""
    mp = pytest.MonkeyPatch()
    table = sample_table[0]
    mp.setenv("ZORDER_TABLE", table)
    mp.setenv("AIRFLOW_CONN_SPARK_DEFAULT", '{"conn_type": "spark", "host": "local[2]"}')
    bag, _ = load_dagbag()
    dag = bag.dags["zorder_recluster_table"]
    run = dag.test(run_conf={"target_file_size": SAMPLE_TARGET})  # the default run: the sensor's incremental plan
    yield run, dag
    mp.undo()


def xcoms(run, task_id: str) -> dict:
    from airflow.models.xcom import XComModel
    from airflow.utils.session import create_session
    from sqlalchemy import select

    with create_session() as session:
        rows = session.scalars(
            select(XComModel).where(
                XComModel.dag_id == run.dag_id, XComModel.run_id == run.run_id, XComModel.task_id == task_id
            )
        ).all()
        return {r.key: XComModel.deserialize_value(r) for r in rows}


@pytest.mark.spark
def test_recluster_dag_runs_end_to_end(sample_table, recluster_run):
    table, before_layout, ids_before = sample_table
    run, _ = recluster_run
    from airflow.utils.session import create_session

    with create_session() as session:
        states = {ti.task_id: ti.state for ti in run.get_task_instances(session=session)}
    assert run.state == "success", states
    assert set(states.values()) == {"success"}

    decision = xcoms(run, "check_overlap")["return_value"]
    assert decision["decision"] == "recluster" and decision["partitions"]
    plan = decision["plan"]  # the sensor's incremental plan of the listed partitions, sized by the run's target
    planned = sorted(e["partition"] for e in plan["partitions"])
    assert planned and set(planned) <= set(decision["partitions"]) and plan["params"]["target_file_size"] == 9 << 10
    clustered = xcoms(run, "recluster")["return_value"]
    assert clustered["status"] == "clustered" and clustered["mode"] == "incremental"
    assert clustered["plan"]["source"] == "given" and clustered["plan"]["files"] == plan["files"]
    assert clustered["rewritten"]["files"] == plan["files"] and clustered["rewritten"]["bytes"] == plan["bytes"]
    assert sorted({p["partition"] for p in clustered["partitions"]}) == planned
    assert clustered["before"]["rows"] == clustered["after"]["rows"] == 6000
    assert clustered["spark"]["master"] == "local[2]"
    # the plan the job ran is kept where the operator wrote it for the driver
    kept = Path(table) / "_zorder" / "stats" / "plans" / f"{clustered['run_id']}.json"
    assert json.loads(kept.read_text()) == plan

    report = xcoms(run, "compare")["return_value"]
    assert report["rows_before"] == report["rows_after"] == 6000
    for c in COLUMNS:
        figures = report["columns"][c]
        assert figures["expected_fraction_after"] < 0.75 * figures["expected_fraction_before"], (c, figures)
        assert figures["average_depth_after"] < figures["average_depth_before"]
    assert report["headline_after"] < report["headline_before"]

    # independent of the DAG's own figures: the files' footers and the rows themselves
    after_layout = point_query_report(table, COLUMNS, n_values=300, seed=3)
    for c in COLUMNS:
        assert after_layout["fractions"][c] < 0.75 * before_layout["fractions"][c]
    ids_after = sorted(
        ds.dataset(table, format="parquet", partitioning="hive").to_table(columns=["event_id"])["event_id"].to_pylist()
    )
    assert ids_after == ids_before

    # extra links, stored by the worker when each task finished
    links = xcoms(run, "recluster")
    assert links["_link_TableHealthLink"] == "http://localhost:8080/zorder/table?table=" + quote(table, safe="")
    assert links["_link_SparkApplicationLink"].startswith("http://")


@pytest.mark.spark
def test_recluster_dag_emits_asset_events_with_metrics(sample_table, recluster_run):
    from airflow.models.asset import AssetEvent, AssetModel
    from airflow.utils.session import create_session
    from sqlalchemy import select

    table = sample_table[0]
    run, _ = recluster_run
    with create_session() as session:
        events = session.execute(
            select(AssetEvent.source_task_id, AssetEvent.extra)
            .join(AssetModel, AssetModel.id == AssetEvent.asset_id)
            .where(AssetModel.uri == Path(table).as_uri(), AssetEvent.source_run_id == run.run_id)
        ).all()
    by_task = {task: extra for task, extra in events}
    assert set(by_task) == {"collect_stats", "recluster", "collect_stats_after"}
    plan = xcoms(run, "check_overlap")["return_value"]["plan"]
    extra = by_task["recluster"]
    assert extra["rows_before"] == extra["rows_after"] == 6000
    assert (extra["files_before"], extra["files_after"]) == (plan["files"], plan["num_output_files"])
    assert (extra["mode"], extra["files_rewritten"], extra["bytes_rewritten"]) == ("incremental", *_sizes(plan))
    assert by_task["collect_stats"]["worst_column"] in COLUMNS
    assert by_task["collect_stats_after"]["headline"] < by_task["collect_stats"]["headline"]


def _sizes(plan: dict) -> tuple[int, int]:
    return plan["files"], plan["bytes"]


def test_the_full_param_switches_the_recluster_task_to_a_full_rewrite(airflow_db):
    """Rendered as a run renders them: by default the sensor's plan (JSON through ``| tojson``), with ``full`` none."""
    from airflow_zorder.core.jobs.options import ClusterOptions

    plan = {"format": "airflow-zorder-incremental-plan", "version": 1, "columns": COLUMNS, "partitions": []}
    payload = {"partitions": ["day=2026-01-02"], "plan": plan}

    class TaskInstance:  # what the templates read of ``ti``
        map_index = 0

        @staticmethod
        def xcom_pull(task_ids: str, map_indexes: int | None = None) -> dict:
            assert task_ids.endswith("check_overlap")
            return payload

    bag, _ = load_dagbag()
    for dag_id, task_id in (
        ("zorder_recluster_table", "recluster"),
        ("zorder_recluster_delta_table", "recluster"),
        ("zorder_maintain_tables", "maintain_table.recluster"),
    ):
        dag = bag.dags[dag_id]
        for full in (False, True):
            op = dag.get_task(task_id)
            params = {"full": full, "num_files": None, "target_file_size": "512MB"}
            fields = {"incremental": op.incremental, "plan": op.plan, "partitions": op.partitions}
            env = dag.get_template_env(force_sandboxed=False)
            got = {k: op.render_template(v, {"params": params, "ti": TaskInstance()}, env) for k, v in fields.items()}
            assert json.loads(got["partitions"]) == payload["partitions"], dag_id
            assert got["incremental"] == str(not full), dag_id
            assert (json.loads(got["plan"]) if not full else got["plan"]) == (plan if not full else ""), dag_id
        sensor = dag.get_task(task_id.replace("recluster", "check_overlap"))
        # one size: the sensor's own target_file_size (its decision and its plan), the job's template
        assert sensor.incremental_plan is True and repr(sensor.target_file_size) == repr(op.target_file_size), dag_id
    # the operator turns the rendered task into the job's flags: --incremental --plan, or neither (full)
    for full in (False, True):
        op = copy.deepcopy(bag.dags["zorder_recluster_table"].get_task("recluster"))
        params = {"full": full, "num_files": None, "target_file_size": "512MB"}
        op.render_template_fields({"params": params, "ti": TaskInstance()})
        opts = ClusterOptions.from_args(op.job_arguments())
        assert opts.incremental is not full and bool(opts.plan) is not full
    # num_files fixes a full rewrite's file count; with the sensor's plan the task refuses it, naming the fix
    for dag_id in ("zorder_recluster_table", "zorder_recluster_delta_table"):
        for full in (False, True):
            op = copy.deepcopy(bag.dags[dag_id].get_task("recluster"))
            params = {"full": full, "num_files": 8, "target_file_size": "512MB"}
            op.render_template_fields({"params": params, "ti": TaskInstance()})
            if full:
                assert ClusterOptions.from_args(op.job_arguments()).num_files == 8
            else:
                with pytest.raises(ValueError, match="drop num_files and set target_file_size, or run a full rewrite"):
                    op.job_arguments()


@pytest.mark.spark
def test_maintain_dag_maps_over_the_config(sample_table, recluster_run):
    """The config (here the Variable) lists the just re-clustered table: stats are collected, the sensor holds
    it (re-clustered minutes ago), and only that table's group is skipped."""
    table = sample_table[0]
    mp = pytest.MonkeyPatch()
    mp.setenv("AIRFLOW_CONN_SPARK_DEFAULT", '{"conn_type": "spark", "host": "local[2]"}')
    mp.setenv("AIRFLOW_VAR_ZORDER_TABLES", json.dumps([{"table": table, "columns": COLUMNS, "num_files": 8}]))
    try:
        bag, _ = load_dagbag()
        run = bag.dags["zorder_maintain_tables"].test()
    finally:
        mp.undo()
    from airflow.utils.session import create_session

    with create_session() as session:
        states = {(ti.task_id, ti.map_index): ti.state for ti in run.get_task_instances(session=session)}
    assert states[("load_tables", -1)] == "success"
    assert states[("maintain_table.collect_stats", 0)] == "success"
    assert states[("maintain_table.check_overlap", 0)] == "skipped"
    assert states[("maintain_table.recluster", 0)] == "skipped"
    assert xcoms(run, "load_tables")["return_value"][0]["table"] == table


@pytest.mark.spark
def test_iceberg_dag_decides_from_the_manifests_and_commits_one_replace_snapshot(tmp_path, airflow_db):
    """zorder_recluster_iceberg_table in a real ``dag.test()``: no stats job, one replace snapshot, the same rows. The
    catalog (a SQL catalog on SQLite) is an Airflow ``iceberg`` connection and nothing else: the sensor reads it through
    the Iceberg provider, and spark-submit's driver gets its properties in the file shipped with --files."""
    pytest.importorskip("pyiceberg")
    from airflow_zorder.core.iceberg.catalogs import embedded_properties, load_catalog
    from airflow_zorder.evaluation.sample_data import write_iceberg_table

    props = embedded_properties(str(tmp_path / "lake"))
    write_iceberg_table("zordertestdag", "demo.events", props, rows=6000, files_per_partition=8)
    table = load_catalog("zordertestdag", props).load_table("demo.events")
    snapshot_before = table.current_snapshot().snapshot_id
    ids_before = sorted(table.scan().to_arrow()["event_id"].to_pylist())
    mp = pytest.MonkeyPatch()
    pytest.importorskip("airflow.providers.apache.iceberg", reason="the iceberg extra")
    mp.setenv("ZORDER_ICEBERG_CONN_ID", "zordertestdag")
    mp.setenv("AIRFLOW_CONN_ZORDERTESTDAG", json.dumps({"conn_type": "iceberg", "extra": props}))
    mp.setenv("AIRFLOW_CONN_SPARK_DEFAULT", '{"conn_type": "spark", "host": "local[2]"}')
    try:
        bag, _ = load_dagbag()
        run = bag.dags["zorder_recluster_iceberg_table"].test(run_conf={"target_file_size": "36KB"})
    finally:
        mp.undo()
    assert run.state == "success"
    decision = xcoms(run, "check_overlap")["return_value"]
    assert decision["decision"] == "recluster" and decision["partitions"] and decision["plan"]["files"]
    clustered = xcoms(run, "recluster")["return_value"]
    assert clustered["kind"] == "iceberg" and clustered["mode"] == "incremental"
    assert clustered["rewritten"]["files"] == decision["plan"]["files"]
    table = load_catalog("zordertestdag", props).load_table("demo.events")
    snap = table.current_snapshot()
    assert snap.parent_snapshot_id == snapshot_before and snap.summary.operation.value == "replace"
    assert snap.summary["zorder.run-id"] == clustered["run_id"]
    assert sorted(table.scan().to_arrow()["event_id"].to_pylist()) == ids_before
    report = xcoms(run, "compare")["return_value"]
    assert report["headline_after"] < report["headline_before"]


@pytest.mark.spark
def test_delta_dag_decides_from_the_log_and_commits_one_clustering_version(tmp_path, airflow_db):
    """zorder_recluster_delta_table in a real ``dag.test()``: no stats job, one Delta commit, the same rows."""
    deltalake = pytest.importorskip("deltalake")
    from airflow_zorder.evaluation.sample_data import write_delta_table

    table = str(tmp_path / "events_delta")
    write_delta_table(table, rows=6000, files_per_partition=8)
    version_before = deltalake.DeltaTable(table).version()
    ids_before = sorted(
        deltalake.DeltaTable(table).to_pyarrow_dataset().to_table(columns=["event_id"])["event_id"].to_pylist()
    )
    mp = pytest.MonkeyPatch()
    mp.setenv("ZORDER_DELTA_TABLE", table)
    mp.setenv("AIRFLOW_CONN_SPARK_DEFAULT", '{"conn_type": "spark", "host": "local[2]"}')
    try:
        bag, _ = load_dagbag()
        run = bag.dags["zorder_recluster_delta_table"].test(run_conf={"target_file_size": "36KB"})
    finally:
        mp.undo()
    assert run.state == "success"
    decision = xcoms(run, "check_overlap")["return_value"]
    assert decision["decision"] == "recluster" and decision["partitions"]
    plan = decision["plan"]  # the incremental plan, made from the log's statistics
    assert plan["files"] and {e["partition"] for e in plan["partitions"]} <= set(decision["partitions"])
    clustered = xcoms(run, "recluster")["return_value"]
    assert clustered["kind"] == "delta" and clustered["delta"]["read_version"] == version_before
    assert clustered["mode"] == "incremental" and clustered["rewritten"]["files"] == plan["files"]
    t = deltalake.DeltaTable(table)
    assert t.version() == version_before + 1 and t.history(1)[0]["operation"] == "WRITE"
    ids_after = sorted(t.to_pyarrow_dataset().to_table(columns=["event_id"])["event_id"].to_pylist())
    assert ids_after == ids_before
    report = xcoms(run, "compare")["return_value"]
    assert report["headline_after"] < report["headline_before"]
    assert report["files_after"] == decision["num_files"] - plan["files"] + plan["num_output_files"]
