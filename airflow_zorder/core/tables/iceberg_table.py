"""Apache Iceberg tables: a snapshot's files and statistics from its manifests, a rewrite as one ``replace`` snapshot.

The table is named by its catalog (pyiceberg's configuration, or an Airflow ``iceberg`` connection's properties)
and ``namespace.table``. A run reads the current snapshot's live data files from the manifests (never a directory
listing: files of older snapshots stay until they are expired), one unit per partition. It stages and verifies
the rewrite as for any table, places the new files under the table's data location, in the partition's
directory (invisible to Iceberg readers until committed), and commits one snapshot with operation ``replace``
through pyiceberg (:mod:`airflow_zorder.core.iceberg.replace_commit`): the old files removed, the new ones added
with their metrics from their footers, the run id in the snapshot's summary. No Iceberg jar on the cluster.

The run's journal lists the placed files before the first is placed. The commit point is the snapshot: a run
whose id is in the table's lineage is done; one whose id is not has its placed files deleted (never a live file).
Replaced files stay until the table's snapshots are expired (other readers may time-travel to them).

Refused before anything is written: format versions other than 1 and 2, live delete files (Spark reads the data
files as Parquet and would bring deleted rows back), partition transforms a file's values cannot place (bucket,
truncate), columns renamed since files were written (the rewrite reads files by name), non-Parquet files.
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Mapping, Sequence
from typing import Any

from airflow_zorder.core.errors import CommitError, ConcurrentChangeError, IcebergRewriteRefusedError, InvalidInputError
from airflow_zorder.core.iceberg import catalogs, manifest_stats
from airflow_zorder.core.iceberg.replace_commit import RUN_ID_KEY, commit_replace, committed_run
from airflow_zorder.core.stats import stats_schema
from airflow_zorder.core.storage import commit as commit_mod
from airflow_zorder.core.storage.faults import fault_point
from airflow_zorder.core.storage.io import FileSystem
from airflow_zorder.core.storage.io.file_info import FileInfo
from airflow_zorder.core.storage.io.paths import join
from airflow_zorder.core.tables import placed_files
from airflow_zorder.core.tables.model import CommitOutcome, RewriteRun, StagedUnit, TableSnapshot, Unit
from airflow_zorder.core.tables.parquet_dir import files_dataset

__all__ = ["FORMAT", "IcebergTable", "open_format"]

FORMAT = "iceberg"
PLACEABLE_TRANSFORMS = ("identity", "year", "month", "day", "hour")  # a file of one partition: from its values


class IcebergTable(placed_files.RunJournals):
    """An Iceberg table in a catalog (:class:`~airflow_zorder.core.tables.protocol.TableFormat`)."""

    format = FORMAT
    kind = "iceberg"  # how results and run records name it
    journals_inputs = False  # the snapshot decides which files are live: inputs are never moved
    rewrites_whole_units = False
    stats_from_metadata = True
    column_mapping = "none"  # renamed columns are refused (check_rewritable)
    reader = "pyiceberg (plan_files) + pyarrow"
    planner = "pyiceberg"  # its manifest pruning (plan_files)
    location: str | None = None

    def __init__(self, table: str, fs: FileSystem, catalog: str, properties: Mapping[str, str] | None) -> None:
        self.table = table
        self._fs = fs
        self.catalog_name = catalog
        self._catalog = catalogs.load_catalog(catalog, properties)
        self.iceberg = catalogs.load_table(self._catalog, table)  # the pyiceberg Table, at the snapshot read
        self.root = self.iceberg.location().rstrip("/")
        self.home = self.root
        self.location = self.root  # OpenLineage names an Iceberg table by its location
        self._snapshot: TableSnapshot | None = None
        self._files: dict[str, Any] = {}  # path -> the live DataFile (what the commit removes)
        self._deletes: list[Any] = []  # live delete files of the snapshot read (refused by check_rewritable)
        self._rows: dict[tuple, Any] = {}  # (version, columns) -> stats rows (a snapshot never changes)
        self._read_at: dt.datetime | None = None

    # -- versions: a snapshot's sequence number (v2), its depth in the lineage (v1, no sequence numbers)
    def _version_of(self, snap: Any) -> int:
        if snap is None:
            return 0
        if self.iceberg.metadata.format_version >= 2:
            return int(snap.sequence_number)
        from pyiceberg.table.snapshots import ancestors_of

        return sum(1 for _ in ancestors_of(snap, self.iceberg.metadata))

    def _snapshot_at(self, version: int | None) -> Any:
        current = self.iceberg.current_snapshot()
        if version is None or current is None:
            return current
        from pyiceberg.table.snapshots import ancestors_of

        for snap in ancestors_of(current, self.iceberg.metadata):
            if self._version_of(snap) == version:
                return snap
        raise LookupError(f"Iceberg table {self.table} has no snapshot of version {version} in its lineage")

    # -- reading
    def snapshot(self) -> TableSnapshot:
        """The current snapshot's live data files (read once per opened table)."""
        return self._snapshot or self.refresh()

    def refresh(self) -> TableSnapshot:
        """Reload the table's metadata; one unit per partition (as pyiceberg spells its path)."""
        self.iceberg = self.iceberg.refresh()
        self._read_at = dt.datetime.now(dt.UTC)
        current = self.iceberg.current_snapshot()
        files, self._deletes = manifest_stats.live_files(self.iceberg, current)
        data_dir = (self.iceberg.properties or {}).get("write.data.path") or join(self.root, "data")
        units: dict[str, Unit] = {}
        for f in files:
            unit = units.get(f.partition)
            if unit is None:
                spec = {k: ("null" if v is None else v) for k, v in f.values.items()}
                location = join(data_dir, f.partition) if f.partition else data_dir
                unit = units[f.partition] = Unit(f.partition, spec, location, values=dict(f.values))
            unit.files.append(FileInfo(f.path, f.size, 0))
        self._files = {f.path: f.data_file for f in files}
        spec_cols = {self.iceberg.schema().find_column_name(pf.source_id) for pf in self.iceberg.spec().fields}
        data_columns = [f.name for f in self.iceberg.schema().fields]
        self._snapshot = TableSnapshot(
            self.table,
            FORMAT,
            self.kind,
            self.root,
            self.home,
            sorted(c for c in spec_cols if c),
            [units[k] for k in sorted(units)],
            self._version_of(current),
            [c for c in data_columns if c not in spec_cols],
        )
        return self._snapshot

    def check_rewritable(self) -> None:
        """Refuse what a rewrite of whole Parquet files cannot keep correct (module doc); the table is untouched."""
        ice, where = self.iceberg, f"Iceberg table {self.table} (catalog {self.catalog_name})"
        version = ice.metadata.format_version
        if version not in (1, 2):
            raise IcebergRewriteRefusedError(
                f"{where} is format version {version}; this provider rewrites versions 1 and 2 (pyiceberg cannot "
                "commit to v3 yet); the table is untouched"
            )
        self.snapshot()
        if self._deletes:
            raise IcebergRewriteRefusedError(
                f"{where} has {len(self._deletes)} live delete file(s) (position or equality deletes): rewriting the "
                "data files as Parquet would bring deleted rows back. Compact the deletes first (Spark: CALL "
                "system.rewrite_position_delete_files, or rewrite_data_files with delete-file-threshold); the "
                "table is untouched"
            )
        schema = ice.schema()
        bad = [
            f"{pf.name} ({pf.transform})"
            for pf in ice.spec().fields
            if str(pf.transform).split("[")[0] not in PLACEABLE_TRANSFORMS
        ]
        if bad:
            raise IcebergRewriteRefusedError(
                f"{where} is partitioned by {', '.join(bad)}: a new file's partition value cannot be read from its "
                f"values for that transform (supported: {', '.join(PLACEABLE_TRANSFORMS)}); the table is untouched"
            )
        names = {f.field_id: f.name for f in schema.fields}
        renamed = sorted(
            {
                f"{old.name} -> {names[old.field_id]}"
                for s in ice.schemas().values()
                for old in s.fields
                if old.field_id in names and names[old.field_id] != old.name
            }
        )
        if renamed:
            raise IcebergRewriteRefusedError(
                f"{where} renamed columns since some files were written ({', '.join(renamed)}): the rewrite reads "
                "files by column name, not by field id, yet; the table is untouched"
            )
        other = sorted({_format_name(df) for df in self._files.values() if _format_name(df) != "PARQUET"})
        if other:
            raise IcebergRewriteRefusedError(
                f"{where} has data files in {', '.join(other)}: only Parquet files are rewritten; the table is untouched"
            )

    def prepare(self) -> None:
        """Nothing to pin: the state lives beside the table's data and metadata (``<location>/_zorder``)."""

    def latest_version(self) -> int:
        """The current snapshot's version (reloads the table's metadata: one catalog call)."""
        self.iceberg = self.iceberg.refresh()
        self._read_at = dt.datetime.now(dt.UTC)
        return self._version_of(self.iceberg.current_snapshot())

    def version_time(self, version: int) -> dt.datetime | None:
        """When the snapshot of ``version`` was committed."""
        try:
            snap = self._snapshot_at(version)
        except LookupError:
            return None
        return None if snap is None else dt.datetime.fromtimestamp(snap.timestamp_ms / 1000.0, dt.UTC)

    def metadata_stats(self, columns: Sequence[str] | None = None, version: int | None = None) -> Any:
        """The manifests' FILE_STATS_SCHEMA rows of ``version`` (default: the current snapshot, reloaded)."""
        if version is None:
            version = self.latest_version()
        key = (version, tuple(columns) if columns else None)
        if key not in self._rows:
            if len(self._rows) > 8:
                self._rows.clear()
            snap = self._snapshot_at(version)
            self._rows[key] = manifest_stats.stats_rows(self.iceberg, snap, version, self.table, columns)
        return self._rows[key]

    def metadata_run(self) -> dict[str, Any]:
        """A run-like record of the snapshot read last (``snapshot_id`` = its version)."""
        version = self._version_of(self.iceberg.current_snapshot())
        return stats_schema.metadata_run_record(
            f"iceberg-manifests-v{version}",
            self.table,
            self.kind,
            self.root,
            version,
            manifest_stats.METHOD,
            self._read_at or dt.datetime.now(dt.UTC),
            self.version_time(version) if version else None,
        )

    def reader_dataset(self) -> Any:
        """A Parquet dataset over the current snapshot's live data files (as pyiceberg planned them)."""
        return files_dataset(self._fs, self.snapshot().files)

    def planned_files(self, column: str, value: Any, sql: str) -> int:
        """Files pyiceberg's scan planning keeps for ``column = value`` (manifest and partition pruning)."""
        from pyiceberg.expressions import EqualTo

        return sum(1 for _ in self.iceberg.scan(row_filter=EqualTo(column, value)).plan_files())

    # -- writing
    def commit(
        self,
        fs: FileSystem,
        journal: commit_mod.Journal,
        staged: Sequence[StagedUnit],
        run: RewriteRun,
        lock: Any = None,
    ) -> CommitOutcome:
        """Place the staged files under the data location, then commit one ``replace`` snapshot."""
        from pyiceberg.exceptions import CommitFailedException, ValidationException

        snap = self.snapshot()
        start = self.iceberg.current_snapshot()
        moves = placed_files.place(
            fs,
            self.home,
            journal,
            staged,
            str,
            "iceberg",
            format=FORMAT,
            read_version=snap.version,
            start_snapshot=start.snapshot_id if start else None,
        )
        removed = [self._files[f.path] for s in staged for f in s.unit.files]
        properties = {
            RUN_ID_KEY: run.run_id,
            "zorder.curve": run.curve,
            "zorder.columns": ",".join(run.columns),
            "zorder.committed-at": str(round(time.time(), 3)),
        }
        fault_point("iceberg_before_commit")
        try:
            new = commit_replace(
                self.iceberg, start.snapshot_id if start else None, removed, [d for _, d, _ in moves], properties
            )
        except (ValidationException, CommitFailedException) as exc:
            placed_files.drop_placed(fs, journal, str)
            commit_mod.rollback(fs, journal)
            raise ConcurrentChangeError(
                f"another writer changed files this clustering run rewrote in Iceberg table {self.table} ({exc}); "
                "nothing was committed and the files this run wrote were deleted. Run it again on the new snapshot.",
                [],
            ) from exc
        except Exception as exc:  # noqa: BLE001 - the journal and the snapshots decide later whether it landed
            raise CommitError(
                f"committing to Iceberg table {self.table} failed: {type(exc).__name__}: {exc}. Iceberg readers do "
                "not see the files this run placed; the next run (or --action recover) removes them, or marks the "
                "run done if its snapshot is in the table's lineage."
            ) from exc
        fault_point("iceberg_after_commit")
        version = self._version_of(new)
        placed_files.committed(fs, journal, version)
        self._snapshot = None
        return CommitOutcome(FORMAT, snap.version, version)

    def settle_runs(self, fs: FileSystem) -> list[str]:
        """Finish every interrupted run: done if its snapshot is in the lineage, else its placed files removed.
        Replaced files stay until the table's snapshots are expired: :meth:`cleanup` drops journals only."""

        def committed(journal: commit_mod.Journal) -> int | None:
            self.iceberg = self.iceberg.refresh()
            snap = committed_run(self.iceberg, journal.run_id)
            return None if snap is None else self._version_of(snap)

        return placed_files.settle_placed(
            fs,
            self.home,
            committed,
            lambda: {f.path for f in manifest_stats.live_files(self.iceberg, self.iceberg.current_snapshot())[0]},
            str,
            f"Iceberg table {self.table}",
        )


def _format_name(data_file: Any) -> str:
    """A data file's format as Iceberg names it (``PARQUET``, ``AVRO``, ``ORC``)."""
    fmt = data_file.file_format
    return str(getattr(fmt, "value", fmt)).upper()


def open_format(
    table: str,
    root: str,
    fs: FileSystem,
    *,
    iceberg_catalog: str | None = None,
    catalog_properties: Mapping[str, str] | None = None,
    **_: Any,
) -> IcebergTable:
    """The registry's loader: ``namespace.table`` of the pyiceberg catalog ``iceberg_catalog``."""
    if not iceberg_catalog:
        raise InvalidInputError(
            f"{table!r}: name the Iceberg catalog it lives in (iceberg_catalog / --iceberg-catalog)"
        )
    return IcebergTable(table, fs, iceberg_catalog, catalog_properties)
