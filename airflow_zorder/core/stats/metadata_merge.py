"""The one rule that merges a table format's own statistics with those the stats job read from the data files.

A format whose metadata keeps per-file statistics (Delta's log) is read without a stats job; the (file, column)
pairs its metadata lacks (columns it does not index, types it does not bound, files written without
statistics: :func:`lacking`) are read by the stats job from footers or by a scan, and its snapshot records the
format's version it describes (its run record's ``delta_version``). A lacking pair takes the collected row only
when that snapshot describes the very version being read; otherwise it stays without statistics (``has_stats``
false: never pruned). Every other row comes from the format's metadata.
"""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.compute as pc

from airflow_zorder.core.stats import stats_schema as ss

__all__ = ["LACKING_REASONS", "VERSION_KEY", "collected_version", "lacking", "merge", "read_rows"]

#: ``reason`` of a metadata row whose statistics a Parquet footer may still hold: a column the format does not
#: keep statistics for, a file written without them, a NaN bound (the names came with Delta, the first format).
LACKING_REASONS = ("not_in_delta_stats", "no_delta_stats", "nan_in_stats", "not_in_metadata_stats")
#: The run record's key naming the format version a collected snapshot describes.
VERSION_KEY = "delta_version"


def lacking(rows: pa.Table) -> pa.ChunkedArray:
    """Mask of the metadata rows without statistics that the data files may hold (the stats job's reads)."""
    reason = pc.fill_null(pc.is_in(rows["reason"], pa.array(LACKING_REASONS, pa.string())), False)
    return pc.and_(pc.invert(rows["has_stats"]), reason)


def collected_version(snapshot: pa.Table) -> int | None:
    """The format version a collected snapshot describes (its run record's ``delta_version``), or None."""
    meta = (snapshot.schema.metadata or {}).get(ss.RUN_METADATA_KEY)
    version = json.loads(meta).get(VERSION_KEY) if meta else None
    return version if isinstance(version, int) else None


def read_rows(snapshot: pa.Table) -> pa.Table:
    """The rows of a collected snapshot that were read from the data files (footer or scan)."""
    read = pc.is_in(snapshot["method"], pa.array(ss.METHODS, pa.string()))
    return snapshot.filter(pc.fill_null(read, False))


def merge(rows: pa.Table, collected: pa.Table | None) -> pa.Table:
    """``rows`` (one version's metadata rows) with the pairs they lack taken from ``collected`` (rows read from
    the data files for that same version: the caller checks :func:`collected_version`); sorted as snapshots are."""
    if collected is None or not collected.num_rows or not rows.num_rows:
        return rows
    missing = lacking(rows)
    if not pc.any(missing).as_py():
        return rows
    version = int(rows["snapshot_id"][0].as_py())
    key = pc.binary_join_element_wise(rows["path"], rows["column_name"], "\x00")
    ckey = pc.binary_join_element_wise(collected["path"], collected["column_name"], "\x00")
    replace = pc.and_(missing, pc.is_in(key, ckey))
    if not pc.any(replace).as_py():
        return rows
    taken = collected.filter(pc.is_in(ckey, key.filter(replace)))
    taken = ss.replace_columns(taken, {"snapshot_id": pa.array([version] * taken.num_rows, pa.int64())}).cast(
        ss.FILE_STATS_SCHEMA
    )
    out = pa.concat_tables([rows.filter(pc.invert(replace)).cast(ss.FILE_STATS_SCHEMA), taken])
    out = out.sort_by([("column_name", "ascending"), ("path", "ascending")])
    return out.replace_schema_metadata(rows.schema.metadata)
