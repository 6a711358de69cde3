"""An Airflow ``iceberg`` connection as a pyiceberg catalog's name and properties, through the Iceberg provider.

The Apache Iceberg provider's ``IcebergHook`` turns the connection into catalog properties (extras as they are,
the host as ``uri``, ``type`` ``rest`` by default, login/password as a REST ``credential``) and names the
catalog after the connection id; both jobs and the hook then open that catalog with those properties. Install
with ``pip install 'airflow-zorder[iceberg]'``.
"""

from __future__ import annotations

from airflow_zorder.core.errors import IcebergConnectionError, InvalidInputError

__all__ = ["check_one_catalog", "connection_catalog"]


def check_one_catalog(iceberg_catalog: str | None, iceberg_conn_id: str | None) -> None:
    """A table is named in one catalog: a pyiceberg catalog or an ``iceberg`` connection, not both."""
    if iceberg_catalog and iceberg_conn_id:
        raise InvalidInputError(
            "give iceberg_catalog (a pyiceberg catalog) or iceberg_conn_id (a connection), not both"
        )


def connection_catalog(conn_id: str) -> tuple[str, dict[str, str]]:
    """``(catalog name, properties)`` of the ``iceberg`` connection ``conn_id`` (the catalog is opened once, as the
    provider's hook opens it, so a wrong URI or credential fails here, naming the connection)."""
    try:
        from airflow.providers.apache.iceberg.hooks.iceberg import IcebergHook
    except ImportError as exc:
        raise IcebergConnectionError(
            f"iceberg_conn_id={conn_id!r} needs the Apache Iceberg provider: pip install 'airflow-zorder[iceberg]' "
            "(apache-airflow-providers-apache-iceberg), or name a pyiceberg catalog with iceberg_catalog="
        ) from exc
    from airflow.sdk import BaseHook

    try:
        conn = BaseHook.get_connection(conn_id)
    except Exception as exc:  # AirflowNotFoundException, or a secrets backend's error
        raise IcebergConnectionError(
            f"connection {conn_id!r} is not defined: create an 'iceberg' connection (host = the REST catalog's URI, "
            'or extra {"type": "sql", "uri": ..., "warehouse": ...}), or name a pyiceberg catalog with '
            f"iceberg_catalog= ({type(exc).__name__}: {exc})"
        ) from exc
    if (conn.conn_type or "").lower() != "iceberg":
        raise IcebergConnectionError(
            f"connection {conn_id!r} has type {conn.conn_type!r}, not 'iceberg': iceberg_conn_id names an "
            "Apache Iceberg connection (the catalog), conn_id the store's credentials"
        )
    try:
        catalog = IcebergHook(iceberg_conn_id=conn_id).catalog
    except Exception as exc:  # pyiceberg: a bad URI, an unreachable REST server, a refused credential
        raise IcebergConnectionError(
            f"the Iceberg catalog of connection {conn_id!r} cannot be opened: {type(exc).__name__}: {exc} "
            "(check its host / extra: type, uri, warehouse, credential)"
        ) from exc
    return str(catalog.name), {str(k): str(v) for k, v in catalog.properties.items()}
