"""The one table model every format module returns and both Spark jobs, the hook and the UI read.

A :class:`TableSnapshot` is a table at one moment: where it lives, its partition columns, its version (None for a
plain directory, which has none) and its live data files grouped into :class:`Unit` s (the whole table when
unpartitioned, else one per partition). What a rewrite hands a format to commit (:class:`StagedUnit`, one per
rewritten unit) and what the commit returns (:class:`CommitOutcome`) are typed records too.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from airflow_zorder.core.errors import TableError
from airflow_zorder.core.storage.io.file_info import FileInfo
from airflow_zorder.core.storage.io.paths import join
from airflow_zorder.core.storage.locations import parse_partition_path

__all__ = [
    "STATE_DIR",
    "CommitOutcome",
    "RewriteRun",
    "StagedUnit",
    "TableSnapshot",
    "Unit",
    "file_totals",
    "select_units",
]

STATE_DIR = "_zorder"  # the table's lock, journals, staging and trash live here


@dataclass
class Unit:
    """A set of files rewritten together: the whole table, one partition, or one bin of an incremental plan."""

    relpath: str  # "" for an unpartitioned table, else "k=v/k2=v2" (as on disk for directories)
    spec: dict[str, str]  # partition column -> value (unescaped)
    location: str  # directory that holds the unit's files (where new files of the unit go)
    files: list[FileInfo] = field(default_factory=list)
    num_files: int | None = None  # an incremental plan's bin: its planned output files (None: sized by the job)
    bin: int | None = None  # an incremental plan's bin: its index within the partition (None: the whole unit)
    values: dict[str, str | None] | None = None  # partition values as the format keeps them (None: null); else spec
    on: tuple[str, ...] | None = None  # an incremental plan's bin: the columns it is clustered on (None: all)

    @property
    def bytes(self) -> int:
        """Total size of the unit's data files."""
        return sum(f.size for f in self.files)

    @property
    def label(self) -> str:
        """How the unit is named in messages and results."""
        return self.relpath or "<whole table>"


@dataclass
class TableSnapshot:
    """A table at one moment, as its format module read it (the one model of both jobs)."""

    name: str  # as the user named it (a path or ``db.table``)
    format: str  # the format module's name: "parquet", "catalog", "delta", ...
    kind: str  # how results and run records name it: "path", "catalog", "delta", ...
    root: str  # the table's directory (catalog tables: their current location)
    home: str  # stable directory holding the ``_zorder`` state (lock, journals, staging, trash)
    partition_columns: list[str]
    units: list[Unit]
    version: int | None = None  # the format's version the files are from (None: a directory has none)
    data_columns: list[str] | None = None  # declared data columns (None: the files' schema decides)

    @property
    def state_dir(self) -> str:
        """The hidden directory for this table's lock, journals, staging and trash."""
        return join(self.home, STATE_DIR)

    @property
    def files(self) -> list[FileInfo]:
        """Every live data file, in unit order."""
        return [f for u in self.units for f in u.files]


@dataclass
class StagedUnit:
    """A unit rewritten and verified: its staged files, waiting for the format's commit."""

    unit: Unit
    staged: list[FileInfo]  # the verified new files, under the run's staging directory
    rows: int
    plan: dict[str, Any]  # the layout plan's description (curve, ranges, key engine, ...)

    def report(self) -> dict[str, Any]:
        """The unit as the job's result reports it."""
        return {
            "partition": self.unit.label,
            **({"bin": self.unit.bin} if self.unit.bin is not None else {}),
            "spec": self.unit.spec,
            "rows": self.rows,
            "before": file_totals(self.unit.files),
            "after": file_totals(self.staged),
            "plan": self.plan,
        }


@dataclass(frozen=True)
class RewriteRun:
    """What a commit records about the run beside the files (a format's history shows it)."""

    run_id: str
    curve: str
    columns: list[str]
    staging: str  # the run's staging directory (catalog tables move units out of it)


@dataclass(frozen=True)
class CommitOutcome:
    """What a format's commit did: the version it read and the one it wrote (None: the format has no versions)."""

    format: str
    read_version: int | None = None
    version: int | None = None

    def report(self) -> dict[str, Any] | None:
        """The result's per-format entry (``result[format]``), None when there is nothing to say."""
        if self.version is None:
            return None
        return {"read_version": self.read_version, "version": self.version}


def select_units(units: list[Unit], partitions: Sequence[str] | None) -> list[Unit]:
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


def file_totals(files: Sequence[FileInfo]) -> dict[str, int]:
    """``{"files": n, "bytes": total}`` of a file list."""
    return {"files": len(files), "bytes": sum(f.size for f in files)}
