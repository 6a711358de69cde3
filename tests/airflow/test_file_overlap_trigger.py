"""FileOverlapTrigger: serialize round trip through the trigger table's encoding, and run() on real stats files."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from airflow_zorder.core import health, stats_store
from airflow_zorder.core.health import HealthPolicy
from airflow_zorder.triggers.file_overlap import FileOverlapTrigger
from overlap_tables import collect, count_checks, degrade_when, write_table


def first_event(trigger: FileOverlapTrigger, timeout: float = 20.0) -> dict:
    async def go():
        return await asyncio.wait_for(anext(trigger.run()), timeout)

    return asyncio.run(go()).payload


def test_serialize_round_trip_through_the_trigger_row(airflow_db):
    from airflow.models.trigger import Trigger
    from airflow.sdk._shared.module_loading import import_string
    from airflow.serialization.decoders import smart_decode_trigger_kwargs

    trig = FileOverlapTrigger(table="s3a://lake/events", stats_location=None, conn_id="zorder_s3",
                              columns="a, b", policy=HealthPolicy(max_stats_age=600, per_column={"a": 3}).to_dict(),
                              num_clustering_columns=3, poke_interval=30, decide_once=False, end_at=1.9e9,
                              record_decisions=False, source="dag.watch")
    classpath, kwargs = trig.serialize()
    assert classpath == "airflow_zorder.triggers.file_overlap.FileOverlapTrigger"
    assert kwargs["columns"] == ["a", "b"] and kwargs["policy"]["max_stats_age"] == 600.0
    row = Trigger.from_object(trig)  # encrypted and serialized as the triggerer stores it
    decoded = {k: smart_decode_trigger_kwargs(v) for k, v in Trigger._decrypt_kwargs(row.encrypted_kwargs).items()}
    again = import_string(row.classpath)(**decoded)
    assert again.serialize() == (classpath, kwargs)
    assert HealthPolicy.from_dict(again.policy) == HealthPolicy(max_stats_age=600, per_column={"a": 3})
    with pytest.raises(ValueError, match="aggregate"):
        FileOverlapTrigger(table="/t", policy={"aggregate": "median"})


def test_run_yields_the_payload_when_degraded_and_reads_off_the_loop(tmp_path, monkeypatch):
    root = write_table(tmp_path / "t", {"day=1": "scrambled", "day=2": "clustered"})
    collect(root)
    threads = count_checks(monkeypatch)
    ev = first_event(FileOverlapTrigger(table=str(root), poke_interval=0.1, source="d.t"))
    assert ev["status"] == "success" and ev["message"].startswith("recluster: 1 of 2 partitions need re-clustering")
    assert ev["payload"]["decision"] == "recluster" and ev["payload"]["partitions"] == ["day=1"]
    assert threads and threading.get_ident() not in threads  # evaluated in a worker thread
    assert health.last_decision(stats_store.default_location(str(root)))["decision"] == "recluster"


def test_run_polls_until_the_table_degrades(tmp_path, monkeypatch):
    root = write_table(tmp_path / "t", {"": "clustered"})
    collect(root)
    calls = count_checks(monkeypatch)
    worker = degrade_when(root, lambda: len(calls) >= 3)
    ev = first_event(FileOverlapTrigger(table=str(root), poke_interval=0.1))
    worker.join()
    assert ev["status"] == "success" and ev["payload"]["snapshot_id"] == 2 and len(calls) >= 4
    # decisions recorded when they changed: healthy once (not once per poll), then recluster
    events = stats_store.load_events(stats_store.default_location(str(root)), kind="decision")
    assert events["status"].to_pylist() == ["healthy", "recluster"]


def test_run_times_out_with_the_last_payload(tmp_path):
    root = write_table(tmp_path / "t", {"": "clustered"})
    collect(root)
    ev = first_event(FileOverlapTrigger(table=str(root), poke_interval=0.2, end_at=time.time() + 0.5,
                                        record_decisions=False))
    assert ev["status"] == "timeout" and ev["payload"]["decision"] == "healthy"
    assert "not degraded before the timeout" in ev["message"]
    assert stats_store.load_events(stats_store.default_location(str(root))).num_rows == 0  # nothing recorded


def test_decide_once_reports_a_healthy_table_at_once(tmp_path):
    root = write_table(tmp_path / "t", {"": "clustered"})
    collect(root)
    ev = first_event(FileOverlapTrigger(table=str(root), poke_interval=3600, decide_once=True))
    assert ev["status"] == "success" and ev["payload"]["decision"] == "healthy"


def test_errors_become_error_events(tmp_path):
    root = write_table(tmp_path / "t", {"": "clustered"})  # never collected
    ev = first_event(FileOverlapTrigger(table=str(root)))
    assert ev["status"] == "error" and ev["error_type"] == "StatsNotFoundError"
    assert "never collected" in ev["message"] and "SparkCollectFileStatsOperator" in ev["message"]
    collect(root)
    ev = first_event(FileOverlapTrigger(table=str(root), columns=["zz"]))
    assert ev["status"] == "error" and "unknown column(s) ['zz']" in ev["message"]
    ev = first_event(FileOverlapTrigger(table="db.events"))
    assert ev["status"] == "error" and "pass stats_location" in ev["message"]
