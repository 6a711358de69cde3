"""A Hudi table's truth as this package reads it: ``hoodie.properties``, the timeline's instants, the latest file slices.

The table config and the instant files (requested, inflight, completed) are read through the package's I/O seam,
so a pending clustering or an inflight commit is seen on any store; the latest file slices of the latest completed
instant come from hudi-rs (the ``hudi`` package), which reads table versions 6, 8 and 9 and the metadata table's
``files`` partition. No JVM, no Spark: the hook, the sensor and the UI read a Hudi table with this module.

Timeline layouts: table version 6 keeps instants in ``.hoodie/`` (``<ts>.<action>`` when completed); versions 8 and
9 in ``.hoodie/timeline/`` (``<ts>_<completion ts>.<action>``). Requested and inflight instants are
``<ts>.<action>.requested`` and ``<ts>.<action>.inflight`` (a commit's inflight is ``<ts>.inflight``); version 8
names a pending clustering ``<ts>.clustering.*`` and completes it as a ``replacecommit``.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from airflow_zorder.core.errors import HudiRewriteRefusedError, TableError, ZorderError
from airflow_zorder.core.storage.io import FileSystem
from airflow_zorder.core.storage.io.paths import join

__all__ = [
    "META_DIR",
    "READABLE_VERSIONS",
    "FileSlice",
    "Instant",
    "instant_time",
    "pending_instants",
    "timeline_instants",
    "read_properties",
    "timeline_dir",
]

META_DIR = ".hoodie"
READABLE_VERSIONS = (6, 8, 9)  # the table versions hudi-rs 0.5 reads
META_COLUMN_PREFIX = "_hoodie_"  # Hudi's meta columns in every base file (commit time, record key, file name, ...)
_INSTANT = re.compile(r"^(\d{14,17})(?:_(\d{14,17}))?\.([a-z]+)(?:\.(requested|inflight))?$")


@dataclass(frozen=True)
class Instant:
    """One instant of the timeline as its file names say: timestamp, action, state."""

    timestamp: str
    action: str  # commit, deltacommit, replacecommit, clustering, compaction, clean, rollback, ...
    state: str  # "requested" | "inflight" | "completed"


@dataclass(frozen=True)
class FileSlice:
    """The latest slice of one file group: its base file (path relative to the base path) and its log files."""

    partition: str  # Hudi's partition path ("" when unpartitioned)
    file_id: str
    base_file: str  # relative to the table's base path
    size: int
    instant: str  # the base file's commit time
    log_files: int


def read_properties(fs: FileSystem, root: str) -> dict[str, str]:
    """``.hoodie/hoodie.properties`` as a dict (Java properties: ``k=v`` lines, ``#`` comments)."""
    path = join(root, META_DIR, "hoodie.properties")
    try:
        text = fs.read_bytes(path).decode("utf-8")
    except FileNotFoundError as exc:
        raise TableError(
            f"{root} has {META_DIR}/ but no {META_DIR}/hoodie.properties: not a complete Hudi table (an interrupted "
            "create?). Point the task at a Hudi table's base path."
        ) from exc
    props: dict[str, str] = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith(("#", "!")) or "=" not in line:
            continue
        key, value = line.split("=", 1)
        props[key.strip()] = value.strip().replace("\\:", ":").replace("\\=", "=")
    return props


def table_version(props: Mapping[str, str]) -> int:
    """``hoodie.table.version`` (tables written before versions were recorded: 0)."""
    try:
        return int(props.get("hoodie.table.version", "0"))
    except ValueError:
        return 0


def timeline_dir(root: str, props: Mapping[str, str]) -> str:
    """Where the active timeline's instant files live for this table version."""
    if table_version(props) >= 8:
        return join(root, META_DIR, props.get("hoodie.timeline.path", "timeline") or "timeline")
    return join(root, META_DIR)


def timeline_instants(fs: FileSystem, root: str, props: Mapping[str, str]) -> list[Instant]:
    """Every instant of the active timeline, by its files' names (one listing of the timeline directory): the
    completed ones, and those requested or inflight and not completed; ordered by timestamp."""
    states: dict[tuple[str, str], str] = {}
    completed: dict[str, str] = {}
    for f in fs.list_files(timeline_dir(root, props), recursive=False):
        m = _INSTANT.match(f.path.rsplit("/", 1)[-1])
        if m is None:
            continue
        ts, done, action, state = m.groups()
        if state is None:  # completed: "<ts>_<done>.<action>" (v8+) or "<ts>.<action>" (v6)
            completed[ts] = action if done is None else f"{action}@{done}"
            continue
        if action == "inflight":  # "<ts>.inflight": a commit's inflight file
            action, state = "commit", "inflight"
        key = (ts, action)
        if states.get(key) != "inflight":
            states[key] = state
    out = [Instant(ts, a, "completed") for ts, a in completed.items()]
    out += [Instant(ts, a, s) for (ts, a), s in states.items() if ts not in completed]
    return sorted(out, key=lambda i: (i.timestamp, i.state != "completed"))


def pending_instants(fs: FileSystem, root: str, props: Mapping[str, str]) -> list[Instant]:
    """Instants requested or inflight and not completed, oldest first."""
    return [i for i in timeline_instants(fs, root, props) if i.state != "completed"]


def instant_time(timestamp: str, props: Mapping[str, str]) -> dt.datetime | None:
    """An instant's timestamp (``yyyyMMddHHmmss[SSS]``) as a UTC datetime (in the table's timeline time zone)."""
    try:
        t = dt.datetime.strptime(timestamp[:14], "%Y%m%d%H%M%S")
    except ValueError:
        return None
    if len(timestamp) > 14:
        t = t.replace(microsecond=int(timestamp[14:17].ljust(3, "0")) * 1000)
    if props.get("hoodie.table.timeline.timezone", "LOCAL").upper() == "UTC":
        return t.replace(tzinfo=dt.UTC)
    return t.astimezone(dt.UTC)  # LOCAL: the writer's local time; this process's zone stands in for it


@contextlib.contextmanager
def hudi_rs_errors(root: str) -> Iterator[None]:
    """hudi-rs's own errors as a :class:`TableError` naming the table and what to check."""
    try:
        yield
    except ZorderError:
        raise
    except BaseException as exc:  # hudi-rs raises HudiCoreError, OSError, and pyo3's PanicException (a BaseException)
        if not isinstance(exc, Exception) and type(exc).__name__ != "PanicException":
            raise  # KeyboardInterrupt, SystemExit, a simulated crash
        if type(exc).__name__ == "PanicException":
            raise TableError(
                f"hudi-rs cannot read Hudi table {root}: it stopped with '{exc}' while mapping the table's Avro schema "
                f"to Arrow (hudi-rs {_hudi_rs_version()} has no mapping for some Avro types, e.g. local-timestamp-micros, which Spark writes for TIMESTAMP_NTZ columns). The table "
                "was not touched; this provider reads Hudi tables through hudi-rs, so it can watch this one once "
                "hudi-rs maps that type (or once that column is stored as a type it maps, e.g. TIMESTAMP)"
            ) from exc
        raise TableError(
            f"cannot read Hudi table {root} with hudi-rs: {exc}. Check that the path is the table's base path (the "
            "directory holding .hoodie/), that the credentials reach it, and that a Hudi writer completed a commit"
        ) from exc


def _hudi_rs_version() -> str:
    try:
        from importlib.metadata import version

        return version("hudi")
    except Exception:  # noqa: BLE001 - only for the message
        return "?"


def open_hudi_rs(root: str, storage_options: Mapping[str, str] | None) -> Any:
    """hudi-rs's table at ``root`` (``storage_options``: object_store's keys, as delta-rs takes them)."""
    from hudi import HudiTableBuilder

    with hudi_rs_errors(root):
        builder = HudiTableBuilder.from_base_uri(root)
        if storage_options:
            builder = builder.with_storage_options(dict(storage_options))
        return builder.build()


def latest_commit(rs_table: Any, root: str) -> int:
    """The latest completed instant's timestamp (0: no commit completed yet)."""
    with hudi_rs_errors(root):
        latest = rs_table.get_timeline().get_latest_commit_timestamp()
    return int(latest) if latest else 0


def data_columns(rs_table: Any, root: str) -> list[str]:
    """The table's columns in schema order, Hudi's meta columns left out."""
    with hudi_rs_errors(root):
        schema = rs_table.get_schema()
    return [f.name for f in schema if not f.name.startswith(META_COLUMN_PREFIX)]


def latest_slices(rs_table: Any, root: str) -> list[FileSlice]:
    """The latest file slice of every file group, as of the latest completed instant."""
    out = []
    with hudi_rs_errors(root):
        slices = rs_table.get_file_slices()
    for s in slices:
        out.append(
            FileSlice(
                s.partition_path or "",
                s.file_id,
                s.base_file_relative_path(),
                int(s.base_file_size),
                str(s.creation_instant_time),
                len(s.log_file_names) if s.has_log_files() else 0,
            )
        )
    return out


def check_readable(props: Mapping[str, str], root: str) -> None:
    """Refuse a table version hudi-rs cannot read, or base files that are not Parquet (nothing touched)."""
    version = table_version(props)
    if version not in READABLE_VERSIONS:
        raise HudiRewriteRefusedError(
            f"Hudi table {root} is at table version {version}; this provider reads versions "
            f"{', '.join(map(str, READABLE_VERSIONS))} (through hudi-rs). Upgrade the table with Hudi's own "
            "upgrade (a write with a Hudi 0.14+ or 1.x writer upgrades it), then run again."
        )
    base = props.get("hoodie.table.base.file.format", "PARQUET").upper()
    if base != "PARQUET":
        raise HudiRewriteRefusedError(
            f"Hudi table {root} keeps its base files as {base}; this provider reads Parquet base files only."
        )
