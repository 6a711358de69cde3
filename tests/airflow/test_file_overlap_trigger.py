"""FileOverlapTrigger: serialize round trip through the trigger table's encoding, and run() on real stats stores.

The trigger only lists the store (the change signal); evaluating health is the sensor's job on the worker
(``execute_complete``: tests/airflow/test_file_overlap_sensor.py).  ``no_loading`` makes every snapshot read
and every evaluation raise, so each run() below proves the triggerer never loads a snapshot.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import threading
import time

import pytest
from overlap_tables import collect, degrade_when, record_cluster, write_table

from airflow_zorder.core.policy import recluster_policy
from airflow_zorder.core.stats import stats_store
from airflow_zorder.core.stats.stats_location import default_stats_location
from airflow_zorder.hooks.file_stats import FileStatsHook
from airflow_zorder.triggers.file_overlap import FileOverlapTrigger


def first_event(trigger: FileOverlapTrigger, timeout: float = 20.0) -> dict:
    async def go():
        return await asyncio.wait_for(anext(trigger.run()), timeout)

    return asyncio.run(go()).payload


_change_signal = stats_store.change_signal  # the real one: the test's own reads are not counted by no_loading


def signal_of(root) -> dict:
    """The signal as the sensor ("d.t") reads it before deferring."""
    return _change_signal(default_stats_location(str(root)), ignore_run_id="d.t")


def collected_table(tmp_path):
    """A clustered unpartitioned table whose stats were collected once (snapshot 1)."""
    root = write_table(tmp_path / "t", {"": "clustered"})
    collect(root)
    return root


def watch(root, **kwargs) -> dict:
    """The first event of a trigger watching ``root`` from the signal the sensor ("d.t") read just now."""
    return first_event(FileOverlapTrigger(table=str(root), signal=signal_of(root), source="d.t", **kwargs))


@pytest.fixture
def no_loading(monkeypatch) -> list[int]:
    """Snapshot loads and evaluations raise; returns the ids of the threads the change signal was read in."""

    def forbidden(*a, **kw):
        raise AssertionError("the trigger must not load a snapshot nor evaluate")

    for mod, name in (
        (stats_store, "load_latest"),
        (stats_store, "load_snapshot"),
        (stats_store, "load_history"),
        (recluster_policy, "evaluate"),
        (FileStatsHook, "evaluate"),
        (FileStatsHook, "check"),
        (FileStatsHook, "get_snapshot"),
    ):
        monkeypatch.setattr(mod, name, forbidden)
    reads: list[int] = []
    real = stats_store.change_signal

    def counting(*a, **kw):
        out = real(*a, **kw)
        reads.append(threading.get_ident())
        return out

    monkeypatch.setattr(stats_store, "change_signal", counting)
    return reads


def test_serialize_round_trip_through_the_trigger_row(airflow_db):
    from airflow.models.trigger import Trigger
    from airflow.sdk._shared.module_loading import import_string
    from airflow.serialization.decoders import smart_decode_trigger_kwargs

    signal = {
        "snapshot_id": 7,
        "last_run": "run-20260101T120000000000Z-ab12.json",
        "events": 3,
        "last_event": "event-20260101T130000000000Z-cd34.json",
    }
    trig = FileOverlapTrigger(
        table="s3a://lake/events",
        stats_location=None,
        conn_id="zorder_s3",
        signal=signal,
        poke_interval=30,
        end_at=1.9e9,
        recheck_at=1.8e9,
        source="dag.watch",
    )
    classpath, kwargs = trig.serialize()
    assert classpath == "airflow_zorder.triggers.file_overlap.FileOverlapTrigger"
    assert kwargs == {
        "table": "s3a://lake/events",
        "stats_location": None,
        "conn_id": "zorder_s3",
        "signal": signal,
        "poke_interval": 30.0,
        "end_at": 1.9e9,
        "recheck_at": 1.8e9,
        "source": "dag.watch",
        "iceberg_catalog": None,
        "iceberg_conn_id": None,
    }
    row = Trigger.from_object(trig)  # encrypted and serialized as the triggerer stores it
    decoded = {k: smart_decode_trigger_kwargs(v) for k, v in Trigger._decrypt_kwargs(row.encrypted_kwargs).items()}
    again = import_string(row.classpath)(**decoded)
    assert again.serialize() == (classpath, kwargs)
    assert again.signal == signal  # compared with == in run(): it must survive the encoding exactly


def test_change_signal_lists_names_only(tmp_path):
    root = write_table(tmp_path / "t", {"": "clustered"})
    loc = default_stats_location(str(root))
    assert stats_store.change_signal(loc) == {"snapshot_id": None, "last_run": None, "events": 0, "last_event": None}
    collect(root)
    first = stats_store.change_signal(loc)
    assert first["snapshot_id"] == 1 and first["last_run"].startswith("run-") and first["events"] == 0
    payload = recluster_policy.evaluate(stats_store.load_latest(loc), ["a", "b"], table=str(root), stats_location=loc)
    recluster_policy.record_decision(loc, payload, source="d.t")  # a watcher's own decision ...
    assert stats_store.change_signal(loc, ignore_run_id="d.t") == first  # ... is not a change for it
    assert stats_store.change_signal(loc, ignore_run_id="d.t2")["events"] == 1  # exact match, not a prefix
    assert stats_store.change_signal(loc)["events"] == 1  # someone else's decision is


def test_yields_changed_when_a_snapshot_is_committed_during_the_wait(tmp_path, no_loading):
    root = collected_table(tmp_path)
    before = signal_of(root)
    worker = degrade_when(root, lambda: len(no_loading) >= 3)  # the trigger listed it 3 times, unchanged
    started = time.monotonic()
    ev = first_event(
        FileOverlapTrigger(
            table=str(root),
            signal=before,
            poke_interval=0.1,
            end_at=time.time() + 30,
            recheck_at=time.time() + 30,
            source="d.t",
        )
    )
    worker.join()
    assert ev["status"] == "changed" and ev["previous"] == before and ev["signal"]["snapshot_id"] == 2
    assert ev["signal"]["last_run"] > before["last_run"] and ev["end_at"] > time.time()
    assert time.monotonic() - started < 20
    assert len(no_loading) >= 3 and threading.get_ident() not in no_loading  # listed in worker threads
    assert recluster_policy.last_decision(default_stats_location(str(root))) is None  # decides nothing, records nothing


def test_yields_changed_on_a_clustering_event_or_a_collection_run_but_not_on_its_own_decisions(tmp_path, no_loading):
    root = collected_table(tmp_path)
    loc = default_stats_location(str(root))

    def wait(**kw):
        return watch(root, poke_interval=0.05, **kw)

    stats_store.record_event(loc, {"kind": "decision", "run_id": "d.t", "status": "healthy"})  # its own
    assert wait(end_at=time.time() + 0.3)["status"] == "timeout"
    timer = threading.Timer(0.2, record_cluster, (root, dt.datetime.now(dt.UTC)))
    timer.start()
    ev = wait(end_at=time.time() + 20)
    timer.join()
    assert ev["status"] == "changed" and ev["signal"]["events"] == ev["previous"]["events"] + 1
    run = {"run_id": "nothing-new", "table_name": str(root), "status": "ok", "method": "footer"}
    timer = threading.Timer(0.2, stats_store.write_run, (loc, run))  # found nothing new: the stats are younger
    timer.start()
    ev = wait(end_at=time.time() + 20)
    timer.join()
    assert ev["status"] == "changed" and ev["signal"]["snapshot_id"] == ev["previous"]["snapshot_id"] == 1
    assert ev["signal"]["last_run"].endswith("-nothing-new.json")
    # without a signal to compare with, the sensor has to look first
    ev = first_event(FileOverlapTrigger(table=str(root), poke_interval=3600, source="d.t"))
    assert ev["status"] == "changed" and ev["previous"] is None and ev["signal"] == signal_of(root)


def test_yields_recheck_at_recheck_at(tmp_path, no_loading):
    root = collected_table(tmp_path)
    started = time.time()
    ev = watch(root, poke_interval=3600, recheck_at=started + 0.5, end_at=started + 60)
    assert ev == {"status": "recheck", "recheck_at": started + 0.5, "end_at": started + 60}
    assert 0.5 <= time.time() - started < 5  # slept until recheck_at, not a whole poke_interval
    assert len(no_loading) == 2


def test_times_out_at_end_at(tmp_path, no_loading):
    root = collected_table(tmp_path)
    started = time.time()
    ev = watch(root, poke_interval=0.2, end_at=started + 0.5, recheck_at=started + 3600)
    assert ev["status"] == "timeout" and ev["end_at"] == started + 0.5 and time.time() - started >= 0.5
    assert ev["message"] == f"{root} not degraded before the timeout: its statistics did not change (snapshot 1)"
    assert stats_store.load_events(default_stats_location(str(root))).num_rows == 0  # nothing recorded


def test_errors_become_error_events(tmp_path, no_loading):
    root = collected_table(tmp_path)
    signal = signal_of(root)
    files = tmp_path / "t" / "_zorder" / "stats" / "files"
    for f in files.iterdir():  # the store becomes unreadable: its files/ directory is not a directory
        f.unlink()
    files.rmdir()
    files.write_text("not a directory")
    ev = first_event(FileOverlapTrigger(table=str(root), signal=signal, poke_interval=0.1, end_at=time.time() + 20))
    assert ev["status"] == "error" and "Not a directory" in ev["message"] and ev["error_type"]
    assert ev["message"].startswith(ev["error_type"] + ": ")
    ev = first_event(FileOverlapTrigger(table="db.events", signal=signal))
    assert (
        ev["status"] == "error" and ev["error_type"] == "InvalidInputError" and "pass stats_location" in ev["message"]
    )
