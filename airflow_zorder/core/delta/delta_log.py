"""Delta Lake tables watched through their log: per-file statistics straight from ``_delta_log/``, no Spark.

A Delta table's truth is its log (``DESIGN.md``, "Table formats"): the files of a version are the log's
``add`` actions, each with its row count and per-column ``minValues`` / ``maxValues`` / ``nullCount``.
:func:`snapshot_rows` turns them into the project's one stats row (:data:`stats_schema.FILE_STATS_SCHEMA`,
``method = "delta_log"``), so the metrics, the sensor's decision and the UI work on a Delta table exactly
as on a stats snapshot collected from Parquet footers.  The directory is never listed: files removed by a
delete or an overwrite but not vacuumed yet never appear.

Airflow-free and Spark-free; ``deltalake`` (delta-rs) is imported when first needed
(``pip install 'airflow-zorder[delta]'``).

What the rows hold, and where the log is not exact (every bound stays a valid bound):

* Files: the version's live files, with ``path`` (the table location joined with the log's relative,
  URI-decoded path), ``file_size``, ``file_mtime_ms`` (the add action's ``modificationTime``),
  ``file_rows`` = ``value_count`` = ``numRecords``.  ``partition_values`` come from the log's
  ``partitionValues``; ``partition`` spells them ``k=v/k2=v2`` in the table's partition column order,
  Hive-escaped as Spark names partition directories (a null value is ``__HIVE_DEFAULT_PARTITION__``).
* Columns: the table schema's non-partition columns.  A column the log has no statistics for (beyond
  ``delta.dataSkippingNumIndexedCols``, outside ``delta.dataSkippingStatsColumns``, or of a type Delta keeps
  no min/max for, such as binary) has ``has_stats`` false and ``reason = "not_in_delta_stats"``; a file
  without a stats entry ``"no_delta_stats"``; nested columns ``"nested_column"`` (as the footer reader).
  Such files "may match" every query: the metrics never prune them.
* Text encoding: :func:`value_order.bounds_to_text`, the footer reader's own, on the column's Arrow type
  (``arrow_type`` as the footer reader names it); keys and numbers: :func:`stats_schema.bound_columns`.
  Floats as the footer reader: NaN bounds are missing (``"nan_in_stats"``), a zero min is ``-0.0`` and a
  zero max ``+0.0``.
* Strings: Delta Spark truncates string statistics to a prefix of 32 UTF-16 code units (its default
  ``spark.databricks.delta.stats.skipping.string.prefixLength``) and appends a tie-breaker to the max; older
  versions append U+FFFD, which is not an upper bound in UTF-8 (byte) order when the cut character lies above
  U+FFFF.  delta-rs copies parquet-rs's 64-byte truncated statistics (prefix min, incremented max).  A bound
  at least 32 UTF-16 code units (or 60 UTF-8 bytes) long may be truncated, and the log does not say: it is
  flagged inexact (``min_exact`` / ``max_exact`` false), the min is kept (a prefix is a lower bound) and the
  max is replaced by the smallest string above every string starting with it (trailing U+FFFD removed, the
  last code point incremented), an upper bound whatever the writer did, at the cost of a slightly wider range.
  Shorter bounds are exact.
* Timestamps: Delta writes them with millisecond precision (delta-rs and Delta Spark alike:
  ``2020-01-01T01:02:03.456Z`` for ``...03.456789``): the min is a lower bound, and a millisecond-aligned
  max is widened by 999 microseconds (``max_exact`` false, ``min_exact`` unknown).  A bound with
  sub-millisecond digits was written at full precision and is exact.
* Decimals travel through the log as JSON numbers (delta-rs writes doubles): above 15 digits of precision a
  bound may be off by the double's rounding, so it is widened by that rounding (at least one unit of the scale)
  and flagged inexact; a bound delta-rs could not read back is missing.

:func:`latest_version` is the change signal (a trigger polls it); the collection time of the rows is the
version's commit time (``commitInfo.timestamp``); :class:`DeltaLog` keeps one table open and refreshes it
incrementally (:meth:`DeltaLog.refresh`), which is what the hook uses.
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
import urllib.parse
from collections.abc import Mapping, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from airflow_zorder.core.errors import DeltaLogError, MissingDependencyError
from airflow_zorder.core.stats import metadata_merge, metadata_rows, value_order
from airflow_zorder.core.stats import stats_schema as ss
from airflow_zorder.core.storage import locations

__all__ = [
    "DEFAULT_STRING_PREFIX_LENGTH",
    "INSTALL_HINT",
    "deltalake_module",
    "METHOD",
    "DeltaLog",
    "commit_time",
    "delta_storage_options",
    "full_path",
    "MISSING_STATS_REASONS",
    "latest_version",
    "missing_stats",
    "snapshot_rows",
    "string_upper_bound",
    "table_uri",
]

METHOD = "delta_log"
INSTALL_HINT = "pip install 'airflow-zorder[delta]'"
#: Delta Spark's string statistics prefix (``spark.databricks.delta.stats.skipping.string.prefixLength``, UTF-16
#: code units as Java counts them); the log does not record it
DEFAULT_STRING_PREFIX_LENGTH = 32
#: a string bound this long in UTF-8 may be parquet-rs's 64-byte truncation (cut at a character boundary)
PARQUET_RS_TRUNCATED_BYTES = 60
#: ``reason`` of a row whose bounds the log lacks but the file's footer may hold (not indexed, no stats entry,
#: NaN bounds): what the stats job reads from the data files (nested and unsupported types it cannot either)
MISSING_STATS_REASONS = metadata_merge.LACKING_REASONS
_TIE_BREAKER = "\ufffd"
_HIVE_DEFAULT_PARTITION = HIVE_DEFAULT_PARTITION = "__HIVE_DEFAULT_PARTITION__"
# Spark's ExternalCatalogUtils.escapePathName: these characters become %XX in partition directory names
_HIVE_ESCAPED = frozenset(chr(c) for c in range(0x01, 0x20)) | frozenset("\"#%'*/:=?\\\x7f{[]^")
# a decimal of at most 15 significant digits survives the trip through a double exactly
_DECIMAL_EXACT_DIGITS = 15
UTC = dt.UTC


def deltalake_module(purpose: str = "reading a Delta Lake table through its log") -> Any:
    """The ``deltalake`` package, or a MissingDependencyError (an ImportError) saying what needs it and how to install it."""
    try:
        import deltalake
    except ImportError as exc:
        raise MissingDependencyError(f"{purpose} needs the deltalake package (delta-rs): {INSTALL_HINT}") from exc
    return deltalake


@contextmanager
def _delta_errors(location: str):
    """delta-rs's errors as :class:`DeltaLogError` (an OSError: the hook names storage errors clearly)."""
    from deltalake.exceptions import DeltaError

    try:
        yield
    except DeltaError as exc:
        raise DeltaLogError(f"cannot read the Delta log of {location}: {type(exc).__name__}: {exc}") from exc


# --------------------------------------------------------------------------- locations and credentials


def table_uri(table_location: str) -> str:
    """The location delta-rs opens: a local path as a plain absolute path, a URI as ``Location.uri()``
    (``s3a://`` / ``s3n://`` become ``s3://``, ``wasb[s]://`` becomes ``abfs[s]://``, which delta-rs knows)."""
    loc = locations.parse_location(table_location)
    if loc.is_local:
        return loc.local_path()
    if loc.scheme in ("wasb", "wasbs"):
        return f"abfs{loc.scheme[4:]}://{loc.authority}{loc.path}"
    return loc.uri()


def delta_storage_options(arrow_options: Mapping[str, Any] | None) -> dict[str, str] | None:
    """delta-rs storage options from the pyarrow S3 options of ``hooks.connections.storage_options`` (or of the
    driver's S3A settings in a job: ``HadoopFileSystem.arrow_options``).

    ``access_key`` / ``secret_key`` / ``session_token`` / ``region`` become ``AWS_ACCESS_KEY_ID`` /
    ``AWS_SECRET_ACCESS_KEY`` / ``AWS_SESSION_TOKEN`` / ``AWS_REGION``; ``endpoint_override`` + ``scheme``
    become ``AWS_ENDPOINT_URL`` (and ``AWS_ALLOW_HTTP=true`` for ``http``, e.g. MinIO or a moto server;
    requests are path-style, as pyarrow's).  ``None``/empty: ``None`` (delta-rs's default credential chain:
    environment, profile, instance metadata).

    The clustering job commits with these options (:func:`delta_commit.commit_rewrite`), so they also say how
    commits stay exclusive on S3: ``aws_conditional_put=etag``. delta-rs 1.x writes each ``_delta_log/N.json``
    with a conditional PUT (``If-None-Match: *``, which S3 has honoured since 2024-08): a concurrent writer that
    took version N gets a 412, then delta-rs checks for conflicts and retries at N+1. It is delta-rs 1.x's default
    (object_store's), set here so that no ``AWS_CONDITIONAL_PUT`` in the environment turns it off (delta-rs then
    refuses to commit rather than overwrite). Not set, on purpose: ``AWS_S3_ALLOW_UNSAFE_RENAME`` (a copy-based
    commit that two writers can both win) and ``AWS_S3_LOCKING_PROVIDER=dynamodb`` (dropped in delta-rs 1.0, which
    logs an error and ignores it). A store without conditional writes (old MinIO or Ceph) fails the commit.
    """
    if not arrow_options:
        return None
    names = {
        "access_key": "AWS_ACCESS_KEY_ID",
        "secret_key": "AWS_SECRET_ACCESS_KEY",
        "session_token": "AWS_SESSION_TOKEN",
        "region": "AWS_REGION",
    }
    out = {names[k]: str(v) for k, v in arrow_options.items() if k in names and v}
    endpoint = arrow_options.get("endpoint_override")
    if endpoint:
        scheme = str(arrow_options.get("scheme") or "https")
        out["AWS_ENDPOINT_URL"] = str(endpoint) if "://" in str(endpoint) else f"{scheme}://{endpoint}"
        if out["AWS_ENDPOINT_URL"].startswith("http://"):
            out["AWS_ALLOW_HTTP"] = "true"
    return {**out, "aws_conditional_put": "etag"} if out else None


# --------------------------------------------------------------------------- the log


class DeltaLog:
    """One Delta table, opened once and refreshed incrementally (only new commits are read).

    :param table_location: the table's path or URI (``s3a://`` is fine), as given to the hook
    :param storage_options: delta-rs storage options (:func:`delta_storage_options`); None: the default chain
    :param table_name: ``table_name`` of the rows (default ``table_location``)
    """

    def __init__(
        self, table_location: str, storage_options: Mapping[str, str] | None = None, *, table_name: str | None = None
    ) -> None:
        self.location = str(table_location)
        self.uri = table_uri(self.location)
        self.storage_options = (
            dict(storage_options) if storage_options else locations.default_delta_options(self.location)
        )
        self.table_name = table_name or self.location
        self._table: Any = None
        self.read_at: dt.datetime | None = None  # when the log was last read (the stats are current as of then)
        self._rows: dict[tuple[int, tuple[str, ...] | None], pa.Table] = {}
        self._commit_times: dict[int, dt.datetime | None] = {}

    def _open(self, version: int | None = None) -> Any:
        dl = deltalake_module()
        with _delta_errors(self.location):
            return dl.DeltaTable(self.uri, version=version, storage_options=self.storage_options)

    def refresh(self) -> int:
        """Read the commits since the last read (the whole log the first time); the latest version."""
        if self._table is None:
            self._table = self._open()
        else:
            with _delta_errors(self.location):
                self._table.update_incremental()
        self.read_at = dt.datetime.now(UTC)
        return int(self._table.version())

    latest_version = refresh

    @property
    def table(self) -> Any:
        """delta-rs's ``DeltaTable`` at the version last read (reads the log if it never was)."""
        if self._table is None:
            self.refresh()
        return self._table

    @property
    def version(self) -> int:
        """The version last read (reads the log if it never was)."""
        return int(self._table.version()) if self._table is not None else self.refresh()

    def commit_time(self, version: int | None = None) -> dt.datetime | None:
        """When ``version`` (default the version last read) was committed: its ``commitInfo.timestamp``
        (None when the commit carries none or is no longer in the log)."""
        if self._table is None:
            self.refresh()
        v = self.version if version is None else int(version)
        if v not in self._commit_times:
            # history() of a table opened at an older version mislabels versions (delta-rs 1.6): ask the
            # table at its latest version for the newest commits down to v
            latest = self.version
            found = None
            if v <= latest:
                with _delta_errors(self.location):
                    for h in self._table.history(limit=latest - v + 1):
                        if h.get("version") == v:
                            found = h.get("timestamp")
                            break
            self._commit_times[v] = (
                dt.datetime.fromtimestamp(found / 1000.0, UTC) if isinstance(found, (int, float)) else None
            )
        return self._commit_times[v]

    def snapshot(self, columns: Sequence[str] | None = None, version: int | None = None) -> pa.Table:
        """FILE_STATS_SCHEMA rows of ``version`` (default: the latest, after a :meth:`refresh`); all columns or
        only ``columns``.  Rows of a version are cached (a version's content never changes)."""
        if version is None:
            v = self.refresh()
            table = self._table
        else:
            v = int(version)
            table = self._table if self._table is not None and int(self._table.version()) == v else None
        key = (v, tuple(dict.fromkeys(columns)) if columns else None)
        if key not in self._rows:
            if table is None:
                table = self._open(v)
            if self._table is None:  # a time-travel read first: the latest state answers commit_time
                self._table = self._open()
                self.read_at = dt.datetime.now(UTC)
            with _delta_errors(self.location):
                rows = _rows_of(
                    table, v, self.commit_time(v), self.location, self.table_name, list(key[1]) if key[1] else None
                )
            if len(self._rows) > 8:
                self._rows.clear()
            self._rows[key] = rows
        return self._rows[key]

    def table_columns(self) -> tuple[list[str], list[str]]:
        """(data columns, partition columns) of the version last read, in schema order (reads the log if never read)."""
        if self._table is None:
            self.refresh()
        parts = list(self._table.metadata().partition_columns or [])
        names = [f.name for f in pa.schema(self._table.schema().to_arrow())]
        return [c for c in names if c not in parts], parts

    def configuration(self) -> dict[str, str]:
        """The table properties (``delta.*``) of the version last read (reads the log if never read)."""
        if self._table is None:
            self.refresh()
        return dict(self._table.metadata().configuration or {})

    def run_record(self) -> dict[str, Any]:
        """A collection-run-like record (RUNS_SCHEMA keys) for the version last read: ``snapshot_id`` = the
        version, ``collected_at`` = when the log was read (the stats are current as of then), plus
        ``committed_at`` = the version's commit time."""
        v = self.version
        return ss.metadata_run_record(
            f"delta-log-v{v}", self.table_name, "path", self.location, v, METHOD, self.read_at, self.commit_time(v)
        )


def _iso(t: dt.datetime | None) -> str | None:
    return None if t is None else t.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def snapshot_rows(
    table_location: str,
    storage_options: Mapping[str, str] | None = None,
    version: int | None = None,
    *,
    columns: Sequence[str] | None = None,
    table_name: str | None = None,
) -> pa.Table:
    """The stats rows (:data:`stats_schema.FILE_STATS_SCHEMA`) of a Delta table's ``version`` (default the
    latest), read from its log: one row per (live file, non-partition column); only ``columns`` if given.

    ``snapshot_id`` is the Delta version, ``collected_at`` its commit time, ``method`` ``"delta_log"``; the
    schema metadata carries a run record (``stats_schema.RUN_METADATA_KEY``) as a stats snapshot does.
    See the module doc for what is exact.
    """
    return DeltaLog(table_location, storage_options, table_name=table_name).snapshot(columns, version)


def latest_version(table_location: str, storage_options: Mapping[str, str] | None = None) -> int:
    """The table's latest version (one read of the log; :meth:`DeltaLog.refresh` re-reads only new commits)."""
    return DeltaLog(table_location, storage_options).refresh()


def commit_time(
    table_location: str, storage_options: Mapping[str, str] | None = None, version: int | None = None
) -> dt.datetime | None:
    """When ``version`` (default the latest) was committed (``commitInfo.timestamp``), or None."""
    return DeltaLog(table_location, storage_options).commit_time(version)


missing_stats = metadata_merge.lacking  # the rows the stats job reads from the data files (one rule, in the core)


# --------------------------------------------------------------------------- add actions -> stats rows


def _bound_type(t: pa.DataType) -> pa.DataType | None:
    """The Arrow type bounds of a column of type ``t`` are kept in (as the footer reader names them)."""
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return pa.string()
    if (
        pa.types.is_binary(t)
        or pa.types.is_large_binary(t)
        or pa.types.is_binary_view(t)
        or pa.types.is_fixed_size_binary(t)
    ):
        return pa.binary()
    if pa.types.is_timestamp(t):
        return pa.timestamp(t.unit, "UTC" if t.tz else None)
    if pa.types.is_decimal(t):
        return value_order.decimal_type(t.precision, t.scale)
    if pa.types.is_nested(t) or pa.types.is_dictionary(t) or pa.types.is_null(t):
        return None
    return t


def _child(adds: pa.Table, struct: str, column: str) -> pa.Array | None:
    """``adds[struct].<column>`` (None when the log keeps no such statistic for any file)."""
    if struct not in adds.column_names:
        return None
    arr = adds[struct].combine_chunks()
    if not pa.types.is_struct(arr.type) or arr.type.get_field_index(column) < 0:
        return None
    out = pc.struct_field(arr, [arr.type.get_field_index(column)])
    if arr.null_count:  # a null struct (a file without stats) nulls its children
        out = pc.if_else(pc.is_valid(arr), out, pa.nulls(len(arr), out.type))
    return out


def _np_bool(a: pa.Array | pa.ChunkedArray) -> np.ndarray:
    return np.asarray(a.to_numpy(zero_copy_only=False), dtype=bool)


def _escape_partition(v: str) -> str:
    return "".join(f"%{ord(c):02X}" if c in _HIVE_ESCAPED else c for c in v)


def partition_label(values: Sequence[tuple[str, str | None]]) -> str:
    """A file's partition as the stats rows name it: ``k=v/k2=v2``, escaped as Hive does, null as Hive's default."""
    return "/".join(
        f"{_escape_partition(c)}={_HIVE_DEFAULT_PARTITION if v is None else _escape_partition(v)}" for c, v in values
    )


def full_path(root: str, rel: str) -> str:
    """The file's path: an absolute URI in the log as is (percent-decoded), else the table root joined with it."""
    if "://" in rel or rel.startswith("/"):
        scheme, sep, rest = rel.partition("://")
        return scheme + sep + urllib.parse.unquote(rest) if sep else urllib.parse.unquote(rel)
    return root.rstrip("/") + "/" + urllib.parse.unquote(rel)


def string_upper_bound(value: str) -> str | None:
    """The smallest string above every string that starts with ``value`` once a trailing U+FFFD tie-breaker
    run is removed: the last code point incremented (surrogates skipped, U+10FFFF carried); None if none."""
    s = list(value.rstrip(_TIE_BREAKER))
    while s:
        c = ord(s[-1]) + 1
        if 0xD800 <= c <= 0xDFFF:
            c = 0xE000
        if c <= 0x10FFFF:
            s[-1] = chr(c)
            return "".join(s)
        s.pop()
    return None


def _maybe_truncated(v: str, prefix_length: int) -> bool:
    return len(v.encode("utf-16-le")) // 2 >= prefix_length or len(v.encode("utf-8")) >= PARQUET_RS_TRUNCATED_BYTES


def _widen_decimal(v: decimal.Decimal, up: bool, t: pa.DataType) -> decimal.Decimal:
    """``v`` moved outward by a double's rounding (2**-53 relative) plus the rounding to the scale (half a unit):
    ``2**-52 * |v|`` rounded up to the scale covers both (at least one unit).  Clamped to the type's range."""
    unit = decimal.Decimal(1).scaleb(-t.scale)
    with decimal.localcontext() as ctx:
        ctx.prec = 80
        eps = max((abs(v) * decimal.Decimal(2) ** -52).quantize(unit, rounding=decimal.ROUND_CEILING), unit)
        top = decimal.Decimal(10) ** (t.precision - t.scale) - unit
        w = v + eps if up else v - eps
        return max(min(w, top), -top).quantize(unit)


def _column_rows(adds: pa.Table, column: str, col_type: pa.DataType, prefix_length: int) -> dict[str, Any]:
    """Per-file stats of one column: typed bounds, null counts, has_stats, exact flags, reasons."""
    n = adds.num_rows
    nrec = adds["num_records"].combine_chunks() if "num_records" in adds.column_names else pa.nulls(n, pa.int64())
    no_stats = ~_np_bool(pc.is_valid(nrec))
    bt = _bound_type(col_type)
    reason = np.full(n, None, dtype=object)
    if bt is None:  # as the footer reader: no bounds for nested columns (nor for Delta's void type)
        reason[:] = "nested_column" if pa.types.is_nested(col_type) else f"unsupported_type:{col_type}"
        typed = pa.nulls(n, pa.null())
        return {
            "bound_type": None,
            "min": typed,
            "max": typed,
            "nulls": pa.nulls(n, pa.int64()),
            "has": np.zeros(n, dtype=bool),
            "min_exact": [None] * n,
            "max_exact": [None] * n,
            "reason": reason,
        }
    nulls = _child(adds, "null_count", column)
    nulls = nulls.cast(pa.int64()) if nulls is not None else pa.nulls(n, pa.int64())
    lo, hi = _child(adds, "min", column), _child(adds, "max", column)
    if lo is None or hi is None:
        lo = hi = pa.nulls(n, bt)
    else:
        lo, hi = lo.cast(bt, safe=False), hi.cast(bt, safe=False)
    bounded = _np_bool(pc.and_(pc.is_valid(lo), pc.is_valid(hi)))
    nrec_np = nrec.cast(pa.float64()).fill_null(np.nan).to_numpy(zero_copy_only=False)
    nulls_np = nulls.cast(pa.float64()).fill_null(np.nan).to_numpy(zero_copy_only=False)
    all_null = (nrec_np == 0) | (nulls_np == nrec_np)  # NaN (unknown) compares False
    nan = np.zeros(n, dtype=bool)
    if pa.types.is_floating(bt):
        nan = _np_bool(pc.or_(pc.fill_null(pc.is_nan(lo), False), pc.fill_null(pc.is_nan(hi), False)))
    has = (bounded & ~nan) | (~bounded & all_null & ~no_stats)
    reason[~has] = "not_in_delta_stats"
    reason[~has & nan] = "nan_in_stats"
    reason[~has & no_stats] = "no_delta_stats"
    keep = pa.array(has & bounded)
    lo = pc.if_else(keep, lo, pa.nulls(n, bt))
    hi = pc.if_else(keep, hi, pa.nulls(n, bt))
    exact = has & bounded
    min_exact: list[bool | None] = [True if e else None for e in exact]
    max_exact = list(min_exact)
    if pa.types.is_floating(bt):  # as the footer reader (the Parquet rule for readers): -0.0 <= 0 <= +0.0
        zero = pa.scalar(0.0, bt)
        lo = pc.if_else(pc.fill_null(pc.equal(lo, zero), False), pa.scalar(-0.0, bt), lo)
        hi = pc.if_else(pc.fill_null(pc.equal(hi, zero), False), zero, hi)
    elif pa.types.is_timestamp(bt):  # the log keeps milliseconds: a ms-aligned max may hide up to 999 us more
        per_ms = {"s": 0, "ms": 0, "us": 1_000, "ns": 1_000_000}[bt.unit]
        if per_ms:
            raw = hi.view(pa.int64()).to_numpy(zero_copy_only=False).copy()
            ok = _np_bool(pc.is_valid(hi))
            aligned = ok & (np.mod(np.where(ok, raw, 0), per_ms) == 0)
            raw[aligned] += per_ms - 1
            hi = pa.array(np.where(ok, raw, 0), pa.int64(), mask=~ok).view(bt)
            lo_raw = lo.view(pa.int64()).fill_null(0).to_numpy(zero_copy_only=False)
            for i in np.flatnonzero(aligned):
                max_exact[i] = False
                if lo_raw[i] % per_ms == 0:
                    min_exact[i] = None  # exact unless the data had sub-millisecond digits: unknown
    elif pa.types.is_string(bt):
        los, his = lo.to_pylist(), hi.to_pylist()
        for i in np.flatnonzero(exact):
            if _maybe_truncated(los[i], prefix_length):
                min_exact[i] = False
            if _maybe_truncated(his[i], prefix_length):
                his[i] = string_upper_bound(his[i])
                max_exact[i] = False
                if his[i] is None:  # nothing above it: unknown after all
                    los[i] = None
                    has[i], reason[i], min_exact[i], max_exact[i] = False, "not_in_delta_stats", None, None
        lo, hi = pa.array(los, pa.string()), pa.array(his, pa.string())
    elif pa.types.is_decimal(bt) and bt.precision > _DECIMAL_EXACT_DIGITS:
        los, his = lo.to_pylist(), hi.to_pylist()
        for i in np.flatnonzero(exact):
            los[i], his[i] = _widen_decimal(los[i], False, bt), _widen_decimal(his[i], True, bt)
            min_exact[i] = max_exact[i] = False
        lo, hi = pa.array(los, bt), pa.array(his, bt)
    return {
        "bound_type": bt,
        "min": lo,
        "max": hi,
        "nulls": nulls,
        "has": has,
        "min_exact": min_exact,
        "max_exact": max_exact,
        "reason": reason,
    }


def _rows_of(
    table: Any,
    version: int,
    committed_at: dt.datetime | None,
    location: str,
    table_name: str,
    columns: list[str] | None,
) -> pa.Table:
    """FILE_STATS_SCHEMA rows of an opened DeltaTable (its loaded version)."""
    schema = pa.schema(table.schema().to_arrow())
    meta = table.metadata()
    part_cols = list(meta.partition_columns or [])
    prefix_length = DEFAULT_STRING_PREFIX_LENGTH
    adds = pa.table(table.get_add_actions(flatten=False))
    n = adds.num_rows
    paths = [full_path(location, p) for p in adds["path"].to_pylist()]
    mtimes = adds["modification_time"].cast(pa.int64()) if n else pa.array([], pa.int64())
    if committed_at is None:  # no commitInfo timestamp: the newest file of the version
        newest = pc.max(mtimes).as_py() if n else None
        committed_at = dt.datetime.fromtimestamp(newest / 1000.0, UTC) if newest is not None else dt.datetime.now(UTC)
    part_str: list[str | None] = [None] * n
    part_map: list[list[tuple[str, str | None]] | None] = [None] * n
    if part_cols:
        texts = {}
        for c in part_cols:
            vals = _child(adds, "partition", c)
            texts[c] = vals.cast(pa.string()).to_pylist() if vals is not None else [None] * n
        for i in range(n):
            part_map[i] = [(c, texts[c][i]) for c in part_cols]
            part_str[i] = partition_label(part_map[i])
    wanted = [f.name for f in schema if f.name not in part_cols]
    if columns is not None:
        pick = set(columns)
        wanted = [c for c in wanted if c in pick]
    nrec = adds["num_records"].cast(pa.int64()) if "num_records" in adds.column_names else pa.nulls(n, pa.int64())
    per_file = {
        "path": pa.array(paths, pa.string()),
        "partition": pa.array(part_str, pa.string()),
        "partition_values": pa.array(part_map, pa.map_(pa.string(), pa.string())),
        "file_size": adds["size_bytes"].cast(pa.int64()) if n else pa.array([], pa.int64()),
        "file_mtime_ms": mtimes,
        "file_rows": nrec,
    }
    columns_out = [
        metadata_rows.ColumnBounds(c, **_column_rows(adds, c, schema.field(c).type, prefix_length)) for c in wanted
    ]
    rows = metadata_rows.assemble(
        per_file, columns_out, snapshot_id=version, table_name=table_name, method=METHOD, collected_at=committed_at
    )
    run = {
        "run_id": f"delta-log-v{version}",
        "table_name": table_name,
        "table_kind": "path",
        "table_root": location,
        "status": "ok",
        "snapshot_id": version,
        "method": METHOD,
        "columns": wanted,
        "collected_at": _iso(committed_at),
        "files_total": n,
        "rows_total": int(pc.sum(nrec).as_py() or 0) if n else 0,
        "schema_version": ss.SCHEMA_VERSION,
    }
    meta_out = dict(ss.FILE_STATS_SCHEMA.metadata)
    meta_out[ss.RUN_METADATA_KEY] = json.dumps(run).encode()
    return rows.replace_schema_metadata(meta_out)
