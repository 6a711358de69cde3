"""Plain Parquet directories (optionally Hive-partitioned ``k=v/``): listed from storage, committed by a file swap.

The table is what the directory holds: every visible data file (names starting with ``_`` or ``.`` are hidden
from readers and skipped, as Spark, pyarrow and DuckDB do), grouped into one unit per partition directory. A
rewrite is committed by the journaled swap of :mod:`airflow_zorder.core.storage.commit` (inputs to the run's
trash, staged files into place; the commit point is the journal's ``committed`` record), recovered by the
journal and cleaned up when the trash passed its retention. Also the listing under a catalog table's locations
(:mod:`.catalog_table`).
"""

from __future__ import annotations

import posixpath
from collections.abc import Sequence
from typing import Any

from airflow_zorder.core.errors import TableError
from airflow_zorder.core.storage import commit as commit_mod
from airflow_zorder.core.storage.io import FileSystem
from airflow_zorder.core.storage.io.file_info import FileInfo
from airflow_zorder.core.storage.io.paths import join, relpath
from airflow_zorder.core.storage.locations import parse_partition_path
from airflow_zorder.core.tables.model import CommitOutcome, RewriteRun, StagedUnit, TableSnapshot, Unit
from airflow_zorder.core.tables.placed_files import RunJournals
from airflow_zorder.core.tables.protocol import FilesOnly

__all__ = ["FORMAT", "ParquetDirectory", "check_parquet", "files_dataset", "list_units", "open_format"]

FORMAT = "parquet"
PARQUET_MAGIC = b"PAR1"


class ParquetDirectory(RunJournals, FilesOnly):
    """A directory of Parquet files (:class:`~airflow_zorder.core.tables.protocol.TableFormat`): no versions, no
    statistics of its own (:class:`~airflow_zorder.core.tables.protocol.FilesOnly`)."""

    format = FORMAT
    kind = "path"  # how results and run records name it
    journals_inputs = True  # the swap moves the inputs: the journal lists them first
    rewrites_whole_units = False
    reader = "pyarrow.dataset (hive)"

    def __init__(self, table: str, root: str, fs: FileSystem) -> None:
        self.table = table
        self.root = root
        self.home = root
        self._fs = fs
        self._snapshot: TableSnapshot | None = None

    def snapshot(self) -> TableSnapshot:
        """The directory's files (listed once per opened table)."""
        return self._snapshot or self.refresh()

    def refresh(self) -> TableSnapshot:
        """List the directory again; refuses a missing one and files outside ``k=v/`` partitions."""
        if not self._fs.exists(self.root):
            raise TableError(
                f"table path {self.table} does not exist; check the path (and the Spark connection's filesystem)"
            )
        pcols, units = list_units(self._fs, self.root)
        self._snapshot = TableSnapshot(self.table, FORMAT, "path", self.root, self.home, pcols, units)
        return self._snapshot

    def check_rewritable(self) -> None:
        """Refuse non-Parquet files (the rewrite reads them as Parquet)."""
        check_parquet(self._fs, self.snapshot().units)

    def prepare(self) -> None:
        """Nothing to pin: the state directory is the table's own ``_zorder``."""

    def reader_dataset(self) -> Any:
        """A Hive-partitioned Parquet dataset over the directory (footer statistics prune row groups)."""
        import pyarrow.dataset as ds

        handle, path = self._fs.arrow(self.root)
        return ds.dataset(path, format="parquet", partitioning="hive", filesystem=handle)

    def commit(
        self,
        fs: FileSystem,
        journal: commit_mod.Journal,
        staged: Sequence[StagedUnit],
        run: RewriteRun,
        lock: Any = None,
    ) -> CommitOutcome:
        """The journaled swap: inputs to the trash, staged files into their places."""
        commit_mod.commit(fs, journal, [f for s in staged for f in s.staged], lock=lock)
        return CommitOutcome(FORMAT)

    def settle_runs(self, fs: FileSystem) -> list[str]:
        """Roll forward (after the commit point) or back (before it) every interrupted run, by its journal; the trash
        of finished runs is :meth:`cleanup`'s (their journals' leftovers)."""
        return commit_mod.recover(fs, self.home)


def _hidden(rel: str) -> bool:
    return any(part.startswith(("_", ".")) for part in rel.split("/"))


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


def check_parquet(fs: FileSystem, units: Sequence[Unit]) -> None:
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
            if fs.read_tail(f.path, 4) != PARQUET_MAGIC:
                raise TableError(
                    f"{f.path} is not a Parquet file (no PAR1 footer); this job rewrites Parquet tables only. "
                    "Move non-Parquet files out of the table directory or convert the table to Parquet first"
                )


def files_dataset(fs: FileSystem, files: Sequence[FileInfo]) -> Any:
    """A ``pyarrow.dataset`` over exactly ``files`` (the live files a format's metadata names; footer statistics
    prune row groups): the reader of the formats whose directory holds more than their live files."""
    import pyarrow.dataset as ds

    handle = fs.arrow(files[0].path)[0] if files else None
    return ds.dataset([fs.arrow(f.path)[1] for f in files], format="parquet", filesystem=handle)


def open_format(table: str, root: str, fs: FileSystem, **_: Any) -> ParquetDirectory:
    """The registry's loader: a plain directory at ``root`` (listed lazily)."""
    return ParquetDirectory(table, root, fs)
