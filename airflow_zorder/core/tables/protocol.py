"""The table seam: what every table format module implements (:class:`TableFormat`), and what a catalog gives it.

A format module opens one table (``open_table`` in :mod:`.registry` picks the module once, from the table's
name and the probes of :mod:`airflow_zorder.core.storage.table_formats`) and answers, for the jobs, the hook,
the sensor and the UI alike: the table's snapshot (files, sizes, partitions, version, columns), the per-file
statistics its own metadata keeps, how a verified rewrite is committed, how an interrupted run is recovered
by its id, and what cleanup removes once the retention passed. Nothing outside the format modules branches on
a table's format: callers ask the capabilities below.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

from airflow_zorder.core.storage.commit import Journal
from airflow_zorder.core.storage.io import FileSystem
from airflow_zorder.core.tables.model import CommitOutcome, RewriteRun, StagedUnit, TableSnapshot, Unit

__all__ = ["FilesOnly", "Metastore", "TableFormat"]


@runtime_checkable
class TableFormat(Protocol):
    """One opened table of one format.

    Capabilities (class attributes) say how the generic run treats it:

    * ``journals_inputs``: the commit swaps files in place, so the run's journal lists the input files first
      (a plain directory); formats whose commit is a metadata update leave the files where they are.
    * ``rewrites_whole_units``: a commit replaces whole units (a catalog's partition location switch), so an
      incremental plan's bins widen to their whole partition.
    * ``stats_from_metadata``: the format's own metadata keeps per-file statistics (:meth:`metadata_stats`),
      read without a stats job; the stats store then holds only what it lacks, tied to the version.
    """

    format: str  # the registry's name for the module
    kind: str  # how results and run records name the table's kind: "path", "catalog", "delta", ...
    table: str  # as the user named it
    root: str
    home: str
    journals_inputs: bool
    rewrites_whole_units: bool
    stats_from_metadata: bool
    column_mapping: str  # "none": data files name columns as the schema does; else by physical ids ("name"/"id")
    location: str | None  # where the table lives when its name is not its path (lineage names it by this)
    reader: str  # what :meth:`reader_dataset` is, for messages
    planner: str | None  # who :meth:`planned_files` asks, for messages (None: it plans nothing)

    def snapshot(self) -> TableSnapshot:
        """The table's live files now (cached per opened table; :meth:`refresh` reads again)."""
        ...

    def refresh(self) -> TableSnapshot:
        """Read the table again (after recovering a run, the layout may have changed)."""
        ...

    def check_rewritable(self) -> None:
        """Refuse, before anything is written, a table whose files this job cannot rewrite safely."""
        ...

    def prepare(self) -> None:
        """Pin what a run needs before it locks the table (a catalog table's state directory)."""
        ...

    def latest_version(self) -> int | None:
        """The format's newest version (cheap: a change signal), None for a format without versions."""
        ...

    def version_time(self, version: int) -> dt.datetime | None:
        """When ``version`` was committed, None when unknown or the format has no versions."""
        ...

    def metadata_stats(self, columns: Sequence[str] | None = None, version: int | None = None) -> Any:
        """FILE_STATS_SCHEMA rows the format's metadata keeps (``version``: default the latest), or None."""
        ...

    def metadata_run(self) -> dict[str, Any] | None:
        """A collection-run-like record of the version :meth:`metadata_stats` last read, or None."""
        ...

    def reader_dataset(self) -> Any:
        """The ``pyarrow.dataset.Dataset`` a reader of this format scans (with the format's own file pruning)."""
        ...

    def planned_files(self, column: str, value: Any, sql: str) -> int | None:
        """How many files the format's own scan planning keeps for ``column = value`` (``sql``: the same predicate
        as SQL), or None when the format plans no files beyond its dataset's pruning."""
        ...

    def commit(
        self, fs: FileSystem, journal: Journal, staged: Sequence[StagedUnit], run: RewriteRun, lock: Any = None
    ) -> CommitOutcome:
        """Make the verified rewrite visible to readers atomically; raise ConcurrentChangeError on a conflict."""
        ...

    def recover(self, fs: FileSystem) -> list[str]:
        """Finish (after its commit point) or roll back (before it) every interrupted run; their run ids."""
        ...

    def cleanup(self, fs: FileSystem, retention_s: float) -> list[str]:
        """Delete what finished runs replaced once ``retention_s`` passed; the paths deleted."""
        ...


class FilesOnly:
    """What a format without versions or statistics of its own answers (a directory, a catalog over directories):
    its files' footers are the only statistics (the stats job collects them), the stats store's snapshots stand in
    for versions, and its readers plan nothing beyond the footers they read."""

    stats_from_metadata = False
    column_mapping = "none"  # files name columns as the schema does
    planner: str | None = None
    location: str | None = None  # a directory's name is its path; a catalog table keeps its catalog name

    def latest_version(self) -> None:
        """No versions."""
        return None

    def version_time(self, version: int) -> dt.datetime | None:
        """No versions."""
        return None

    def metadata_stats(self, columns: Sequence[str] | None = None, version: int | None = None) -> None:
        """No statistics beside the files' footers."""
        return None

    def metadata_run(self) -> None:
        """No metadata to read."""
        return None

    def planned_files(self, column: str, value: Any, sql: str) -> None:
        """No planning beyond the footers its readers read."""
        return None


class Metastore(Protocol):
    """What a catalog table's format module needs from the engine that owns the catalog (the Spark job's side)."""

    def describe(self, name: str) -> dict[str, Any]:
        """``location``, ``home`` (the pinned state directory or None), ``partition_columns``, ``data_columns``
        and ``partitions`` (``[(relpath, spec, location)]``) of a Parquet table; refuses others."""
        ...

    def pin_home(self, name: str, home: str) -> None:
        """Record the table's state directory in the catalog, so it survives location switches."""
        ...

    def current_location(self, name: str, unit: Unit) -> str:
        """The catalog's location of the table (unpartitioned) or of one partition."""
        ...

    def switch_location(self, name: str, unit: Unit, location: str) -> None:
        """One catalog update: readers planning after it see only the files at ``location``."""
        ...
