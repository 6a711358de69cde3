"""Storage credentials from the Airflow connections users already have, as pyarrow filesystem options.

An ``aws`` connection (login = access key id, password = secret key; extras ``region_name``,
``endpoint_url``, ``role_arn``, ...) is resolved by the amazon provider's ``AwsBaseHook`` (sessions,
assumed roles), then handed to :func:`airflow_zorder.core.storage.locations.arrow_filesystem` in pyarrow's
names (``access_key``, ``secret_key``, ``session_token``, ``region``, ``endpoint_override``, ``scheme``).
Install it with ``pip install 'airflow-zorder[amazon]'``.  ``google_cloud_platform`` and ``wasb``
map the same way (``docs/connections.md``) but are not wired yet: they get a clear error.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from airflow_zorder.core.errors import InvalidInputError
from airflow_zorder.core.storage import locations

__all__ = ["SUPPORTED_CONN_TYPES", "StorageConnectionError", "storage_options"]

#: connection type -> the store it opens
SUPPORTED_CONN_TYPES: dict[str, str] = {"aws": "s3"}


class StorageConnectionError(InvalidInputError):
    """The connection cannot open the location: missing, of an unsupported type, or for another store."""


def _get_connection(conn_id: str) -> Any:
    from airflow.sdk import BaseHook

    try:
        return BaseHook.get_connection(conn_id)
    except Exception as exc:  # AirflowNotFoundException, or a secrets backend's error
        raise StorageConnectionError(
            f"connection {conn_id!r} is not defined: create it (Admin > Connections, or AIRFLOW_CONN_"
            f"{conn_id.upper()}), e.g. of type 'aws' for S3, or leave conn_id unset to use the default "
            f"credentials ({type(exc).__name__}: {exc})"
        ) from exc


def storage_options(conn_id: str, location: str) -> dict[str, Any]:
    """pyarrow filesystem options for ``location`` from the connection ``conn_id`` (see the module doc)."""
    conn = _get_connection(conn_id)
    conn_type = (conn.conn_type or "").strip().lower()
    loc = locations.parse_location(location)
    if conn_type not in SUPPORTED_CONN_TYPES:
        supported = ", ".join(f"{t!r} ({s})" for t, s in SUPPORTED_CONN_TYPES.items())
        raise StorageConnectionError(
            f"connection {conn_id!r} has type {conn_type or 'none'!r}, which airflow-zorder cannot read storage "
            f"with; supported: {supported}. For GCS and Azure see docs/connections.md; for a local path or the "
            "store's default credentials, leave conn_id unset"
        )
    if loc.store != SUPPORTED_CONN_TYPES[conn_type]:
        raise StorageConnectionError(
            f"connection {conn_id!r} is of type {conn_type!r} ({SUPPORTED_CONN_TYPES[conn_type]}) but {location} "
            f"is on {loc.store}: use a connection for that store, or leave conn_id unset"
        )
    return _aws_options(conn_id)


def _aws_options(conn_id: str) -> dict[str, Any]:
    try:
        from airflow.providers.amazon.aws.hooks.base_aws import AwsBaseHook
    except ImportError as exc:
        raise StorageConnectionError(
            f"connection {conn_id!r} is an 'aws' connection, which needs the amazon provider: "
            "pip install 'airflow-zorder[amazon]' (apache-airflow-providers-amazon)"
        ) from exc
    hook = AwsBaseHook(aws_conn_id=conn_id, client_type="s3")
    creds = hook.get_credentials()  # static keys, a profile, or an assumed role's temporary keys
    opts: dict[str, Any] = {}
    if creds.access_key and creds.secret_key:
        opts.update(access_key=creds.access_key, secret_key=creds.secret_key)
    if creds.token:
        opts["session_token"] = creds.token
    region = hook.conn_region_name
    if region:
        opts["region"] = region
    endpoint = hook.conn_config.endpoint_url
    if endpoint:
        parts = urlsplit(endpoint if "://" in endpoint else f"https://{endpoint}")
        opts["endpoint_override"] = parts.netloc + parts.path.rstrip("/")
        opts["scheme"] = parts.scheme or "https"
    return opts
