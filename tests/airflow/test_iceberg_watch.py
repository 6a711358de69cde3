"""Iceberg tables watched through their manifests, with no stats job and no Spark: FileStatsHook, and
FileOverlapSensor in real ``dag.test()`` runs (poke and deferrable). The tables are real Iceberg tables in a
pyiceberg SQL catalog on SQLite, named as users name them: ``namespace.table`` of a configured catalog."""

from __future__ import annotations

import asyncio
import json
import os
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from dag_bundles import dag_module, forget_xcoms, run_watch
from overlap_tables import FILES_PER_PARTITION, _file_values

from airflow_zorder.core.stats import stats_store
from airflow_zorder.hooks.file_stats import FileStatsHook

pytest.importorskip("pyiceberg")
from iceberg_tables import CATALOG, write_table  # noqa: E402

DAG_FILE = Path(__file__).parent / "iceberg_dags" / "zorder_iceberg_watch_dags.py"


def layout_files(layout: str, seed: int = 0) -> list[pa.Table]:
    """The 16 files of ``overlap_tables``' layouts: clustered (a 4 x 4 grid of a, b) or scrambled."""
    rng = np.random.default_rng(seed)
    return [pa.table(_file_values(layout, f, rng)) for f in range(FILES_PER_PARTITION)]


@pytest.fixture()
def lake(tmp_path, monkeypatch):
    """Two tables, scrambled and clustered, in one catalog configured by PYICEBERG_CATALOG__ variables, and the
    same catalog as an Airflow ``iceberg`` connection of the same name (a SQL catalog keeps its tables under its name)."""
    _, props = write_table(tmp_path, "ns.scrambled", layout_files("scrambled"))
    write_table(tmp_path, "ns.clustered", layout_files("clustered"))
    for key, value in props.items():
        monkeypatch.setenv(f"PYICEBERG_CATALOG__{CATALOG.upper()}__{key.upper()}", value)
    monkeypatch.setenv("AIRFLOW_CONN_ZORDERTESTS", json.dumps({"conn_type": "iceberg", "extra": props}))
    monkeypatch.setenv("AIRFLOW_CONN_NOT_ICEBERG", json.dumps({"conn_type": "aws", "login": "k", "password": "s"}))
    return tmp_path


def decisions(hook: FileStatsHook) -> list[str]:
    return hook.get_events("decision")["status"].to_pylist()


def test_hook_reads_an_iceberg_table_from_its_manifests(lake):
    hook = FileStatsHook("ns.scrambled", iceberg_catalog=CATALOG)
    assert hook.metadata_format is not None and hook.metadata_format.format == "iceberg"
    assert hook.stats_location.endswith("/ns/scrambled/_zorder/stats")  # beside the data and metadata
    snap = hook.get_snapshot(["a", "b"])
    assert snap.num_rows == 2 * 16 and set(snap["method"].to_pylist()) == {"iceberg_manifest"}
    assert all(snap["has_stats"].to_pylist()) and set(snap["snapshot_id"].to_pylist()) == {16}
    assert hook.get_latest_snapshot_id() == 16 and hook.get_latest_run()["snapshot_id"] == 16
    payload = hook.check(columns=["a", "b"])
    assert payload["decision"] == "recluster" and payload["snapshot_id"] == 16
    assert decisions(hook) == ["recluster"]
    healthy = FileStatsHook("ns.clustered", iceberg_catalog=CATALOG).evaluate(columns=["a", "b"])
    assert healthy["decision"] == "healthy"
    # a new snapshot is a change for the trigger
    signal = hook.get_change_signal()
    hook.metadata_format.iceberg.append(layout_files("scrambled", seed=3)[0])
    assert hook.get_change_signal()["snapshot_id"] == signal["snapshot_id"] + 1 == 17
    # the table itself is untouched: the decisions live under <location>/_zorder, which Iceberg never lists
    assert sorted(stats_store.load_events(hook.stats_location, kind="decision")["status"].to_pylist()) == ["recluster"]


def test_an_unknown_table_or_catalog_is_named(lake):
    """On first use: building the hook opens nothing."""
    nope, elsewhere = (
        FileStatsHook("ns.nope", iceberg_catalog=CATALOG),
        FileStatsHook("ns.s", iceberg_catalog="elsewhere"),
    )
    with pytest.raises(ValueError, match="'ns.nope' does not exist in catalog 'zordertests'"):
        nope.evaluate()
    with pytest.raises(ValueError, match="Iceberg catalog 'elsewhere' is not configured"):
        _ = elsewhere.stats_location


def test_an_iceberg_connection_names_the_catalog(lake, monkeypatch):
    pytest.importorskip("airflow.providers.apache.iceberg", reason="the iceberg extra")
    by_name = FileStatsHook("ns.scrambled", iceberg_catalog=CATALOG)
    assert by_name.stats_location  # opens its catalog now, while the variables configure it
    for var in [v for v in os.environ if v.startswith("PYICEBERG_CATALOG__")]:
        monkeypatch.delenv(var)  # the connection alone configures the catalog now
    with pytest.raises(ValueError, match="not configured"):
        FileStatsHook("ns.scrambled", iceberg_catalog=CATALOG).get_latest_snapshot_id()
    by_conn = FileStatsHook("ns.scrambled", iceberg_conn_id=CATALOG)
    assert by_conn.iceberg_catalog == CATALOG  # named after the connection, as the provider names it
    assert by_conn.stats_location == by_name.stats_location
    got, want = by_conn.evaluate(columns=["a", "b"]), by_name.evaluate(columns=["a", "b"])
    assert got["decision"] == want["decision"] == "recluster" and got["headline"] == want["headline"]
    # connections are looked up on first use: a hook naming a missing one is built, and its first read names it
    nowhere, not_iceberg = (FileStatsHook("ns.scrambled", iceberg_conn_id=c) for c in ("nowhere", "not_iceberg"))
    with pytest.raises(ValueError, match="connection 'nowhere' is not defined: create an 'iceberg' connection"):
        nowhere.evaluate()
    with pytest.raises(ValueError, match="connection 'not_iceberg' has type 'aws', not 'iceberg'"):
        _ = not_iceberg.stats_location
    with pytest.raises(ValueError, match="not both"):
        FileStatsHook("ns.scrambled", iceberg_catalog=CATALOG, iceberg_conn_id=CATALOG)


@pytest.fixture
def lookups(monkeypatch) -> list[str]:
    """The id of every connection looked up from now on (Airflow's own ``Connection.get``, wrapped: it still looks
    each one up, in the metadata DB's secrets backends)."""
    from airflow.sdk.definitions.connection import Connection

    seen: list[str] = []
    real = Connection.get.__func__

    def counted(cls, conn_id):
        seen.append(conn_id)
        return real(cls, conn_id)

    monkeypatch.setattr(Connection, "get", classmethod(counted))
    return seen


def test_the_sensor_and_the_trigger_look_their_connection_up_once(airflow_db, lake, lookups, monkeypatch):
    """The sensor keeps one hook across its pokes and the trigger one per run, not per listing: the ``iceberg``
    connection is looked up when first used, then never again, however many pokes or polls follow."""
    pytest.importorskip("airflow.providers.apache.iceberg", reason="the iceberg extra")
    from airflow_zorder.sensors import FileOverlapSensor
    from airflow_zorder.triggers.file_overlap import FileOverlapTrigger

    FileStatsHook("ns.clustered", iceberg_conn_id=CATALOG)
    assert lookups == []  # building a hook looks nothing up
    sensor = FileOverlapSensor(task_id="w", table="ns.clustered", columns="a,b", iceberg_conn_id=CATALOG)
    assert not sensor.poke({}).is_done and set(lookups) == {CATALOG}  # healthy: it keeps waiting
    once = len(lookups)  # one resolution: the connection, then the Iceberg provider's hook reading it
    for _ in range(4):
        assert not sensor.poke({}).is_done
    assert len(lookups) == once

    polls: list[int] = []
    listing = FileStatsHook.get_change_signal
    monkeypatch.setattr(FileStatsHook, "get_change_signal", lambda h, **kw: polls.append(1) or listing(h, **kw))
    lookups.clear()
    signal = listing(FileStatsHook("ns.clustered", iceberg_catalog=CATALOG), ignore_run_id="d.t")
    trigger = FileOverlapTrigger(
        table="ns.clustered",
        iceberg_conn_id=CATALOG,
        signal=signal,
        poke_interval=0.1,
        end_at=time.time() + 1.5,
        source="d.t",
    )
    event = asyncio.run(asyncio.wait_for(anext(trigger.run()), 30)).payload
    assert event["status"] == "timeout" and len(polls) >= 5
    assert len(lookups) == once


@pytest.fixture(scope="module")
def dags(airflow_db):
    with dag_module(DAG_FILE, "zorder-iceberg-tests") as module:
        yield module
        forget_xcoms(module)


def run(dag, table: str) -> tuple[str, dict | None]:
    """dag.test() with the table in the run conf: (the sensor's state, its return value)."""
    return run_watch(dag, table=table)


@pytest.mark.parametrize("mode", ["poke", "deferrable"])
def test_sensor_decides_on_iceberg_tables(dags, lake, mode):
    """poke: a pyiceberg catalog; deferrable: the same catalog through an ``iceberg`` connection. The UI finds the
    table again from the sensor's XCom, with its catalog."""
    from airflow_zorder.plugins.discovery import xcom_tables

    state, payload = run(getattr(dags, mode), "ns.scrambled")
    assert state == "success" and payload["decision"] == "recluster" and payload["snapshot_id"] == 16
    catalog = {"poke": ("iceberg_catalog", CATALOG), "deferrable": ("iceberg_conn_id", CATALOG)}[mode]
    assert payload[catalog[0]] == catalog[1]
    (ref,) = [r for r in xcom_tables({getattr(dags, mode).dag_id}) if r.table == "ns.scrambled"]
    assert getattr(ref, catalog[0]) == catalog[1] and ref.error is None
    state, payload = run(getattr(dags, mode), "ns.clustered")
    assert state == "skipped" and payload is None
    assert decisions(FileStatsHook("ns.clustered", iceberg_catalog=CATALOG)) == ["healthy"]
