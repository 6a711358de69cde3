"""Delta Lake tables watched through their log, with no stats job and no Spark: FileStatsHook, and
FileOverlapSensor in real ``dag.test()`` runs (poke and deferrable), on local tables and on S3 (a local moto
server) through an ordinary ``aws`` connection.  The tables are real Delta tables written by ``deltalake``;
the sensor's decisions land in ``<table>/_zorder/stats/events`` and Delta readers never see them."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from dag_bundles import dag_module, forget_xcoms, run_watch
from moto_s3 import BUCKET, REGION
from overlap_tables import COLUMNS, FILES_PER_PARTITION, _file_values, count_checks

from airflow_zorder.core.errors import ForeignTableFormatError
from airflow_zorder.core.policy import recluster_policy
from airflow_zorder.core.stats import footer_stats, stats_store
from airflow_zorder.core.stats.stats_location import default_stats_location
from airflow_zorder.core.storage import locations
from airflow_zorder.hooks.file_stats import FileStatsHook

deltalake = pytest.importorskip("deltalake")
from deltalake import DeltaTable, write_deltalake  # noqa: E402

DAG_FILE = Path(__file__).parent / "s3_dags" / "zorder_delta_watch_dags.py"


# --------------------------------------------------------------------------- tables


def layout_files(layout: str, seed: int = 0) -> list[pa.Table]:
    """The 16 files of ``overlap_tables``' layouts: clustered (a 4 x 4 grid of a, b) or scrambled."""
    rng = np.random.default_rng(seed)
    return [pa.table(_file_values(layout, f, rng)) for f in range(FILES_PER_PARTITION)]


def write_delta(uri: str, layout: str, storage_options: dict[str, str] | None = None) -> pa.Table:
    """A Delta table of 16 files (one commit each, so one file each); returns the rows written."""
    files = layout_files(layout)
    for f in files:
        write_deltalake(uri, f, mode="append", storage_options=storage_options)
    return pa.concat_tables(files)


def rewrite_in_one_commit(root: Path, layout: str) -> None:
    """Replace every file of a local Delta table by 16 files of ``layout`` in ONE commit (as an overwrite or an
    OPTIMIZE does): Parquet files written with pyarrow, committed with delta-rs (add + remove actions)."""
    from deltalake.transaction import AddAction, RemoveAction

    table = DeltaTable(str(root))
    now = int(time.time() * 1000)
    actions: list = [RemoveAction(p.rsplit("/", 1)[-1], True, now) for p in table.file_uris()]
    for i, f in enumerate(layout_files(layout, seed=1)):
        name = f"part-{layout}-{i:03d}.parquet"
        pq.write_table(f, root / name)
        stats = {
            "numRecords": f.num_rows,
            "nullCount": {c: 0 for c in COLUMNS},
            "minValues": {c: pc.min(f[c]).as_py() for c in COLUMNS},
            "maxValues": {c: pc.max(f[c]).as_py() for c in COLUMNS},
        }
        actions.append(AddAction(name, (root / name).stat().st_size, {}, now, True, json.dumps(stats)))
    table.create_write_transaction(actions, mode="append", schema=table.schema())


def sorted_rows(t: pa.Table) -> list[dict]:
    return sorted(t.select(COLUMNS).to_pylist(), key=lambda r: (r["a"], r["b"]))


def tree(root: Path) -> dict[str, tuple[int, int]]:
    return {str(p.relative_to(root)): (p.stat().st_size, p.stat().st_mtime_ns) for p in root.rglob("*") if p.is_file()}


def decisions(table: str, fs=None) -> list[str]:
    return stats_store.load_events(default_stats_location(table), fs, kind="decision")["status"].to_pylist()


@pytest.fixture(autouse=True)
def aws_connections(s3, monkeypatch):
    monkeypatch.setenv("AIRFLOW_CONN_AWS_LAKE", s3.connection_uri())
    monkeypatch.setenv("AIRFLOW_CONN_AWS_WRONG", s3.connection_uri(secret_key="not-the-secret"))
    for var in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(var, raising=False)


@pytest.fixture(scope="module")
def dags(airflow_db):
    with dag_module(DAG_FILE, "zorder-delta-tests") as module:
        yield module
        forget_xcoms(module)  # their tables' bucket and connection end with this module


def run(dag, table: str, conn_id: str = "") -> tuple[str, dict | None]:
    """dag.test() with table and connection in the run conf: (the sensor's state, its return value)."""
    return run_watch(dag, table=table, conn_id=conn_id)


# --------------------------------------------------------------------------- the hook, local tables


def test_hook_reads_a_local_delta_table_from_its_log(tmp_path):
    root = tmp_path / "scrambled"
    written = write_delta(str(root), "scrambled")
    hook = FileStatsHook(str(root))
    assert hook.metadata_format is not None and hook.stats_location == f"{root}/_zorder/stats"
    assert hook.get_latest_snapshot_id() == 15  # the Delta version: 16 commits
    snap = hook.get_snapshot()
    live = sorted(DeltaTable(str(root)).file_uris())
    assert sorted(set(snap["path"].to_pylist())) == live and set(snap["method"].to_pylist()) == {"delta_log"}

    payload = hook.evaluate(columns=["a", "b"])
    assert payload["decision"] == "recluster" and payload["snapshot_id"] == 15 and payload["num_files"] == 16
    assert payload["stats_age_s"] < 60  # current as of the read, however old the last commit
    # the same metrics as the footers of the same files give
    footers = footer_stats.read_footers(live, COLUMNS)
    assert recluster_policy.evaluate(footers, ["a", "b"])["columns"] == payload["columns"]
    assert payload["columns"]["a"]["ratio_to_ideal"] == pytest.approx(4.0)

    run_rec = hook.get_latest_run()
    assert run_rec["snapshot_id"] == 15 and run_rec["method"] == "delta_log"
    assert run_rec["committed_at"] <= run_rec["collected_at"]
    hist = hook.get_history(["a", "b"])
    assert hist.num_rows == 1 and hist["snapshot_id"].to_pylist() == [15]
    assert hist["headline"].to_pylist() == [pytest.approx(4.0)]

    signal = hook.get_change_signal()
    assert signal["delta_version"] == signal["snapshot_id"] == 15
    write_deltalake(str(root), layout_files("scrambled")[0], mode="append")
    assert hook.get_change_signal()["delta_version"] == 16  # a new commit is a change (the trigger wakes)
    assert hook.get_snapshot(["a"])["snapshot_id"].to_pylist() == [16] * 17

    clustered = tmp_path / "clustered"
    write_delta(str(clustered), "clustered")
    assert FileStatsHook(str(clustered)).evaluate(columns=["a", "b"])["decision"] == "healthy"
    assert sorted_rows(DeltaTable(str(root)).to_pyarrow_table()) == sorted_rows(
        pa.concat_tables([written, layout_files("scrambled")[0]])
    )


def test_decisions_are_recorded_beside_the_log_and_delta_readers_never_see_them(tmp_path):
    root = tmp_path / "t"
    written = write_delta(str(root), "scrambled")
    write_deltalake(str(root), layout_files("clustered")[0].slice(0, 5), mode="append")
    DeltaTable(str(root)).delete("a < 0")  # no-op delete: a commit with nothing removed
    log_before = tree(root / "_delta_log")
    assert FileStatsHook(str(root)).check(columns=["a", "b"])["decision"] == "recluster"
    assert decisions(str(root)) == ["recluster"]
    assert (root / "_zorder" / "stats" / "events").is_dir() and not (root / "_zorder" / "stats" / "files").exists()
    assert tree(root / "_delta_log") == log_before  # nothing written into the log
    table = DeltaTable(str(root))
    assert sorted_rows(table.to_pyarrow_table()) == sorted_rows(
        pa.concat_tables([written, layout_files("clustered")[0].slice(0, 5)])
    )
    for full in (False, True):  # VACUUM (lite and full) leaves the hidden _zorder/ directory alone
        doomed = table.vacuum(retention_hours=0, enforce_retention_duration=False, dry_run=True, full=full)
        assert not [p for p in doomed if "_zorder" in p]


def test_a_removed_but_not_vacuumed_file_is_never_counted(tmp_path):
    root = tmp_path / "t"
    write_delta(str(root), "clustered")
    rewrite_in_one_commit(root, "scrambled")
    assert len(footer_stats.list_parquet_files(str(root))) == 32  # the 16 clustered files are still there
    hook = FileStatsHook(str(root))
    payload = hook.evaluate(columns=["a", "b"])
    assert payload["num_files"] == 16 and payload["snapshot_id"] == 16 and payload["decision"] == "recluster"
    assert set(hook.get_snapshot()["path"].to_pylist()) == set(DeltaTable(str(root)).file_uris())


def test_part_of_a_delta_table_and_hudi_or_iceberg_stay_refused(tmp_path):
    part = tmp_path / "parted"
    write_deltalake(str(part), pa.table({"a": [1, 2], "day": ["1", "2"]}), partition_by=["day"])
    iceberg = tmp_path / "iceberg"
    (iceberg / "metadata").mkdir(parents=True)
    (iceberg / "metadata" / "v1.metadata.json").write_text("{}")
    hudi = tmp_path / "hudi"
    (hudi / ".hoodie").mkdir(parents=True)
    (hudi / "region=us").mkdir()
    (hudi / "region=us" / ".hoodie_partition_metadata").write_text("#partition metadata\n")
    cases = [
        (part / "day=1", r"lies inside a Delta Lake table"),
        (iceberg, r"is an Apache Iceberg table"),
        (hudi / "region=us", r"lies inside an Apache Hudi table"),  # a Hudi base path opens as Hudi (test_hudi_*)
    ]
    for path, msg in cases:
        before = tree(path.parent)
        hook = FileStatsHook(str(path))
        for call in (
            lambda h=hook: h.metadata_format,
            hook.get_snapshot,
            hook.get_latest_snapshot_id,
            lambda h=hook: h.check(columns=["a"]),
        ):
            with pytest.raises(ForeignTableFormatError, match=msg):
                call()
        assert tree(path.parent) == before


# --------------------------------------------------------------------------- the sensor in dag.test(), local


@pytest.mark.parametrize("mode", ["poke", "deferrable"])
def test_sensor_decides_on_local_delta_tables(dags, tmp_path, mode):
    scrambled, clustered = tmp_path / "scrambled", tmp_path / "clustered"
    written = write_delta(str(scrambled), "scrambled")
    write_delta(str(clustered), "clustered")
    state, payload = run(getattr(dags, mode), str(scrambled))
    assert state == "success"
    assert payload["decision"] == "recluster" and payload["snapshot_id"] == 15 and payload["partitions"] == []
    assert payload["stats_location"] == f"{scrambled}/_zorder/stats"
    assert decisions(str(scrambled)) == ["recluster"]
    assert sorted_rows(DeltaTable(str(scrambled)).to_pyarrow_table()) == sorted_rows(written)

    started = time.monotonic()
    state, payload = run(getattr(dags, mode), str(clustered))
    assert state == "skipped" and payload is None and time.monotonic() - started >= 2  # healthy until the timeout
    assert decisions(str(clustered)) == ["healthy"]  # recorded once, not on every evaluation


def test_deferrable_sensor_wakes_on_a_new_delta_commit(dags, tmp_path, monkeypatch):
    from airflow_zorder.triggers.file_overlap import FileOverlapTrigger

    root = tmp_path / "t"
    write_delta(str(root), "clustered")
    events: list[dict] = []
    real_run = FileOverlapTrigger.run

    async def recording_run(self):
        async for ev in real_run(self):
            events.append(ev.payload)
            yield ev

    monkeypatch.setattr(FileOverlapTrigger, "run", recording_run)
    calls = count_checks(monkeypatch)
    reads: list[int] = []
    real_signal = FileStatsHook.get_change_signal
    monkeypatch.setattr(
        FileStatsHook, "get_change_signal", lambda self, *a, **kw: (real_signal(self, *a, **kw), reads.append(1))[0]
    )

    def degrade() -> None:  # once the sensor evaluated and the trigger listed twice: one commit degrades the table
        deadline = time.monotonic() + 50
        while time.monotonic() < deadline and not (calls and len(reads) >= 3):
            time.sleep(0.05)
        rewrite_in_one_commit(root, "scrambled")

    worker = threading.Thread(target=degrade, daemon=True)
    worker.start()
    state, payload = run(dags.deferrable_wait, str(root))
    worker.join()
    assert state == "success" and len(calls) == 2  # evaluated before deferring and after the wake-up
    assert [e["status"] for e in events] == ["changed"]
    assert events[0]["previous"]["delta_version"] == 15 and events[0]["signal"]["delta_version"] == 16
    assert payload["decision"] == "recluster" and payload["snapshot_id"] == 16
    assert decisions(str(root)) == ["healthy", "recluster"]


# --------------------------------------------------------------------------- on S3 (moto) through a connection


def writer_options(s3) -> dict[str, str]:
    """delta-rs options for writing to the moto server (unsafe rename: a single writer, no locking provider)."""
    return {
        "AWS_ACCESS_KEY_ID": s3.access_key,
        "AWS_SECRET_ACCESS_KEY": s3.secret_key,
        "AWS_REGION": REGION,
        "AWS_ENDPOINT_URL": s3.endpoint,
        "AWS_ALLOW_HTTP": "true",
        "AWS_S3_ALLOW_UNSAFE_RENAME": "true",
    }


@pytest.fixture(scope="module")
def s3_delta(s3) -> dict[str, object]:
    """Two Delta tables in the moto bucket, written by delta-rs: ``delta/scrambled`` and ``delta/clustered``."""
    opts = writer_options(s3)
    out: dict[str, object] = {}
    for layout in ("scrambled", "clustered"):
        uri = f"s3://{BUCKET}/delta/{layout}"
        out[layout] = uri
        out[f"{layout}_rows"] = write_delta(uri, layout, opts)
    return out


def test_hook_reads_a_delta_table_on_s3_through_the_aws_connection(s3, s3_delta):
    before = s3.keys()
    for table in (s3_delta["scrambled"], str(s3_delta["scrambled"]).replace("s3://", "s3a://")):
        hook = FileStatsHook(table, conn_id="aws_lake")
        payload = hook.evaluate(columns=["a", "b"])
        assert payload["decision"] == "recluster" and payload["snapshot_id"] == 15 and payload["num_files"] == 16
        assert hook.get_change_signal()["delta_version"] == 15
        assert all(p.startswith(table + "/part-") for p in hook.get_snapshot()["path"].to_pylist())
    assert (
        FileStatsHook(s3_delta["clustered"], conn_id="aws_lake").evaluate(columns=["a", "b"])["decision"] == "healthy"
    )
    assert s3.keys() == before  # evaluating only reads


@pytest.mark.parametrize("mode", ["poke", "deferrable"])
def test_sensor_decides_on_a_delta_table_on_s3(dags, s3, s3_delta, mode):
    table = str(s3_delta["scrambled"])
    state, payload = run(getattr(dags, mode), table, "aws_lake")
    assert state == "success"
    assert payload["decision"] == "recluster" and payload["snapshot_id"] == 15
    assert payload["stats_location"] == f"{table}/_zorder/stats"
    fs = FileStatsHook(table, conn_id="aws_lake").get_conn()
    recorded = recluster_policy.last_decision(payload["stats_location"], fs)
    assert recorded["decision"] == "recluster" and recorded["snapshot_id"] == 15
    assert any(k.startswith("delta/scrambled/_zorder/stats/events/") for k in s3.keys())
    assert not any(k.startswith("delta/scrambled/_delta_log/") and "_zorder" in k for k in s3.keys())
    read_back = DeltaTable(table, storage_options=writer_options(s3)).to_pyarrow_table()
    assert sorted_rows(read_back) == sorted_rows(s3_delta["scrambled_rows"])

    state, payload = run(getattr(dags, mode), str(s3_delta["clustered"]), "aws_lake")
    assert state == "skipped" and payload is None
    assert recluster_policy.last_decision(f"{s3_delta['clustered']}/_zorder/stats", fs)["decision"] == "healthy"


def test_sensor_with_wrong_credentials_fails_on_a_delta_table_and_writes_nothing(dags, s3, s3_delta):
    before = s3.keys()
    with pytest.raises(locations.StorageError, match=r"with connection 'aws_wrong': access denied"):
        FileStatsHook(str(s3_delta["scrambled"]), conn_id="aws_wrong").check(columns=["a", "b"])
    state, payload = run(dags.poke, str(s3_delta["scrambled"]), "aws_wrong")
    assert state == "failed" and payload is None
    assert s3.keys() == before
