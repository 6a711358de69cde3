"""What the statistics job reads: the columns, the stats location, and which files the previous snapshot already covers."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from airflow_zorder.core.errors import StatsCollectionError
from airflow_zorder.core.jobs.options import CollectOptions, stats_location_for
from airflow_zorder.core.stats import stats_schema as ss
from airflow_zorder.core.stats import stats_store
from airflow_zorder.core.storage.io import FileSystem, filesystem_for, os_path, table_filesystem
from airflow_zorder.core.storage.io.paths import join
from airflow_zorder.core.storage.locations import is_path_table
from spark_jobs.stats_collection.footers import FooterItem, resolve_names
from spark_jobs.stats_collection.listing import ListedTable


@dataclass
class ReadPlan:
    """Where the stats go, the previous snapshot, and what to read now (the rest is carried forward)."""

    location: str
    fs: FileSystem  # the driver's, holding the stats location
    requested: list[str] | None  # None: every column
    prev: pa.Table | None = None  # the latest snapshot (None: none, or --full)
    reuse_mask: Any = None  # prev rows carried forward (None: none)
    gone: list[str] = field(default_factory=list)
    n_new: int = 0
    n_changed: int = 0
    items: list[FooterItem] = field(default_factory=list)  # footers to read

    @property
    def read_paths(self) -> set[str]:
        """The files read in this run."""
        return {p for _, p, _ in self.items}

    def nothing_changed(self) -> bool:
        """Nothing new, changed or gone: only the run is recorded (costs the listing + one read)."""
        return (
            self.prev is not None
            and not self.items
            and not self.gone
            and self.reuse_mask is not None
            and (not self.prev.num_rows or pc.all(self.reuse_mask).as_py())
        )


def first_collection(spark: Any, opts: CollectOptions) -> bool:
    """True when no snapshot exists yet at the (default) stats location of a path table (cheap check)."""
    home = None
    if is_path_table(opts.table):
        home = os_path(table_filesystem(opts.table, spark), opts.table) or opts.table
    loc = stats_location_for(opts.table, opts.stats_location, home=home)
    if loc is None:
        return False
    try:
        return not filesystem_for(loc, spark).exists(join(loc, stats_store.POINTER))  # one metadata call
    except Exception:  # noqa: BLE001 - only decides an optimisation
        return False


def requested_columns(opts: CollectOptions, table: ListedTable, messages: list[str]) -> list[str] | None:
    """The data columns to collect (None: all); partition columns are skipped with a message, unknown ones refused."""
    if opts.columns is None:
        return None
    pcols_lower = {c.lower() for c in table.partition_columns}
    wanted = [c for c in opts.columns if c.lower() not in pcols_lower]
    skipped = [c for c in opts.columns if c.lower() in pcols_lower]
    if skipped:
        messages.append(
            f"partition column(s) {', '.join(skipped)}: constant per partition, their values are in partition_values"
        )
    if table.schema_columns is not None:
        unknown = [c for c in wanted if c.lower() not in {k.lower() for k in table.schema_columns}]
        if unknown:
            raise StatsCollectionError(
                f"unknown column {unknown[0]!r}; the table's columns are: {', '.join(table.schema_columns)}"
            )
        wanted = resolve_names(wanted, table.schema_columns)
    if not wanted:
        raise StatsCollectionError(
            "no data column to collect: partition columns are constant per partition "
            "(their values are in partition_values); name data columns or use 'all'"
        )
    return wanted


def plan_reads(
    spark: Any, opts: CollectOptions, table: ListedTable, requested: list[str] | None, phases: dict[str, float]
) -> ReadPlan:
    """Read the previous snapshot and decide which files to read (vectorised: no Python loop per stats row)."""
    location = stats_location_for(opts.table, opts.stats_location, home=table.home)
    fs = filesystem_for(location, spark)
    files = {f.path: f for f in table.files}

    t = time.time()
    prev = None
    prev_all = False
    if not opts.full:
        try:
            prev = stats_store.load_latest(location, fs)
            meta = (prev.schema.metadata or {}).get(ss.RUN_METADATA_KEY)
            prev_all = bool(meta) and json.loads(meta).get("columns_requested") == "all"
        except stats_store.StatsNotFoundError:
            prev = None
    phases["read_previous_s"] = round(time.time() - t, 3)
    if requested is not None and prev is not None and prev.num_rows and table.schema_columns is None:
        requested = resolve_names(requested, [c for c in pc.unique(prev["column_name"]).to_pylist() if c])
    plan = ReadPlan(location, fs, requested, prev)

    complete: set[str] = set()  # unchanged files whose previous rows cover every requested column
    if prev is not None and prev.num_rows:
        pfiles = prev.group_by(["path", "file_size", "file_mtime_ms"], use_threads=False).aggregate(
            [("error", "count")]
        )
        ok_paths = []
        seen_prev: dict[str, bool] = {}
        for p, sz, mt, n_err in zip(
            pfiles["path"].to_pylist(),
            pfiles["file_size"].to_pylist(),
            pfiles["file_mtime_ms"].to_pylist(),
            pfiles["error_count"].to_pylist(),
        ):
            f = files.get(p)
            same = f is not None and (f.size, f.mtime_ms) == (sz, mt) and seen_prev.get(p, True)
            seen_prev[p] = same
            if same and n_err == 0:
                ok_paths.append(p)
        ok_paths = [p for p in ok_paths if seen_prev[p]]
        for p, same in seen_prev.items():
            if p not in files:
                plan.gone.append(p)
            elif not same:
                plan.n_changed += 1
        plan.n_new = sum(1 for p in files if p not in seen_prev)
        ok_mask = pc.is_in(prev["path"], pa.array(ok_paths, pa.string()))
        if requested is None:
            plan.reuse_mask = ok_mask
            complete = set(ok_paths) if prev_all else set()
            if not prev_all:
                plan.reuse_mask = None  # the previous run collected a column subset: read everything again
        else:
            wanted_col = pc.fill_null(pc.is_in(prev["column_name"], pa.array(requested, pa.string())), False)
            plan.reuse_mask = pc.and_(ok_mask, pc.or_(wanted_col, pc.is_null(prev["column_name"])))
            cov = (
                prev.filter(pc.and_(ok_mask, wanted_col))
                .group_by("path", use_threads=False)
                .aggregate([("column_name", "count_distinct")])
            )
            complete = {
                p
                for p, n in zip(cov["path"].to_pylist(), cov["column_name_count_distinct"].to_pylist())
                if n == len(requested)
            }
    else:
        plan.n_new = len(files)

    plan.items = [
        (f.read_path, f.path, None if requested is None else list(requested))
        for f in table.files
        if f.path not in complete  # one footer read gives every column of a file
    ]
    return plan
