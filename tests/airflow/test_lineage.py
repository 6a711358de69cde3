"""OpenLineage of the two Spark operators, reported by the real OpenLineage provider during a real ``dag.test()``.

Real parts: the provider's listener and its ``file`` transport write the events; spark-submit runs both jobs on
``local[1]``; the sensor records its decision in the table's stats store; the SQLite metadata DB holds the XComs.
The provider registers its listener through its Airflow plugin only when OpenLineage is configured at the time
the plugins load (once per process), so the fixture configures the transport, clears the provider's cached
configuration and adds the provider's own listener to the task SDK's listener manager if the plugin did not.
The same run sends its Airflow metrics through Airflow's real StatsD logger to a local socket (``statsd_server``).
"""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from dag_bundles import dag_module
from statsd_server import StatsdServer, metrics, statsd_metrics

from airflow_zorder.airflow_metrics import table_key
from airflow_zorder.evaluation.sample_data import write_table
from airflow_zorder.lineage import FACET_NAME, FACET_SCHEMA_URL, dataset_name

DAG_FILE = Path(__file__).parent / "lineage_dags" / "zorder_lineage_dags.py"


def _clear_provider_conf() -> None:
    """The provider caches its ``[openlineage]`` options per process: read them again."""
    from airflow.providers.openlineage import conf

    for value in vars(conf).values():
        if callable(getattr(value, "cache_clear", None)):
            value.cache_clear()


@pytest.fixture(scope="module")
def ol_events(tmp_path_factory, airflow_db):
    """OpenLineage on, with the file transport; yields the events file's path."""
    pytest.importorskip(
        "airflow.providers.openlineage", reason="the OpenLineage provider (dev extra) reports the events"
    )
    from airflow.providers.openlineage.plugins.listener import OpenLineageListener, get_openlineage_listener
    from airflow.sdk.listener import get_listener_manager

    path = tmp_path_factory.mktemp("openlineage") / "events.jsonl"
    mp = pytest.MonkeyPatch()
    mp.setenv(
        "AIRFLOW__OPENLINEAGE__TRANSPORT", json.dumps({"type": "file", "log_file_path": str(path), "append": True})
    )
    mp.setenv("AIRFLOW__OPENLINEAGE__NAMESPACE", "zorder-tests")
    mp.setenv("AIRFLOW__OPENLINEAGE__DISABLED", "False")
    _clear_provider_conf()
    manager = get_listener_manager()
    added = None
    if not any(isinstance(p, OpenLineageListener) for p in manager.pm.get_plugins()):
        added = get_openlineage_listener()
        manager.add_listener(added)
    yield path
    if added is not None:
        manager.pm.unregister(added)
    mp.undo()
    _clear_provider_conf()


@pytest.fixture(scope="module")
def lineage_run(ol_events, tmp_path_factory):
    """One ``dag.test()``: stats, the sensor's decision, re-clustering; returns (task states, table, events,
    XComs, the Airflow metrics sent, None without the StatsD client)."""
    from airflow.models.xcom import XComModel
    from airflow.utils.session import create_session

    table = str(tmp_path_factory.mktemp("lineage") / "events")
    write_table(table, rows=2000, files_per_partition=8)
    mp = pytest.MonkeyPatch()
    mp.setenv("AIRFLOW_CONN_SPARK_LINEAGE", '{"conn_type": "spark", "host": "local[1]"}')
    with dag_module(DAG_FILE, "zorder-lineage-tests") as module, statsd_or_none() as server:
        run = module.dag.test(run_conf={"table": table})
        sent = None if server is None else metrics(server.received())
    mp.undo()
    with create_session() as s:
        states = {ti.task_id: str(ti.state) for ti in run.get_task_instances(session=s)}
        rows = (
            s.query(XComModel)
            .filter(XComModel.dag_id == run.dag_id, XComModel.run_id == run.run_id, XComModel.key == "return_value")
            .all()
        )
        xcoms = {r.task_id: XComModel.deserialize_value(r) for r in rows}
    events = [json.loads(line) for line in ol_events.read_text().splitlines() if line.strip()]
    return states, table, events, xcoms, sent


@contextmanager
def statsd_or_none() -> Iterator[StatsdServer | None]:
    """Airflow's StatsD metrics sent to a local socket, when the StatsD client is installed."""
    if importlib.util.find_spec("statsd") is None:
        yield None
        return
    with statsd_metrics() as server:
        yield server


def complete_event(events: list[dict], task_id: str) -> dict:
    found = [e for e in events if e["eventType"] == "COMPLETE" and e["job"]["name"] == f"zorder_lineage.{task_id}"]
    assert len(found) == 1, [(e["eventType"], e["job"]["name"]) for e in events]
    return found[0]


def datasets(entries: list[dict]) -> list[tuple[str, str]]:
    return [(d["namespace"], d["name"]) for d in entries]


@pytest.mark.spark
def test_cluster_run_reports_the_table_and_the_facet(lineage_run):
    states, table, events, xcoms, _ = lineage_run
    assert states == {"collect_stats": "success", "check_overlap": "success", "recluster": "success"}
    event = complete_event(events, "recluster")
    assert datasets(event["inputs"]) == datasets(event["outputs"]) == [("file", table)]
    result = xcoms["recluster"]
    assert result["status"] == "clustered" and result["rewritten"]["files"] > 0
    stats = event["outputs"][0]["outputFacets"]["outputStatistics"]
    assert (stats["rowCount"], stats["size"], stats["fileCount"]) == (
        result["after"]["rows"],
        result["after"]["bytes"],
        result["after"]["files"],
    )
    facet = event["run"]["facets"][FACET_NAME]
    assert facet["_schemaURL"] == FACET_SCHEMA_URL
    expected = {
        "job": "cluster",
        "runId": result["run_id"],
        "status": "clustered",
        "curve": "hilbert",
        "columns": result["columns"],
        "mode": result["mode"],
        "filesBefore": result["before"]["files"],
        "bytesBefore": result["before"]["bytes"],
        "filesAfter": result["after"]["files"],
        "bytesAfter": result["after"]["bytes"],
        "filesRewritten": result["rewritten"]["files"],
        "bytesRewritten": result["rewritten"]["bytes"],
    }
    assert {k: facet.get(k) for k in expected} == expected
    # the decision that led to it: the sensor's, recorded in the stats store before the task started
    decided = xcoms["check_overlap"]
    decision = facet["decision"]
    assert decision["decision"] == "recluster" and decision["source"] == "zorder_lineage.check_overlap"
    assert decision["evaluated_at"] == decided["evaluated_at"]
    assert decision["headline"] == pytest.approx(decided["headline"])
    assert decision["partitions"] == decided["partitions"] and decision["reasons"] == decided["reasons"]


@pytest.mark.spark
def test_stats_run_reports_the_stats_store_as_its_output(lineage_run):
    _, table, events, xcoms, _ = lineage_run
    event = complete_event(events, "collect_stats")
    result = xcoms["collect_stats"]
    assert datasets(event["inputs"]) == [("file", table)]
    assert datasets(event["outputs"]) == [("file", f"{table}/_zorder/stats")]
    assert dataset_name(result["stats_location"]) == ("file", f"{table}/_zorder/stats")
    facet = event["run"]["facets"][FACET_NAME]
    assert {k: facet.get(k) for k in ("job", "runId", "status", "filesTotal", "filesRead", "snapshotId")} == {
        "job": "stats",
        "runId": result["run_id"],
        "status": "ok",
        "filesTotal": result["files_total"],
        "filesRead": result["files_read"],
        "snapshotId": result["snapshot_id"],
    }
    assert facet.get("decision") is None and result["files_read"] == result["files_total"] == 32


@pytest.mark.spark
def test_the_task_runner_sends_each_runs_metrics(lineage_run):
    """``post_execute`` (the operators) and the sensor's evaluation, called by the real task runner."""
    _, table, _, xcoms, sent = lineage_run
    if sent is None:
        pytest.skip("the StatsD client (dev extra) is not installed")
    key = table_key(table)
    stats, decided, clustered = xcoms["collect_stats"], xcoms["check_overlap"], xcoms["recluster"]
    assert sent == {
        f"airflow.zorder.stats.files_read.{key}": (stats["files_read"], "c"),
        f"airflow.zorder.decision.worst_ratio_to_ideal.{key}": (pytest.approx(decided["headline"]), "g"),
        f"airflow.zorder.cluster.files_rewritten.{key}": (clustered["rewritten"]["files"], "c"),
        f"airflow.zorder.cluster.bytes_rewritten.{key}": (clustered["rewritten"]["bytes"], "c"),
        f"airflow.zorder.cluster.files_before.{key}": (clustered["before"]["files"], "g"),
        f"airflow.zorder.cluster.files_after.{key}": (clustered["after"]["files"], "g"),
    }


def test_dataset_names_follow_the_openlineage_naming_spec():
    assert dataset_name("/data/events/") == ("file", "/data/events")
    assert dataset_name("file:///data/events") == ("file", "/data/events")
    assert dataset_name("s3a://lake/warehouse/events") == ("s3://lake", "warehouse/events")
    assert dataset_name("gs://lake/events") == ("gs://lake", "events")
    assert dataset_name("abfss://c@acct.dfs.core.windows.net/t") == ("abfss://c@acct.dfs.core.windows.net", "t")
    assert dataset_name("hdfs://nn:8020/warehouse/t") == ("hdfs://nn:8020", "/warehouse/t")
    metastore = {"spark.hadoop.hive.metastore.uris": "thrift://ms1:9083,thrift://ms2:9083"}
    assert dataset_name("db.events", metastore) == ("hive://ms1:9083", "db.events")
    assert dataset_name("events", metastore) == ("hive://ms1:9083", "default.events")
    assert dataset_name("db.events") == ("spark_catalog", "db.events")


def test_no_result_no_datasets_and_no_provider_no_lineage(monkeypatch):
    """A run without a result (it failed) reports no datasets; without the provider the method returns None."""
    import sys

    from airflow_zorder.operators import SparkClusterTableOperator

    op = SparkClusterTableOperator(task_id="c", table="/data/events", columns="a")
    if importlib.util.find_spec("airflow.providers.openlineage") is not None:
        lineage = op.get_openlineage_facets_on_complete(None)
        assert lineage is not None and lineage.inputs == [] and lineage.outputs == [] and lineage.run_facets == {}
    monkeypatch.setitem(sys.modules, "airflow.providers.openlineage.extractors", None)  # import fails
    assert op.get_openlineage_facets_on_complete(None) is None


def test_an_iceberg_table_is_named_by_its_location():
    """An Iceberg table is named through its catalog (``ns.events``) but located by path: the jobs report its
    location, and the datasets are named from it as for any table at that location."""
    pytest.importorskip("airflow.providers.openlineage")
    from airflow_zorder.operators import SparkClusterTableOperator

    op = SparkClusterTableOperator(task_id="c", table="ns.events", iceberg_catalog="prod", columns="a")
    op.job_result = {"status": "clustered", "table": "ns.events", "kind": "iceberg", "location": "s3://wh/ns/events"}
    lineage = op.get_openlineage_facets_on_complete(None)
    assert [(d.namespace, d.name) for d in lineage.inputs] == [("s3://wh", "ns/events")]
    assert [(d.namespace, d.name) for d in lineage.outputs] == [("s3://wh", "ns/events")]
