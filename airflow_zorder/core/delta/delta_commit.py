"""A clustering rewrite of a Delta Lake table, committed as one Delta transaction through delta-rs.

The clustering job writes its files into the table location, where Delta readers do not see them: a
Delta table is the files its log lists.  The rewrite becomes visible all at once when
:func:`commit_rewrite` commits one transaction that removes each input file and adds each new one, all
with ``dataChange = false`` (a layout change: streaming readers and change feeds see no new data), the
new files with per-file statistics computed from their footers (:func:`file_stats`) and the run in the
commit's custom metadata (``DeltaTable.history()`` shows it).

delta-rs checks the commit against every version committed since the snapshot the job read: an append
commits after ours (its rows are kept); a delete, update or overwrite that removed one of our input files
makes our commit fail with :class:`~airflow_zorder.core.errors.ConcurrentChangeError`, after which the staged files are deleted
(:func:`delete_files`) and the table is as the other writer left it.

:func:`check_rewritable` refuses, before anything is written, what a rewrite of data files cannot do
safely yet: deletion vectors (the rows they delete would come back), column mapping (physical column names
differ from the schema's) and reader or writer features outside :data:`SUPPORTED_FEATURES`.

Airflow-free and Spark-free; ``deltalake`` is imported when first needed.
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from airflow_zorder.core.delta.delta_log import (
    DEFAULT_STRING_PREFIX_LENGTH,
    deltalake_module,
    string_upper_bound,
)
from airflow_zorder.core.errors import (
    ConcurrentChangeError,
    DeltaRewriteRefusedError,
    deprecated_aliases,
)

_PURPOSE = "clustering a Delta Lake table"
# Table features a rewrite of whole data files with dataChange=false keeps valid (delta-rs writes them too).
SUPPORTED_FEATURES = frozenset(
    {
        "appendOnly",
        "invariants",
        "checkConstraints",
        "changeDataFeed",
        "generatedColumns",
        "timestampNtz",
        "domainMetadata",
        "v2Checkpoint",
        "vacuumProtocolCheck",
        "inCommitTimestamp",
    }
)
DEFAULT_NUM_INDEXED_COLS = 32  # delta.dataSkippingNumIndexedCols
METADATA_KEY = "zorder"  # custom commit metadata: {"zorder": {"curve": ..., "columns": ..., "run_id": ...}}
UTC = dt.UTC


# Another writer removed or replaced input files of the rewrite while it ran, so nothing was committed:
# ConcurrentChangeError (airflow_zorder.core.errors), the one name for it. The old name still answers, with a
# DeprecationWarning.
__getattr__ = deprecated_aliases(__name__, {"DeltaConcurrentChangeError": ConcurrentChangeError})


@dataclass(frozen=True)
class DeltaFile:
    """One data file of a Delta table: its path relative to the table root, as the log spells it."""

    path: str
    size: int
    partition_values: Mapping[str, str | None] = field(default_factory=dict)
    num_records: int | None = None
    mtime_ms: int = 0  # the add action's modificationTime


@dataclass(frozen=True)
class DeltaSnapshot:
    """The files of one version of a Delta table, read from its log (never from a listing)."""

    version: int
    files: tuple[DeltaFile, ...]
    partition_columns: tuple[str, ...]
    configuration: Mapping[str, str | None]


def open_table(table_uri: str, version: int | None = None, storage_options: Mapping[str, str] | None = None) -> Any:
    """``deltalake.DeltaTable`` at ``version`` (default: latest)."""
    dl = deltalake_module(_PURPOSE)
    return dl.DeltaTable(table_uri, version=version, storage_options=dict(storage_options) if storage_options else None)


def check_rewritable(table: Any) -> None:
    """Raise :class:`DeltaRewriteRefusedError` naming the feature when rewriting ``table``'s files is unsafe."""
    protocol = table.protocol()
    config = table.metadata().configuration or {}
    features = set(protocol.reader_features or ()) | set(protocol.writer_features or ())
    where = f"Delta table {table.table_uri}"
    if "deletionVectors" in features or str(config.get("delta.enableDeletionVectors", "")).lower() == "true":
        raise DeltaRewriteRefusedError(
            f"{where} uses deletion vectors: rewriting its files would bring deleted rows back. Purge them "
            "first (Delta Spark: REORG TABLE ... APPLY (PURGE)) and disable them "
            "(ALTER TABLE ... SET TBLPROPERTIES ('delta.enableDeletionVectors' = 'false')); the table is untouched"
        )
    mode = str(config.get("delta.columnMapping.mode") or "none").lower()
    if mode != "none":
        raise DeltaRewriteRefusedError(
            f"{where} uses column mapping (delta.columnMapping.mode = {mode}): its files' physical column names "
            "differ from the schema's, which the rewrite does not translate yet; the table is untouched"
        )
    unsupported = sorted(features - SUPPORTED_FEATURES - {"columnMapping"})
    if unsupported:
        raise DeltaRewriteRefusedError(
            f"{where} uses table features the rewrite does not support: {', '.join(unsupported)} "
            f"(supported: {', '.join(sorted(SUPPORTED_FEATURES))}); the table is untouched"
        )
    if protocol.min_reader_version > 3 or protocol.min_writer_version > 7:
        raise DeltaRewriteRefusedError(
            f"{where} needs Delta protocol reader {protocol.min_reader_version} / writer "
            f"{protocol.min_writer_version}, newer than this provider knows; the table is untouched"
        )


def read_snapshot(table: Any) -> DeltaSnapshot:
    """The live files of ``table``'s loaded version with their partition values, from the log."""
    import pyarrow as pa

    meta = table.metadata()
    parts = tuple(meta.partition_columns or ())
    adds = pa.table(table.get_add_actions(flatten=True))
    cols = set(adds.column_names)
    rows = adds.to_pylist()
    # as the log's stats rows spell it (``delta_log``): the action's timestamp as its integer (ms)
    mtimes = (
        [int(m or 0) for m in adds["modification_time"].cast(pa.int64()).to_pylist()]
        if "modification_time" in cols
        else [0] * len(rows)
    )
    files = tuple(
        DeltaFile(
            path=r["path"],
            size=int(r["size_bytes"]),
            partition_values={p: _partition_text(r.get(f"partition.{p}")) for p in parts},
            num_records=int(r["num_records"]) if "num_records" in cols and r["num_records"] is not None else None,
            mtime_ms=mtime,
        )
        for r, mtime in zip(rows, mtimes)
    )
    return DeltaSnapshot(
        version=int(table.version()), files=files, partition_columns=parts, configuration=dict(meta.configuration or {})
    )


def _partition_text(v: Any) -> str | None:
    """A partition value as the log's string (delta-rs returns typed values from ``get_add_actions``)."""
    if v is None:
        return None
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, dt.datetime):
        return v.strftime("%Y-%m-%d %H:%M:%S.%f") if v.microsecond else v.strftime("%Y-%m-%d %H:%M:%S")
    return str(v)


# --------------------------------------------------------------------------- per-file statistics


def indexed_columns(configuration: Mapping[str, str | None], data_columns: Sequence[str]) -> list[str]:
    """The columns Delta keeps statistics for: ``delta.dataSkippingStatsColumns``, else the first
    ``delta.dataSkippingNumIndexedCols`` (default 32; -1 = all) of the data columns."""
    listed = configuration.get("delta.dataSkippingStatsColumns")
    if listed:
        wanted = {c.strip().strip("`") for c in str(listed).split(",") if c.strip()}
        return [c for c in data_columns if c in wanted]
    n = int(configuration.get("delta.dataSkippingNumIndexedCols") or DEFAULT_NUM_INDEXED_COLS)
    return list(data_columns) if n < 0 else list(data_columns)[:n]


def _json_bound(v: Any, upper: bool) -> Any:
    """A footer bound as Delta's stats JSON spells it, or None where Delta keeps no usable bound."""
    if isinstance(v, bool) or isinstance(v, (bytes, bytearray)):
        return None
    if isinstance(v, int):
        return v
    if isinstance(v, float):
        return None if math.isnan(v) or math.isinf(v) else v
    if isinstance(v, dt.datetime):
        iso = v.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ") if v.tzinfo else v.strftime("%Y-%m-%dT%H:%M:%S.%f")
        return iso
    if isinstance(v, dt.date):
        return v.isoformat()
    if isinstance(v, decimal.Decimal):
        # JSON numbers travel as doubles in delta-rs: exact only up to 15 significant digits
        return float(v) if len(v.as_tuple().digits) <= 15 else None
    if isinstance(v, str):
        if len(v.encode("utf-16-le")) // 2 <= DEFAULT_STRING_PREFIX_LENGTH:
            return v
        prefix = v.encode("utf-16-le")[: 2 * DEFAULT_STRING_PREFIX_LENGTH].decode("utf-16-le", errors="ignore")
        return string_upper_bound(prefix) if upper else prefix
    return None


def file_stats(metadata: Any, columns: Sequence[str]) -> str:
    """Delta stats JSON (``numRecords``, ``minValues``, ``maxValues``, ``nullCount``) of one written file,
    from its Parquet footer (``pyarrow.parquet.FileMetaData``), for the top-level ``columns``."""
    wanted = set(columns)
    mins: dict[str, Any] = {}
    maxs: dict[str, Any] = {}
    nulls: dict[str, int] = {}
    complete: dict[str, bool] = {}
    for g in range(metadata.num_row_groups):
        rg = metadata.row_group(g)
        for i in range(rg.num_columns):
            chunk = rg.column(i)
            name = chunk.path_in_schema
            if name not in wanted:  # nested leaves ("a.b") and columns Delta keeps no stats for
                continue
            st = chunk.statistics
            if st is None or not st.has_null_count:
                complete[name] = False
                continue
            nulls[name] = nulls.get(name, 0) + int(st.null_count)
            if not st.has_min_max:
                if int(st.null_count) < chunk.num_values:
                    complete[name] = False
                continue
            complete.setdefault(name, True)
            lo, hi = st.min, st.max
            if name not in mins or lo < mins[name]:
                mins[name] = lo
            if name not in maxs or hi > maxs[name]:
                maxs[name] = hi
    min_json = {c: b for c, v in mins.items() if complete.get(c) and (b := _json_bound(v, upper=False)) is not None}
    max_json = {c: b for c, v in maxs.items() if complete.get(c) and (b := _json_bound(v, upper=True)) is not None}
    null_json = {c: n for c, n in nulls.items() if complete.get(c, True)}
    return json.dumps(
        {"numRecords": int(metadata.num_rows), "minValues": min_json, "maxValues": max_json, "nullCount": null_json},
        separators=(",", ":"),
    )


# --------------------------------------------------------------------------- the commit


def relative_path(table_root: str, file_path: str) -> str:
    """A file's path relative to the table root, as a Delta action names it (delta-rs percent-encodes it in
    the log and decodes it on read, so it is passed decoded)."""
    root = table_root.rstrip("/") + "/"
    if not file_path.startswith(root):
        raise ValueError(f"{file_path} is not inside the table {table_root}")
    return file_path[len(root) :]


def commit_rewrite(
    table: Any,
    removed: Sequence[DeltaFile],
    added: Sequence[tuple[DeltaFile, str]],
    run: Mapping[str, Any],
) -> int:
    """Commit one transaction: remove ``removed``, add ``added`` (file, stats JSON), all ``dataChange=false``.

    ``table`` is the ``DeltaTable`` at the version the rewrite read: delta-rs checks every later commit
    for conflicts.  ``run`` goes into the commit's custom metadata under :data:`METADATA_KEY`.  Returns the
    committed version; :class:`~airflow_zorder.core.errors.ConcurrentChangeError` when another writer removed an input file.
    """
    deltalake_module(_PURPOSE)
    from deltalake.exceptions import CommitFailedError
    from deltalake.transaction import AddAction, CommitProperties, RemoveAction

    now = int(dt.datetime.now(UTC).timestamp() * 1000)
    actions: list[Any] = [
        RemoveAction(
            path=f.path,
            data_change=False,
            deletion_timestamp=now,
            size=f.size,
            partition_values=dict(f.partition_values),
        )
        for f in removed
    ]
    actions += [
        AddAction(
            path=f.path,
            size=f.size,
            partition_values=dict(f.partition_values),
            modification_time=now,
            data_change=False,
            stats=stats,
        )
        for f, stats in added
    ]
    meta = table.metadata()
    marker = json.dumps(dict(run), sort_keys=True, default=str)
    props = CommitProperties(custom_metadata={METADATA_KEY: marker})
    read_version = int(table.version())
    try:
        table.create_write_transaction(
            actions,
            mode="append",
            schema=table.schema(),
            partition_by=list(meta.partition_columns or ()) or None,
            commit_properties=props,
        )
    except CommitFailedError as exc:
        raise ConcurrentChangeError(
            f"Delta table {table.table_uri}: another writer changed files this clustering run rewrote after "
            f"version {read_version} (a delete, update, merge or overwrite); the run's files were not committed. "
            f"Re-run the clustering on the new version. ({exc})"
        ) from exc
    version = committed_version(table, str(run.get("run_id", "")), read_version, marker)
    if version is not None:
        return version
    raise RuntimeError(
        f"Delta table {table.table_uri}: the clustering commit is not in the log after version {read_version}"
    )


def committed_version(table: Any, run_id: str, since_version: int, marker: str | None = None) -> int | None:
    """The version after ``since_version`` whose commit carries this run (its ``run_id``, or exactly
    ``marker``) in the custom metadata, or None: how a restarted run learns whether its commit landed."""
    table.update_incremental()
    for entry in table.history(limit=max(int(table.version()) - since_version, 0)):  # newest first
        raw = entry.get(METADATA_KEY)
        if raw is None:
            continue
        if marker is not None:
            if raw == marker:
                return int(entry["version"])
            continue
        try:
            if json.loads(raw).get("run_id") == run_id:
                return int(entry["version"])
        except (TypeError, ValueError, AttributeError):
            continue
    return None
