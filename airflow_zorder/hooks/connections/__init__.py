"""Storage credentials from the Airflow connections users already have, as one :class:`StoreOptions` per store.

A connection's type picks the module that resolves it with its own provider's hook (``aws``: ``AwsBaseHook``);
the result carries the options in each reader's names: pyarrow (the I/O seam,
:func:`airflow_zorder.core.storage.io.filesystem_for`), delta-rs (Delta logs) and pyiceberg (an Iceberg
catalog's FileIO). How each type maps: ``docs/connections.md``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from importlib import import_module
from typing import Any

from airflow_zorder.core.errors import StorageConnectionError
from airflow_zorder.core.storage import locations
from airflow_zorder.core.storage.store_options import StoreOptions

__all__ = ["SUPPORTED_CONN_TYPES", "StoreOptions", "store_options"]

#: connection type -> (the store it opens, "module:function(conn_id, location)" resolving it into StoreOptions)
SUPPORTED_CONN_TYPES: dict[str, tuple[str, str]] = {
    "aws": ("s3", "airflow_zorder.hooks.connections.aws:aws_store_options"),
    "google_cloud_platform": ("gcs", "airflow_zorder.hooks.connections.google:gcs_store_options"),
    "wasb": ("azure", "airflow_zorder.hooks.connections.azure:azure_store_options"),
    "adls": ("azure", "airflow_zorder.hooks.connections.azure:azure_store_options"),
}


def _get_connection(conn_id: str) -> Any:
    from airflow.sdk import BaseHook

    try:
        return BaseHook.get_connection(conn_id)
    except Exception as exc:  # AirflowNotFoundException, or a secrets backend's error
        raise StorageConnectionError(
            f"connection {conn_id!r} is not defined: create it (Admin > Connections, or AIRFLOW_CONN_"
            f"{conn_id.upper()}), e.g. of type 'aws' for S3, 'google_cloud_platform' for GCS, 'wasb' or 'adls' for Azure, or leave conn_id unset to "
            f"use the default credentials ({type(exc).__name__}: {exc})"
        ) from exc


def _resolver(target: str) -> Callable[[str, locations.Location | None], StoreOptions]:
    module, _, name = target.partition(":")
    return getattr(import_module(module), name)  # type: ignore[no-any-return]


def store_options(conn_id: str, location: str | None = None) -> StoreOptions:
    """The options the connection ``conn_id`` gives for ``location``'s store (None: for the connection's own
    store, e.g. an Iceberg catalog's warehouse, known only once the catalog is open); refuses a connection of a
    type the provider cannot read storage with, or for another store."""
    conn = _get_connection(conn_id)
    conn_type = (conn.conn_type or "").strip().lower()
    loc = locations.parse_location(location) if location is not None else None
    if conn_type not in SUPPORTED_CONN_TYPES:
        supported = ", ".join(f"{t!r} ({s})" for t, (s, _) in SUPPORTED_CONN_TYPES.items())
        raise StorageConnectionError(
            f"connection {conn_id!r} has type {conn_type or 'none'!r}, which airflow-zorder cannot read storage "
            f"with; supported: {supported}. For a local path or the store's default credentials, leave conn_id unset"
        )
    store, target = SUPPORTED_CONN_TYPES[conn_type]
    if loc is not None and loc.store != store:
        raise StorageConnectionError(
            f"connection {conn_id!r} is of type {conn_type!r} ({store}) but {location} "
            f"is on {loc.store}: use a connection for that store, or leave conn_id unset"
        )
    return dataclasses.replace(_resolver(target)(conn_id, loc), store=store)
