"""The clustering job on a Delta Lake table: its files from the log, its rewrite as one Delta commit.

A path table whose root holds ``_delta_log/`` is read at the log's latest version
(:func:`resolve_delta_table`): the units are its live files grouped by their partition values from the log,
never a directory listing, so removed-but-not-vacuumed files never come back.  The job stages and verifies
the rewrite as for a Parquet directory; :func:`commit_delta` then places the staged files in the table
directory (invisible to Delta readers until committed), computes each new file's Delta statistics from its
footer and commits one transaction through delta-rs
(:func:`airflow_zorder.core.delta.delta_commit.commit_rewrite`) on the Spark driver.

The run's journal (``_zorder/journal/<run_id>.json``, as for Parquet directories) lists the placed files
before the first one is placed.  The commit point is the Delta commit itself: :func:`recover_delta` marks a
run whose commit is in the table's history as done, and deletes the placed files of one whose commit is not
(never a file the log lists).  Replaced files stay in the directory until the table's VACUUM, as after
Delta's own OPTIMIZE.
"""

from __future__ import annotations

import posixpath
import struct
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from airflow_zorder.core.delta import delta_commit as dc
from airflow_zorder.core.delta import delta_log
from airflow_zorder.core.errors import ConcurrentChangeError
from airflow_zorder.core.storage import commit as commit_mod
from airflow_zorder.core.storage.faults import fault_point
from airflow_zorder.core.storage.filesystems import FileInfo, FileSystem, join, os_path
from spark_jobs.table import ResolvedTable, TableError, Unit

FORMAT = "delta"
HIVE_NULL = "__HIVE_DEFAULT_PARTITION__"


@dataclass
class DeltaSource:
    """The Delta table a run read: delta-rs's handle at the snapshot version and the snapshot's files."""

    table: Any  # deltalake.DeltaTable, loaded at ``snapshot.version``
    snapshot: dc.DeltaSnapshot
    by_path: dict[str, dc.DeltaFile]  # full path (as the units spell it) -> the log's file


def resolve_delta_table(fs: FileSystem, table: str) -> ResolvedTable:
    """The table at its latest version, one unit per partition; refuses what a rewrite cannot keep correct."""
    dlt = dc.open_table(delta_log.table_uri(table))
    dc.check_rewritable(dlt)
    snap = dc.read_snapshot(dlt)
    root = table.rstrip("/")
    units: dict[tuple, Unit] = {}
    by_path: dict[str, dc.DeltaFile] = {}
    for f in snap.files:
        if "://" in f.path or f.path.startswith("/"):
            raise TableError(
                f"Delta table {table}: file {f.path} lies outside the table directory (a shallow clone or an "
                "absolute path in the log); clustering rewrites tables whose files are inside their directory"
            )
        full = delta_log.full_path(root, f.path)
        key = tuple(f.partition_values.get(c) for c in snap.partition_columns)
        unit = units.get(key)
        if unit is None:
            spec = {c: HIVE_NULL if v is None else v for c, v in zip(snap.partition_columns, key)}
            label = "/".join(f"{c}={v}" for c, v in spec.items())
            directory = posixpath.dirname(full[len(root) + 1 :])
            unit = units[key] = Unit(label, spec, join(root, directory) if directory else root)
        unit.files.append(FileInfo(full, f.size, 0))
        by_path[full] = f
    ordered = [units[k] for k in sorted(units, key=lambda k: tuple("" if v is None else v for v in k))]
    for u in ordered:
        u.files.sort(key=lambda x: x.path)
    ref = ResolvedTable(table, FORMAT, root, root, list(snap.partition_columns), ordered)
    ref.delta = DeltaSource(dlt, snap, by_path)
    return ref


def placed_path(unit: Unit, staged: str) -> str:
    """Where a staged file of ``unit`` goes: beside the unit's files, under its staged name (the run's, unique)."""
    return join(unit.location, staged.rstrip("/").rsplit("/", 1)[-1])


def _footer(fs: FileSystem, path: str) -> Any:
    """The file's ``pyarrow.parquet.FileMetaData``, read from its tail only."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    local = os_path(fs, path)
    if local is not None:
        return pq.read_metadata(local)
    end = fs.read_tail(path, 8)
    (length,) = struct.unpack("<i", end[:4])
    return pq.read_metadata(pa.BufferReader(fs.read_tail(path, length + 8)))


def commit_delta(
    fs: FileSystem, ref: ResolvedTable, journal: commit_mod.Journal, done_units: Sequence[Mapping[str, Any]], run: dict
) -> int:
    """Place the staged files in the table, then commit them as one Delta transaction; returns its version.

    On a conflicting commit by another writer the placed files are deleted, the run is rolled back and
    :class:`~airflow_zorder.core.errors.ConcurrentChangeError` propagates.
    """
    source: DeltaSource = ref.delta
    moves: list[tuple[FileInfo, str, Unit]] = []  # (staged file, where it goes, its unit)
    for u in done_units:
        unit: Unit = u["_unit"]
        for f in u["_staged"]:
            moves.append((f, placed_path(unit, f.path), unit))
    journal.info.update(
        format=FORMAT,
        read_version=source.snapshot.version,
        placed=[dc.relative_path(ref.root, dst) for _, dst, _ in moves],
    )
    fs.write_text_atomic(commit_mod.journal_path(ref.home, journal.run_id), journal.to_json())
    fault_point("delta_before_place")
    for staged, dst, _ in moves:
        fs.mkdirs(dst.rsplit("/", 1)[0])
        fs.rename(staged.path, dst)
        fault_point("delta_mid_place")
    data_columns = [f.name for f in source.table.schema().fields if f.name not in set(ref.partition_columns)]
    indexed = dc.indexed_columns(source.snapshot.configuration, data_columns)
    removed = [source.by_path[f.path] for u in done_units for f in u["_unit"].files]
    added = []
    for staged, dst, unit in moves:
        values = dict(source.by_path[unit.files[0].path].partition_values)
        added.append(
            (
                dc.DeltaFile(dc.relative_path(ref.root, dst), staged.size, values),
                dc.file_stats(_footer(fs, dst), indexed),
            )
        )
    fault_point("delta_before_commit")
    try:
        version = dc.commit_rewrite(source.table, removed, added, run)
    except ConcurrentChangeError:
        _drop_placed(fs, ref, journal)
        commit_mod.rollback(fs, journal)
        raise
    fault_point("delta_after_commit")
    journal.info["committed_version"] = version
    commit_mod.mark_committed(fs, journal)
    commit_mod.finish(fs, journal)
    return version


def _drop_placed(fs: FileSystem, ref: ResolvedTable, journal: commit_mod.Journal, live: set[str] | None = None) -> int:
    """Delete the run's placed files that the log does not list (never a live file); returns how many."""
    dropped = 0
    for rel in journal.info.get("placed", []):
        if live is not None and rel in live:
            continue
        if fs.delete(join(ref.root, rel)):
            dropped += 1
    return dropped


def recover_delta(fs: FileSystem, ref: ResolvedTable) -> list[str]:
    """Finish every interrupted run of this Delta table: done if its commit is in the log, else removed."""
    done = []
    for journal in commit_mod.pending_runs(fs, ref.home):
        dlt = ref.delta.table if ref.delta is not None else dc.open_table(delta_log.table_uri(ref.root))
        since = journal.info.get("read_version")
        version = dc.committed_version(dlt, journal.run_id, since) if since is not None else None
        if version is not None:
            journal.info["committed_version"] = version
            if journal.state == commit_mod.STAGING:
                commit_mod.mark_committed(fs, journal)
            commit_mod.finish(fs, journal)
        else:
            if journal.state != commit_mod.STAGING:
                raise commit_mod.RecoveryError(
                    f"run {journal.run_id} of Delta table {ref.root} is {journal.state!r} but its commit is not "
                    "in the table's history; inspect the journal and the log by hand, nothing was changed"
                )
            live = {f.path for f in dc.read_snapshot(dlt).files}
            _drop_placed(fs, ref, journal, live)
            commit_mod.rollback(fs, journal)
        done.append(journal.run_id)
    return done


def run_metadata(result: Mapping[str, Any], done_units: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """What the Delta commit's custom metadata carries (``DeltaTable.history()`` shows it under ``zorder``)."""
    before = [f for u in done_units for f in u["_unit"].files]
    after = [f for u in done_units for f in u["_staged"]]
    return {
        "run_id": result["run_id"],
        "curve": result["curve"],
        "columns": result["columns"],
        "files_before": len(before),
        "bytes_before": sum(f.size for f in before),
        "files_after": len(after),
        "bytes_after": sum(f.size for f in after),
        "committed_at": round(time.time(), 3),
    }
