"""What a real reader reads for a point query: files, row groups and wall time, before and after re-clustering.

The overlap figures elsewhere (:mod:`.layout_report`, the sensor) are a model computed from min/max statistics.
This module asks real readers instead, so the demo can show what a query engine actually skips:

* the read path is the dataset of the table's format (``TableFormat.reader_dataset``, the table opened through
  the table seam): ``pyarrow.dataset.dataset(path, partitioning="hive")`` for a Parquet table; for a Delta
  Lake table delta-rs's own ``DeltaTable(path).to_pyarrow_dataset()``, whose fragments
  carry the log's per-file min/max as partition expressions, so files are pruned by the log before any
  footer is opened;
* *files read*: fragments left after that pruning with at least one row group left by
  ``fragment.split_by_row_group(filter)`` (the footer's row-group min/max, as the scan prunes them);
  *row groups read*: those row groups; *time*: the best of a few ``dataset.to_table(filter=...)`` runs (every column);
* cross-checks by a second reader: the format's own scan planning when it has one (``TableFormat.planned_files``:
  for Delta delta-rs's ``DeltaTable.file_uris(file_pruning_predicate=...)``, the files its log pruning keeps),
  else DuckDB's ``EXPLAIN ANALYZE`` (its ``row_groups_scanned``; its "Total Files Read" counts every file whose
  footer it opens, pruned or not, so it is not used).

Queries are ``column = value`` with the column's median value (the middle of its sorted non-null values: a
value present in the data, chosen deterministically). ``--save`` keeps a measurement (values included) so the
same queries can be measured again after the table is rewritten in place::

    python -m airflow_zorder.evaluation.reader_check TABLE --columns user_id,product_id --save before.json
    python -m airflow_zorder.evaluation.reader_check TABLE --before before.json

Airflow-free and Spark-free; DuckDB and deltalake are optional (the cross-check is left out without DuckDB).
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import decimal
import json
import os
import time
from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds

from airflow_zorder.core.errors import InvalidInputError
from airflow_zorder.core.skipping.predicates import col, sql_literal
from airflow_zorder.core.storage.io.local import LocalFileSystem
from airflow_zorder.core.tables import open_table
from airflow_zorder.core.tables.protocol import TableFormat

DUCKDB = "DuckDB"  # the cross-check (EXPLAIN ANALYZE) of formats without a scan planner of their own

__all__ = [
    "QueryRead",
    "TableRead",
    "format_reads",
    "open_reader_table",
    "load_reads",
    "measure_table",
    "median_value",
    "open_dataset",
    "point_query_read",
    "save_reads",
]


@dataclasses.dataclass(frozen=True)
class QueryRead:
    """One point query ``column = value`` as a reader executed it."""

    column: str
    value: Any
    sql: str
    rows: int
    files_read: int
    files_total: int
    row_groups_read: int
    row_groups_total: int
    seconds: float  # the best of ``timed_runs`` reads
    timed_runs: int
    check_reader: str | None = None  # the cross-checking reader: DuckDB, or the format's own planner
    check_unit: str | None = None  # what it counted: "row groups" or "files"
    check_read: int | None = None
    check_total: int | None = None


@dataclasses.dataclass(frozen=True)
class TableRead:
    """The point queries of one table at one moment (a Delta table's version included)."""

    table: str
    format: str  # the table format's name: "parquet", "delta", ...
    version: int | None
    queries: tuple[QueryRead, ...]
    values: str = "given"  # how the queried values were chosen: "median" (:func:`median_value`) or "given"
    reader: str = "pyarrow.dataset (hive)"  # what read it (the format's ``reader``)


def open_reader_table(path: str, iceberg_catalog: str | None = None) -> TableFormat:
    """The local table at ``path`` (``iceberg_catalog``: ``namespace.table`` of that catalog) through the table
    seam (its format detected once)."""
    return open_table(path, LocalFileSystem(), iceberg_catalog=iceberg_catalog)


def open_dataset(path: str, iceberg_catalog: str | None = None) -> ds.Dataset:
    """The dataset a reader of the table's format scans (a Delta table: delta-rs's, log stats prune files)."""
    return open_reader_table(path, iceberg_catalog).reader_dataset()


def median_value(dataset: ds.Dataset, column: str) -> Any:
    """The middle of the column's sorted non-null values: a value the data holds, picked deterministically."""
    values = pc.drop_null(dataset.to_table(columns=[column]).column(column).combine_chunks())
    if len(values) == 0:
        raise InvalidInputError(f"column {column!r} holds no values to query")
    return values.take(pc.array_sort_indices(values))[len(values) // 2].as_py()


def _timed_read(dataset: ds.Dataset, flt: ds.Expression, repeat: int) -> tuple[int, float]:
    """Rows matched and the best wall time of ``repeat`` full reads (every column) with the filter."""
    best, rows = float("inf"), 0
    for _ in range(max(1, repeat)):
        start = time.perf_counter()
        rows = dataset.to_table(filter=flt).num_rows
        best = min(best, time.perf_counter() - start)
    return rows, best


def _duckdb_row_groups(files: Sequence[str], sql: str) -> tuple[int, int] | None:
    """(row groups scanned, row groups to scan) by DuckDB over ``files``; None without DuckDB or its metrics."""
    try:
        import duckdb
    except ImportError:
        return None
    file_list = "[" + ", ".join(sql_literal(f) for f in files) + "]"
    query = f"SELECT * FROM read_parquet({file_list}, hive_partitioning = true) WHERE {sql}"
    try:
        with duckdb.connect() as con:
            plan = json.loads(con.sql(f"EXPLAIN (ANALYZE, FORMAT JSON) {query}").fetchall()[0][1])
    except (duckdb.Error, json.JSONDecodeError, IndexError):
        return None
    scans: list[dict[str, Any]] = []
    stack = list(plan.get("operator") or plan.get("children") or [])
    while stack:
        node = stack.pop()
        if "row_groups_scanned" in node and "total_row_groups_to_scan" in node:
            scans.append(node)
        stack.extend(node.get("children") or [])
    if not scans:
        return None
    return sum(int(n["row_groups_scanned"]) for n in scans), sum(int(n["total_row_groups_to_scan"]) for n in scans)


def point_query_read(
    path: str,
    column: str,
    value: Any,
    *,
    repeat: int = 10,
    cross_check: bool = True,
    iceberg_catalog: str | None = None,
) -> QueryRead:
    """Files and row groups a reader reads for ``column = value`` on the table at ``path``, and its best time."""
    table = open_reader_table(path, iceberg_catalog)
    dataset = table.reader_dataset()
    flt = ds.field(column) == value
    sql = (col(column) == value).to_sql()
    fragments = list(dataset.get_fragments())
    files_read = row_groups_read = row_groups_total = 0
    for frag in fragments:
        row_groups_total += frag.num_row_groups
    for frag in dataset.get_fragments(filter=flt):
        kept = len(frag.split_by_row_group(flt))
        row_groups_read += kept
        files_read += kept > 0
    rows, seconds = _timed_read(dataset, flt, repeat)
    check: dict[str, Any] = {}
    kept_files = table.planned_files(column, value, sql) if cross_check else None
    if kept_files is not None:  # the format's own planning (delta-rs's log pruning)
        check = {"check_reader": table.planner, "check_unit": "files"}
        check.update(check_read=kept_files, check_total=len(fragments))
    elif cross_check:
        got = _duckdb_row_groups([f.path for f in fragments], sql)
        if got is not None:
            check = {"check_reader": DUCKDB, "check_unit": "row groups", "check_read": got[0], "check_total": got[1]}
    return QueryRead(
        column=column,
        value=value,
        sql=sql,
        rows=rows,
        files_read=files_read,
        files_total=len(fragments),
        row_groups_read=row_groups_read,
        row_groups_total=row_groups_total,
        seconds=seconds,
        timed_runs=max(1, repeat),
        **check,
    )


def measure_table(
    path: str,
    columns: Sequence[str] | Mapping[str, Any],
    *,
    repeat: int = 10,
    cross_check: bool = True,
    iceberg_catalog: str | None = None,
) -> TableRead:
    """A point query per column (``columns``: names, their median is queried, or a name -> value mapping)."""
    if isinstance(columns, Mapping):
        values, how = dict(columns), "given"
    else:
        dataset = open_dataset(path, iceberg_catalog)
        values, how = {c: median_value(dataset, c) for c in columns}, "median"
    table = open_reader_table(path, iceberg_catalog)
    version = table.latest_version()
    queries = tuple(
        point_query_read(path, c, v, repeat=repeat, cross_check=cross_check, iceberg_catalog=iceberg_catalog)
        for c, v in values.items()
    )
    return TableRead(path, table.format, version, queries, how, table.reader)


def _json_value(v: Any) -> Any:
    """A query value as JSON: numbers, strings and booleans as they are, anything else as its text."""
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    if isinstance(v, (dt.date, dt.datetime, dt.time, decimal.Decimal)):
        return str(v)
    raise TypeError(f"cannot save a query value of type {type(v).__name__}")


def save_reads(reads: TableRead, path: str) -> None:
    """Write a measurement as JSON (values as text where JSON has no type), to compare after a rewrite."""
    doc = dataclasses.asdict(reads)
    for q in doc["queries"]:
        q["value"] = _json_value(q["value"])
    with open(path, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=2)


def load_reads(path: str, schema: pa.Schema | None = None) -> TableRead:
    """A measurement :func:`save_reads` wrote; with ``schema``, values given as text are cast back to their type."""
    with open(path, encoding="utf-8") as f:
        doc = json.load(f)
    queries = []
    for q in doc["queries"]:
        if (
            schema is not None
            and isinstance(q["value"], str)
            and not pa.types.is_string(schema.field(q["column"]).type)
        ):
            q["value"] = pa.array([q["value"]]).cast(schema.field(q["column"]).type)[0].as_py()
        queries.append(QueryRead(**q))
    return TableRead(
        doc["table"],
        doc["format"],
        doc.get("version"),
        tuple(queries),
        doc.get("values", "given"),
        doc.get("reader", TableRead.reader),
    )


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms" if seconds < 0.1 else f"{seconds * 1000:.0f} ms"


def _agrees(q: QueryRead) -> bool:
    """Whether the cross-checking reader counted what the main one did (row groups, or files for delta-rs)."""
    return q.check_read == (q.row_groups_read if q.check_unit == "row groups" else q.files_read)


def format_reads(after: TableRead, before: TableRead | None = None) -> str:
    """A text table per point query: files, row groups and time, as ``before -> after`` when given both."""
    earlier = {q.column: q for q in before.queries} if before else {}
    reader = after.reader
    shown = os.path.relpath(after.table) if not os.path.relpath(after.table).startswith("..") else after.table
    runs = max((q.timed_runs for q in after.queries), default=1)

    def cell(a: QueryRead, b: QueryRead | None, fmt: Any, field: str, total: str | None = None) -> str:
        def one(q: QueryRead) -> str:
            return fmt(getattr(q, field)) if total is None else f"{getattr(q, field)}/{getattr(q, total)}"

        return one(a) if b is None else f"{one(b)} -> {one(a)}"

    lines = [
        f"what a reader reads of {shown} through {reader}"
        + (", each column's median value" if after.values == "median" else "")
        + (", before -> after:" if before else ":"),
        f"{'point query':<24}{'rows':>8}   {'files read':<18}{'row groups read':<18}time (best of {runs})",
    ]
    checks, agree = [], True
    for a in after.queries:
        b = earlier.get(a.column)
        lines.append(
            f"{a.sql:<24}{a.rows:>8,}   {cell(a, b, str, 'files_read', 'files_total'):<18}"
            f"{cell(a, b, str, 'row_groups_read', 'row_groups_total'):<18}{cell(a, b, _ms, 'seconds')}"
        )
        if a.check_reader and (b is None or b.check_reader):
            checks.append(f"{a.column} {cell(a, b, str, 'check_read', 'check_total')}")
            agree = agree and _agrees(a) and (b is None or _agrees(b))
    if checks:
        q = next(q for q in after.queries if q.check_reader)
        how = (
            f"{q.check_reader}'s own file pruning" if q.check_unit == "files" else f"{q.check_reader} (EXPLAIN ANALYZE)"
        )
        verdict = "the same" if agree else "DIFFERENT from the table above"
        lines.append(f"cross-check, {q.check_unit} read by {how}: " + ", ".join(checks) + f": {verdict}")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """CLI: measure point queries on a table, save them, or print them against a saved measurement."""
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("table", help="a local Hive-partitioned Parquet directory or Delta Lake table")
    p.add_argument("--columns", help="comma-separated columns to query (their median value); default: --before's")
    p.add_argument("--save", metavar="JSON", help="write the measurement here")
    p.add_argument("--before", metavar="JSON", help="a saved measurement: query the same values, print before -> after")
    p.add_argument("--repeat", type=int, default=10, help="timed reads per query; the best is kept")
    p.add_argument("--iceberg-catalog", help="TABLE is namespace.table of this pyiceberg catalog")
    a = p.parse_args(argv)
    before = load_reads(a.before, open_dataset(a.table, a.iceberg_catalog).schema) if a.before else None
    if before is not None:
        wanted = [c.strip() for c in a.columns.split(",")] if a.columns else [q.column for q in before.queries]
        columns: Sequence[str] | Mapping[str, Any] = {q.column: q.value for q in before.queries if q.column in wanted}
    elif a.columns:
        columns = [c.strip() for c in a.columns.split(",") if c.strip()]
    else:
        p.error("give --columns or --before")
    reads = measure_table(a.table, columns, repeat=a.repeat, iceberg_catalog=a.iceberg_catalog)
    if before is not None:
        reads = dataclasses.replace(reads, values=before.values)  # the values are before's, however it chose them
    if a.save:
        save_reads(reads, a.save)
    print(format_reads(reads, before))
    return 0


if __name__ == "__main__":
    code = main()
    # collect the datasets (delta-rs's Python filesystem handler sits in a reference cycle) while Arrow is alive: a
    # scanner thread left for the interpreter's teardown aborts the process ("terminate called without an active
    # exception", delta-io/delta-rs#2184); seen once in make demo
    import gc

    gc.collect()
    raise SystemExit(code)
