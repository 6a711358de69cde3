"""The new snapshot's rows: fresh footer and scan rows, rows carried forward, and rows for files that failed."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from airflow_zorder.core.errors import StatsCollectionError
from airflow_zorder.core.stats import stats_schema as ss
from spark_jobs.stats_collection.footers import NO_PY_FS, table_columns
from spark_jobs.stats_collection.listing import ListedFile, ListedTable
from spark_jobs.stats_collection.scan import spark_columns


def norm(t: pa.Table) -> pa.Table:
    """Exactly FILE_STATS_SCHEMA (no file metadata), so tables concatenate."""
    return pa.Table.from_arrays([t[f.name].cast(f.type) for f in ss.FILE_STATS_SCHEMA], schema=ss.FILE_STATS_SCHEMA)


def rows_from_dicts(rows: list[dict[str, Any]]) -> pa.Table:
    """Stats rows given as dicts, as a FILE_STATS_SCHEMA table."""
    if not rows:
        return ss.empty_file_stats()
    return pa.Table.from_pylist(rows, schema=ss.FILE_STATS_SCHEMA)


def _fill_bound_columns(t: pa.Table) -> pa.Table:
    if not t.num_rows:
        return t
    b = ss.bound_columns(t["min_value"], t["max_value"], t["arrow_type"])
    for name in ("min_key", "max_key", "min_num", "max_num"):
        t = t.set_column(t.schema.get_field_index(name), ss.FILE_STATS_SCHEMA.field(name), b[name])
    return t


@dataclass
class FileRows:
    """Builds one stats row (a dict) of a listed file for rows the footers did not give (failed, unopenable, absent)."""

    files: dict[str, ListedFile]
    table_name: str
    collected_at: Any

    def row(self, path: str, column: str | None, **kw: Any) -> dict[str, Any]:
        """A row of ``path``/``column`` without statistics unless ``kw`` says otherwise."""
        f = self.files[path]
        row = {k: None for k in ss.FILE_STATS_SCHEMA.names}
        row.update(
            snapshot_id=0,
            table_name=self.table_name,
            path=path,
            partition=f.partition,
            partition_values=list(f.spec.items()) if f.partition else None,
            file_size=f.size,
            file_mtime_ms=f.mtime_ms,
            column_name=column,
            has_stats=False,
            method="footer",
            collected_at=self.collected_at.as_py(),
        )
        row.update(kw)
        return row


def reused_rows(prev: pa.Table | None, reuse_mask: Any, dropped: set[str], table_name: str) -> pa.Table:
    """The previous snapshot's rows carried forward (not of ``dropped`` files), under the table's current name."""
    reused = ss.empty_file_stats()
    if prev is not None and reuse_mask is not None:
        reused = prev.filter(reuse_mask)
        if reused.num_rows:
            reused = reused.filter(pc.invert(pc.is_in(reused["path"], pa.array(sorted(dropped), pa.string()))))
            reused = reused.set_column(
                reused.schema.get_field_index("table_name"),
                ss.FILE_STATS_SCHEMA.field("table_name"),
                pa.repeat(pa.scalar(table_name, pa.string()), reused.num_rows),
            )
    return reused


def snapshot_columns(
    spark: Any,
    table: ListedTable,
    requested: list[str] | None,
    new_rows: pa.Table,
    reused: pa.Table,
    live_paths: list[str],
    failed: dict[str, str],
    no_py: dict[str, str],
    read_paths: set[str],
) -> list[str]:
    """The snapshot's column set; refuses a requested column no readable file has (path tables)."""
    if requested is None:
        return list(
            dict.fromkeys(
                [c for c in new_rows["column_name"].to_pylist() if c]
                + [c for c in reused["column_name"].to_pylist() if c]
            )
        )
    names = list(requested)
    if live_paths:
        seen = set()
        for tt in (new_rows, reused):
            m = pc.and_(
                pc.fill_null(pc.not_equal(tt["reason"], "column_not_in_file"), True), pc.is_valid(tt["column_name"])
            )
            seen.update(c for c in pc.unique(tt.filter(m)["column_name"]).to_pylist() if c)
        checked = len(new_rows) + len(reused) > 0 and len(failed) + len(no_py) < len(read_paths)
        unknown = [c for c in names if c not in seen]
        if unknown and checked and table.schema_columns is None:
            raise StatsCollectionError(
                f"unknown column {unknown[0]!r}; the table's columns are: "
                f"{', '.join(table_columns(spark, table, failed) or sorted(seen))}"
            )
    return names


def unopenable_rows(
    spark: Any,
    table: ListedTable,
    no_py: dict[str, str],
    vanished: set[str],
    names: list[str],
    method: str,
    rows: FileRows,
    extra_rows: list[dict[str, Any]],
    scan_rows: list[dict[str, Any]],
) -> list[str]:
    """Rows for files executors' Python cannot open: to the scan, or without stats (``footer``); returns the names."""
    if no_py and not names and method != "footer":
        names = spark_columns(spark, rows.files[sorted(no_py)[0]].read_path, table.partition_columns)
    for path in sorted(set(no_py) - vanished):
        cols_for = names if names else [None]
        if method == "footer":
            for c in cols_for:
                extra_rows.append(rows.row(path, c, reason=f"{NO_PY_FS}: {no_py[path]}"[:2000]))
        else:
            for c in cols_for:
                if c is None:
                    continue
                d = rows.row(path, c, reason=NO_PY_FS)
                d["_why"] = NO_PY_FS
                scan_rows.append(d)
    return names


def assemble_snapshot(
    base_rows: pa.Table,
    scan_rows: list[dict[str, Any]],
    extra_rows: list[dict[str, Any]],
    failed: dict[str, str],
    names: list[str],
    requested: list[str] | None,
    reused: pa.Table,
    live_paths: list[str],
    vanished: set[str],
    rows: FileRows,
    read_columns: dict[str, list[str]] | None = None,
) -> tuple[pa.Table, bool]:
    """The new snapshot's rows, and whether columns were synthesized for files that lack them.

    ``read_columns``: the columns read per file when not every column was (Delta tables: the rest come from the
    log, in ``reused``); a failed file gets error rows for those only.
    """
    # -- failed files: one row per column read, no stats, the error named
    for path, msg in sorted(failed.items()):
        for c in (read_columns or {}).get(path) or names or [None]:
            extra_rows.append(rows.row(path, c, error=msg, reason="unreadable_file"))
    failed_set = set(failed)
    if failed_set:
        base_rows = base_rows.filter(pc.invert(pc.is_in(base_rows["path"], pa.array(sorted(failed_set), pa.string()))))
        scan_rows = [d for d in scan_rows if d["path"] not in failed_set]

    fresh = pa.concat_tables([norm(base_rows), rows_from_dicts(scan_rows), rows_from_dicts(extra_rows)])

    # -- 'all': a column some files lack is all-null in them (schema evolution)
    synthesized = False
    if requested is None and names:
        have: dict[str, set[str]] = defaultdict(set)
        rows_of: dict[str, int] = {}
        for tt in (fresh, reused):
            for p, c, fr in zip(tt["path"].to_pylist(), tt["column_name"].to_pylist(), tt["file_rows"].to_pylist()):
                if c is not None:
                    have[p].add(c)
                if fr is not None:
                    rows_of[p] = fr
        synth = []
        for p in live_paths:
            if p in failed_set:
                continue
            for c in names:
                if c not in have[p]:
                    fr = rows_of.get(p, 0)
                    synth.append(
                        rows.row(
                            p,
                            c,
                            has_stats=True,
                            null_count=fr,
                            value_count=fr,
                            file_rows=fr,
                            reason="column_not_in_file",
                        )
                    )
        if synth:
            fresh = pa.concat_tables([fresh, rows_from_dicts(synth)])
            synthesized = True  # e.g. a new column reached unchanged files: the snapshot differs

    fresh = norm(_fill_bound_columns(fresh))
    final = pa.concat_tables([fresh, norm(reused)]) if reused.num_rows else fresh
    final = (
        final.filter(pc.invert(pc.is_in(final["path"], pa.array(sorted(vanished), pa.string())))) if vanished else final
    )
    return final, synthesized
