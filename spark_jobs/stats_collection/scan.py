"""The scan path: exact statistics computed by Spark for the (file, column) pairs footers cannot describe."""

from __future__ import annotations

import re
import time
from collections import defaultdict
from typing import Any
from urllib.parse import unquote

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from airflow_zorder.core.stats import value_order
from spark_jobs.stats_collection.footers import NO_PY_FS
from spark_jobs.stats_collection.listing import ListedFile, ListedTable

# footer reasons that the auto method repairs with a scan
SCAN_REASONS = (
    "int96",
    "row_group_without_stats",
    "row_group_without_min_max",
    "nan_in_stats",
    "min_greater_than_max",
    "undecodable_stats",
)


# --------------------------------------------------------------------------- which rows


def _scan_candidates(t: pa.Table, method: str) -> np.ndarray:
    """Vectorised pre-filter for :func:`needs_scan` (a superset of the rows it selects)."""
    ok = pc.and_(pc.is_null(t["error"]), pc.is_valid(t["column_name"]))
    reason = pc.fill_null(t["reason"], "")
    structural = pc.is_in(reason, pa.array(["column_not_in_file", "nested_column"]))
    ok = pc.and_(ok, pc.invert(structural))
    if method == "auto":
        missing = pc.invert(t["has_stats"])
        truncated = pc.or_(
            pc.equal(pc.fill_null(t["min_exact"], True), False), pc.equal(pc.fill_null(t["max_exact"], True), False)
        )
        ok = pc.and_(ok, pc.or_(missing, truncated))
    return np.asarray(ok.to_numpy(zero_copy_only=False), dtype=bool)


def needs_scan(row: dict[str, Any], method: str) -> str | None:
    """Why a footer row must be (re)computed by the scan, or None."""
    if row["error"] is not None or row["column_name"] is None:
        return None
    reason = row["reason"] or ""
    if reason in ("column_not_in_file", "nested_column"):
        return None
    if method == "scan":
        return "requested"
    if method != "auto":
        return None
    if reason == NO_PY_FS:
        return NO_PY_FS
    if not row["has_stats"]:
        base = reason.split(":", 1)[0]
        return base if base in SCAN_REASONS else None
    if row["min_exact"] is False or row["max_exact"] is False:
        return "truncated"
    return None


def split_scan_rows(new_rows: pa.Table, method: str) -> tuple[pa.Table, list[dict[str, Any]]]:
    """(footer rows kept as they are, rows the scan must compute as dicts with ``_why``) of ``new_rows``."""
    scan_rows: list[dict[str, Any]] = []
    keep_mask = None
    if new_rows.num_rows and method != "footer":
        cand_idx = np.flatnonzero(_scan_candidates(new_rows, method))
        if len(cand_idx):
            keep = np.ones(new_rows.num_rows, dtype=bool)
            for i, d in zip(cand_idx, new_rows.take(pa.array(cand_idx)).to_pylist()):
                why = needs_scan(d, method)
                if why is not None:
                    keep[i] = False
                    d["_why"] = why
                    scan_rows.append(d)
            keep_mask = pa.array(keep)
    return (new_rows.filter(keep_mask) if keep_mask is not None else new_rows), scan_rows


# --------------------------------------------------------------------------- Spark


def spark_type_for(arrow_type: str | None, physical_type: str | None) -> Any:
    """The Spark type to read a column as, from its footer types; None when Spark cannot read it."""
    from pyspark.sql import types as T

    if physical_type == "INT96":
        return T.TimestampType()
    if arrow_type is None:
        return None
    simple = {
        "int8": T.ByteType(),
        "int16": T.ShortType(),
        "int32": T.IntegerType(),
        "int64": T.LongType(),
        "uint8": T.ShortType(),
        "uint16": T.IntegerType(),
        "uint32": T.LongType(),
        "uint64": T.DecimalType(20, 0),
        "float": T.FloatType(),
        "double": T.DoubleType(),
        "bool": T.BooleanType(),
        "date32[day]": T.DateType(),
        "string": T.StringType(),
        "binary": T.BinaryType(),
    }
    if arrow_type in simple:
        return simple[arrow_type]
    m = re.match(r"^decimal(?:128|256)\((\d+), (\d+)\)$", arrow_type)
    if m:
        p, s = int(m.group(1)), int(m.group(2))
        return T.DecimalType(p, s) if p <= 38 else None
    m = re.match(r"^timestamp\[(ms|us)(, tz=.+)?\]$", arrow_type)
    if m:
        return T.TimestampType() if m.group(2) else T.TimestampNTZType()
    return None  # time, nanosecond timestamps, decimals > 38 digits, ...: Spark cannot read them


def escape_glob(path: str) -> str:
    """``path`` with Hadoop glob characters escaped, so Spark reads exactly that file."""
    return re.sub(r"([\\\[\]{}*?])", r"\\\1", path)


def _canon(path: str) -> str:
    """Path component of a path or URI (no scheme/authority), for matching Spark's file names to the listing."""
    m = re.match(r"^[A-Za-z][A-Za-z0-9+.-]*:(//[^/]*)?", path)
    if m and (m.group(1) or path[len(m.group(0)) :].startswith("/")):
        path = path[len(m.group(0)) :]
    return "/" + path.lstrip("/")


def _quote_col(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def spark_columns(spark: Any, read_path: str, partition_columns: list[str]) -> list[str]:
    """Top-level column names of a file as Spark reads it (when pyarrow cannot open the store)."""
    skip = {c.lower() for c in partition_columns}
    try:
        return [f.name for f in spark.read.parquet(escape_glob(read_path)).schema.fields if f.name.lower() not in skip]
    except Exception:  # noqa: BLE001 - the scan will then report the file as failed
        return []


def scan_files(spark: Any, files: list[tuple[str, str]], columns: list[tuple[str, Any]]) -> dict[str, dict[str, Any]]:
    """Exact stats of ``columns`` (name, Spark type) in ``files`` ((stats_path, read_path)) with one Spark job.

    Returns ``{stats_path: {"rows": n, "cols": {name: {min, max, nonnull, nan}}}}``
    (min/max as Arrow scalars of the Spark type; NaN excluded) for the files
    Spark read; a corrupt file is skipped by Spark (``ignoreCorruptFiles``)
    and is then absent, or present with fewer rows than its footer says.
    """
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    schema = T.StructType([T.StructField(c, t, True) for c, t in columns])
    reader = spark.read.schema(schema).option("ignoreCorruptFiles", "true")
    df = reader.parquet(*[escape_glob(r) for _, r in files])
    aggs = [F.count(F.lit(1)).alias("__rows")]
    for i, (c, t) in enumerate(columns):
        col = F.col(_quote_col(c))
        is_float = isinstance(t, (T.FloatType, T.DoubleType))
        v = F.nanvl(col, F.lit(None).cast(t)) if is_float else col
        aggs += [F.min(v).alias(f"mn{i}"), F.max(v).alias(f"mx{i}"), F.count(col).alias(f"nn{i}")]
        if is_float:
            aggs.append(F.sum(F.when(F.isnan(col), F.lit(1)).otherwise(F.lit(0))).cast("long").alias(f"nan{i}"))
    spark.sparkContext.setJobDescription(f"collect_stats: scan {len(files)} files, {len(columns)} columns")
    res = df.groupBy(F.input_file_name().alias("__file")).agg(*aggs).toArrow()
    by_canon = {_canon(s): s for s, _ in files}
    by_canon.update({_canon(r): s for s, r in files})
    out: dict[str, dict[str, Any]] = {}
    names = res["__file"].to_pylist()
    for j, name in enumerate(names):
        stats_path = by_canon.get(_canon(unquote(name))) or by_canon.get(_canon(name))
        if stats_path is None:
            continue
        cols = {}
        for i, (c, _) in enumerate(columns):
            cols[c] = {
                "min": res[f"mn{i}"][j],
                "max": res[f"mx{i}"][j],
                "nonnull": res[f"nn{i}"][j].as_py(),
                "nan": res[f"nan{i}"][j].as_py() if f"nan{i}" in res.column_names else None,
            }
        out[stats_path] = {"rows": res["__rows"][j].as_py(), "cols": cols}
    return out


# --------------------------------------------------------------------------- filling the rows


def run_scan(
    spark: Any,
    scan_rows: list[dict[str, Any]],
    files: dict[str, ListedFile],
    failed: dict[str, str],
    table: ListedTable,
    phases: dict[str, float],
) -> set[str]:
    """The job's scan step: :func:`scan` the rows footers cannot describe, time it (``scan_s``), drop the
    rows' working keys; returns the files scanned."""
    t = time.time()
    scanned_files: set[str] = set()
    if scan_rows:
        scan(spark, scan_rows, files, failed, table, scanned_files)
    phases["scan_s"] = round(time.time() - t, 3)
    for d in scan_rows:
        d.pop("_why", None)
        d.pop("_stype", None)
    return scanned_files


def scan(
    spark: Any,
    scan_rows: list[dict[str, Any]],
    files: dict[str, ListedFile],
    failed: dict[str, str],
    table: ListedTable,
    scanned_files: set[str],
) -> None:
    """Fill ``scan_rows`` in place with exact values computed by Spark; record files that fail."""
    by_file: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for d in scan_rows:
        d["_stype"] = spark_type_for(d["arrow_type"], d["physical_type"])
        if d["_stype"] is None:
            if d["arrow_type"] is None and d["_why"] == NO_PY_FS:
                d["_stype"] = "infer"
            else:
                d["reason"] = (d["reason"] or "") + f"; scan_unsupported_type:{d['arrow_type']}"
                continue
        by_file[d["path"]].append(d)
    if not by_file:
        return
    infer_types: dict[str, Any] = {}
    if any(d["_stype"] == "infer" for ds in by_file.values() for d in ds):
        # files pyarrow could not open: take the types from Spark's own schema of the table
        sample = [files[p].read_path for p, ds in by_file.items() if any(d["_stype"] == "infer" for d in ds)]
        try:
            sch = spark.read.parquet(*[escape_glob(p) for p in sample[:1]]).schema
            infer_types = {f.name: f.dataType for f in sch.fields}
        except Exception as exc:  # noqa: BLE001
            for p in sample:
                failed[p] = f"cannot read the file's schema with Spark: {exc}"
        for ds in by_file.values():
            for d in ds:
                if d["_stype"] == "infer":
                    d["_stype"] = infer_types.get(d["column_name"])
    groups: dict[tuple, list[str]] = defaultdict(list)
    for p, ds in by_file.items():
        if p in failed:
            continue
        key = tuple(sorted({(d["column_name"], d["_stype"].simpleString()) for d in ds if d["_stype"] is not None}))
        if key:
            groups[key].append(p)
    for key, paths in groups.items():
        types = {}
        for p in paths:
            for d in by_file[p]:
                if d["_stype"] is not None:
                    types[d["column_name"]] = d["_stype"]
        columns = [(c, types[c]) for c, _ in key]
        try:
            res = scan_files(spark, [(p, files[p].read_path) for p in paths], columns)
        except Exception as exc:  # noqa: BLE001 - the whole group failed: name its files
            msg = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            for p in paths:
                failed[p] = f"scan failed: {msg}"[:2000]
            continue
        for p in paths:
            scanned_files.add(p)
            got = res.get(p)
            footer_rows = next((d["file_rows"] for d in by_file[p] if d["file_rows"] is not None), None)
            rows = got["rows"] if got else 0
            if footer_rows is not None and rows != footer_rows:
                failed[p] = (
                    f"scan read {rows} rows but the footer says {footer_rows}: "
                    "the file is corrupt or unreadable by Spark"
                )
                continue
            for d in by_file[p]:
                if d["_stype"] is None:
                    continue
                _apply_scan(d, got["cols"][d["column_name"]] if got else None, rows)


def _scan_value_type(arrow_type: str | None, physical_type: str | None, got: pa.DataType) -> pa.DataType:
    """The Arrow type a scanned bound is stored as: the footer's type (INT96: naive microseconds)."""
    if physical_type == "INT96":
        return pa.timestamp("us")
    if arrow_type:
        try:
            return value_order.parse_arrow_type(arrow_type)
        except ValueError:
            pass
    return got


def _convert_scanned(value: pa.Scalar, target: pa.DataType) -> pa.Array:
    arr = pa.array([value.as_py()], value.type) if not isinstance(value, pa.Array) else value
    src = arr.type
    if pa.types.is_timestamp(src) and pa.types.is_timestamp(target):
        raw = arr.view(pa.int64()).view(pa.timestamp(src.unit, target.tz))
        return raw.cast(target) if src.unit != target.unit else raw
    try:
        return arr.cast(target)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return arr


def _apply_scan(d: dict[str, Any], vals: dict[str, Any] | None, rows: int) -> None:
    why = d.get("_why") or "requested"
    d["file_rows"] = rows if d["file_rows"] is None else d["file_rows"]
    d["method"] = "scan"
    d["has_stats"] = True
    d["min_exact"] = d["max_exact"] = True
    d["reason"] = f"scanned:{why}"
    d["value_count"] = rows
    if vals is None:  # no rows
        d.update(min_value=None, max_value=None, null_count=0, min_exact=None, max_exact=None)
        if d["arrow_type"] in ("float", "double"):
            d["nan_count"] = 0
        return
    d["null_count"] = rows - int(vals["nonnull"] or 0)
    d["nan_count"] = vals["nan"]
    lo, hi = vals["min"], vals["max"]
    if not lo.is_valid:
        d.update(min_value=None, max_value=None, min_exact=None, max_exact=None)
        return
    target = _scan_value_type(d["arrow_type"], d["physical_type"], lo.type)
    lo_a = _convert_scanned(lo, target)
    hi_a = _convert_scanned(hi, target)
    if pa.types.is_floating(lo_a.type):
        lv, hv = lo_a[0].as_py(), hi_a[0].as_py()
        if lv == 0:
            lo_a = pa.array([-0.0], lo_a.type)  # the footer convention: zero min -0.0, zero max +0.0
        if hv == 0:
            hi_a = pa.array([0.0], hi_a.type)
    d["arrow_type"] = str(lo_a.type) if d["physical_type"] != "INT96" else "timestamp[us]"
    d["min_value"] = value_order.bounds_to_text(lo_a)[0].as_py()
    d["max_value"] = value_order.bounds_to_text(hi_a)[0].as_py()
