"""The table the statistics job reads: opened through the table seam, with what executors open per file.

The table is opened once (:func:`airflow_zorder.core.tables.open_table`: its format detected once) over the
driver's filesystem (:func:`~airflow_zorder.core.storage.io.filesystem_for`: Hadoop, local paths served
by the OS). Its :class:`~airflow_zorder.core.tables.model.TableSnapshot` is the one model both jobs share; this
module adds what only the stats job needs: each file's path as executors open it, and the statistics the
format's own metadata keeps (a Delta log's), with the version they describe.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from airflow_zorder.core.storage.io import os_path, table_filesystem
from airflow_zorder.core.storage.io.hadoop import bind_s3_scheme
from airflow_zorder.core.storage.locations import is_path_table
from airflow_zorder.core.tables import open_table
from airflow_zorder.core.tables.model import TableSnapshot
from airflow_zorder.core.tables.protocol import TableFormat


@dataclass
class ListedFile:
    """A live data file: the path recorded in the stats, what executors open, and its listing facts."""

    path: str  # as listed: the path recorded in the stats
    read_path: str  # what executors open (qualified when the default filesystem is not local)
    size: int
    mtime_ms: int
    partition: str | None
    spec: dict[str, str]


@dataclass
class MetadataStats:
    """The statistics a format's metadata keeps for the snapshot's version (every data column)."""

    version: int
    rows: pa.Table  # FILE_STATS_SCHEMA rows the metadata keeps (``core.stats.metadata_merge`` says which it lacks)
    column_mapping: str = "none"  # delta.columnMapping.mode: "name"/"id" files name columns by physical ids


@dataclass
class ListedTable:
    """An opened table as the statistics job reads it: its snapshot, and its files as executors open them."""

    snapshot: TableSnapshot
    files: list[ListedFile]  # sorted by path
    metadata: MetadataStats | None = None  # formats whose metadata keeps statistics (``stats_from_metadata``)
    table_location: str | None = None  # the format's ``location``

    @property
    def name(self) -> str:
        """The table as the user named it."""
        return self.snapshot.name

    @property
    def kind(self) -> str:
        """How run records name the table's kind ("path", "catalog", "delta")."""
        return self.snapshot.kind

    @property
    def root(self) -> str:
        """The table's directory."""
        return self.snapshot.root

    @property
    def location(self) -> str | None:
        """Where the table lives when its name is not its path (an Iceberg table's location), else None."""
        return self.table_location

    @property
    def home(self) -> str:
        """Where its ``_zorder`` state (and the default stats location) lives."""
        return self.snapshot.home

    @property
    def partition_columns(self) -> list[str]:
        """The table's partition columns."""
        return self.snapshot.partition_columns

    @property
    def schema_columns(self) -> list[str] | None:
        """The declared data columns (catalog and Delta tables), None when the files decide."""
        return self.snapshot.data_columns


def resolve_table(
    spark: Any, table: str, iceberg_catalog: str | None = None, iceberg_catalog_file: str | None = None
) -> ListedTable:
    """Open a path or catalog table (``iceberg_catalog``: namespace.table of that Iceberg catalog, its properties
    from ``iceberg_catalog_file`` if given) and list its live data files; clear errors for missing and unsupported ones."""
    from spark_jobs.catalog import SparkMetastore, iceberg_catalog_properties

    bind_s3_scheme(spark, table)
    fs = table_filesystem(table, spark)
    root = (os_path(fs, table) or table) if is_path_table(table) else None  # local tables: plain absolute paths
    opened: TableFormat = open_table(
        table,
        fs,
        root=root,
        metastore=SparkMetastore(spark),
        iceberg_catalog=iceberg_catalog,
        catalog_properties=iceberg_catalog_properties(iceberg_catalog, iceberg_catalog_file),
    )
    bind_s3_scheme(spark, opened.home)  # a catalog's table: where its files are
    snap = opened.snapshot()
    files = [
        ListedFile(f.path, fs.qualify(f.path), f.size, f.mtime_ms, u.relpath or None, dict(u.values or u.spec))
        for u in snap.units
        for f in u.files
    ]
    files.sort(key=lambda f: f.path)
    metadata = None
    if opened.stats_from_metadata and snap.version is not None:
        rows = opened.metadata_stats(version=snap.version)
        metadata = MetadataStats(snap.version, rows, opened.column_mapping)
    return ListedTable(snap, files, metadata, opened.location)
