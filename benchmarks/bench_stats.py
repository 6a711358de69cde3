"""Benchmark the statistics collection job on TPC-H lineitem (footer vs DuckDB, scan, incremental reruns).

    .venv/bin/python benchmarks/bench_stats.py [--sf 1] [--files 2000] [--work .bench] [--repeat 3] [--no-scan]

One run, one SparkSession (local[2], UI off; its start is not timed):

1. data: lineitem at ``--sf`` as ``--files`` Parquet files (``benchmarks/tpch_data.py``, reused), then a
   hard-linked copy of the directory (instant, same bytes) that the collector may write its stats into;
2. footer step vs DuckDB, interleaved ``--repeat`` times: DuckDB's ``parquet_metadata()`` over the same
   files (min/max/null count/value count of every column chunk, fetched as Arrow), and the job's footer
   step (``stats_collection.footers.read_footers_distributed``: the file list parallelised, footers read and row
   groups merged on the executors, results collected) for all 16 columns; the first footer call of the
   session is reported apart ("cold": it includes starting the Python workers);
3. whole runs of the job: ``--method footer``, ``auto`` (first collection) and ``scan`` (``--no-scan``
   skips it), with their phases;
4. incremental: a rerun with nothing new (median of ``--repeat``) against listing the table plus reading
   the stats table (``stats_store.load_latest``), measured separately in the same run; then a rerun after
   20 files were added (it must read only those 20).

Prints a table, PASS/FAIL for the two goals ((a) footer step <= 2x DuckDB; (b) no-op rerun <= listing +
reading the stats table, with 0.1 s allowed for writing the run record) and writes ``<work>/bench_stats.json``.
The machine's load average is printed too: the figures are wall times.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import time
from pathlib import Path

from bench_env import REPO  # noqa: E402  (sets PYSPARK_PYTHON, sys.path, PYTHONPATH)
from tpch_data import generate_lineitem  # noqa: E402

from airflow_zorder.core.stats import stats_store  # noqa: E402

GOAL_FOOTER_FACTOR = 2.0
NOOP_ALLOWANCE_S = 0.1


def log(msg: str) -> None:
    print(f"[bench_stats {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def timed(fn):
    t = time.perf_counter()
    out = fn()
    return time.perf_counter() - t, out


def hardlink_copy(src: Path, dst: Path) -> list[str]:
    if dst.exists():
        shutil.rmtree(dst)
    dst.mkdir(parents=True)
    out = []
    for p in sorted(src.glob("lineitem*.parquet")):
        os.link(p, dst / p.name)
        out.append(str(dst / p.name))
    return out


def duckdb_metadata(files: list[str]) -> int:
    import duckdb

    con = duckdb.connect()
    t = con.execute(
        "SELECT file_name, path_in_schema, stats_min, stats_max, stats_null_count, num_values FROM parquet_metadata(?)",
        [files],
    ).to_arrow_table()
    con.close()
    return t.num_rows if hasattr(t, "num_rows") else len(t)


def footer_vs_duckdb(spark, files: list[str], repeat: int, core_reader: bool = False) -> dict:
    """The collector's footer step vs DuckDB ``parquet_metadata()`` on the same files, interleaved ``repeat`` times.

    Returns wall seconds per round: ``duckdb_s``, ``footer_step_s`` (``stats_collection.footers.read_footers_distributed``,
    all columns, on the Spark executors), ``footer_step_cold_s`` (its first call, before the rounds: includes
    starting Python workers in a fresh session) and, with ``core_reader``, ``core_reader_s``
    (``footer_stats.read_footers_parallel`` in this process, what the sensor-side tools use).
    """
    import pyarrow.parquet as pq

    from airflow_zorder.core.stats import footer_stats
    from spark_jobs.stats_collection.footers import read_footers_distributed

    ncols = len(pq.ParquetFile(files[0]).schema_arrow)
    items = [(p, p, None) for p in files]
    cold, (tab, fails) = timed(lambda: read_footers_distributed(spark, items))
    assert not fails and tab.num_rows == ncols * len(files), (fails[:3], tab.num_rows)
    out: dict = {"duckdb_s": [], "footer_step_s": [], "footer_step_cold_s": cold, "columns": ncols}
    if core_reader:
        out["core_reader_s"] = []
        names = list(pq.ParquetFile(files[0]).schema_arrow.names)
    for i in range(repeat):
        d, n = timed(lambda: duckdb_metadata(files))
        f, (tab, _) = timed(lambda: read_footers_distributed(spark, items))
        out["duckdb_s"].append(d)
        out["footer_step_s"].append(f)
        msg = (
            f"round {i + 1}: duckdb parquet_metadata {d:.3f} s ({n} rows); footer step {f:.3f} s ({tab.num_rows} rows)"
        )
        if core_reader:
            c, t = timed(lambda: footer_stats.read_footers_parallel(files, names))
            out["core_reader_s"].append(c)
            msg += f"; core read_footers_parallel {c:.3f} s ({t.num_rows} rows)"
        log(msg)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sf", type=float, default=1.0)
    ap.add_argument("--files", type=int, default=2000)
    ap.add_argument("--work", default=str(REPO / ".bench"))
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--no-scan", action="store_true", help="skip the (slow) scan method run")
    args = ap.parse_args()

    work = Path(args.work)
    data_dir = work / f"lineitem_sf{args.sf:g}_{args.files}"
    log(f"data: lineitem sf={args.sf:g} in {args.files} files at {data_dir}")
    info = generate_lineitem(args.sf, data_dir, args.files)
    table = work / f"bench_stats_table_sf{args.sf:g}_{args.files}"
    files = hardlink_copy(data_dir, table)
    log(f"{len(files)} files, {info.get('rows', 0):,} rows; table copy (hard links) at {table}")
    load_start = os.getloadavg()

    from pyspark.sql import SparkSession

    from airflow_zorder.core.jobs.options import CollectOptions
    from spark_jobs.stats_collection.listing import resolve_table
    from spark_jobs.stats_collection.run import run_collect

    spark = (
        SparkSession.builder.master("local[2]")
        .appName("bench-stats")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.memory", "2g")
        .config("spark.sql.shuffle.partitions", "8")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    res: dict = {"sf": args.sf, "files": len(files), "rows": info.get("rows"), "load_avg_start": load_start}

    # -- 2. footer step vs DuckDB (same files, all 16 columns), interleaved
    fd = footer_vs_duckdb(spark, files, args.repeat)
    res.update(fd)
    duck, foot, cold = fd["duckdb_s"], fd["footer_step_s"], fd["footer_step_cold_s"]

    # -- 3. whole runs
    def collect(method: str, loc: str, **kw) -> dict:
        r = run_collect(spark, CollectOptions(table=str(table), method=method, stats_location=loc, **kw))
        log(
            f"run {method}: {r['duration_s']:.2f} s, read {r['files_read']}, reused {r['files_reused']}, "
            f"scanned {r['files_scanned']}, phases {r['phases']}"
        )
        return r

    stats_root = work / f"bench_stats_out_sf{args.sf:g}_{args.files}"
    if stats_root.exists():
        shutil.rmtree(stats_root)
    runs = {}
    runs["footer"] = collect("footer", str(stats_root / "footer"))
    auto_loc = str(stats_root / "auto")
    runs["auto_first"] = collect("auto", auto_loc)
    if not args.no_scan:
        runs["scan"] = collect("scan", str(stats_root / "scan"))

    # -- 4. incremental
    noop, listing, reading = [], [], []
    for _ in range(args.repeat):
        r = collect("auto", auto_loc)
        assert r["files_read"] == 0 and not r["new_snapshot"], r
        noop.append(r["duration_s"])
        listing.append(timed(lambda: resolve_table(spark, str(table)))[0])
        reading.append(timed(lambda: stats_store.load_latest(auto_loc))[0])
    runs["auto_noop"] = r
    for i, p in enumerate(files[:20]):
        os.link(p, table / f"lineitem-new-{i:03d}.parquet")
    runs["auto_plus_20"] = collect("auto", auto_loc)
    assert runs["auto_plus_20"]["files_read"] == 20, runs["auto_plus_20"]
    res["runs"] = {
        k: {
            x: v[x]
            for x in (
                "duration_s",
                "phases",
                "files_read",
                "files_reused",
                "files_scanned",
                "snapshot_id",
                "new_snapshot",
            )
        }
        for k, v in runs.items()
    }
    res["noop_s"], res["list_s"], res["read_stats_s"] = noop, listing, reading
    res["load_avg_end"] = os.getloadavg()
    spark.stop()

    # -- report
    med = statistics.median
    duck_m, foot_m = med(duck), med(foot)
    ratio = foot_m / duck_m
    noop_m, list_m, read_m = med(noop), med(listing), med(reading)
    goal_a = ratio <= GOAL_FOOTER_FACTOR
    goal_b = noop_m <= list_m + read_m + NOOP_ALLOWANCE_S
    res.update(footer_vs_duckdb=ratio, goal_footer=goal_a, goal_noop=goal_b)
    print()
    print(
        f"lineitem sf={args.sf:g}: {len(files)} files, {info.get('rows', 0):,} rows, 16 columns; local[2]; "
        f"load average {load_start[0]:.1f} -> {res['load_avg_end'][0]:.1f}"
    )
    print(f"{'step':48s} {'median s':>9s} {'min s':>8s}")
    for name, xs in [
        ("DuckDB parquet_metadata()", duck),
        ("footer step (distributed, warm)", foot),
        ("footer step, first in session (worker start)", [cold]),
        ("no-op incremental rerun (whole job)", noop),
        ("  listing the table", listing),
        ("  reading the stats table (load_latest)", reading),
    ]:
        print(f"{name:48s} {med(xs):9.3f} {min(xs):8.3f}")
    for k, r in runs.items():
        ph = r["phases"]
        print(
            f"run {k:14s} total {r['duration_s']:7.2f} s  footer {ph.get('footer_s', 0):6.2f}  "
            f"scan {ph.get('scan_s', 0):7.2f}  list {ph.get('list_s', 0):5.2f}  write {ph.get('write_s', 0):5.2f}  "
            f"read {r['files_read']:5d}  reused {r['files_reused']:5d}"
        )
    print(
        f"(a) footer step {foot_m:.3f} s = {ratio:.2f}x DuckDB ({duck_m:.3f} s); goal <= {GOAL_FOOTER_FACTOR:g}x: "
        f"{'PASS' if goal_a else 'FAIL'}"
    )
    print(
        f"(b) no-op rerun {noop_m:.3f} s vs listing {list_m:.3f} s + reading stats {read_m:.3f} s "
        f"(+{NOOP_ALLOWANCE_S} s for the run record): {'PASS' if goal_b else 'FAIL'}"
    )
    out = work / "bench_stats.json"
    out.write_text(json.dumps(res, indent=2, default=str))
    print(f"wrote {out}")
    return 0 if goal_a and goal_b else 1


if __name__ == "__main__":
    sys.exit(main())
