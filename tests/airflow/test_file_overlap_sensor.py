"""FileOverlapSensor inside real dag.test() runs (real SQLite metadata DB): poke, reschedule, deferrable,
soft_fail on timeout, decide_once; on real Parquet tables whose stats were collected from their footers.

dag.test() in Airflow 3 only runs DAGs parsed from a DAG bundle, so the DAGs live in
``tests/airflow/sensor_dags/`` and a bundle pointing there is configured for this module.
"""

from __future__ import annotations

import datetime as dt
import importlib.util
import json
import time
from pathlib import Path

import pytest

from airflow_zorder.core import health, stats_store
from overlap_tables import collect, count_checks, degrade_when, write_partition, write_table

DAG_FILE = Path(__file__).parent / "sensor_dags" / "zorder_overlap_sensor_dags.py"


@pytest.fixture(scope="module")
def dags(airflow_db):
    bundles = [
        {"name": "zorder-sensor-tests", "classpath": "airflow.dag_processing.bundles.local.LocalDagBundle",
         "kwargs": {"path": str(DAG_FILE.parent), "refresh_interval": 0}},
        {"name": "dags-folder", "classpath": "airflow.dag_processing.bundles.local.LocalDagBundle", "kwargs": {}},
    ]
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("AIRFLOW__DAG_PROCESSOR__DAG_BUNDLE_CONFIG_LIST", json.dumps(bundles))
        spec = importlib.util.spec_from_file_location("zorder_overlap_sensor_dags", DAG_FILE)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        yield module


def run(dag, table: Path) -> tuple[dict[str, str], dict[str, object]]:
    """dag.test() with the table in the run conf; returns ({task: state}, {task: return value})."""
    from airflow.models.xcom import XComModel
    from airflow.utils.session import create_session

    dr = dag.test(run_conf={"table": str(table), "columns": "a,b"})
    with create_session() as s:
        states = {ti.task_id: str(ti.state) for ti in dr.get_task_instances(session=s)}
        rows = s.query(XComModel.task_id, XComModel.value).filter(
            XComModel.dag_id == dag.dag_id, XComModel.run_id == dr.run_id, XComModel.key == "return_value").all()
    values = {t: json.loads(v) if isinstance(v, str) else v for t, v in rows}
    return states, values


def reschedules(dag_id: str) -> int:
    from airflow.models.taskreschedule import TaskReschedule
    from airflow.utils.session import create_session

    with create_session() as s:
        return sum(1 for r in s.query(TaskReschedule).all() if r.task_instance.dag_id == dag_id)


def decisions(root: Path) -> list[str]:
    return stats_store.load_events(stats_store.default_location(str(root)), kind="decision")["status"].to_pylist()


def test_poke_succeeds_and_hands_its_partitions_to_the_job(dags, tmp_path):
    root = write_table(tmp_path / "t", {"day=1": "clustered", "day=2": "scrambled", "day=3": "clustered"})
    collect(root)
    states, values = run(dags.poke, root)
    assert states == {"watch": "success", "recluster": "success"}
    payload = values["watch"]
    assert payload["decision"] == "recluster" and payload["table"] == str(root)  # templated from the run conf
    assert payload["partitions"] == ["day=2"] and list(payload["columns"]) == ["a", "b"]
    assert values["recluster"] == ["day=2"]  # what the clustering job selects from the XCom
    last = health.last_decision(stats_store.default_location(str(root)))
    assert last["decision"] == "recluster" and last["snapshot_id"] == payload["snapshot_id"]
    ev = stats_store.load_events(stats_store.default_location(str(root)), kind="decision").to_pylist()
    assert ev[-1]["run_id"] == "zorder_overlap_poke.watch"


def test_reschedule_waits_until_the_table_degrades(dags, tmp_path, monkeypatch):
    root = write_table(tmp_path / "t", {"": "clustered"})
    collect(root)
    before = reschedules("zorder_overlap_reschedule")
    calls = count_checks(monkeypatch)
    worker = degrade_when(root, lambda: len(calls) >= 2)
    states, values = run(dags.reschedule, root)
    worker.join()
    assert states == {"watch": "success", "recluster": "success"}
    assert reschedules("zorder_overlap_reschedule") - before >= 2  # the worker slot was freed in between
    assert len(calls) >= 3
    assert values["watch"]["decision"] == "recluster" and values["watch"]["snapshot_id"] == 2
    assert values["recluster"] == [""]  # unpartitioned: no partitions listed, the job takes the whole table
    assert decisions(root) == ["healthy", "recluster"]  # recorded on change, not on every poke


def test_deferrable_waits_in_the_trigger(dags, tmp_path, monkeypatch):
    from airflow_zorder.triggers.file_overlap import FileOverlapTrigger

    runs = []
    real_run = FileOverlapTrigger.run

    def counting_run(self):
        runs.append(self.serialize()[1])
        return real_run(self)

    monkeypatch.setattr(FileOverlapTrigger, "run", counting_run)
    root = write_table(tmp_path / "t", {"": "clustered"})
    collect(root)
    calls = count_checks(monkeypatch)
    worker = degrade_when(root, lambda: len(calls) >= 3)  # the sensor's own check, then two in the trigger
    states, values = run(dags.deferrable, root)
    worker.join()
    assert states == {"watch": "success", "recluster": "success"}
    assert len(runs) == 1 and runs[0]["table"] == str(root) and runs[0]["columns"] == ["a", "b"]
    assert runs[0]["poke_interval"] == 0.5 and runs[0]["end_at"] > time.time()
    assert values["watch"]["decision"] == "recluster" and values["watch"]["snapshot_id"] == 2
    assert len(calls) >= 4
    assert decisions(root) == ["healthy", "recluster"]


@pytest.mark.parametrize("dag_name", ["soft_fail", "deferrable_soft_fail"])
def test_soft_fail_skips_downstream_when_the_table_stays_healthy(dags, tmp_path, dag_name):
    root = write_table(tmp_path / "t", {"": "clustered"})
    collect(root)
    started = time.monotonic()
    states, values = run(getattr(dags, dag_name), root)
    assert states == {"watch": "skipped", "recluster": "skipped"}
    assert time.monotonic() - started >= 1.5  # waited for the timeout
    assert "watch" not in values
    assert decisions(root) == ["healthy"]


def test_decide_once_skips_at_once_when_healthy_and_succeeds_when_degraded(dags, tmp_path):
    root = write_table(tmp_path / "t", {"": "clustered"})
    collect(root)
    states, _ = run(dags.decide_once, root)
    assert states == {"watch": "skipped", "recluster": "skipped"}
    write_partition(root, "", "scrambled")
    collect(root)
    states, values = run(dags.decide_once, root)
    assert states == {"watch": "success", "recluster": "success"}
    assert values["watch"]["decision"] == "recluster"
    assert decisions(root) == ["healthy", "recluster"]


def test_missing_stats_fail_the_sensor(dags, tmp_path):
    root = write_table(tmp_path / "t", {"": "clustered"})  # never collected
    states, _ = run(dags.decide_once, root)
    assert states == {"watch": "failed", "recluster": "upstream_failed"}


def test_execute_complete_and_parameters():
    from airflow.sdk.exceptions import AirflowException, AirflowSensorTimeout

    from airflow_zorder.sensors import FileOverlapSensor

    s = FileOverlapSensor(task_id="w", table="/t", max_stats_age=600, min_interval_since_cluster=dt.timedelta(0),
                          per_column={"a": 3})
    assert s.policy.max_stats_age == dt.timedelta(minutes=10) and s.policy.per_column == {"a": 3.0}
    assert tuple(s.template_fields) == ("table", "columns", "stats_location", "conn_id")
    assert s.execute_complete({}, {"status": "success", "payload": {"decision": "recluster", "reasons": []}}) == {
        "decision": "recluster", "reasons": []}
    with pytest.raises(AirflowSensorTimeout, match="healthy"):
        s.execute_complete({}, {"status": "timeout", "message": "last decision healthy"})
    with pytest.raises(AirflowException, match="never collected"):
        s.execute_complete({}, {"status": "error", "message": "statistics were never collected"})
    with pytest.raises(ValueError, match="aggregate"):
        FileOverlapSensor(task_id="w2", table="/t", aggregate="median")
