"""The footer path: Parquet footers read on the executors, turned into stats rows on the driver."""

from __future__ import annotations

import functools
import threading
import time
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from airflow_zorder.core.stats import footer_stats as fst
from airflow_zorder.core.stats import stats_schema as ss
from airflow_zorder.core.storage.io import filesystem_for, table_filesystem
from airflow_zorder.core.storage.io.hadoop import HadoopFileSystem
from spark_jobs.stats_collection.listing import ListedFile, ListedTable

NO_PY_FS = "no_python_filesystem"  # failure kind / reason: executors' Python cannot open the store

FooterItem = tuple[str, str, "list[str] | None"]  # (read_path, stats_path, columns or None for all)
Failure = tuple[str, str, str]  # (stats_path, kind, message)


# --------------------------------------------------------------------------- executors


def _fix_case(read_path: str, fs: Any, rows: list, wanted: list[str]) -> list:
    """Re-read columns a file spells with another case (Spark resolves names case-insensitively)."""
    absent = [r for r in rows if r.reason == "column_not_in_file"]
    if not absent:
        return rows
    every = fst.read_file_footer(read_path, None, fs)
    by_lower: dict[str, Any] = {}
    for r in every:
        by_lower.setdefault(r.column.lower(), r)
    out = []
    for r in rows:
        alt = by_lower.get(r.column.lower()) if r.reason == "column_not_in_file" else None
        if alt is not None:
            out.append(alt)  # under the file's own spelling; the driver unifies the names
        else:
            out.append(r)
    return out


def footer_partition(items, options: dict[str, Any] | None = None) -> Any:
    """Executor side of the footer job: read the footers of ``(read_path, stats_path, columns)`` items.

    Yields one ``(Arrow IPC bytes of stats rows (FILE_STATS_SCHEMA), failures, seconds)``
    per partition; ``failures`` are ``(stats_path, kind, message)`` with kind
    ``error`` | ``vanished`` | ``no_python_filesystem``. ``options``: the store's pyarrow options from the
    driver's Hadoop settings (``HadoopFileSystem.arrow_options``), as executors have no Hadoop of their own.
    """
    t0 = time.perf_counter()
    rows: list = []
    failures: list[tuple[str, str, str]] = []
    for read_path, stats_path, columns in items:
        try:
            fs, p = filesystem_for(read_path, options=options).arrow(read_path)  # cached per store and options
        except Exception as exc:  # noqa: BLE001 - the driver falls back to the scan
            failures.append((stats_path, NO_PY_FS, f"{type(exc).__name__}: {exc}"))
            continue
        try:
            got = fst.read_file_footer(p, columns, fs)
            if columns is not None:
                got = _fix_case(p, fs, got, columns)
        except FileNotFoundError as exc:
            failures.append((stats_path, "vanished", str(exc)))
            continue
        except Exception as exc:  # noqa: BLE001 - reported per file, the other files go on
            msg = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
            failures.append((stats_path, "error", f"{type(exc).__name__}: {msg}"[:2000]))
            continue
        for r in got:
            r.path = stats_path
        rows.extend(got)
    table = fst.rows_to_table(rows)
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as w:
        w.write_table(table)
    yield sink.getvalue().to_pybytes(), failures, time.perf_counter() - t0


def _warm_partition(_it) -> Any:
    """Import what the footer tasks need, so Python workers start while the driver lists the table."""
    import pyarrow.parquet  # noqa: F401

    from airflow_zorder.core.stats import footer_stats  # noqa: F401

    yield 0


def start_warmup(spark: Any) -> threading.Thread:
    """Start the Python workers in the background (every file will be read); join before the footer job."""
    sc = spark.sparkContext
    n = max(1, sc.defaultParallelism)

    def run() -> None:
        try:
            sc.setJobDescription("collect_stats: start Python workers")
            sc.parallelize(range(n), n).mapPartitions(_warm_partition).collect()
        except Exception:  # noqa: BLE001, S110 - only an optimisation
            pass

    t = threading.Thread(target=run, name="collect-stats-warmup", daemon=True)
    t.start()
    return t


# --------------------------------------------------------------------------- driver


def read_footers_distributed(
    spark: Any, items: list[FooterItem], parallelism: int | None = None
) -> tuple[pa.Table, list[Failure]]:
    """Run the footer job: the item list is parallelised, footers are read on the executors."""
    if not items:
        return ss.empty_file_stats(), []
    sc = spark.sparkContext
    n = parallelism or max(1, sc.defaultParallelism)
    n = max(1, min(n, len(items)))
    sc.setJobDescription(f"collect_stats: read {len(items)} Parquet footers")
    hadoop = table_filesystem(items[0][0], spark)
    options = hadoop.arrow_options(items[0][0]) if isinstance(hadoop, HadoopFileSystem) else {}
    out = sc.parallelize(items, n).mapPartitions(functools.partial(footer_partition, options=options)).collect()
    tables = [pa.ipc.open_stream(b).read_all() for b, _, _ in out]
    failures = [f for _, fl, _ in out for f in fl]
    return (pa.concat_tables(tables) if tables else ss.empty_file_stats()), failures


def resolve_names(requested: list[str], known: list[str]) -> list[str]:
    """Requested names spelled as the table spells them (Spark resolves names case-insensitively)."""
    by_lower: dict[str, str] = {}
    for k in known:
        by_lower.setdefault(k.lower(), k)
    out = []
    for c in requested:
        real = c if c in known else by_lower.get(c.lower(), c)
        if real not in out:
            out.append(real)
    return out


def read_footer_rows(
    spark: Any,
    items: list[FooterItem],
    files: dict[str, ListedFile],
    table_name: str,
    requested: list[str] | None,
    collected_at: pa.Scalar,
    parallelism: int | None,
    phases: dict[str, float],
) -> tuple[pa.Table, list[Failure], list[str] | None]:
    """Read the items' footers into stats rows; returns (rows, failures, requested names as the files spell them)."""
    t = time.time()
    footer_table, failures = read_footers_distributed(spark, items, parallelism)
    phases["footer_s"] = round(time.time() - t, 3)
    if requested is not None and footer_table.num_rows:
        # spell requested names as the files do, and use one spelling for every row
        found = [
            c
            for c in pc.unique(
                footer_table.filter(
                    pc.invert(pc.fill_null(pc.equal(footer_table["reason"], "column_not_in_file"), False))
                )["column_name"]
            ).to_pylist()
        ]
        requested = resolve_names(requested, found)
        canon = {c.lower(): c for c in requested}
        footer_table = footer_table.set_column(
            footer_table.schema.get_field_index("column_name"),
            ss.FILE_STATS_SCHEMA.field("column_name"),
            pa.array([canon.get(c.lower(), c) for c in footer_table["column_name"].to_pylist()], pa.string()),
        )
    return _with_listing(footer_table, files, table_name, collected_at), failures, requested


def _with_listing(t: pa.Table, files: dict[str, ListedFile], table_name: str, collected_at: pa.Scalar) -> pa.Table:
    """The executors' footer rows completed on the driver: the table's name, each file's listing
    (partition, size, modification time) and the run's collection time (bounds keys/nums filled later)."""
    n = t.num_rows
    fobj = [files[p] for p in t["path"].to_pylist()]
    values: dict[str, Any] = {
        "table_name": [table_name] * n,
        "partition": [f.partition for f in fobj],
        "partition_values": [list(f.spec.items()) if f.partition else None for f in fobj],
        "file_size": [f.size for f in fobj],
        "file_mtime_ms": [f.mtime_ms for f in fobj],
        "collected_at": [collected_at.as_py()] * n,
    }
    # A column absent from a file reads as null in every engine: all null, fully described.
    absent = pc.fill_null(pc.equal(t["reason"], "column_not_in_file"), False)
    if pc.any(absent).as_py():
        values["has_stats"] = pc.or_(t["has_stats"], absent)
        values["null_count"] = pc.if_else(absent, t["file_rows"], t["null_count"])
        values["value_count"] = pc.if_else(absent, t["file_rows"], t["value_count"])
    return ss.replace_columns(t, values)


def sort_failures(
    spark: Any, failures: list[Failure], method: str, messages: list[str], *, missing_means: str | None = None
) -> tuple[dict[str, str], dict[str, str], set[str]]:
    """Split the footer job's failures into (unreadable files, files Python cannot open, vanished files).

    A "vanished" file the driver still sees is one the executors' path mapping misses: it goes to the
    scan like a file Python cannot open.  ``missing_means``: the files were listed by a table log (e.g.
    ``"listed by Delta version 3"``), so a missing one is an unreadable file named as such, not a gone one.
    """
    failures = list(failures)
    vanished = set()
    for p, kind, msg in list(failures):
        if kind != "vanished":
            continue
        if table_filesystem(p, spark).exists(
            p
        ):  # the driver still sees it: the executors' path mapping is wrong, not the table
            failures.remove((p, kind, msg))
            failures.append((p, NO_PY_FS, f"executors could not find the file: {msg}"))
        else:
            vanished.add(p)
    failed: dict[str, str] = {p: msg for p, kind, msg in failures if kind == "error"}
    if missing_means and vanished:
        for p in vanished:
            failed[p] = (
                f"the file is {missing_means} but missing from storage (vacuumed, or the table changed "
                "during the collection): run the collection again"
            )
        vanished = set()
    no_py = {p: msg for p, kind, msg in failures if kind == NO_PY_FS}
    if vanished:
        messages.append(f"{len(vanished)} file(s) disappeared during the collection (treated as gone)")
    if no_py:
        messages.append(
            f"{len(no_py)} file(s) could not be opened from Python executors "
            f"({next(iter(no_py.values()))}); "
            + ("their statistics come from the scan" if method != "footer" else "no statistics")
        )
    return failed, no_py, vanished


def table_columns(spark: Any, table: ListedTable, failed: dict[str, str]) -> list[str]:
    """The columns of a readable file of the table (for error messages): one small footer job."""
    f = next((f for f in reversed(table.files) if f.path not in failed), None)
    if f is None:
        return []
    try:
        t, _ = read_footers_distributed(spark, [(f.read_path, f.path, None)], 1)
        return [c for c in t["column_name"].to_pylist() if c]
    except Exception:  # noqa: BLE001 - only for the message
        return []
