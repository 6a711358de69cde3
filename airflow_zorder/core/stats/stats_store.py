"""Where the stats table lives, how snapshots are committed atomically, and the fast readers.

Airflow-free and Spark-free: pyarrow (plus fsspec, if installed, for stores
pyarrow has no native filesystem for).  The Spark collector
(``spark_jobs/collect_stats.py``) writes through :func:`write_snapshot` /
:func:`write_run`; the sensor and the UI read with :func:`load_latest`,
:func:`load_history` and :func:`load_events`; the clustering job calls
:func:`record_event`.  Row schemas: :mod:`airflow_zorder.core.stats.stats_schema`.

Layout of a stats location (default ``<table home>/_zorder/stats``, hidden from
the table's readers by the leading underscore)::

    <location>/
      files/snapshot-000000000007.parquet   one complete snapshot per file (FILE_STATS_SCHEMA)
      runs/run-20260101T120000123456Z-<run id>.json     one JSON line per collection run (RUNS_SCHEMA)
      events/event-20260101T130000123456Z-<run id>.json one JSON line per event, e.g. a clustering (EVENTS_SCHEMA)
      _latest.json                          pointer to the newest snapshot (a cache, written last)

Commit protocol (no reader ever sees a partial snapshot)
--------------------------------------------------------
1. Snapshot ids are 1, 2, 3, ...: the new id is one more than the highest
   snapshot present.  The snapshot file is written under a hidden temporary
   name and renamed to ``snapshot-<id>.parquet`` without replacing anything
   (local disk: ``renameat2(RENAME_NOREPLACE)``; HDFS: rename fails if the
   target exists).  That rename is the commit point: a snapshot file is
   complete or absent, and two concurrent collectors cannot both commit the
   same id (the loser gets :class:`~airflow_zorder.core.errors.ConcurrentChangeError`).  On object stores
   the Spark driver writes the object in one conditional PUT (S3: ``If-None-Match: *``; GCS, ABFS: their
   connectors' create-if-absent), which the store publishes whole or refuses when the id exists
   (``FileSystem.create_exclusive``); pyarrow's writers (the Airflow side) check, then PUT.
2. The run record is written (its own file; also embedded in the snapshot's
   Parquet metadata, so it can be rebuilt).
3. ``_latest.json`` is replaced atomically.

Readers: SQL engines read ``files/*.parquet`` and take ``max(snapshot_id)``
for the latest snapshot; :func:`load_latest` reads the pointer, then checks
that no newer snapshot file exists (one existence check), so it agrees with
the SQL view even right after a crash between steps 1 and 3.  The next
collection run repairs missing run records and the pointer.

Querying
--------
DuckDB::

    SELECT * FROM read_parquet('<loc>/files/*.parquet')
    WHERE snapshot_id = (SELECT max(snapshot_id) FROM read_parquet('<loc>/files/*.parquet'));
    SELECT * FROM read_json('<loc>/runs/*.json') ORDER BY collected_at;

Spark SQL::

    SELECT * FROM parquet.`<loc>/files` WHERE snapshot_id = (SELECT max(snapshot_id) FROM parquet.`<loc>/files`)
    SELECT * FROM json.`<loc>/runs`

pyarrow: :func:`load_latest`, or ``pyarrow.dataset.dataset('<loc>/files')``.

Storage: every function opens its location through the one I/O seam
(:func:`~airflow_zorder.core.storage.io.filesystem_for`); ``filesystem`` is what the caller holds (a
:class:`~airflow_zorder.core.storage.io.FileSystem` such as the Spark driver's Hadoop one, a pyarrow or fsspec
filesystem; None: the location's own, with the store's default credentials).  pyarrow reads the Parquet
and JSON files wherever it can open them itself.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pajson
import pyarrow.parquet as pq
from pyarrow import fs as pafs

from airflow_zorder.core.errors import ConcurrentChangeError, StatsNotFoundError, deprecated_aliases
from airflow_zorder.core.stats import stats_schema as ss
from airflow_zorder.core.storage.faults import fault_point
from airflow_zorder.core.storage.io import FileSystem, filesystem_for, os_path
from airflow_zorder.core.storage.io.hadoop import HadoopFileSystem
from airflow_zorder.core.storage.io.paths import join

__all__ = [
    "StatsNotFoundError",
    "ConcurrentChangeError",
    "snapshot_path",
    "list_snapshots",
    "latest_snapshot_id",
    "load_latest",
    "load_snapshot",
    "write_snapshot",
    "write_run",
    "check_writable",
    "load_runs",
    "latest_run",
    "load_history",
    "record_event",
    "cluster_event",
    "load_events",
    "run_file_name",
    "change_signal",
]

FILES_DIR = "files"
RUNS_DIR = "runs"
EVENTS_DIR = "events"
POINTER = "_latest.json"
_SNAP_RE = re.compile(r"^snapshot-(\d{12,})\.parquet$")
_ROW_GROUP_ROWS = 64 * 1024


# StatsNotFoundError: no committed snapshot at the stats location (stats never collected, or a wrong location).
# ConcurrentChangeError: another collection run committed the same snapshot id first. Both live in
# airflow_zorder.core.errors; the old name StatsConflictError still answers, with a DeprecationWarning.
__getattr__ = deprecated_aliases(__name__, {"StatsConflictError": ConcurrentChangeError})


def snapshot_path(location: str, snapshot_id: int) -> str:
    """Path of a snapshot's file under ``location``."""
    return join(location, FILES_DIR, f"snapshot-{int(snapshot_id):012d}.parquet")


def run_file_name(run: Mapping[str, Any]) -> str:
    """``run-<collected_at as YYYYmmddTHHMMSSffffffZ>-<run_id>.json``: names sort by time."""
    return f"run-{_stamp(run.get('collected_at'))}-{_safe(run.get('run_id') or 'run')}.json"


def _event_file_name(event: Mapping[str, Any]) -> str:
    return f"event-{_stamp(event.get('at'))}-{_safe(event.get('run_id') or uuid.uuid4().hex[:8])}.json"


def _safe(s: Any) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", str(s))[:120]


def _stamp(ts: Any) -> str:
    t = as_datetime(ts) or dt.datetime.now(dt.UTC)
    return t.astimezone(dt.UTC).strftime("%Y%m%dT%H%M%S%fZ")


def as_datetime(ts: Any) -> dt.datetime | None:
    """An aware UTC datetime from what records hold: datetime (naive = UTC), epoch seconds, ISO text, Arrow scalar.

    None (or empty text) gives None.
    """
    if isinstance(ts, pa.Scalar):
        ts = ts.as_py()
    if ts is None or (isinstance(ts, str) and not ts.strip()):
        return None
    if isinstance(ts, dt.datetime):
        return ts if ts.tzinfo else ts.replace(tzinfo=dt.UTC)
    if isinstance(ts, (int, float)):
        return dt.datetime.fromtimestamp(float(ts), dt.UTC)
    s = str(ts).strip().replace(" ", "T")
    if s.endswith("Z"):
        s = s[:-1] + "+00:00"
    t = dt.datetime.fromisoformat(s)
    return t if t.tzinfo else t.replace(tzinfo=dt.UTC)


def iso_utc(ts: Any = None) -> str:
    """``YYYY-mm-ddTHH:MM:SS.ffffffZ`` (what the JSON records hold; parsed by Spark, DuckDB and pyarrow)."""
    t = as_datetime(ts) or dt.datetime.now(dt.UTC)
    return t.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


# --------------------------------------------------------------------------
# Storage access: the one I/O seam (``filesystem_for``), plus pyarrow's readers
# --------------------------------------------------------------------------


def _open(location: str | os.PathLike[str], filesystem: Any) -> tuple[FileSystem, str]:
    """The location's filesystem, from the one I/O seam given what the caller holds, and the location as text."""
    location = os.fspath(location)
    return filesystem_for(location, filesystem=filesystem), location


def _list_names(fs: FileSystem, directory: str) -> list[str]:
    """Names of the files directly in ``directory`` (hidden ``.``/``_`` names excluded), sorted; [] if missing.

    pyarrow lists the directory's children where it opens it itself (one request; a directory's marker blob on
    ABFS is not taken for the directory), else the filesystem does.
    """
    opened = _pyarrow_path(fs, directory)
    if opened is None:
        names = [f.path.rstrip("/").rsplit("/", 1)[-1] for f in fs.list_files(directory, recursive=False)]
    else:
        handle, where = opened
        sel = pafs.FileSelector(where, allow_not_found=True, recursive=False)
        names = [i.base_name for i in handle.get_file_info(sel) if i.type == pafs.FileType.File]
    return sorted(n for n in names if not n.startswith((".", "_")))


def _publish(fs: FileSystem, path: str, data: bytes) -> None:
    """Create ``path`` complete or absent, never over an existing file; FileExistsError if it exists.

    The filesystem's exclusive create: a local hard link, HDFS's rename, S3's conditional PUT through Hadoop;
    pyarrow's filesystems can only check, then PUT. A rename would be a copy on object stores, whose existence
    check and copy two collectors could interleave.
    """
    if not fs.create_exclusive(path, data):
        raise FileExistsError(path)


def _pyarrow_path(fs: FileSystem, path: str) -> tuple[Any, str] | None:
    """Where pyarrow opens ``path`` itself (ranged reads, row groups filtered): ``(pyarrow filesystem, path in
    it)``; None on a store reached through the Spark driver's Hadoop, whose bytes come through py4j."""
    if isinstance(fs, HadoopFileSystem) and os_path(fs, path) is None:
        return None
    handle, where = fs.arrow(path)
    return (handle if handle is not None else pafs.LocalFileSystem()), where


def _read_parquet(fs: FileSystem, path: str, filters: Any = None) -> pa.Table:
    """One Parquet file as a table (optionally with pyarrow ``filters``)."""
    opened = _pyarrow_path(fs, path)
    if opened is None:
        return pq.read_table(pa.BufferReader(fs.read_bytes(path)), filters=filters)
    handle, where = opened
    return pq.read_table(where, filesystem=handle, filters=filters)


def _read_json_lines(fs: FileSystem, directory: str, schema: pa.Schema) -> pa.Table:
    """All JSON-lines files directly in ``directory`` as one table with ``schema``."""
    opened = _pyarrow_path(fs, directory)
    if opened is None:
        names = [n for n in _list_names(fs, directory) if n.endswith(".json")]
        return _parse_json_lines([fs.read_bytes(join(directory, n)).rstrip(b"\n") for n in names], schema)
    handle, where = opened
    if handle.get_file_info(where).type == pafs.FileType.NotFound:  # the directory first: a refusal names the path
        return schema.empty_table()
    names = [n for n in _list_names(fs, directory) if n.endswith(".json")]
    if not names:
        return schema.empty_table()
    import pyarrow.dataset as ds

    fmt = ds.JsonFileFormat(parse_options=_json_options(schema))
    return ds.dataset([join(where, n) for n in names], format=fmt, schema=schema, filesystem=handle).to_table()


def _json_options(schema: pa.Schema) -> pajson.ParseOptions:
    """The records' JSON read with ``schema``; fields it does not name (a newer writer's) are ignored."""
    return pajson.ParseOptions(explicit_schema=schema, unexpected_field_behavior="ignore")


def _parse_json_lines(chunks: list[bytes], schema: pa.Schema) -> pa.Table:
    chunks = [c for c in chunks if c.strip()]
    if not chunks:
        return schema.empty_table()
    t = pajson.read_json(pa.BufferReader(b"\n".join(chunks) + b"\n"), parse_options=_json_options(schema))
    return t.select(schema.names).cast(schema)


# --------------------------------------------------------------------------
# Snapshots
# --------------------------------------------------------------------------


def _snapshot_ids(fs: FileSystem, base: str) -> list[int]:
    out = []
    for name in _list_names(fs, join(base, FILES_DIR)):
        m = _SNAP_RE.match(name)
        if m:
            out.append(int(m.group(1)))
    return sorted(out)


def _read_pointer(fs: FileSystem, base: str) -> dict[str, Any] | None:
    try:
        return json.loads(fs.read_text(join(base, POINTER)))
    except FileNotFoundError:
        return None
    except (ValueError, OSError):
        return None  # unreadable pointer: fall back to listing


def list_snapshots(location: str, filesystem: Any = None) -> list[int]:
    """Ids of the snapshots present (kept by the retention), ascending."""
    fs, location = _open(location, filesystem)
    return _snapshot_ids(fs, location)


def _latest_id(fs: FileSystem, base: str) -> int | None:
    ptr = _read_pointer(fs, base)
    if ptr is None or not isinstance(ptr.get("snapshot_id"), int):
        ids = _snapshot_ids(fs, base)
        return ids[-1] if ids else None
    n = int(ptr["snapshot_id"])
    while fs.exists(snapshot_path(base, n + 1)):  # committed after the pointer was written (crash window)
        n += 1
    return n


def latest_snapshot_id(location: str, filesystem: Any = None) -> int | None:
    """The newest committed snapshot's id, or ``None`` when stats were never collected there."""
    fs, location = _open(location, filesystem)
    return _latest_id(fs, location)


def load_snapshot(
    location: str, snapshot_id: int, filesystem: Any = None, columns: Sequence[str] | None = None
) -> pa.Table:
    """One snapshot's rows (all, or only those of ``columns``)."""
    fs, location = _open(location, filesystem)
    return _load(fs, location, snapshot_id, columns)


def _load(fs: FileSystem, base: str, snapshot_id: int, columns: Sequence[str] | None) -> pa.Table:
    filters = None
    if columns is not None:
        cols = [columns] if isinstance(columns, str) else list(columns)
        filters = [("column_name", "in", cols)]
    try:
        t = _read_parquet(fs, snapshot_path(base, snapshot_id), filters)
    except FileNotFoundError as exc:
        raise StatsNotFoundError(f"snapshot {snapshot_id} not found under {base}") from exc
    return _conform(t)


def _conform(t: pa.Table) -> pa.Table:
    """Cast to the current :data:`FILE_STATS_SCHEMA` (adds missing nullable fields as nulls)."""
    rows = ss.file_stats_table({name: t[name] for name in t.column_names}, t.num_rows)
    return rows.replace_schema_metadata(t.schema.metadata or ss.FILE_STATS_SCHEMA.metadata)


def load_latest(location: str, filesystem: Any = None, columns: Sequence[str] | None = None) -> pa.Table:
    """The latest snapshot of a table's stats (one row per live file and column).

    ``location``: the stats location (see :func:`default_location`), local
    path or URI.  ``columns``: only these columns' rows (read with row-group
    filtering; rows are stored sorted by column).  Raises
    :class:`StatsNotFoundError` if nothing was ever committed there.  The
    snapshot's run record is in ``table.schema.metadata[RUN_METADATA_KEY]``
    (JSON).
    """
    fs, location = _open(location, filesystem)
    sid = _latest_id(fs, location)
    if sid is None:
        raise StatsNotFoundError(
            f"no statistics at {location}: run the stats collection job (spark_jobs/collect_stats.py) first"
        )
    return _load(fs, location, sid, columns)


def check_writable(location: str, filesystem: Any = None) -> None:
    """Create the stats directories and write/delete a probe file; OSError with a clear message if impossible."""
    fs, location = _open(location, filesystem)
    probe = join(location, FILES_DIR, f".probe-{uuid.uuid4().hex}")
    try:
        for d in (FILES_DIR, RUNS_DIR):
            fs.mkdirs(join(location, d))
        fs.write_atomic(probe, b"probe")
        fs.delete(probe)
    except Exception as exc:  # noqa: BLE001 - one clear message for every store
        raise PermissionError(f"stats location {location} is not writable: {type(exc).__name__}: {exc}") from exc


def _snapshot_bytes(rows: pa.Table, run: Mapping[str, Any]) -> bytes:
    meta = dict(ss.FILE_STATS_SCHEMA.metadata)
    meta[ss.RUN_METADATA_KEY] = json.dumps(run, default=str).encode()
    t = rows.replace_schema_metadata(meta)
    sink = pa.BufferOutputStream()
    pq.write_table(t, sink, compression="zstd", row_group_size=_ROW_GROUP_ROWS, write_statistics=True)
    return sink.getvalue().to_pybytes()


def _sorted_rows(rows: pa.Table, snapshot_id: int) -> pa.Table:
    rows = _conform(rows)
    idx = rows.schema.get_field_index("snapshot_id")
    rows = rows.set_column(
        idx, ss.FILE_STATS_SCHEMA.field("snapshot_id"), pa.array([snapshot_id] * rows.num_rows, pa.int64())
    )
    if rows.num_rows:
        rows = rows.sort_by([("column_name", "ascending"), ("path", "ascending")])
    return rows


def _write_run_record(fs: FileSystem, base: str, run: Mapping[str, Any]) -> str:
    path = join(base, RUNS_DIR, run_file_name(run))
    fs.write_atomic(path, json.dumps(run, default=str, separators=(",", ":")) + "\n")
    return path


def _write_pointer(fs: FileSystem, base: str, run: Mapping[str, Any], snapshot_id: int) -> None:
    ptr = {
        "schema_version": ss.SCHEMA_VERSION,
        "snapshot_id": snapshot_id,
        "file": f"{FILES_DIR}/snapshot-{snapshot_id:012d}.parquet",
        "run_id": run.get("run_id"),
        "table_name": run.get("table_name"),
        "collected_at": run.get("collected_at"),
    }
    fs.write_atomic(join(base, POINTER), json.dumps(ptr, default=str) + "\n")


def repair(location: str, filesystem: Any = None) -> list[int]:
    """Finish commits interrupted after step 1: rebuild missing run records and the pointer.

    Returns the snapshot ids whose run record was rebuilt.  Called by the
    writers before they commit; safe to call any time.
    """
    fs, location = _open(location, filesystem)
    return _repair(fs, location)


def _repair(fs: FileSystem, base: str) -> list[int]:
    ids = _snapshot_ids(fs, base)
    if not ids:
        return []
    ptr = _read_pointer(fs, base)
    ptr_id = ptr.get("snapshot_id") if ptr else None
    if isinstance(ptr_id, int) and ptr_id >= ids[-1]:
        return []
    fixed = []
    runs = set(_list_names(fs, join(base, RUNS_DIR)))
    run = None
    for sid in [i for i in ids if not isinstance(ptr_id, int) or i > ptr_id]:
        md = pq.read_schema(pa.BufferReader(fs.read_bytes(snapshot_path(base, sid)))).metadata or {}
        raw = md.get(ss.RUN_METADATA_KEY)
        if raw is None:
            continue
        run = json.loads(raw)
        if run_file_name(run) not in runs:
            _write_run_record(fs, base, run)
            fixed.append(sid)
    _write_pointer(fs, base, run or {}, ids[-1])
    return fixed


def write_snapshot(
    location: str,
    rows: pa.Table,
    run: dict[str, Any],
    filesystem: Any = None,
    keep_snapshots: int | None = None,
) -> int:
    """Commit a complete snapshot (see the module doc) and return its id.

    ``rows``: FILE_STATS_SCHEMA rows (``snapshot_id`` is set here; missing
    nullable fields become null).  ``run``: the run record (RUNS_SCHEMA keys);
    ``snapshot_id``, ``new_snapshot``, ``previous_snapshot_id``,
    ``schema_version`` and ``collected_at`` (if absent) are filled in.
    ``keep_snapshots``: delete snapshot files older than the newest N after
    committing (run records are always kept); ``None``/0 keeps all.
    """
    fs, location = _open(location, filesystem)
    _repair(fs, location)
    ids = _snapshot_ids(fs, location)
    prev = ids[-1] if ids else None
    sid = (prev or 0) + 1
    run = dict(run)
    run["collected_at"] = iso_utc(run.get("collected_at"))  # a datetime must not break the pointer after the commit
    run.update(snapshot_id=sid, new_snapshot=True, previous_snapshot_id=prev, schema_version=ss.SCHEMA_VERSION)
    data = _snapshot_bytes(_sorted_rows(rows, sid), run)
    fs.mkdirs(join(location, FILES_DIR))
    fault_point("stats_before_publish")
    try:
        _publish(fs, snapshot_path(location, sid), data)  # ---- COMMIT POINT ----
    except FileExistsError as exc:
        raise ConcurrentChangeError(
            f"snapshot {sid} at {location} was committed by another collection run meanwhile; run again"
        ) from exc
    fault_point("stats_after_publish")
    _write_run_record(fs, location, run)
    fault_point("stats_after_run_record")
    _write_pointer(fs, location, run, sid)
    if keep_snapshots and keep_snapshots > 0:
        for old in ids:
            if old <= sid - keep_snapshots:
                fs.delete(snapshot_path(location, old))
                fault_point("stats_mid_prune")
    return sid


def write_run(location: str, run: dict[str, Any], filesystem: Any = None) -> None:
    """Record a run that committed no new snapshot (nothing changed): the latest snapshot stands."""
    fs, location = _open(location, filesystem)
    _repair(fs, location)
    run = dict(run)
    run.setdefault("collected_at", iso_utc())
    sid = _latest_id(fs, location)
    run.update(snapshot_id=sid, new_snapshot=False, previous_snapshot_id=sid, schema_version=ss.SCHEMA_VERSION)
    fs.mkdirs(join(location, RUNS_DIR))
    _write_run_record(fs, location, run)


# --------------------------------------------------------------------------
# History
# --------------------------------------------------------------------------


def load_runs(location: str, filesystem: Any = None) -> pa.Table:
    """Every collection run's record (RUNS_SCHEMA), oldest first."""
    fs, location = _open(location, filesystem)
    t = _read_json_lines(fs, join(location, RUNS_DIR), ss.RUNS_SCHEMA)
    if t.num_rows:
        t = t.sort_by([("collected_at", "ascending"), ("run_id", "ascending")])
    return t


def latest_run(location: str, filesystem: Any = None) -> dict[str, Any] | None:
    """The newest collection run's record (a dict), or ``None``: one listing and one small read.

    Run file names sort by time, so this does not read the whole history; a run that found nothing new
    still confirms the latest snapshot is current (``collected_at`` is when the table was last checked).
    """
    fs, location = _open(location, filesystem)
    names = [n for n in _list_names(fs, join(location, RUNS_DIR)) if n.startswith("run-") and n.endswith(".json")]
    for name in sorted(names, reverse=True):
        try:
            lines = fs.read_text(join(location, RUNS_DIR, name)).strip().splitlines()
            if lines:
                return json.loads(lines[-1])
        except (FileNotFoundError, ValueError):
            continue  # removed or half-written meanwhile: the one before
    return None


def load_history(location: str, filesystem: Any = None) -> pa.Table:
    """The collection runs over time: one record per run (RUNS_SCHEMA), oldest first.

    Each run's ``snapshot_id`` names the snapshot it left; the clustering
    summary of those snapshots is :func:`airflow_zorder.core.policy.history.clustering_history`.
    Events (e.g. re-clustering runs) are in :func:`load_events`.  The same rows as :func:`load_runs`.
    """
    return load_runs(location, filesystem)


# --------------------------------------------------------------------------
# Events
# --------------------------------------------------------------------------

_EVENT_INT_FIELDS = ("files_before", "files_after", "rows_before", "rows_after", "bytes_before", "bytes_after")


def record_event(location: str, event: Mapping[str, Any], filesystem: Any = None) -> str:
    """Append an event (EVENTS_SCHEMA keys; ``kind`` required) to the stats location; returns its path.

    ``filesystem`` as everywhere here (e.g. the clustering job's ``HadoopFileSystem``).  ``at`` defaults to now.
    Unknown keys are moved into ``details`` (JSON) so nothing is lost.
    """
    if not event.get("kind"):
        raise ValueError("an event needs a 'kind' (e.g. 'cluster')")
    fs, location = _open(location, filesystem)
    known = set(ss.EVENTS_SCHEMA.names)
    rec: dict[str, Any] = {k: v for k, v in event.items() if k in known}
    extra = {k: v for k, v in event.items() if k not in known}
    details = rec.get("details")
    if isinstance(details, (dict, list)):
        details = json.dumps(details, default=str)
    if extra:
        merged = json.loads(details) if isinstance(details, str) and details.startswith("{") else {}
        merged.update(extra)
        details = json.dumps(merged, default=str)
    rec["details"] = details
    rec["at"] = iso_utc(rec.get("at"))
    rec["schema_version"] = ss.SCHEMA_VERSION
    for k in _EVENT_INT_FIELDS:
        if rec.get(k) is not None:
            rec[k] = int(rec[k])
    for k in ("columns", "partitions"):
        if rec.get(k) is not None:
            rec[k] = [str(x) for x in rec[k]]
    path = join(location, EVENTS_DIR, _event_file_name(rec))
    fs.mkdirs(join(location, EVENTS_DIR))
    fs.write_atomic(path, json.dumps(rec, default=str, separators=(",", ":")) + "\n")
    return path


def cluster_event(result: Mapping[str, Any]) -> dict[str, Any]:
    """The event for a clustering job result (``spark_jobs.cluster_table.run_cluster``'s dict)."""
    before = result.get("before") or {}
    after = result.get("after") or {}
    parts = [p.get("partition") if isinstance(p, Mapping) else str(p) for p in result.get("partitions") or []]
    parts = list(dict.fromkeys(parts))  # an incremental run's bins share their partition
    # ``rewritten``: the files and bytes the run rewrote (the UI's write amplification); under the table's kind
    # (e.g. ``delta``): the version it read and the one it committed (the table's state before and after the run)
    keys = ("kind", "mode", "plan", "rewritten", "partition_columns", "phases", "skipped", "messages")
    details = {k: result.get(k) for k in (*keys, str(result.get("kind"))) if result.get(k)}
    return {
        "kind": "cluster",
        "run_id": result.get("run_id"),
        "table_name": result.get("table"),
        "at": iso_utc(),
        "status": result.get("status"),
        "columns": list(result.get("columns") or []),
        "curve": result.get("curve"),
        "partitions": parts,
        "files_before": before.get("files"),
        "files_after": after.get("files"),
        "rows_before": before.get("rows"),
        "rows_after": after.get("rows"),
        "bytes_before": before.get("bytes"),
        "bytes_after": after.get("bytes"),
        "duration_s": result.get("duration_s"),
        "details": json.dumps(details, default=str),
    }


def load_events(location: str, filesystem: Any = None, kind: str | None = None) -> pa.Table:
    """Events (EVENTS_SCHEMA), oldest first; only those of ``kind`` if given."""
    fs, location = _open(location, filesystem)
    t = _read_json_lines(fs, join(location, EVENTS_DIR), ss.EVENTS_SCHEMA)
    if kind is not None and t.num_rows:
        t = t.filter(pc.equal(t["kind"], kind))
    if t.num_rows:
        t = t.sort_by([("at", "ascending")])
    return t


# --------------------------------------------------------------------------
# Change signal
# --------------------------------------------------------------------------


def change_signal(location: str, filesystem: Any = None, *, ignore_run_id: str | None = None) -> dict[str, Any]:
    """A cheap marker of everything a health decision depends on: three listings, names only, no content read.

    ``snapshot_id``: the newest snapshot file's id (the SQL view's ``max(snapshot_id)``; None: never
    collected); ``last_run``: the newest run record's name (a run that found nothing new still makes the
    stats younger); ``events`` / ``last_event``: how many event files there are and the newest one's name
    (a re-clustering moves the anti-thrash guards).  Events recorded under ``ignore_run_id`` (a watcher's
    own decisions: ``recluster_policy.record_decision``'s ``source``) are not counted, so recording a decision is not
    a change.  Two equal signals: nothing a decision depends on changed in between.  JSON-serialisable.
    """
    fs, location = _open(location, filesystem)
    ids = _snapshot_ids(fs, location)
    runs = [n for n in _list_names(fs, join(location, RUNS_DIR)) if n.startswith("run-") and n.endswith(".json")]
    own = f"{_safe(ignore_run_id)}.json" if ignore_run_id else None
    events = [
        n
        for n in _list_names(fs, join(location, EVENTS_DIR))
        if n.startswith("event-") and n.endswith(".json") and not (own and n.split("-", 2)[-1] == own)
    ]
    return {
        "snapshot_id": ids[-1] if ids else None,
        "last_run": max(runs, default=None),
        "events": len(events),
        "last_event": max(events, default=None),
    }
