"""Tables on Azure Blob (a real local Azurite) read through ordinary ``wasb`` and ``adls`` connections, resolved by
the Microsoft Azure provider's own hooks: by FileStatsHook (every credential kind Azurite checks, every location
spelling), by FileOverlapSensor in real ``dag.test()`` runs (poke and deferrable), by the UI's table page, and a
Delta table's log (delta-rs) and an Iceberg table (pyiceberg, warehouse on Azurite) with the same credentials.

The stats were collected by the real stats job (local Spark) and uploaded (the job on ``abfs://``:
tests/integration/test_abfs_connector.py).
A wrong key, a missing container, an unreachable endpoint and a mismatched connection each give one clear error
naming the connection, and leave the container's blobs (names and ETags) unchanged. A service principal and a
managed identity cannot authenticate against Azurite over http: their mapping is checked without connecting."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import pytest

from airflow_zorder.core.errors import StorageConnectionError

pytest.importorskip("airflow.providers.microsoft.azure", reason="the azure extra (Microsoft Azure provider)")

from azurite import ACCOUNT, CONTAINER, KEY, WRONG_KEY, Azurite  # noqa: E402
from dag_bundles import dag_module, forget_xcoms, run_watch  # noqa: E402
from ui_app import signed_in_client  # noqa: E402

from airflow_zorder.core.stats import stats_store  # noqa: E402
from airflow_zorder.core.storage import locations  # noqa: E402
from airflow_zorder.hooks import connections  # noqa: E402
from airflow_zorder.hooks.file_stats import FileStatsHook  # noqa: E402

pytestmark = pytest.mark.spark
DAG_FILE = Path(__file__).parent / "azure_dags" / "zorder_azure_sensor_dags.py"
DFS = f"{ACCOUNT}.dfs.core.windows.net"
EVENTS = f"abfss://{CONTAINER}@{DFS}/events"


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])  # closed again when the socket is: nothing listens there


@pytest.fixture(scope="module")
def lake(spark, azurite, tmp_path_factory) -> dict[str, str]:
    """``events`` (a degraded table whose stats the real stats job collected) and ``raw`` (the same files, stats never
    collected) in the container, and the local twin's path."""
    from moto_s3 import write_partitioned_table

    from airflow_zorder.core.jobs.options import CollectOptions
    from spark_jobs.stats_collection.run import run_collect

    local = write_partitioned_table(tmp_path_factory.mktemp("lake") / "events")
    result = run_collect(spark, CollectOptions(table=str(local)))
    assert result["status"] == "ok", result
    azurite.upload_dir(local, "events")
    azurite.upload_dir(local, "raw")
    azurite.delete_prefix("raw/_zorder/")
    return {"events": EVENTS, "raw": f"abfss://{CONTAINER}@{DFS}/raw", "local": str(local)}


def sas_token() -> str:
    """A read/list/write account SAS signed with the development key."""
    import datetime as dt

    from azure.storage.blob import AccountSasPermissions, ResourceTypes, generate_account_sas

    return generate_account_sas(
        ACCOUNT,
        KEY,
        ResourceTypes(service=True, container=True, object=True),
        AccountSasPermissions(read=True, list=True, write=True, create=True, add=True),
        expiry=dt.datetime.now(dt.UTC) + dt.timedelta(hours=2),
    )


def connection_set(azurite: Azurite) -> dict[str, str]:
    """The module's connections, as ``AIRFLOW_CONN_*`` JSON: every way Azure's clients reach Azurite, and the bad ones."""
    down = f"http://127.0.0.1:{_closed_port()}/{ACCOUNT}"
    return {
        "AZ_LAKE": azurite.wasb_connection(),  # extra connection_string
        "AZ_KEY": azurite.wasb_connection(login=ACCOUNT, password=KEY, host=azurite.endpoint),
        "AZ_SAS": azurite.wasb_connection(login=ACCOUNT, host=azurite.endpoint, extra={"sas_token": sas_token()}),
        "AZ_ADLS": json.dumps(
            {"conn_type": "adls", "host": ACCOUNT, "password": KEY, "extra": {"account_url": azurite.endpoint}}
        ),
        "AZ_DEV": azurite.wasb_connection(extra={"connection_string": "UseDevelopmentStorage=true"}),
        "AZ_WRONG": azurite.wasb_connection(extra={"connection_string": azurite.connection_string(WRONG_KEY)}),
        "AZ_DOWN": azurite.wasb_connection(login=ACCOUNT, password=KEY, host=down),
        "AZ_OTHER": azurite.wasb_connection(
            login="otheraccount", password=KEY, host="https://otheraccount.blob.core.windows.net"
        ),
        "AZ_SP": azurite.wasb_connection(
            login="app-id",
            password="app-secret",
            host="https://acct.blob.core.windows.net",
            extra={"tenant_id": "tenant-id"},
        ),
        "AZ_MI": azurite.wasb_connection(login="acct", extra={"managed_identity_client_id": "mi-client-id"}),
        "ADLS_SP": json.dumps(
            {
                "conn_type": "adls",
                "host": "acct",
                "login": "app-id",
                "password": "app-secret",
                "extra": {"tenant_id": "tenant-id"},
            }
        ),
        "AZ_CN": azurite.wasb_connection(login="acct", password=KEY, host="https://acct.blob.core.chinacloudapi.cn"),
        "AZ_NOACCOUNT": azurite.wasb_connection(password=KEY),
        "HTTP_LAKE": json.dumps({"conn_type": "http", "host": "example.invalid"}),
    }


@pytest.fixture(scope="module")
def conns(azurite) -> Iterator[dict[str, str]]:
    """The connections, set for the whole module (the UI's app reads them too); Azurite's URL for
    ``UseDevelopmentStorage=true``; no Azure credentials from the environment."""
    mp = pytest.MonkeyPatch()
    values = connection_set(azurite)
    for name, value in values.items():
        mp.setenv(f"AIRFLOW_CONN_{name}", value)
    mp.setenv("AZURITE_BLOB_STORAGE_URL", f"http://127.0.0.1:{azurite.port}")
    for var in ("AZURE_CLIENT_ID", "AZURE_CLIENT_SECRET", "AZURE_TENANT_ID", "AZURE_STORAGE_CONNECTION_STRING"):
        mp.delenv(var, raising=False)
    yield values
    mp.undo()


# --------------------------------------------------------------------------- the mapping, without connecting


def test_connection_string_maps_to_each_readers_names(conns, azurite):
    opts = connections.store_options("az_lake", EVENTS)
    host = f"127.0.0.1:{azurite.port}"
    assert dict(opts.arrow) == {
        "account_name": ACCOUNT,
        "account_key": KEY,
        "blob_storage_authority": host,
        "blob_storage_scheme": "http",
        "dfs_storage_authority": host,
        "dfs_storage_scheme": "http",
    }
    assert dict(opts.delta) == {
        "account_name": ACCOUNT,
        "account_key": KEY,
        "azure_storage_endpoint": azurite.endpoint,
        "allow_http": "true",
        "max_retries": "2",
        "retry_timeout": "10s",
        "connect_timeout": "5s",
    }
    assert opts.iceberg["adls.account-name"] == ACCOUNT and opts.iceberg["adls.account-key"] == KEY
    assert opts.iceberg["py-io-impl"] == "airflow_zorder.core.iceberg.azure_io.AzureArrowFileIO"
    assert opts.iceberg["adls.connection-string"] == azurite.connection_string()
    assert opts.iceberg["adls.blob-storage-authority"] == host == opts.iceberg["adls.dfs-storage-authority"]
    # every other spelling of the same account and credentials resolves alike (SAS aside)
    for conn_id in ("az_key", "az_adls", "az_dev"):
        assert connections.store_options(conn_id, EVENTS) == opts, conn_id
    sas = connections.store_options("az_sas", EVENTS)
    assert sas.arrow["sas_token"].startswith("?") and "sig=" in sas.arrow["sas_token"]
    assert sas.delta["sas_token"] == sas.iceberg["adls.sas-token"] == sas.arrow["sas_token"][1:]
    assert "account_key" not in sas.arrow and "SharedAccessSignature=" in sas.iceberg["adls.connection-string"]


def test_service_principal_and_managed_identity_map_without_connecting(conns):
    """Declared only: Azurite cannot check a token over http (the provider refuses it there), so the fields' mapping
    is what is checked; the endpoints are Azure's own (nothing extra set)."""
    sp = connections.store_options("az_sp", "abfss://c@acct.dfs.core.windows.net/t")
    assert dict(sp.arrow) == {
        "account_name": "acct",
        "client_id": "app-id",
        "client_secret": "app-secret",
        "tenant_id": "tenant-id",
    }
    assert {k: v for k, v in sp.delta.items() if k.startswith("azure_")} == {
        "azure_client_id": "app-id",
        "azure_client_secret": "app-secret",
        "azure_tenant_id": "tenant-id",
    }
    assert sp.iceberg == {
        "py-io-impl": "airflow_zorder.core.iceberg.azure_io.AzureArrowFileIO",
        "adls.account-name": "acct",
        "adls.client-id": "app-id",
        "adls.client-secret": "app-secret",
        "adls.tenant-id": "tenant-id",
    }
    assert connections.store_options("adls_sp", "az://c/t") == sp  # the adls hook's fields, the same credential
    mi = connections.store_options("az_mi", "az://c/t")
    assert dict(mi.arrow) == {"account_name": "acct", "client_id": "mi-client-id"}
    assert mi.delta["azure_client_id"] == "mi-client-id" and "azure_client_secret" not in mi.delta
    assert {k: v for k, v in mi.iceberg.items() if k != "py-io-impl"} == {"adls.account-name": "acct"}
    cn = connections.store_options("az_cn", "az://c/t")  # another cloud: pyarrow prepends the account to ".blob..."
    assert (
        cn.arrow["blob_storage_authority"] == ".blob.core.chinacloudapi.cn"
        and cn.arrow["blob_storage_scheme"] == "https"
    )
    assert cn.arrow["dfs_storage_authority"] == ".dfs.core.chinacloudapi.cn" and cn.arrow["account_key"] == KEY
    assert (
        cn.delta["azure_storage_endpoint"] == "https://acct.blob.core.chinacloudapi.cn" and "allow_http" not in cn.delta
    )


# --------------------------------------------------------------------------- the hook


def test_hook_reads_the_stats_job_snapshot_from_azurite(conns, lake):
    local = FileStatsHook(lake["local"])
    want_rows = local.get_snapshot().sort_by([("path", "ascending"), ("column_name", "ascending")])
    want = local.evaluate(columns=["a", "b"])
    spellings = {
        "az_lake": [EVENTS, EVENTS.replace("abfss://", "abfs://"), f"az://{CONTAINER}/events"],
        "az_key": [f"wasbs://{CONTAINER}@{ACCOUNT}.blob.core.windows.net/events"],
        "az_sas": [EVENTS],
        "az_adls": [EVENTS],
        "az_dev": [f"az://{CONTAINER}/events"],
    }
    for conn_id, tables in spellings.items():
        for table in tables:
            hook = FileStatsHook(table, conn_id=conn_id)
            assert hook.stats_location == table + "/_zorder/stats"
            snap = hook.get_snapshot()
            assert snap.num_rows == 2 * 16 * 2, (conn_id, table)  # files x columns
            got_paths = sorted({p.split("/events/", 1)[1] for p in snap["path"].to_pylist()})
            assert got_paths == sorted({p.split("/events/", 1)[1] for p in want_rows["path"].to_pylist()})
            got = hook.evaluate(columns=["a", "b"])
            assert got["decision"] == want["decision"] == "recluster", (conn_id, table)
            assert got["partitions"] == want["partitions"] == ["day=2"] and got["columns"] == want["columns"]


def test_wrong_key_fails_clearly_and_writes_nothing(conns, azurite, lake):
    before = azurite.blobs()
    with pytest.raises(locations.StorageError, match=r"with connection 'az_wrong': access denied: .*wasb"):
        FileStatsHook(lake["events"], conn_id="az_wrong").check(columns=["a", "b"])
    assert azurite.blobs() == before


def test_missing_container_fails_clearly_and_creates_nothing(conns, azurite, lake):
    before, containers = azurite.blobs(), azurite.containers()
    with pytest.raises(locations.StorageError, match=r"with connection 'az_lake': container nope does not exist"):
        FileStatsHook(f"abfss://nope@{DFS}/events", conn_id="az_lake").check(columns=["a", "b"])
    assert azurite.containers() == containers == [CONTAINER] and azurite.blobs() == before


def test_unreachable_endpoint_fails_in_seconds(conns, azurite, lake):
    before = azurite.blobs()
    start = time.monotonic()
    with pytest.raises(locations.StorageError, match=r"with connection 'az_down': the store did not answer"):
        FileStatsHook(lake["events"], conn_id="az_down").check(columns=["a", "b"])
    assert time.monotonic() - start < 30
    assert azurite.blobs() == before


def test_missing_stats_and_table_fail_clearly_and_write_nothing(conns, azurite, lake):
    before = azurite.blobs()
    with pytest.raises(stats_store.StatsNotFoundError, match=r"statistics of .*/raw were never collected"):
        FileStatsHook(lake["raw"], conn_id="az_lake").check(columns=["a", "b"])
    with pytest.raises(stats_store.StatsNotFoundError, match=r"table .*/nothing does not exist"):
        FileStatsHook(f"abfss://{CONTAINER}@{DFS}/nothing", conn_id="az_lake").check(columns=["a", "b"])
    assert azurite.blobs() == before


def test_mismatched_connections_name_the_supported_ones(conns, lake):
    with pytest.raises(StorageConnectionError, match=r"type 'http'.*'wasb' \(azure\), 'adls' \(azure\)"):
        FileStatsHook(lake["events"], conn_id="http_lake").get_snapshot()
    with pytest.raises(StorageConnectionError, match=r"'wasb' \(azure\) but s3://b/t(/_zorder/stats)? is on s3"):
        FileStatsHook("s3://b/t", conn_id="az_lake").get_snapshot()
    with pytest.raises(
        StorageConnectionError,
        match=r"'az_other' is for storage account 'otheraccount' but .* 'devstoreaccount1'",
    ):
        FileStatsHook(lake["events"], conn_id="az_other").get_snapshot()
    with pytest.raises(StorageConnectionError, match=r"'az_noaccount' names no storage account"):
        FileStatsHook(lake["events"], conn_id="az_noaccount").get_snapshot()
    with pytest.raises(locations.StorageError, match=r"no storage account: spell it abfss://container@account"):
        FileStatsHook(f"az://{CONTAINER}/events").get_snapshot()  # no connection: nothing names the account


# --------------------------------------------------------------------------- the sensor in dag.test()


@pytest.fixture(scope="module")
def dags(airflow_db, conns):
    with dag_module(DAG_FILE, "zorder-azure-tests") as module:
        yield module
        forget_xcoms(module)  # their tables' container and connection end with this module


def run(dag, table: str, conn_id: str) -> tuple[str, dict | None]:
    """dag.test() with table and connection in the run conf: (the sensor's state, its return value)."""
    return run_watch(dag, table=table, conn_id=conn_id)


@pytest.mark.parametrize("mode", ["poke", "deferrable"])
def test_sensor_decides_from_azure_stats_in_a_dag_run(dags, lake, azurite, mode):
    from airflow_zorder.core.policy import recluster_policy

    before = azurite.blobs()
    state, payload = run(getattr(dags, mode), lake["events"], "az_lake")
    assert state == "success"
    assert payload["decision"] == "recluster" and payload["partitions"] == ["day=2"]
    assert payload["stats_location"] == lake["events"] + "/_zorder/stats"
    recorded = recluster_policy.last_decision(
        payload["stats_location"], FileStatsHook(lake["events"], conn_id="az_lake")._fs
    )
    assert recorded["decision"] == "recluster" and recorded["snapshot_id"] == payload["snapshot_id"]
    after = azurite.blobs()
    added = sorted(set(after) - set(before))
    assert added and all(k.startswith("events/_zorder/stats/events/") for k in added)  # only its decision
    assert {k: v for k, v in after.items() if k in before} == before


def test_sensor_with_a_wrong_key_fails_and_writes_nothing(dags, lake, azurite):
    before = azurite.blobs()
    state, payload = run(dags.poke, lake["events"], "az_wrong")
    assert state == "failed" and payload is None
    assert azurite.blobs() == before


# --------------------------------------------------------------------------- a Delta table's log (delta-rs)

DELTA = f"abfss://{CONTAINER}@{DFS}/delta/events"


@pytest.fixture(scope="module")
def delta_table(azurite, conns, tmp_path_factory) -> str:
    """A real Delta table written by delta-rs: its first commit straight to Azurite with the connection's delta-rs
    options, then 15 more commits of one file each (every file spanning the whole range of a and b: degraded). The
    15 are written locally and uploaded: delta-rs 1.6.6's writer fails the third commit on Azurite ("Invalid table
    version: 1"; its reader reads such a table fine)."""
    import numpy as np
    import pyarrow as pa
    from deltalake import DeltaTable, write_deltalake

    rng = np.random.default_rng(7)
    batches = []
    for _ in range(16):
        v = rng.integers(0, 100, (2, 40))
        v[:, 0], v[:, 1] = 0, 99
        batches.append(pa.table({"a": v[0], "b": v[1]}))
    write_deltalake(DELTA, batches[0], storage_options=dict(connections.store_options("az_lake", DELTA).delta))
    local = tmp_path_factory.mktemp("delta") / "events"
    azurite_log = DeltaTable(DELTA, storage_options=dict(connections.store_options("az_lake", DELTA).delta))
    assert azurite_log.version() == 0
    # the local twin starts from the very commit written to Azurite: copy it down, then append
    client = azurite.service().get_container_client(CONTAINER)
    for blob in client.list_blobs(name_starts_with="delta/events/"):
        target = local / blob.name[len("delta/events/") :]
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(client.download_blob(blob.name).readall())
    for batch in batches[1:]:
        write_deltalake(str(local), batch, mode="append")
    azurite.upload_dir(local, "delta/events")
    return DELTA


def test_hook_reads_a_delta_log_on_azure_with_the_connection(delta_table, azurite):
    from deltalake import DeltaTable

    before = azurite.blobs()
    for table in (delta_table, f"az://{CONTAINER}/delta/events"):
        hook = FileStatsHook(table, conn_id="az_lake")
        assert hook.metadata_format is not None and hook.metadata_format.format == "delta"
        got = hook.evaluate(columns=["a", "b"])
        assert got["decision"] == "recluster" and got["snapshot_id"] == 15 and got["num_files"] == 16
        snap = hook.get_snapshot(["a"])
        assert set(snap["method"].to_pylist()) == {"delta_log"} and snap.num_rows == 16
    uris = DeltaTable(delta_table, storage_options=dict(connections.store_options("az_lake").delta)).file_uris()
    assert sorted(p.rsplit("/", 1)[1] for p in snap["path"].to_pylist()) == sorted(u.rsplit("/", 1)[1] for u in uris)
    with pytest.raises(locations.StorageError, match=r"with connection 'az_wrong': access denied"):
        FileStatsHook(delta_table, conn_id="az_wrong").evaluate(columns=["a", "b"])
    assert azurite.blobs() == before  # evaluating only reads


def test_delta_log_reader_gives_up_in_seconds_on_an_unreachable_endpoint(conns):
    from airflow_zorder.core.delta.delta_log import DeltaLog

    start = time.monotonic()
    with pytest.raises(OSError) as info:  # delta-rs's own error, or DeltaLogError naming the table
        DeltaLog(DELTA, connections.store_options("az_down", DELTA).delta).refresh()
    assert time.monotonic() - start < 20
    clear = locations.describe_error(info.value, DELTA, "az_down")
    assert clear is not None and "with connection 'az_down': the store did not answer" in str(clear)


def degrading_commit(root: Path) -> None:
    """Replace every file of the local Delta table ``root`` by 16 files each spanning the whole range of a and b, in
    ONE commit (as an overwrite or an OPTIMIZE does): Parquet written with pyarrow, committed with delta-rs."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq
    from deltalake import DeltaTable
    from deltalake.transaction import AddAction, RemoveAction

    table = DeltaTable(str(root))
    now = int(time.time() * 1000)
    actions: list = [RemoveAction(p.rsplit("/", 1)[-1], True, now) for p in table.file_uris()]
    rng = np.random.default_rng(1)
    for i in range(16):
        v = rng.integers(0, 100, (2, 40))
        v[:, 0], v[:, 1] = 0, 99
        name = f"part-scrambled-{i:03d}.parquet"
        pq.write_table(pa.table({"a": v[0], "b": v[1]}), root / name)
        stats = {"numRecords": 40, "nullCount": {"a": 0, "b": 0}, "minValues": {"a": 0, "b": 0}}
        stats["maxValues"] = {"a": 99, "b": 99}
        actions.append(AddAction(name, (root / name).stat().st_size, {}, now, True, json.dumps(stats)))
    table.create_write_transaction(actions, mode="append", schema=table.schema())


def test_deferrable_sensor_wakes_on_a_new_delta_commit_on_azure(dags, azurite, tmp_path, monkeypatch):
    """The trigger polls the Delta log on Azure through the connection; a commit landing there wakes the sensor."""
    import threading

    import pyarrow as pa
    from deltalake import write_deltalake
    from overlap_tables import count_checks

    from airflow_zorder.triggers.file_overlap import FileOverlapTrigger

    root = tmp_path / "clustered"  # 16 files, one per cell of a 4 x 4 grid of a, b: healthy
    for f in range(16):
        lo = {"a": 25 * (f // 4), "b": 25 * (f % 4)}
        write_deltalake(str(root), pa.table({c: [lo[c], lo[c] + 24] * 20 for c in ("a", "b")}), mode="append")
    azurite.upload_dir(root, "delta/clustered")
    table = f"abfss://{CONTAINER}@{DFS}/delta/clustered"
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

    def degrade() -> None:  # once the sensor evaluated and the trigger read the log twice: one commit lands on Azure
        deadline = time.monotonic() + 50
        while time.monotonic() < deadline and not (calls and len(reads) >= 3):
            time.sleep(0.05)
        degrading_commit(root)
        azurite.upload_dir(root, "delta/clustered")

    worker = threading.Thread(target=degrade, daemon=True)
    worker.start()
    state, payload = run(dags.deferrable_wait, table, "az_lake")
    worker.join()
    assert state == "success" and len(calls) == 2  # evaluated before deferring and after the wake-up
    assert [e["status"] for e in events] == ["changed"]
    assert events[0]["previous"]["delta_version"] == 15 and events[0]["signal"]["delta_version"] == 16
    assert payload["decision"] == "recluster" and payload["snapshot_id"] == 16


# --------------------------------------------------------------------------- an Iceberg table, warehouse on Azurite


@pytest.fixture(scope="module")
def iceberg_catalog(azurite, conns, tmp_path_factory) -> dict[str, str]:
    """A real Iceberg table written by pyiceberg (SQL catalog on SQLite, warehouse in the container): 16 appends of one
    file each spanning the whole range of a and b; returns the catalog's own properties (no credentials)."""
    pytest.importorskip("pyiceberg")
    import numpy as np
    import pyarrow as pa

    from airflow_zorder.core.iceberg.catalogs import load_catalog

    home = tmp_path_factory.mktemp("iceberg")
    props = {"type": "sql", "uri": f"sqlite:///{home}/catalog.db", "warehouse": f"abfs://{CONTAINER}@{DFS}/wh"}
    cat = load_catalog("azurelake", {**props, **connections.store_options("az_lake").iceberg})
    cat.create_namespace_if_not_exists("ns")
    rng = np.random.default_rng(7)
    batches = []
    for _ in range(16):
        v = rng.integers(0, 100, (2, 40))
        v[:, 0], v[:, 1] = 0, 99
        batches.append(pa.table({"a": v[0], "b": v[1]}))
    table = cat.create_table("ns.events", schema=batches[0].schema)
    for batch in batches:
        table.append(batch)
    return props


def test_hook_reads_an_iceberg_table_on_azure_with_the_connection(iceberg_catalog, azurite):
    hook = FileStatsHook(
        "ns.events", iceberg_catalog="azurelake", catalog_properties=iceberg_catalog, conn_id="az_lake"
    )
    assert hook.metadata_format is not None and hook.metadata_format.format == "iceberg"
    assert hook.stats_location == f"abfs://{CONTAINER}@{DFS}/wh/ns/events/_zorder/stats"
    before = azurite.blobs()
    payload = hook.check(columns=["a", "b"])
    assert payload["decision"] == "recluster" and payload["snapshot_id"] == 16 and payload["num_files"] == 16
    added = sorted(set(azurite.blobs()) - set(before))
    # its decision, on Azure (with pyarrow's directory markers: flat namespace, the stats location was new)
    assert any(k.startswith("wh/ns/events/_zorder/stats/events/event-") for k in added)
    assert all(k.startswith("wh/ns/events/_zorder/") for k in added)
    for conn_id, message in (("az_wrong", "access denied"), ("az_down", "the store did not answer")):
        start = time.monotonic()
        hook = FileStatsHook(
            "ns.events", iceberg_catalog="azurelake", catalog_properties=iceberg_catalog, conn_id=conn_id
        )
        with pytest.raises(locations.StorageError, match=rf"with connection '{conn_id}': {message}"):
            hook.check(columns=["a", "b"])  # the hook opens the table on first use, not when it is built
        assert time.monotonic() - start < 30
    assert sorted(azurite.blobs()) == sorted(set(before) | set(added))


# --------------------------------------------------------------------------- the UI's table page


@pytest.fixture(scope="module")
def api(airflow_db, conns, lake, delta_table, tmp_path_factory):
    """The Airflow API server's app with the UI plugin, ``[zorder] tables`` naming tables on Azurite and their
    connections; a SimpleAuthManager admin."""
    raw = lake["raw"]
    tables = f"{lake['events']}||az_lake\n{raw}|{raw}/_zorder/stats|az_wrong\n{delta_table}||az_adls"
    with signed_in_client(tmp_path_factory.mktemp("auth"), {"AIRFLOW__ZORDER__TABLES": tables}) as client:
        yield client


def test_table_page_reads_azure_stats_through_the_wasb_connection(api, lake, azurite):
    before = azurite.blobs()
    q = quote(lake["events"], safe="")
    page = api.get(f"/zorder/table?table={q}")
    assert page.status_code == 200, page.text
    assert 'id="table-error"' not in page.text, page.text[:2000]
    want = FileStatsHook(lake["events"], conn_id="az_lake").evaluate()
    data = api.get(f"/zorder/api/table?table={q}").json()
    assert data["evaluation"]["decision"] == want["decision"] == "recluster"
    assert data["evaluation"]["partitions"] == ["day=2"] and data["partitions_total"] == 2
    assert data["evaluation"]["columns"] == want["columns"]
    assert "recluster" in page.text and "day=2" in page.text
    assert azurite.blobs() == before  # the UI only reads


def test_table_page_names_the_wrong_key(api, lake):
    q = quote(lake["raw"], safe="")
    r = api.get(f"/zorder/api/table?table={q}")
    assert r.status_code == 409
    assert "with connection 'az_wrong': access denied" in r.json()["detail"]
    page = api.get(f"/zorder/table?table={q}")
    assert page.status_code == 200 and 'id="table-error"' in page.text and "access denied" in page.text


def test_table_page_shows_a_delta_table_on_azure_through_an_adls_connection(api, delta_table):
    r = api.get(f"/zorder/api/table?table={quote(delta_table, safe='')}")
    assert r.status_code == 200, r.text
    data = r.json()
    assert data["evaluation"]["decision"] == "recluster" and data["evaluation"]["snapshot_id"] == 15
    assert data["evaluation"]["num_files"] == 16 and {c["column"] for c in data["columns"]} == {"a", "b"}
