"""The table the statistics job reads: its live data files, listed with plain ``os`` calls when local, Hadoop elsewhere.

A Delta Lake table (its root holds ``_delta_log/``) is listed from its log instead (:mod:`.delta`): never from the
directory, so files removed but not vacuumed never count.  A directory inside a Delta table stays refused.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from airflow_zorder.core.stats import stats_store
from airflow_zorder.core.storage import locations
from airflow_zorder.core.storage.filesystems import (
    FileInfo,
    HadoopFileSystem,
    LocalFileSystem,
    is_path_table,
    scheme_of,
)


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
class ListedTable:
    """A path or catalog table as the statistics job sees it: where it lives and its live files, sorted by path."""

    name: str
    kind: str
    root: str
    home: str
    partition_columns: list[str]
    files: list[ListedFile]
    schema_columns: list[str] | None = None  # catalog and Delta tables: the declared data columns
    delta: DeltaVersion | None = None  # Delta tables: the version listed and its log's stats rows


@dataclass
class DeltaVersion:
    """The Delta version a Delta table was listed at, and the stats rows of its log (every data column)."""

    version: int
    rows: pa.Table  # FILE_STATS_SCHEMA, method "delta_log" (core.delta.delta_log)
    column_mapping: str = "none"  # delta.columnMapping.mode: "name"/"id" files name columns by physical ids


_DEFAULT_FS_LOCAL: dict[int, bool] = {}


def _default_fs_is_local(spark: Any) -> bool:
    key = id(spark.sparkContext._jsc)
    if key not in _DEFAULT_FS_LOCAL:
        default = str(spark._jsc.hadoopConfiguration().get("fs.defaultFS") or "file:///")
        _DEFAULT_FS_LOCAL[key] = default.startswith("file:")
    return _DEFAULT_FS_LOCAL[key]


def is_local(spark: Any, path: str) -> bool:
    """``path`` is on the driver's local disk (a ``file:`` URI, or a plain path with a local default filesystem)."""
    s = scheme_of(path)
    return s == "file" or (s == "" and _default_fs_is_local(spark))


def local_path(path: str) -> str:
    """The plain absolute path of a local path or ``file:`` URI."""
    return locations.parse_location(path).local_path()


class ListingFS:
    """Lists with plain ``os`` calls for local paths (much faster than py4j), Hadoop for the rest."""

    def __init__(self, spark: Any) -> None:
        self._spark = spark
        self._local = LocalFileSystem()
        self._hadoop: HadoopFileSystem | None = None

    def _pick(self, path: str) -> Any:
        if is_local(self._spark, path):
            return self._local
        if self._hadoop is None:
            self._hadoop = HadoopFileSystem(self._spark)
        return self._hadoop

    def list_files(self, path: str, recursive: bool = True) -> list[FileInfo]:
        return self._pick(path).list_files(path, recursive)

    def exists(self, path: str) -> bool:
        return self._pick(path).exists(path)


def stats_io_for(spark: Any, location: str) -> tuple[stats_store.StatsIO, str]:
    """The IO the job uses for ``location``: pyarrow on the local disk, Hadoop (driver JVM) elsewhere."""
    if is_local(spark, location):
        return stats_store.resolve_io(local_path(location))
    return stats_store.FsIO(HadoopFileSystem(spark)), location.rstrip("/")


def _qualify(spark: Any, path: str) -> str:
    """A path executors can open on their own: local absolute, or fully qualified by Hadoop."""
    if is_local(spark, path):
        return local_path(path)
    jp = spark._jvm.org.apache.hadoop.fs.Path(path)
    return str(jp.getFileSystem(spark._jsc.hadoopConfiguration()).makeQualified(jp).toString())


def resolve_table(spark: Any, table: str) -> ListedTable:
    """List a path or catalog table's live data files, with partitions; clear errors for missing tables."""
    from spark_jobs import catalog
    from spark_jobs.table import is_delta_table, list_path_table

    lister = ListingFS(spark)
    if is_path_table(table):
        root = table
        if is_local(spark, table):
            root = local_path(table)  # one spelling for local tables: plain absolute paths
        from spark_jobs.stats_collection import delta

        if is_delta_table(lister, root):  # the log lists it; inside a Delta table: refused just below
            return delta.list_delta_table(
                table, root, lambda p: local_path(p) if is_local(spark, p) else _qualify(spark, p)
            )
        pcols, units = list_path_table(lister, table, root)  # refuses missing tables and Delta/Hudi/Iceberg ones
        ref_name, kind, home, schema_columns = table, "path", root, None
    else:
        ref = catalog.resolve_catalog_table(spark, lister, table)
        pcols, units, root, home = ref.partition_columns, ref.units, ref.root, ref.home
        ref_name, kind = table, "catalog"
        schema_columns = [f.name for f in spark.table(table).schema.fields if f.name not in set(pcols)]
    local = is_local(spark, root)
    files = []
    for u in units:
        for f in u.files:
            read = local_path(f.path) if local else _qualify(spark, f.path)
            files.append(ListedFile(f.path, read, f.size, f.mtime_ms, u.relpath or None, dict(u.spec)))
    files.sort(key=lambda f: f.path)
    return ListedTable(ref_name, kind, root, home, pcols, files, schema_columns)
