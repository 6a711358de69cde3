"""How one store is reached with one set of credentials, in each reader's own option names.

An Airflow connection (``hooks.connections``) resolves once into a :class:`StoreOptions`; the I/O seam opens
pyarrow filesystems with ``arrow``, the Delta log reader (delta-rs) uses ``delta``, an Iceberg catalog's
FileIO (pyiceberg) ``iceberg`` and the jobs' Spark (Hadoop's connectors) ``hadoop``. Each store's mapping lives
with its connection type, not with the readers:
delta-rs, for example, cannot take a GCS access token, so it gets the key the token came from.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["StoreOptions"]


@dataclass(frozen=True)
class StoreOptions:
    """One store's credentials for each reader; an empty mapping means that reader's default chain."""

    #: ``pyarrow.fs`` keyword arguments (``S3FileSystem``, ``GcsFileSystem``, ``AzureFileSystem``)
    arrow: Mapping[str, Any] = field(default_factory=dict)
    #: delta-rs ``storage_options`` (object_store's keys)
    delta: Mapping[str, str] = field(default_factory=dict)
    #: pyiceberg FileIO properties (``s3.*``, ``gcs.*``, ``adls.*``), laid over a catalog's own
    iceberg: Mapping[str, str] = field(default_factory=dict)
    #: Hadoop configuration for the jobs' Spark (``fs.s3a.*``): ``spark.hadoop.<key>`` on spark-submit, or
    #: ``hadoopConfiguration().set(key, value)`` on a live session (:func:`~airflow_zorder.spark_jars.apply_hadoop_conf`)
    hadoop: Mapping[str, str] = field(default_factory=dict)
    #: reader (``"delta"``, ...) -> why these credentials cannot reach it and the fix: that reader refuses, never
    #: falls back to another identity (e.g. a GCS impersonation chain, which delta-rs cannot take)
    unusable: Mapping[str, str] = field(default_factory=dict)
    #: the store these options open (``locations.Location.store``), set by the connection's dispatcher
    store: str = ""
    #: when the access token in these options ends (naive: UTC), if they hold one: readers never refresh a token
    expires_at: dt.datetime | None = None

    def expiring(self, within: dt.timedelta = dt.timedelta(minutes=5)) -> bool:
        """True when the options' access token ends within ``within``: resolve the connection again."""
        if self.expires_at is None:
            return False
        ends = self.expires_at if self.expires_at.tzinfo else self.expires_at.replace(tzinfo=dt.UTC)
        return ends - dt.datetime.now(dt.UTC) < within
