"""The stats store on real S3 (a local moto server) read through an ordinary ``aws`` connection:
by FileStatsHook, and by FileOverlapSensor in real ``dag.test()`` runs (poke and deferrable).

The stats were collected by the real stats job (Spark with hadoop-aws) on the table in the bucket, written
through ``s3a://``; the same job collected a local twin's.  Wrong credentials, a missing bucket and a missing
stats store each give one clear error and write nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from dag_bundles import dag_module, forget_xcoms, run_watch
from moto_s3 import BUCKET

from airflow_zorder.core.errors import StorageConnectionError
from airflow_zorder.core.policy import recluster_policy
from airflow_zorder.core.stats import stats_store
from airflow_zorder.core.storage import locations
from airflow_zorder.hooks import connections
from airflow_zorder.hooks.file_stats import FileStatsHook

pytestmark = pytest.mark.spark
DAG_FILE = Path(__file__).parent / "s3_dags" / "zorder_s3_sensor_dags.py"


@pytest.fixture(autouse=True)
def aws_connections(s3, monkeypatch):
    monkeypatch.setenv("AIRFLOW_CONN_AWS_LAKE", s3.connection_uri())
    monkeypatch.setenv("AIRFLOW_CONN_AWS_WRONG", s3.connection_uri(secret_key="not-the-secret"))
    monkeypatch.setenv("AIRFLOW_CONN_HTTP_LAKE", json.dumps({"conn_type": "http", "host": "example.invalid"}))
    for var in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(var, raising=False)


def test_aws_connection_maps_to_pyarrow_options(s3):
    opts = connections.store_options("aws_lake", "s3://lake/events").arrow
    assert opts == {
        "access_key": s3.access_key,
        "secret_key": s3.secret_key,
        "region": "us-east-1",
        "endpoint_override": s3.endpoint.split("://", 1)[1],
        "scheme": "http",
    }


#: what a file's stats rows say about it, wherever the table is (not its path, mtime, name or collection time)
FILE_FACTS = ["partition", "file_size", "file_rows", "column_name", "min_value", "max_value", "null_count", "has_stats"]


def file_facts(snap, root: str) -> list[tuple]:
    """The snapshot's rows as (path relative to ``root``, *FILE_FACTS), sorted."""
    rel = [p.split(root.rstrip("/") + "/", 1)[1] for p in snap["path"].to_pylist()]
    return sorted(zip(rel, *(snap[c].to_pylist() for c in FILE_FACTS)))


def test_hook_reads_the_stats_job_snapshot_from_s3(lake):
    local = FileStatsHook(lake["local"])
    facts = file_facts(local.get_snapshot(), lake["local"])
    for table in (lake["events"], lake["events"].replace("s3://", "s3a://")):
        hook = FileStatsHook(table, conn_id="aws_lake")
        assert hook.stats_location == table + "/_zorder/stats"
        snap = hook.get_snapshot()
        assert snap.num_rows == len(facts) == 2 * 16 * 2  # files x columns
        assert {p.rsplit("/events/", 1)[0] for p in snap["path"].to_pylist()} == {
            f"s3a://{BUCKET}"
        }  # Spark listed them
        assert file_facts(snap, f"s3a://{BUCKET}/events") == facts
        got = hook.evaluate(columns=["a", "b"])
        want = local.evaluate(columns=["a", "b"])
        assert got["decision"] == want["decision"] == "recluster"
        assert got["partitions"] == want["partitions"] == ["day=2"]
        assert got["columns"] == want["columns"]


def test_wrong_credentials_fail_clearly_and_write_nothing(s3, lake):
    before = s3.keys()
    with pytest.raises(locations.StorageError, match=r"with connection 'aws_wrong': access denied"):
        FileStatsHook(lake["events"], conn_id="aws_wrong").check(columns=["a", "b"])
    assert s3.keys() == before


def test_missing_bucket_fails_clearly_and_creates_nothing(s3, lake):
    before, buckets = s3.keys(), s3.buckets()
    with pytest.raises(locations.StorageError, match=r"bucket no-such-lake does not exist"):
        FileStatsHook("s3://no-such-lake/events", conn_id="aws_lake").check(columns=["a", "b"])
    assert s3.buckets() == buckets == [BUCKET] and s3.keys() == before


def test_missing_stats_store_fails_clearly_and_writes_nothing(s3, lake):
    before = s3.keys()
    with pytest.raises(stats_store.StatsNotFoundError, match=r"statistics of s3://lake/raw were never collected"):
        FileStatsHook(lake["raw"], conn_id="aws_lake").check(columns=["a", "b"])
    with pytest.raises(stats_store.StatsNotFoundError, match=r"table s3://lake/nothing does not exist"):
        FileStatsHook("s3://lake/nothing", conn_id="aws_lake").check(columns=["a", "b"])
    assert s3.keys() == before


def test_unsupported_or_mismatched_connections_name_the_supported_ones(lake):
    with pytest.raises(StorageConnectionError, match=r"type 'http'.*supported: 'aws' \(s3\)"):
        FileStatsHook(lake["events"], conn_id="http_lake").get_snapshot()
    with pytest.raises(StorageConnectionError, match=r"'aws' \(s3\) but gs://b/t(/_zorder/stats)? is on gcs"):
        FileStatsHook("gs://b/t", conn_id="aws_lake").get_snapshot()
    with pytest.raises(StorageConnectionError, match=r"connection 'nope' is not defined"):
        FileStatsHook(lake["events"], conn_id="nope").get_snapshot()


# --------------------------------------------------------------------------- the sensor in dag.test()


@pytest.fixture(scope="module")
def dags(airflow_db):
    with dag_module(DAG_FILE, "zorder-s3-tests") as module:
        yield module
        forget_xcoms(module)  # their tables' bucket and connection end with this module


def run(dag, table: str, conn_id: str) -> tuple[str, dict | None]:
    """dag.test() with table and connection in the run conf: (the sensor's state, its return value)."""
    return run_watch(dag, table=table, conn_id=conn_id)


@pytest.mark.parametrize("mode", ["poke", "deferrable"])
def test_sensor_decides_from_s3_stats_in_a_dag_run(dags, lake, s3, mode):
    state, payload = run(getattr(dags, mode), lake["events"], "aws_lake")
    assert state == "success"
    assert payload["decision"] == "recluster" and payload["partitions"] == ["day=2"]
    assert payload["stats_location"] == "s3://lake/events/_zorder/stats"
    recorded = recluster_policy.last_decision(
        payload["stats_location"], FileStatsHook(lake["events"], conn_id="aws_lake")._fs
    )
    assert recorded["decision"] == "recluster" and recorded["snapshot_id"] == payload["snapshot_id"]
    assert any(k.startswith("events/_zorder/stats/events/") for k in s3.keys())


def test_sensor_with_wrong_credentials_fails_and_writes_nothing(dags, lake, s3):
    before = s3.keys()
    state, payload = run(dags.poke, lake["events"], "aws_wrong")
    assert state == "failed" and payload is None
    assert s3.keys() == before


# --------------------------------------------------------------------------- table formats


def write_delta_table(root: Path) -> Path:
    """A real Delta table (written by ``deltalake``) with a removed-but-not-vacuumed file."""
    import pyarrow as pa
    from deltalake import write_deltalake

    write_deltalake(str(root), pa.table({"a": list(range(40)), "b": list(range(40))}))
    write_deltalake(str(root), pa.table({"a": [1], "b": [2]}), mode="overwrite")
    return root


def snapshot_of(root: Path) -> dict[str, tuple[int, int]]:
    return {str(p.relative_to(root)): (p.stat().st_size, p.stat().st_mtime_ns) for p in root.rglob("*")}


def table_format_builders():
    """tests/unit/test_table_formats.py, whose helpers lay out each table format's directory."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "table_format_builders", Path(__file__).resolve().parents[1] / "unit" / "test_table_formats.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_hook_watches_a_delta_table_through_its_log_and_leaves_it_untouched(tmp_path):
    from deltalake import DeltaTable

    root = write_delta_table(tmp_path / "delta_events")
    before = snapshot_of(root)
    hook = FileStatsHook(str(root))
    payload = hook.check(columns=["a", "b"])
    # the log's one live file (the overwritten one is still on disk): too small to re-cluster
    assert payload["decision"] == "hold" and payload["num_files"] == 1 and payload["snapshot_id"] == 1
    assert hook.get_snapshot()["path"].to_pylist() == DeltaTable(str(root)).file_uris() * 2  # a, b
    after = snapshot_of(root)
    assert {k: v for k, v in after.items() if not k.startswith("_zorder")} == before  # only the decision added
    assert [k for k in after if k.startswith("_zorder/stats/events/")]
    assert DeltaTable(str(root)).to_pyarrow_table().to_pylist() == [{"a": 1, "b": 2}]


def test_hook_and_sensor_refuse_a_hudi_table_hudi_rs_cannot_read_untouched(dags, tmp_path):
    from airflow_zorder.core.errors import TableError

    root = tmp_path / "hudi_events"
    table_format_builders().write_hudi(str(root))  # hand-laid: its commits carry no schema, which hudi-rs needs
    before = snapshot_of(root)
    with pytest.raises(TableError, match=r"cannot read Hudi table .* with hudi-rs: .*base path"):
        FileStatsHook(str(root)).check(columns=["a", "b"])
    state, payload = run(dags.poke, str(root), "")
    assert state == "failed" and payload is None
    assert snapshot_of(root) == before and not (root / "_zorder").exists()
