"""An ``aws`` connection as S3 options: resolved by the amazon provider's ``AwsBaseHook``.

login = access key id, password = secret key; extras ``region_name``, ``endpoint_url``, ``role_arn``, ... The hook
resolves sessions and assumed roles once; the keys then go to pyarrow's ``S3FileSystem``, delta-rs and pyiceberg.
Install with ``pip install 'airflow-zorder[amazon]'``.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from airflow_zorder.core.delta.delta_log import delta_storage_options
from airflow_zorder.core.errors import StorageConnectionError
from airflow_zorder.core.storage.locations import Location
from airflow_zorder.core.storage.store_options import StoreOptions

__all__ = ["aws_store_options"]


def aws_store_options(conn_id: str, location: Location | None = None) -> StoreOptions:
    """The S3 options of the ``aws`` connection ``conn_id`` for ``location`` (any bucket: an assumed role's keys
    are fetched here, once)."""
    try:
        from airflow.providers.amazon.aws.hooks.base_aws import AwsBaseHook
    except ImportError as exc:
        raise StorageConnectionError(
            f"connection {conn_id!r} is an 'aws' connection, which needs the amazon provider: "
            "pip install 'airflow-zorder[amazon]' (apache-airflow-providers-amazon)"
        ) from exc
    hook = AwsBaseHook(aws_conn_id=conn_id, client_type="s3")
    creds = hook.get_credentials()  # static keys, a profile, or an assumed role's temporary keys
    arrow: dict[str, Any] = {}
    iceberg: dict[str, str] = {}
    hadoop: dict[str, str] = {}
    if creds.access_key and creds.secret_key:
        arrow.update(access_key=creds.access_key, secret_key=creds.secret_key)
        iceberg.update({"s3.access-key-id": creds.access_key, "s3.secret-access-key": creds.secret_key})
        hadoop.update({"fs.s3a.access.key": creds.access_key, "fs.s3a.secret.key": creds.secret_key})
        hadoop["fs.s3a.aws.credentials.provider"] = "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider"
    if creds.token:
        arrow["session_token"] = creds.token
        iceberg["s3.session-token"] = creds.token
        hadoop["fs.s3a.session.token"] = creds.token
        hadoop["fs.s3a.aws.credentials.provider"] = "org.apache.hadoop.fs.s3a.TemporaryAWSCredentialsProvider"
    region = hook.conn_region_name
    if region:
        arrow["region"] = region
        iceberg["s3.region"] = region
        hadoop["fs.s3a.endpoint.region"] = region
    endpoint = hook.conn_config.endpoint_url
    if endpoint:
        parts = urlsplit(endpoint if "://" in endpoint else f"https://{endpoint}")
        arrow["endpoint_override"] = parts.netloc + parts.path.rstrip("/")
        arrow["scheme"] = parts.scheme or "https"
        iceberg["s3.endpoint"] = f"{arrow['scheme']}://{arrow['endpoint_override']}"
        # A custom endpoint (MinIO, moto, an S3-compatible store) serves buckets as paths, not host names.
        hadoop.update(
            {
                "fs.s3a.endpoint": iceberg["s3.endpoint"],
                "fs.s3a.path.style.access": "true",
                "fs.s3a.connection.ssl.enabled": str(arrow["scheme"] == "https").lower(),
            }
        )
    return StoreOptions(arrow=arrow, delta=delta_storage_options(arrow) or {}, iceberg=iceberg, hadoop=hadoop)
