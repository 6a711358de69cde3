"""Resolve what a job was pointed at: a Parquet directory (optionally Hive-partitioned) or a catalog table.

A table is split into *units*: the whole table when unpartitioned, else one unit per
partition directory. Each unit lists its data files (names starting with ``_`` or ``.``
are hidden from readers and skipped, as Spark, pyarrow and DuckDB do).
"""

from __future__ import annotations

import json
import posixpath
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from airflow_zorder.core.errors import InvalidInputError
from airflow_zorder.core.jobs.options import parse_name_args
from airflow_zorder.core.storage.filesystems import FileInfo, FileSystem, join, relpath
from airflow_zorder.core.storage.locations import parse_partition_path
from airflow_zorder.core.storage.table_formats import DELTA, detect_table_format, refuse_foreign_format

STATE_DIR = "_zorder"
HOME_PROPERTY = "airflow_zorder.home"
PARQUET_MAGIC = b"PAR1"


class TableError(InvalidInputError):
    """The table cannot be used as given (missing, not Parquet, bad partition selection)."""


@dataclass
class Unit:
    """A set of files rewritten together: the whole table, or one partition."""

    relpath: str  # "" for an unpartitioned table, else "k=v/k2=v2" as on disk
    spec: dict[str, str]  # partition column -> value (unescaped)
    location: str  # directory that holds the unit's files
    files: list[FileInfo] = field(default_factory=list)
    num_files: int | None = None  # an incremental plan's bin: its planned output files (None: sized by the job)
    bin: int | None = None  # an incremental plan's bin: its index within the partition (None: the whole unit)

    @property
    def bytes(self) -> int:
        """Total size of the unit's data files."""
        return sum(f.size for f in self.files)

    @property
    def label(self) -> str:
        """How the unit is named in messages and results."""
        return self.relpath or "<whole table>"


@dataclass
class ResolvedTable:
    """A table a job resolved (path or catalog): where it lives, how it is partitioned, and its units.

    Not the UI's list entry (:class:`airflow_zorder.plugins.discovery.TableRef`: a table to show and
    where its stats live).
    """

    name: str
    kind: str  # "path" | "catalog" | "delta"
    root: str  # path tables: the directory; catalog tables: the table's current location
    home: str  # stable directory holding the ``_zorder`` state (lock, journal, staging, trash)
    partition_columns: list[str]
    units: list[Unit]
    delta: Any = None  # Delta tables: the log's snapshot the run read (``spark_jobs.delta_table.DeltaSource``)

    @property
    def state_dir(self) -> str:
        """The hidden directory for this table's lock, journals, staging and trash."""
        return join(self.home, STATE_DIR)


def _hidden(rel: str) -> bool:
    return any(part.startswith(("_", ".")) for part in rel.split("/"))


def refuse_foreign_table(fs: FileSystem, root: str, table: str | None = None) -> None:
    """Refuse a Delta Lake, Hudi or Iceberg table (or a directory inside one) before anything touches it.

    Raises :class:`~airflow_zorder.core.storage.table_formats.ForeignTableFormatError` (a ``ValueError``; the
    jobs report it as a failed run, exit 1). Costs a few existence checks; ``metadata/`` is listed
    only when it exists. Both jobs reach it through :func:`list_path_table` and
    :func:`spark_jobs.catalog.resolve_catalog_table`.
    """

    refuse_foreign_format(root, fs.exists, _names(fs), table=table)


def is_delta_table(fs: FileSystem, root: str) -> bool:
    """``root`` itself holds ``_delta_log/``: both jobs read it through its log (a directory inside one is refused)."""
    return detect_table_format(root, fs.exists, _names(fs)) == DELTA


def _names(fs: FileSystem) -> Callable[[str], list[str]]:
    """What the table-format probes list: the entries of one directory of ``fs``."""
    return lambda directory: [f.path for f in fs.list_files(directory, recursive=False)]


def list_path_table(fs: FileSystem, table: str, root: str | None = None) -> tuple[list[str], list[Unit]]:
    """A path table's partition columns and units; refuses a missing directory and other formats' tables.

    ``root`` is how the job spells ``table``'s directory (default: ``table`` itself). Nothing is
    listed as Parquet before the table-format check has passed.
    """
    root = root or table
    if not fs.exists(root):
        raise TableError(f"table path {table} does not exist; check the path (and the Spark connection's filesystem)")
    refuse_foreign_table(fs, root)
    return list_units(fs, root)


def list_units(fs: FileSystem, root: str) -> tuple[list[str], list[Unit]]:
    """Group the visible files under ``root`` into units by their ``k=v/`` partition directory."""
    units: dict[str, Unit] = {}
    partition_columns: list[str] | None = None
    for info in fs.list_files(root, recursive=True):
        try:
            rel = relpath(root, info.path)
        except ValueError:
            raise TableError(f"file {info.path} is not under table directory {root}") from None
        if _hidden(rel):
            continue
        dir_rel = posixpath.dirname(rel)
        spec = parse_partition_path(dir_rel)
        if dir_rel and not spec:
            raise TableError(
                f"{root}: file {rel} sits in a directory that is not a Hive partition (k=v); "
                "point the job at a directory of Parquet files, optionally partitioned as k=v/"
            )
        cols = list(spec)
        if dir_rel:
            if partition_columns is None:
                partition_columns = cols
            elif cols != partition_columns:
                raise TableError(
                    f"{root}: inconsistent partition directories ({'/'.join(partition_columns)} vs {'/'.join(cols)})"
                )
        unit = units.setdefault(dir_rel, Unit(dir_rel, spec, join(root, dir_rel)))
        unit.files.append(info)
    for unit in units.values():
        unit.files.sort(key=lambda f: f.path)
    return partition_columns or [], [units[k] for k in sorted(units)]


def check_parquet(fs: FileSystem, units: list[Unit]) -> None:
    """Refuse non-Parquet data: files not named .parquet must end with the Parquet magic bytes."""
    for unit in units:
        for f in unit.files:
            if f.size < 12:  # from the listing, no read: smaller than the Parquet magic + footer length + magic
                raise TableError(
                    f"{f.path} is not a Parquet file: it holds {f.size} bytes (a Parquet file has at least 12; "
                    "an interrupted write or an empty placeholder?). Remove it from the table directory, or "
                    "move it elsewhere if a writer is still producing it"
                )
            if f.path.endswith(".parquet"):
                continue
            if f.size < 12 or fs.read_tail(f.path, 4) != PARQUET_MAGIC:
                raise TableError(
                    f"{f.path} is not a Parquet file (no PAR1 footer); this job rewrites Parquet tables only. "
                    "Move non-Parquet files out of the table directory or convert the table to Parquet first"
                )


def select_units(units: list[Unit], partitions: list[str] | None) -> list[Unit]:
    """The units named by ``partitions`` ("k=v/k2=v2", escaped or not); all units when None."""
    if not partitions:
        return units
    by_rel = {u.relpath: u for u in units}
    by_spec = {json.dumps(u.spec, sort_keys=True): u for u in units}
    chosen: list[Unit] = []
    for p in partitions:
        rel = p.strip().strip("/")
        unit = by_rel.get(rel) or by_spec.get(json.dumps(parse_partition_path(rel), sort_keys=True))
        if unit is None:
            known = ", ".join(sorted(by_rel)[:5]) or "none"
            raise TableError(
                f"partition {p!r} not found in the table (known partitions include: {known}); "
                "name partitions as column=value[/column=value], as their directories are named"
            )
        if unit not in chosen:
            chosen.append(unit)
    return chosen


def parse_partitions(values: list[str] | None) -> list[str] | None:
    """Partitions from repeated values, comma/newline separated lists, or a JSON list (e.g. from XCom); None if none."""
    return parse_name_args(values, "partitions") or None
