"""``wasb`` and ``adls`` connections as Azure Blob / ADLS Gen2 options: resolved by the Microsoft Azure provider's hooks.

``WasbHook`` (``wasb``) and ``AzureDataLakeStorageV2Hook`` (``adls``) build their service client without I/O and
pick the credential by their own rules (connection string, service principal, account key, SAS token, managed
identity); the client's account, endpoint and credential then go to pyarrow's ``AzureFileSystem``, delta-rs and
pyiceberg. Install with ``pip install 'airflow-zorder[azure]'``. The mapping: ``docs/connections.md``.
"""

from __future__ import annotations

import logging
import os
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from airflow_zorder.core.errors import StorageConnectionError
from airflow_zorder.core.storage.locations import Location
from airflow_zorder.core.storage.store_options import StoreOptions

__all__ = ["DELTA_RETRIES", "ICEBERG_IO_IMPL", "azure_store_options"]

#: ``py-io-impl`` of the Iceberg FileIO an Azure connection gives a catalog (``core.iceberg.azure_io``, which needs
#: pyiceberg: named here, imported by pyiceberg only)
ICEBERG_IO_IMPL = "airflow_zorder.core.iceberg.azure_io.AzureArrowFileIO"

INSTALL_HINT = "pip install 'airflow-zorder[azure]' (apache-airflow-providers-microsoft-azure)"
#: delta-rs retries bounded: an unreachable endpoint fails in seconds, not after its default 10 retries
DELTA_RETRIES = {"max_retries": "2", "retry_timeout": "10s", "connect_timeout": "5s"}
#: Azurite's development account (``UseDevelopmentStorage=true``), reached at ``AZURITE_BLOB_STORAGE_URL``
DEV_ACCOUNT = "devstoreaccount1"
DEV_BLOB_URL = "http://127.0.0.1:10000"
_DEFAULT_SUFFIXES = (".blob.core.windows.net", ".dfs.core.windows.net")


def azure_store_options(conn_id: str, location: Location | None = None) -> StoreOptions:
    """The Azure options of the ``wasb`` or ``adls`` connection ``conn_id`` for ``location`` (whose account, when
    it names one, must be the connection's)."""
    conn, client = _client(conn_id)
    extra = conn.extra_dejson or {}
    account = str(client.account_name or "")
    parts = urlsplit(client.url)
    scheme, host, path = parts.scheme or "https", parts.netloc, parts.path.rstrip("/")
    if _development_storage(
        _field(extra, conn.conn_type, "connection_string")
    ):  # Azurite's account, where Azure's own clients find it
        dev = urlsplit(os.environ.get("AZURITE_BLOB_STORAGE_URL") or DEV_BLOB_URL)
        scheme, host, path = dev.scheme or "http", dev.netloc, f"/{DEV_ACCOUNT}"
    host = host.replace(".dfs.", ".blob.", 1)  # an adls client's endpoint: delta-rs and adlfs talk to the blob one
    if account in ("", "None"):  # the hooks spell a missing account into https://None.blob.core.windows.net
        raise StorageConnectionError(
            f"connection {conn_id!r} names no storage account: set login (wasb) or host (adls) to the account "
            "name, or give a connection_string"
        )
    wanted = location.account if location is not None else ""
    if wanted and wanted != account:
        raise StorageConnectionError(
            f"connection {conn_id!r} is for storage account {account!r} but {location.raw} is on account "
            f"{wanted!r}: use a connection for that account"
        )
    arrow: dict[str, Any] = {"account_name": account}
    delta: dict[str, str] = {"account_name": account, **DELTA_RETRIES}
    # pyiceberg's pyarrow FileIO, paths fixed (core.iceberg.azure_io): its adlfs default retries a dead endpoint 90 s
    iceberg: dict[str, str] = {"py-io-impl": ICEBERG_IO_IMPL, "adls.account-name": account}
    key, sas = _key_or_sas(client)
    if key:
        arrow["account_key"] = delta["account_key"] = iceberg["adls.account-key"] = key
    elif sas:
        arrow["sas_token"] = "?" + sas  # pyarrow splices it into the URL as given
        delta["sas_token"] = iceberg["adls.sas-token"] = sas
    elif _is_service_principal(client):
        app, secret = conn.login or "", conn.password or ""  # the hooks' own fields: login = client id
        tenant = _field(extra, conn.conn_type, "tenant_id")
        arrow.update(client_id=app, client_secret=secret, tenant_id=tenant)
        delta.update(azure_client_id=app, azure_client_secret=secret, azure_tenant_id=tenant)
        iceberg.update({"adls.client-id": app, "adls.client-secret": secret, "adls.tenant-id": tenant})
    else:  # DefaultAzureCredential: managed identity, workload identity, environment, CLI
        client_id = _field(extra, conn.conn_type, "managed_identity_client_id")
        tenant_id = _field(extra, conn.conn_type, "workload_identity_tenant_id")
        if client_id:
            arrow["client_id"] = delta["azure_client_id"] = client_id  # a user-assigned managed identity
        if tenant_id:
            delta["azure_tenant_id"] = tenant_id
    if not any(host.lower() == account.lower() + s for s in _DEFAULT_SUFFIXES):
        _custom_endpoint(arrow, delta, iceberg, scheme=scheme, host=host, path=path, account=account, key=key, sas=sas)
    return StoreOptions(arrow=arrow, delta=delta, iceberg=iceberg)


def _client(conn_id: str) -> tuple[Any, Any]:
    """(the connection, its provider hook's service client): built without I/O; a connection the hook refuses
    (a malformed connection string, a token credential over http) is refused here, naming it."""
    try:
        from airflow.providers.microsoft.azure.hooks.data_lake import AzureDataLakeStorageV2Hook
        from airflow.providers.microsoft.azure.hooks.wasb import WasbHook
    except ImportError as exc:
        raise StorageConnectionError(
            f"connection {conn_id!r} is an Azure connection, which needs the Microsoft Azure provider: {INSTALL_HINT}"
        ) from exc
    try:  # as WasbHook does: no INFO line per request (pyiceberg's adlfs, the adls hook)
        logging.getLogger("azure.core.pipeline.policies.http_logging_policy").setLevel(
            os.environ.get("AZURE_HTTP_LOGGING_LEVEL", logging.WARNING)
        )
    except ValueError:
        pass
    conn = WasbHook.get_connection(conn_id)
    hook = (
        WasbHook(wasb_conn_id=conn_id) if conn.conn_type == "wasb" else AzureDataLakeStorageV2Hook(adls_conn_id=conn_id)
    )
    try:
        return conn, hook.get_conn()
    except (ValueError, TypeError, KeyError) as exc:
        raise StorageConnectionError(
            f"connection {conn_id!r} ({conn.conn_type}) cannot be used: {exc} (check its connection_string, "
            "account URL and credential fields; token credentials need an https:// account URL)"
        ) from exc


def _field(extra: dict[str, Any], conn_type: str, name: str) -> str:
    """An extra as the provider reads it: its short name, or with the legacy ``extra__<type>__`` prefix."""
    return str(extra.get(name) or extra.get(f"extra__{conn_type}__{name}") or "")


def _development_storage(connection_string: str) -> bool:
    """``UseDevelopmentStorage=true``: Azure's spelling of "the local emulator's development account"."""
    fields = dict(p.split("=", 1) for p in connection_string.split(";") if "=" in p)
    return fields.get("UseDevelopmentStorage", "").strip().lower() == "true"


def _key_or_sas(client: Any) -> tuple[str, str]:
    """(account key, SAS token without ``?``) of the client's credential: one of them, or neither (token auth)."""
    cred = client.credential
    key = getattr(cred, "account_key", None)
    if key:
        return str(key), ""
    signature = getattr(cred, "signature", None)  # AzureSasCredential
    if signature:
        return "", str(signature).lstrip("?")
    query = urlsplit(client.url).query  # a SAS in the account URL or the connection string
    if cred is None and query and any(k == "sig" for k, _ in parse_qsl(query)):
        return "", query
    return "", ""


def _is_service_principal(client: Any) -> bool:
    return type(client.credential).__name__ == "ClientSecretCredential"


def _custom_endpoint(
    arrow: dict[str, Any],
    delta: dict[str, str],
    iceberg: dict[str, str],
    *,
    scheme: str,
    host: str,
    path: str,
    account: str,
    key: str,
    sas: str,
) -> None:
    """An endpoint other than ``<account>.blob.core.windows.net``: an emulator (path-style, ``host/<account>``) or
    another cloud (``<account>.blob.<suffix>``), in each reader's words."""
    if host.lower().startswith(account.lower() + "."):  # virtual-host style: pyarrow prepends the account
        blob = host[len(account) :]
        dfs = blob.replace(".blob.", ".dfs.", 1)
    else:  # path-style: pyarrow appends /<account>
        blob = dfs = host
    arrow.update(blob_storage_authority=blob, blob_storage_scheme=scheme)
    arrow.update(dfs_storage_authority=dfs, dfs_storage_scheme=scheme)  # or pyarrow asks the public dfs host
    iceberg.update({"adls.blob-storage-authority": blob, "adls.blob-storage-scheme": scheme})
    iceberg.update({"adls.dfs-storage-authority": dfs, "adls.dfs-storage-scheme": scheme})
    endpoint = f"{scheme}://{host}{path}"
    delta["azure_storage_endpoint"] = endpoint  # with /<account> when path-style
    if scheme == "http":
        delta["allow_http"] = "true"
    if key or sas:  # adlfs (pyiceberg's FileIO for abfs://) reaches a custom endpoint through a connection string
        cred = f"AccountKey={key}" if key else f"SharedAccessSignature={sas}"
        iceberg["adls.connection-string"] = (
            f"DefaultEndpointsProtocol={scheme};AccountName={account};{cred};BlobEndpoint={endpoint};"
        )
