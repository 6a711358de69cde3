"""Delta Lake tables: files and statistics from ``_delta_log/``, a rewrite committed as one Delta transaction.

A table whose root holds ``_delta_log/`` is read at the log's latest version: its units are its live files
grouped by their partition values from the log, never a directory listing, so removed-but-not-vacuumed files
never come back. Its per-file statistics are the log's (:class:`~airflow_zorder.core.delta.delta_log.DeltaLog`),
read without a stats job. A run stages and verifies the rewrite as for any table; :meth:`DeltaTable.commit` then
places the staged files in the table directory (invisible to Delta readers until committed), computes each new
file's Delta statistics from its footer and commits one transaction through delta-rs
(:func:`airflow_zorder.core.delta.delta_commit.commit_rewrite`).

The run's journal (``_zorder/journal/<run_id>.json``) lists the placed files before the first one is placed.
The commit point is the Delta commit itself: :meth:`DeltaTable.recover` marks a run whose commit is in the
table's history as done, and deletes the placed files of one whose commit is not (never a file the log lists).
Replaced files stay in the directory until the table's VACUUM, as after Delta's own OPTIMIZE.
"""

from __future__ import annotations

import datetime as dt
import posixpath
import struct
import time
from collections.abc import Sequence
from typing import Any

from airflow_zorder.core.delta import delta_commit as dc
from airflow_zorder.core.delta import delta_log as dlog
from airflow_zorder.core.errors import CommitError, ConcurrentChangeError, DeltaLogError, TableError
from airflow_zorder.core.storage import commit as commit_mod
from airflow_zorder.core.storage.faults import fault_point
from airflow_zorder.core.storage.io import FileSystem
from airflow_zorder.core.storage.io.file_info import FileInfo
from airflow_zorder.core.storage.io.hadoop import HadoopFileSystem
from airflow_zorder.core.storage.io.paths import join
from airflow_zorder.core.storage.store_options import StoreOptions
from airflow_zorder.core.tables import placed_files
from airflow_zorder.core.tables.model import CommitOutcome, RewriteRun, StagedUnit, TableSnapshot, Unit
from airflow_zorder.core.tables.parquet_dir import check_parquet

__all__ = ["FORMAT", "DeltaTable", "open_format"]

FORMAT = "delta"


class DeltaTable(placed_files.RunJournals):
    """A Delta Lake table, opened on its root (:class:`~airflow_zorder.core.tables.protocol.TableFormat`)."""

    format = FORMAT
    kind = "delta"  # how results and run records name it
    journals_inputs = False  # the log decides which files are live: inputs are never moved
    rewrites_whole_units = False
    stats_from_metadata = True
    reader = "delta-rs (to_pyarrow_dataset)"
    planner = "delta-rs"  # its log pruning (file_uris)
    location = None  # named by its path already

    def __init__(self, table: str, root: str, fs: FileSystem, storage_options: StoreOptions | None = None) -> None:
        self.table = table
        self._fs = fs
        self.root = root.rstrip("/") or root
        self.home = self.root
        # the log is read with the store's credentials in delta-rs's names (none: its default chain)
        why_not = storage_options.unusable.get("delta") if storage_options else None
        if why_not:  # never read it as someone else (delta-rs's default chain) instead
            raise DeltaLogError(f"cannot read the Delta log of {table}: {why_not}")
        if storage_options and storage_options.delta:
            options = dict(storage_options.delta)
        else:  # in a job: the credentials the driver's Hadoop reaches the store with (fs.s3a.*), else the default chain
            options = (
                dlog.delta_storage_options(fs.arrow_options(self.root)) if isinstance(fs, HadoopFileSystem) else None
            )
        self.log = dlog.DeltaLog(self.root, options, table_name=table)
        self._snapshot: TableSnapshot | None = None
        self._files: dict[str, dc.DeltaFile] = {}  # full path (as the units spell it) -> the log's file
        self._read: dc.DeltaSnapshot | None = None

    # -- reading
    def snapshot(self) -> TableSnapshot:
        """The live files of the latest version (read once per opened table)."""
        return self._snapshot or self.refresh()

    def refresh(self) -> TableSnapshot:
        """Read the log's latest version; one unit per partition, labelled as the stats rows label it."""
        self.log.refresh()
        read = dc.read_snapshot(self.log.table)
        units: dict[tuple, Unit] = {}
        files: dict[str, dc.DeltaFile] = {}
        for f in read.files:
            if "://" in f.path or f.path.startswith("/"):
                raise TableError(
                    f"Delta table {self.table}: file {f.path} lies outside the table directory (a shallow clone or "
                    "an absolute path in the log); clustering rewrites tables whose files are inside their directory"
                )
            full = dlog.full_path(self.root, f.path)
            key = tuple(f.partition_values.get(c) for c in read.partition_columns)
            unit = units.get(key)
            if unit is None:
                pairs = list(zip(read.partition_columns, key))
                spec = {c: dlog.HIVE_DEFAULT_PARTITION if v is None else v for c, v in pairs}
                directory = posixpath.dirname(full[len(self.root) + 1 :])
                unit = units[key] = Unit(
                    dlog.partition_label(pairs),
                    spec,
                    join(self.root, directory) if directory else self.root,
                    values=dict(pairs),
                )
            unit.files.append(FileInfo(full, f.size, f.mtime_ms))
            files[full] = f
        ordered = [units[k] for k in sorted(units, key=lambda k: tuple("" if v is None else v for v in k))]
        for u in ordered:
            u.files.sort(key=lambda x: x.path)
        data_columns, _ = self.log.table_columns()
        self._read, self._files = read, files
        self._snapshot = TableSnapshot(
            self.table,
            FORMAT,
            "delta",
            self.root,
            self.home,
            list(read.partition_columns),
            ordered,
            read.version,
            data_columns,
        )
        return self._snapshot

    def check_rewritable(self) -> None:
        """Refuse deletion vectors, column mapping, unknown table features and non-Parquet files (untouched)."""
        dc.check_rewritable(self.log.table)
        check_parquet(self._fs, self.snapshot().units)

    def prepare(self) -> None:
        """Nothing to pin: a Delta table's state lives beside its log."""

    def latest_version(self) -> int:
        """The log's newest version (reads only the commits since the last read)."""
        return self.log.latest_version()

    def version_time(self, version: int) -> dt.datetime | None:
        """``commitInfo.timestamp`` of ``version``."""
        return self.log.commit_time(version)

    def metadata_stats(self, columns: Sequence[str] | None = None, version: int | None = None) -> Any:
        """The log's FILE_STATS_SCHEMA rows (``method = "delta_log"``) of ``version`` (default: the latest)."""
        return self.log.snapshot(list(columns) if columns else None, version=version)

    def metadata_run(self) -> dict[str, Any]:
        """A run-like record of the version last read (``snapshot_id`` = the version)."""
        return self.log.run_record()

    @property
    def column_mapping(self) -> str:
        """``delta.columnMapping.mode``: with "name"/"id" the files name columns by physical ids."""
        return self.log.configuration().get("delta.columnMapping.mode", "none") or "none"

    def reader_dataset(self) -> Any:
        """delta-rs's dataset at the version last read: the log's statistics prune its files."""
        return self.log.table.to_pyarrow_dataset()

    def planned_files(self, column: str, value: Any, sql: str) -> int | None:
        """Files delta-rs keeps for ``column = value`` by its own log pruning (``file_uris``)."""
        for predicate in ([(column, "=", value)], sql):  # tuples encode timestamps right, SQL decimals
            try:
                return len(self.log.table.file_uris(file_pruning_predicate=predicate))
            except Exception:  # noqa: BLE001 - delta-rs raises its own errors for types a predicate form lacks
                continue
        return None

    # -- writing
    def commit(
        self,
        fs: FileSystem,
        journal: commit_mod.Journal,
        staged: Sequence[StagedUnit],
        run: RewriteRun,
        lock: Any = None,
    ) -> CommitOutcome:
        """Place the staged files in the table, then commit them as one Delta transaction.

        On a conflicting commit by another writer the placed files are deleted, the run is rolled back and
        :class:`~airflow_zorder.core.errors.ConcurrentChangeError` propagates.
        """
        snap, read = self.snapshot(), self._read
        assert read is not None
        moves = placed_files.place(
            fs, self.home, journal, staged, self._spell, "delta", format=FORMAT, read_version=read.version
        )
        data_columns = [c for c in snap.data_columns or [] if c not in set(snap.partition_columns)]
        indexed = dc.indexed_columns(read.configuration, data_columns)
        removed = [self._files[f.path] for s in staged for f in s.unit.files]
        added = [
            (
                dc.DeltaFile(
                    dc.relative_path(self.root, dst), f.size, dict(self._files[unit.files[0].path].partition_values)
                ),
                dc.file_stats(_footer(fs, dst), indexed),
            )
            for f, dst, unit in moves
        ]
        fault_point("delta_before_commit")
        try:
            version = dc.commit_rewrite(self.log.table, removed, added, _run_metadata(run, staged))
        except ConcurrentChangeError as exc:
            placed_files.drop_placed(fs, journal, self._resolve)
            commit_mod.rollback(fs, journal)
            raise ConcurrentChangeError(f"{exc} The files this run wrote were deleted.", exc.files) from exc
        except Exception as exc:  # noqa: BLE001 - the journal decides later whether the commit landed
            raise CommitError(
                f"committing to the Delta log of {self.root} failed: {type(exc).__name__}: {exc}. Delta readers do "
                "not see the files this run placed; the next run (or --action recover) removes them, or marks the "
                "run done if its commit is in the table's history."
            ) from exc
        fault_point("delta_after_commit")
        placed_files.committed(fs, journal, version)
        return CommitOutcome(FORMAT, read.version, version)

    def _spell(self, path: str) -> str:
        """How the journal names a placed file: relative to the table root, as the log does."""
        return dc.relative_path(self.root, path)

    def _resolve(self, name: str) -> str:
        return join(self.root, name)

    def settle_runs(self, fs: FileSystem) -> list[str]:
        """Finish every interrupted run: done if its commit is in the log, else its placed files removed. Replaced
        files stay until the table's VACUUM (other readers may time-travel): :meth:`cleanup` drops journals only."""

        def committed(journal: commit_mod.Journal) -> int | None:
            since = journal.info.get("read_version")
            return dc.committed_version(self.log.table, journal.run_id, since) if since is not None else None

        return placed_files.settle_placed(
            fs,
            self.home,
            committed,
            lambda: {f.path for f in dc.read_snapshot(self.log.table).files},
            self._resolve,
            f"Delta table {self.root}",
        )


def _footer(fs: FileSystem, path: str) -> Any:
    """The file's ``pyarrow.parquet.FileMetaData``, read from its tail only."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    handle, p = fs.arrow(path)
    if handle is None:
        return pq.read_metadata(p)
    end = fs.read_tail(path, 8)
    (length,) = struct.unpack("<i", end[:4])
    return pq.read_metadata(pa.BufferReader(fs.read_tail(path, length + 8)))


def _run_metadata(run: RewriteRun, staged: Sequence[StagedUnit]) -> dict[str, Any]:
    """What the Delta commit's custom metadata carries (``DeltaTable.history()`` shows it under ``zorder``)."""
    before = [f for s in staged for f in s.unit.files]
    after = [f for s in staged for f in s.staged]
    return {
        "run_id": run.run_id,
        "curve": run.curve,
        "columns": run.columns,
        "files_before": len(before),
        "bytes_before": sum(f.size for f in before),
        "files_after": len(after),
        "bytes_after": sum(f.size for f in after),
        "committed_at": round(time.time(), 3),
    }


def open_format(
    table: str, root: str, fs: FileSystem, *, storage_options: StoreOptions | None = None, **_: Any
) -> DeltaTable:
    """The registry's loader: a Delta table at ``root`` (its log read lazily; delta-rs needed then).
    ``storage_options``: the store's credentials (e.g. from an Airflow connection); its ``delta`` part is used."""
    return DeltaTable(table, root, fs, storage_options)
