"""The error every connection type raises when it cannot open a location."""

from __future__ import annotations

from airflow_zorder.core.errors import InvalidInputError

__all__ = ["StorageConnectionError"]


class StorageConnectionError(InvalidInputError):
    """The connection cannot open the location: missing, of an unsupported type, or for another store."""
