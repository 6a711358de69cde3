"""Airflow metrics of the sensor and the operators, sent by Airflow's own ``Stats`` through its real StatsD logger
(the ``statsd`` client, enabled with ``[metrics] statsd_on``) to a UDP socket this test listens on
(``statsd_server``).  ``test_lineage.py`` checks the same metrics from a real ``dag.test()`` run.

The sensor evaluates real tables whose stats were collected from their footers (no Spark); the operators' metrics
come from result dicts as the jobs write them (no spark-submit: ``post_execute`` reads ``job_result``).
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from overlap_tables import collect, write_table
from statsd_server import StatsdServer, metrics, statsd_metrics

from airflow_zorder.airflow_metrics import table_key

pytest.importorskip("statsd", reason="the StatsD client (dev extra) sends Airflow's metrics over UDP")


@pytest.fixture
def statsd() -> Iterator[StatsdServer]:
    with statsd_metrics() as server:
        yield server


def test_table_key_is_one_safe_name_segment():
    assert table_key("s3a://lake/events") == table_key("s3://lake/events") == "s3_lake_events"
    assert table_key("/data/day=1/events") == "data_day_1_events"
    assert table_key("db.events") == "db_events"
    long = table_key("/" + "x" * 300)
    assert len(long) <= 120 and long.endswith(table_key("/" + "x" * 300)[-9:])
    assert long != table_key("/" + "x" * 301)  # the hash keeps long names apart


def test_sensor_sends_its_worst_ratio_on_the_poke_and_the_deferred_path(statsd, tmp_path, airflow_db):
    from airflow.sdk.exceptions import TaskDeferred

    from airflow_zorder.sensors import FileOverlapSensor

    degraded = write_table(tmp_path / "degraded", {"": "scrambled"})
    collect(degraded)
    name = f"airflow.zorder.decision.worst_ratio_to_ideal.{table_key(str(degraded))}"
    poked = FileOverlapSensor(task_id="w", table=str(degraded), record_decisions=False).poke({})
    assert poked.is_done and poked.xcom_value["headline"] == pytest.approx(4.0)
    assert metrics(statsd.received()) == {name: (pytest.approx(4.0), "g")}

    healthy = write_table(tmp_path / "healthy", {"": "clustered"})
    collect(healthy)
    sensor = FileOverlapSensor(task_id="w", table=str(healthy), deferrable=True, timeout=600, record_decisions=False)
    with pytest.raises(TaskDeferred):  # healthy: it defers again, after sending what it decided
        sensor.execute_complete({}, {"status": "changed", "end_at": time.time() + 600})
    name = f"airflow.zorder.decision.worst_ratio_to_ideal.{table_key(str(healthy))}"
    assert metrics(statsd.received()) == {name: (pytest.approx(1.0), "g")}


CLUSTER_RESULT = {
    "status": "clustered",
    "table": "s3a://lake/events",
    "run_id": "r1",
    "before": {"files": 32, "bytes": 3_200_000, "rows": 6000},
    "after": {"files": 8, "bytes": 3_000_000, "rows": 6000},
    "rewritten": {"files": 32, "bytes": 3_200_000, "output_files": 8},
}


def test_operators_send_what_their_run_rewrote_and_read(statsd):
    from airflow_zorder.operators import SparkClusterTableOperator, SparkCollectFileStatsOperator

    cluster = SparkClusterTableOperator(task_id="c", table="s3a://lake/events", columns="a")
    cluster.job_result = dict(CLUSTER_RESULT)
    cluster.post_execute({})
    p = "airflow.zorder.cluster"
    assert metrics(statsd.received()) == {
        f"{p}.files_rewritten.s3_lake_events": (32, "c"),
        f"{p}.bytes_rewritten.s3_lake_events": (3_200_000, "c"),
        f"{p}.files_before.s3_lake_events": (32, "g"),
        f"{p}.files_after.s3_lake_events": (8, "g"),
    }
    stats = SparkCollectFileStatsOperator(task_id="s", table="/data/events")
    stats.job_result = {"status": "ok", "table": "/data/events", "files_read": 5, "files_total": 40}
    stats.post_execute({})
    assert metrics(statsd.received()) == {"airflow.zorder.stats.files_read.data_events": (5, "c")}


def test_runs_without_a_successful_result_send_nothing(statsd):
    from airflow_zorder.operators import SparkClusterTableOperator

    op = SparkClusterTableOperator(task_id="c", table="/data/events", columns="a")
    op.post_execute({})  # no result (the run failed)
    op.job_result = {**CLUSTER_RESULT, "status": "noop"}
    op.post_execute({})
    op.job_result = {"status": "clustered", "table": "/data/events", "before": {"files": 3}}  # a stats-store record
    op.post_execute({})
    assert metrics(statsd.received()) == {"airflow.zorder.cluster.files_before.data_events": (3, "g")}
