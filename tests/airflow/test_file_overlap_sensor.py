"""FileOverlapSensor inside real dag.test() runs (real SQLite metadata DB): poke, reschedule, deferrable
(evaluations on the worker, the trigger only watching the store's change signal), the
``[operators] default_deferrable`` default, soft_fail on timeout, decide_once; on real Parquet tables
whose stats were collected from their footers.

dag.test() in Airflow 3 only runs DAGs parsed from a DAG bundle, so the DAGs live in
``tests/airflow/sensor_dags/`` and a bundle pointing there is configured for this module.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from dag_bundles import dag_module
from overlap_tables import collect, count_checks, degrade_when, record_cluster, write_partition, write_table

from airflow_zorder.core.policy import recluster_policy
from airflow_zorder.core.policy.incremental_stats import check_plan
from airflow_zorder.core.stats import stats_store
from airflow_zorder.core.stats.stats_location import default_stats_location

DAG_FILE = Path(__file__).parent / "sensor_dags" / "zorder_overlap_sensor_dags.py"


@pytest.fixture(scope="module")
def dags(airflow_db):
    with dag_module(DAG_FILE, "zorder-sensor-tests") as module:
        yield module


def run(dag, table: Path) -> tuple[dict[str, str], dict[str, object]]:
    """dag.test() with the table in the run conf; returns ({task: state}, {task: return value})."""
    from airflow.models.xcom import XComModel
    from airflow.utils.session import create_session

    dr = dag.test(run_conf={"table": str(table), "columns": "a,b"})
    with create_session() as s:
        states = {ti.task_id: str(ti.state) for ti in dr.get_task_instances(session=s)}
        rows = (
            s.query(XComModel.task_id, XComModel.value)
            .filter(XComModel.dag_id == dag.dag_id, XComModel.run_id == dr.run_id, XComModel.key == "return_value")
            .all()
        )
    values = {t: json.loads(v) if isinstance(v, str) else v for t, v in rows}
    return states, values


def reschedules(dag_id: str) -> int:
    from airflow.models.taskreschedule import TaskReschedule
    from airflow.utils.session import create_session

    with create_session() as s:
        return sum(1 for r in s.query(TaskReschedule).all() if r.task_instance.dag_id == dag_id)


def decisions(root: Path) -> list[str]:
    return stats_store.load_events(default_stats_location(str(root)), kind="decision")["status"].to_pylist()


def test_poke_succeeds_and_hands_its_partitions_to_the_job(dags, tmp_path):
    root = write_table(tmp_path / "t", {"day=1": "clustered", "day=2": "scrambled", "day=3": "clustered"})
    collect(root)
    states, values = run(dags.poke, root)
    assert states == {"watch": "success", "recluster": "success"}
    payload = values["watch"]
    assert payload["decision"] == "recluster" and payload["table"] == str(root)  # templated from the run conf
    assert payload["partitions"] == ["day=2"] and list(payload["columns"]) == ["a", "b"]
    assert values["recluster"] == ["day=2"]  # what the clustering job selects from the XCom
    # the incremental plan of exactly that partition: its 16 never-clustered files, clustered among themselves
    plan = check_plan(payload["plan"])
    assert [e["partition"] for e in plan["partitions"]] == ["day=2"] and plan["columns"] == ["a", "b"]
    assert plan["files"] == 16 and all(f"{root}/day=2/" in x for b in plan["partitions"][0]["bins"] for x in b["paths"])
    assert plan["ratio_before"] == pytest.approx(4.0) and plan["ratio_after"] < plan["ratio_before"]
    assert payload["reasons"][-1].startswith("incremental plan: rewrite 16 files")
    last = recluster_policy.last_decision(default_stats_location(str(root)))
    assert last["decision"] == "recluster" and last["snapshot_id"] == payload["snapshot_id"]
    ev = stats_store.load_events(default_stats_location(str(root)), kind="decision").to_pylist()
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


def watch_triggers(monkeypatch) -> tuple[list[dict], list[dict]]:
    """Record every FileOverlapTrigger run (its serialized kwargs) and every event it yields."""
    from airflow_zorder.triggers.file_overlap import FileOverlapTrigger

    runs: list[dict] = []
    events: list[dict] = []
    real_run = FileOverlapTrigger.run

    async def recording_run(self):
        runs.append(self.serialize()[1])
        async for ev in real_run(self):
            events.append(ev.payload)
            yield ev

    monkeypatch.setattr(FileOverlapTrigger, "run", recording_run)
    return runs, events


def count_signal_reads(monkeypatch, before_first=None) -> list[int]:
    """Count ``FileStatsHook.get_change_signal`` calls (the sensor's, then the trigger's listings) by thread id;
    ``before_first()`` runs once, just before the first read."""
    from airflow_zorder.hooks.file_stats import FileStatsHook

    reads: list[int] = []
    real = FileStatsHook.get_change_signal

    def counting(self, *a, **kw):
        if not reads and before_first is not None:
            before_first()
        out = real(self, *a, **kw)
        reads.append(threading.get_ident())
        return out

    monkeypatch.setattr(FileStatsHook, "get_change_signal", counting)
    return reads


def test_deferrable_evaluates_on_the_worker_and_wakes_on_a_new_snapshot(dags, tmp_path, monkeypatch):
    runs, events = watch_triggers(monkeypatch)
    root = write_table(tmp_path / "t", {"": "clustered"})
    collect(root)
    collected = stats_store.as_datetime(stats_store.latest_run(default_stats_location(str(root)))["collected_at"])
    calls = count_checks(monkeypatch)
    reads = count_signal_reads(monkeypatch)
    worker = degrade_when(root, lambda: len(reads) >= 3)  # the sensor's read, then two listings in the trigger
    started = time.time()
    states, values = run(dags.deferrable, root)
    worker.join()
    assert states == {"watch": "success", "recluster": "success"}
    assert len(runs) == 1 and runs[0]["table"] == str(root) and runs[0]["poke_interval"] == 0.5
    assert runs[0]["signal"]["snapshot_id"] == 1 and runs[0]["source"] == "zorder_overlap_deferrable.watch"
    assert started + 60 <= runs[0]["end_at"] < time.time() + 60
    # healthy with fresh stats: only the stats turning older than max_stats_age (24 h) could change it
    assert runs[0]["recheck_at"] == pytest.approx(collected.timestamp() + 86400 + 1)
    assert [e["status"] for e in events] == ["changed"] and events[0]["signal"]["snapshot_id"] == 2
    assert len(calls) == 2  # evaluated in execute and in execute_complete, never in the trigger
    # the task read the signal before each of its evaluations; the trigger listed the store in threads of its own
    assert len(reads) >= 4 and reads[0] == reads[-1] and reads[0] not in reads[1:-1]
    assert values["watch"]["decision"] == "recluster" and values["watch"]["snapshot_id"] == 2
    assert values["recluster"] == [""]
    # decided in execute_complete after the trigger: the plan is in the XCom all the same (the whole table)
    plan = values["watch"]["plan"]
    assert plan["files"] == 16 and [e["partition"] for e in plan["partitions"]] == [None]
    assert decisions(root) == ["healthy", "recluster"]  # recorded on change: healthy once, then recluster


def test_deferrable_rechecks_when_the_anti_thrash_interval_runs_out(dags, tmp_path, monkeypatch):
    """Degraded, but re-clustered 0 s ago (min_interval_since_cluster 2 s): hold; no new data comes, the trigger
    comes back at recheck_at and the worker decides recluster."""
    runs, events = watch_triggers(monkeypatch)
    root = write_table(tmp_path / "t", {"": "scrambled"})
    collect(root)
    clustered_at: list[dt.datetime] = []

    def cluster_now() -> None:  # when the sensor starts: the 2 s do not depend on how long dag.test() takes
        clustered_at.append(dt.datetime.now(dt.UTC))
        record_cluster(root, clustered_at[0])
        collect(root)  # stats collected after the re-clustering (else: hold until stats are collected again)

    calls = count_checks(monkeypatch)
    count_signal_reads(monkeypatch, before_first=cluster_now)
    states, values = run(dags.deferrable_recheck, root)
    assert states == {"watch": "success", "recluster": "success"}
    assert len(runs) == 1 and runs[0]["signal"]["snapshot_id"] == 2 and runs[0]["signal"]["events"] == 1
    assert runs[0]["recheck_at"] == pytest.approx(clustered_at[0].timestamp() + 2 + 1)
    assert [e["status"] for e in events] == ["recheck"]
    assert len(calls) == 2
    payload = values["watch"]
    assert payload["decision"] == "recluster" and payload["snapshot_id"] == 2
    assert payload["last_cluster_at"] == stats_store.iso_utc(clustered_at[0])
    assert dt.datetime.fromisoformat(payload["evaluated_at"].replace("Z", "+00:00")) >= clustered_at[0] + dt.timedelta(
        seconds=3
    )
    assert decisions(root) == ["hold", "recluster"]


CONF_DEFAULT_RUN = """
import json, sys, threading
sys.path.insert(0, {tests!r})
import importlib.util
from pathlib import Path
from airflow_zorder.hooks.file_stats import FileStatsHook
from airflow_zorder.triggers.file_overlap import FileOverlapTrigger
from overlap_tables import degrade_when

spec = importlib.util.spec_from_file_location("zorder_overlap_sensor_dags", {dag_file!r})
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
dag = module.default_mode
runs, reads = [], []
real_run, real_read = FileOverlapTrigger.run, FileStatsHook.get_change_signal
FileOverlapTrigger.run = lambda self: (runs.append(1), real_run(self))[1]
FileStatsHook.get_change_signal = lambda self, *a, **kw: (real_read(self, *a, **kw), reads.append(1))[0]
worker = degrade_when(Path({table!r}), lambda: len(reads) >= 3)
dr = dag.test(run_conf={{"table": {table!r}, "columns": "a,b"}})
worker.join()
print(json.dumps({{"deferrable": dag.task_dict["watch"].deferrable, "trigger_runs": len(runs),
                  "states": {{ti.task_id: str(ti.state) for ti in dr.get_task_instances()}}}}))
"""


@pytest.mark.slow  # a fresh process: ~3 s of imports and ~8 s for its first dag.test() task
def test_default_deferrable_comes_from_the_airflow_config(dags, tmp_path):
    """``[operators] default_deferrable`` decides when ``deferrable`` is not passed.  It is read when the sensor is
    built (as the DAG is parsed); the configured run is a fresh process, as a worker is."""
    assert dags.default_mode.task_dict["watch"].deferrable is False  # not configured here: poke
    root = write_table(tmp_path / "t", {"": "clustered"})
    collect(root)
    script = CONF_DEFAULT_RUN.format(tests=str(Path(__file__).parents[1]), dag_file=str(DAG_FILE), table=str(root))
    env = {**os.environ, "AIRFLOW__OPERATORS__DEFAULT_DEFERRABLE": "True"}
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out == {"deferrable": True, "trigger_runs": 1, "states": {"watch": "success", "recluster": "success"}}
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


def test_execute_complete_evaluates_on_the_worker(airflow_db, tmp_path):
    from airflow.sdk.exceptions import AirflowException, AirflowSensorTimeout, TaskDeferred

    from airflow_zorder.sensors import FileOverlapSensor

    root = write_table(tmp_path / "p", {"day=1": "scrambled", "day=2": "clustered"})
    collect(root)
    end_at = time.time() + 600
    s = FileOverlapSensor(task_id="w", table=str(root), deferrable=True, poke_interval=30, timeout=600)
    payload = s.execute_complete({}, {"status": "changed", "signal": {"snapshot_id": 1}, "end_at": end_at})
    assert payload["decision"] == "recluster" and payload["partitions"] == ["day=1"]
    assert payload["reasons"][0].startswith("1 of 2 partitions need re-clustering")
    assert [e["partition"] for e in payload["plan"]["partitions"]] == ["day=1"]
    # incremental_plan: its parameters reach the plan; False: no plan
    sized = FileOverlapSensor(
        task_id="w", table=str(root), incremental_plan={"target_ratio": "1.1", "target_file_bytes": "1KB"}
    )
    plan = sized.execute_complete({}, {"status": "changed", "end_at": end_at})["plan"]
    assert plan["params"]["target_ratio"] == 1.1 and plan["params"]["target_file_size"] == 1024
    off = FileOverlapSensor(task_id="w", table=str(root), incremental_plan=False, record_decisions=False)
    assert off.execute_complete({}, {"status": "changed", "end_at": end_at})["plan"] is None
    assert recluster_policy.last_decision(default_stats_location(str(root)))["decision"] == "recluster"

    # healthy: defer again, with the signal read before this evaluation and the same end_at
    root = write_table(tmp_path / "t", {"": "clustered"})
    collect(root)
    loc = default_stats_location(str(root))
    collected = stats_store.as_datetime(stats_store.latest_run(loc)["collected_at"])
    s = FileOverlapSensor(
        task_id="w", table=str(root), deferrable=True, poke_interval=30, timeout=600, record_decisions=False
    )
    with pytest.raises(TaskDeferred) as deferred:
        s.execute_complete({}, {"status": "recheck", "recheck_at": time.time() - 1, "end_at": end_at})
    trig = deferred.value.trigger
    assert deferred.value.method_name == "execute_complete" and trig.end_at == end_at
    assert deferred.value.timeout <= dt.timedelta(seconds=600)
    assert trig.signal == stats_store.change_signal(loc) and trig.signal["snapshot_id"] == 1
    assert trig.recheck_at == pytest.approx(collected.timestamp() + 86400 + 1) and trig.source == "w"
    # the first evaluation (execute) defers the same way, until now + timeout
    with pytest.raises(TaskDeferred) as deferred:
        s.execute({})
    assert deferred.value.trigger.end_at == pytest.approx(time.time() + 600, abs=5)
    # the overall timeout passed while deferred: fail with the last decision (soft_fail: skip, see below)
    with pytest.raises(AirflowSensorTimeout, match="not degraded before the timeout; last decision healthy"):
        s.execute_complete({}, {"status": "changed", "end_at": time.time() - 1})
    assert stats_store.load_events(loc).num_rows == 0  # record_decisions=False: nothing recorded
    with pytest.raises(AirflowSensorTimeout, match="did not change"):
        s.execute_complete(
            {},
            {
                "status": "timeout",
                "message": "t not degraded before the timeout: its statistics did not change (snapshot 1)",
            },
        )
    with pytest.raises(AirflowException, match="never collected"):
        s.execute_complete({}, {"status": "error", "message": "statistics were never collected"})
    # decide_once never defers, even where deferrable is the configured default: a healthy table skips at once
    from airflow.sdk.exceptions import AirflowSkipException

    s = FileOverlapSensor(task_id="w", table=str(root), decide_once=True)
    s.deferrable = True  # as [operators] default_deferrable = True would set it
    with pytest.raises(AirflowSkipException, match="healthy"):
        s.execute({})
    # the first evaluation itself ends past the timeout (a slow store, a loaded worker): soft_fail skips there too
    late = time.time() - 1
    for soft_fail, raised in ((False, AirflowSensorTimeout), (True, AirflowSkipException)):
        s = FileOverlapSensor(task_id="w", table=str(root), deferrable=True, soft_fail=soft_fail)
        with pytest.raises(raised, match="not degraded before the timeout; last decision healthy"):
            s._evaluate_or_defer(late)


def test_evaluation_errors_fail_on_the_worker(airflow_db, tmp_path):
    from airflow_zorder.sensors import FileOverlapSensor

    root = write_table(tmp_path / "t", {"": "clustered"})  # never collected
    with pytest.raises(stats_store.StatsNotFoundError, match="never collected") as err:
        FileOverlapSensor(task_id="w", table=str(root), deferrable=True).execute({})
    assert "SparkCollectFileStatsOperator" in str(err.value)
    collect(root)
    with pytest.raises(ValueError, match=r"unknown column\(s\) \['zz'\]"):
        FileOverlapSensor(task_id="w", table=str(root), columns=["zz"], deferrable=True).execute({})
    with pytest.raises(ValueError, match="pass stats_location"):
        FileOverlapSensor(task_id="w", table="db.events", deferrable=True).execute({})


def test_parameters():
    from airflow_zorder.sensors import FileOverlapSensor

    s = FileOverlapSensor(
        task_id="w", table="/t", max_stats_age=600, min_interval_since_cluster=dt.timedelta(0), per_column={"a": 3}
    )
    assert s.policy.max_stats_age == dt.timedelta(minutes=10) and s.policy.per_column == {"a": 3.0}
    assert tuple(s.template_fields) == (
        "table",
        "columns",
        "stats_location",
        "conn_id",
        "incremental_plan",
        "target_file_size",
        "iceberg_catalog",
        "iceberg_conn_id",
        "workload",
    )
    assert s.deferrable is False  # [operators] default_deferrable is off here
    with pytest.raises(ValueError, match="aggregate"):
        FileOverlapSensor(task_id="w2", table="/t", aggregate="median")
    # decide_once never waits: asking it to wait in the triggerer or by rescheduling is refused, naming the fix
    for waits, said in (({"deferrable": True}, "deferrable=True"), ({"mode": "reschedule"}, "mode='reschedule'")):
        with pytest.raises(ValueError, match=f"decide_once=True evaluates once and never waits, so {said} would do"):
            FileOverlapSensor(task_id="w3", table="/t", decide_once=True, **waits)
        assert FileOverlapSensor(task_id="w4", table="/t", **waits).decide_once is False  # waiting: honoured
    assert FileOverlapSensor(task_id="w5", table="/t", decide_once=True, deferrable=False).deferrable is False


def test_incremental_plan_parameter():
    """True: the defaults; a mapping: IncrementalParams fields (sizes as text too), checked at parse time unless
    templated (then its keys only); False: no plan."""
    from airflow_zorder.core.policy.incremental import IncrementalParams
    from airflow_zorder.sensors import FileOverlapSensor
    from airflow_zorder.sensors.file_overlap import incremental_params

    assert FileOverlapSensor(task_id="w", table="/t").incremental_plan is True
    assert incremental_params(True) == IncrementalParams() and incremental_params(False) is None
    got = incremental_params(
        {"max_bytes": "200GB", "target_file_bytes": 1 << 20, "min_new_files": "3", "seal_bytes": None}
    )
    assert got == IncrementalParams(max_bytes=200 << 30, target_file_size=1 << 20, min_new_files=3, seal_bytes=None)
    assert incremental_params({"target_file_bytes": "", "max_bytes": "None"}) == IncrementalParams()  # unset
    assert incremental_params({"curve": "hilbert"}).curve == "hilbert"  # the job's curve, as text
    with pytest.raises(ValueError, match="incremental_plan: curve must be one of zorder, hilbert, linear"):
        incremental_params({"curve": "spiral"})
    with pytest.raises(ValueError, match=r"incremental_plan: unknown key\(s\) \['target'\]; known: target_ratio"):
        FileOverlapSensor(task_id="w", table="/t", incremental_plan={"target": 1.2})
    with pytest.raises(ValueError, match="incremental_plan: target_ratio must be >= 1"):
        FileOverlapSensor(task_id="w", table="/t", incremental_plan={"target_ratio": 0.5})
    with pytest.raises(ValueError, match=r"incremental_plan\['max_bytes'\]: cannot read 'lots'"):
        FileOverlapSensor(task_id="w", table="/t", incremental_plan={"max_bytes": "lots"})
    with pytest.raises(ValueError, match="must be True, False or a mapping"):
        FileOverlapSensor(task_id="w", table="/t", incremental_plan="yes")
    # templated values are checked once rendered; their keys at once
    s = FileOverlapSensor(task_id="w", table="/t", incremental_plan={"target_file_bytes": "{{ params.size }}"})
    s.render_template_fields({"params": {"size": "128MB"}})
    assert incremental_params(s.incremental_plan) == IncrementalParams(target_file_size=128 << 20)
    with pytest.raises(ValueError, match="unknown key"):
        FileOverlapSensor(task_id="w", table="/t", incremental_plan={"size": "{{ params.size }}"})
