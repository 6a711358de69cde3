"""All benchmarks of docs/benchmarks.md in one run: data, clustering, files read, DuckDB, stats; then the doc.

    make bench            # = .venv/bin/python benchmarks/run_all.py   (~31 minutes on 2 cores, ~12 incremental, ~4 S3)
    .venv/bin/python benchmarks/run_all.py --sf 0.1 --skew-rows 400000 --out .bench/dev   # a quick try-out
    .venv/bin/python benchmarks/bench_report.py docs/benchmarks/results.json              # doc from the JSON only

Two data sets, generated into ``--work`` (reused when already there):

* ``lineitem``: TPC-H lineitem at ``--sf`` (tpchgen-cli, ``tpch_data.py``) in ``--files`` files in
  generation (``l_orderkey``) order; clustering columns ``l_partkey, l_suppkey, l_shipdate``;
* ``skewed``: ``--skew-rows`` rows in ``--skew-files`` files in random order (``skewed_data.py``: Zipf
  ``user_id``, 90 %-one-value ``status``, long-common-prefix ``customer`` strings); clustering columns
  ``user_id, status, customer``.

Before Spark starts, each data set is written once as a Delta table by delta-rs (``write_deltalake``, in a
child process, untimed: ``write_delta_inputs``); both Delta strategies start from a copy of it.

Per data set, in one SparkSession (``bench_cluster.build_spark``: local[2], 4g driver): an untimed warm-up
(``bench_cluster.warm_up``), the reference rewrite ``repartitionByRange(--files, key).sortWithinPartitions(key)``
(``bench_cluster.run_baseline``; key ``l_orderkey`` / ``event_id``) before and after ``run_cluster`` with each
curve (``linear``, ``zorder``, ``hilbert``; ``--files`` output files), and for the data sets of
``--ours-delta`` (default lineitem) ``run_cluster`` with ``hilbert`` on the Delta table (``hilbert delta``: one
Delta commit by delta-rs on the driver), each timed with peak memory (``bench_cluster.MemoryMonitor``). Then
the stats timings (``bench_stats.footer_vs_duckdb``) while the session is up. After the session stops:
delta-rs ``optimize.z_order`` on the same Delta table (``bench_cluster.run_delta``, re-cut to the same file
count); the Delta tables' rows checked (``bench_cluster.delta_rows_check``: count + checksum of ours before
and after its commit and of delta-rs's after); then for every layout (as generated, linear, zorder, hilbert, hilbert delta,
delta-rs; a Delta table's files from its log) the files read by the query set (``bench_queries``: pruning
evaluator + DuckDB cross-check) and DuckDB query times.

Last, issues #25/#37's benchmark in a child process (``bench_incremental.py --sf --incremental-sf``, default 0.2;
``--no-incremental`` skips it and keeps the figures ``<out>/results.json`` has): never / full / incremental /
liquid / hudi re-clustering over ``--incremental-days`` daily appends in its three scenarios (uniform, date,
partitioned), beside the simulator's optimum; its figures go under ``"incremental"`` unless
``<out>/results.json`` already holds them at a larger scale (the documented figures are the SF1 ones:
``bench_incremental.py --sf 1 --merge-into ...``).

Then issue #48's benchmark in a child process (``bench_s3.py --sf --s3-sf``, default 0.05; ``--no-s3`` skips it
and keeps the figures ``<out>/results.json`` has, as does a run without the s3a connector jars: ``make jars``): a
stats run and a full re-cluster of lineitem on local disk and on a moto S3 server, ``--rounds`` rounds; its
figures go under ``"s3"``.

Every timed rewrite runs ``--rounds`` times (default 3; ours interleaved with the reference rewrite in each round,
delta-rs once per round after the session): the doc and README show each one's median and the range over the rounds.
The documented figures name the commit that produced them: with the default ``--out`` the run refuses to start on
a tree with uncommitted changes to the code (``CODE_PATHS``), unless ``--allow-dirty`` (then nothing is documented).

Writes ``<out>/results.json`` and, through ``bench_report.render``, the PNGs in ``<out>/`` and the
markdown ``--doc`` (default ``docs/benchmarks.md``; with the default ``--out`` also README's headline
table between its ``bench:headline`` markers). Exit code 1 if DuckDB found a matching row in a file the
pruning evaluator pruned, if a Delta table's rows differ after a rewrite, if the incremental benchmark failed
or a table's rows differ at its end, or if the S3 benchmark failed or a row count differs in it.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import bench_cluster as bc  # noqa: E402
import bench_queries as bq  # noqa: E402
import bench_stats  # noqa: E402
import psutil  # noqa: E402
import skewed_data  # noqa: E402
from bench_env import REPO  # noqa: E402  (sets PYSPARK_PYTHON, sys.path, PYTHONPATH)
from tpch_data import generate_lineitem  # noqa: E402

from airflow_zorder.evaluation import layout_report  # noqa: E402

MB = 1024 * 1024
DELTA_CURVE = "hilbert"  # our curve on the Delta table
DELTA_KEY = f"{DELTA_CURVE} delta"  # its strategy / layout key in results.json (bench_report: "hilbert (ours, Delta)")
DEFAULT_OUT = REPO / "docs" / "benchmarks"
DEFAULT_DOC = REPO / "docs" / "benchmarks.md"
CODE_PATHS = (
    "airflow_zorder",
    "spark_jobs",
    "benchmarks",
    "pyproject.toml",
    "constraints.txt",
)  # what figures depend on
log = bc.log


def dataset_specs(a: argparse.Namespace, work: Path) -> list[dict[str, Any]]:
    return [
        {
            "name": "lineitem",
            "title": f"TPC-H lineitem SF{a.sf:g}",
            "src": work / f"lineitem_sf{a.sf:g}_{a.files}",
            "columns": ["l_partkey", "l_suppkey", "l_shipdate"],
            "key": "l_orderkey",
            "payload": "l_extendedprice",
            "make": lambda d: generate_lineitem(a.sf, d, files=a.files),
        },
        {
            "name": "skewed",
            "title": f"skewed synthetic ({a.skew_rows:,} rows)",
            "src": work / f"skewed_{a.skew_rows}_{a.skew_files}",
            "columns": list(skewed_data.COLUMNS),
            "key": skewed_data.KEY,
            "payload": "amount",
            "make": lambda d: skewed_data.generate_skewed(d, a.skew_rows, a.skew_files),
        },
    ]


class JvmHeap:
    """Peak JVM heap use of the Spark driver per phase (MemoryPoolMXBean peaks, reset at the phase start).

    The process RSS of a JVM rarely shrinks, so a later phase's RSS peak mostly repeats the earlier
    ones'; the heap pools' own peak counters, reset after a full GC at the start of each phase, say
    what that phase needed (including garbage not yet collected: an upper bound).
    """

    def __init__(self, spark) -> None:
        self.mf = spark._jvm.java.lang.management.ManagementFactory
        self.jvm = spark._jvm

    def reset(self) -> None:
        self.jvm.java.lang.System.gc()
        for p in self.mf.getMemoryPoolMXBeans():
            p.resetPeakUsage()

    def peak_mb(self) -> float:
        total = 0
        for p in self.mf.getMemoryPoolMXBeans():
            if str(p.getType().toString()) == "Heap memory":
                total += p.getPeakUsage().getUsed()
        return round(total / MB, 1)


def timed_phase(mon: bc.MemoryMonitor, heap: JvmHeap | None, name: str, fn) -> tuple[dict[str, Any], Any]:
    d: dict[str, Any] = {}
    if heap is not None:
        heap.reset()
    py_start = mon.sample()[0]["python"]
    with bc.phase(mon, name, d):
        out = fn()
    if heap is not None:
        d["peak_jvm_heap_mb"] = heap.peak_mb()
    d["python_rss_start_mb"] = round(py_start / MB, 1)
    d["python_rss_increase_mb"] = round(d["peak_python_rss_mb"] - py_start / MB, 1)
    return d, out


def cluster_dataset(spark, mon, heap, ds: dict, a, work: Path) -> dict[str, Any]:
    """Warm-up, then ``--rounds`` rounds of the reference rewrite and our runs interleaved: R, c1, R, c2, ..., R.

    Each run's ratio is to the mean of the reference runs just before and after it, so a change of the
    machine's load during the run shifts both sides of each ratio alike; each curve reports its median
    round (``bench_cluster.median_run``) and the spread of its ratios over the rounds (``spread_of``).
    """
    from airflow_zorder.core.jobs.options import ClusterOptions
    from spark_jobs.cluster_table import run_cluster

    n, src, cols, key = a.files, ds["src"], ds["columns"], ds["key"]
    res: dict[str, Any] = {"curves": {}, "baselines": [], "rounds": a.rounds}
    bc.warm_up(spark, src, work / "warmup", n, a.curves, cols, key)
    # our job on the Delta table delta-rs starts from too (write_delta_inputs)
    delta_in = ds.get("delta_input") if ds["name"] in a.ours_delta else None
    if delta_in:  # untimed, as bc.warm_up: the Delta path (log read, footers' stats, delta-rs commit) once
        warm = bc.copy_table(Path(delta_in["warmup"]), work / "warmup_delta")
        run_cluster(spark, ClusterOptions(table=str(warm), columns=list(cols), curve=DELTA_CURVE, num_files=n))
        shutil.rmtree(warm, ignore_errors=True)
    base_out = work / f"{ds['name']}_baseline"

    def reference() -> dict[str, Any]:
        i = len(res["baselines"])
        d, _ = timed_phase(
            mon, heap, f"{ds['name']}: reference rewrite #{i}", lambda: bc.run_baseline(spark, src, base_out, n, key)
        )
        d["files"] = len(layout_report.data_files(str(base_out)))
        res["baselines"].append(d)
        return d

    def ours_on_path(curve: str) -> tuple[dict[str, Any], dict[str, Any]]:
        dst = work / f"{ds['name']}_{curve}"
        bc.copy_input(src, dst)
        opts = ClusterOptions(table=str(dst), columns=list(cols), curve=curve, num_files=n)
        d, r = timed_phase(mon, heap, f"{ds['name']}: run_cluster {curve}", lambda: run_cluster(spark, opts))
        d["files"] = len(layout_report.data_files(str(dst)))
        d["dir"] = str(dst)
        return d, r

    def ours_on_delta() -> tuple[dict[str, Any], dict[str, Any]]:
        dst = bc.copy_table(Path(delta_in["table"]), work / f"{ds['name']}_{DELTA_KEY.replace(' ', '_')}")
        opts = ClusterOptions(table=str(dst), columns=list(cols), curve=DELTA_CURVE, num_files=n)
        d, r = timed_phase(mon, heap, f"{ds['name']}: run_cluster {DELTA_KEY}", lambda: run_cluster(spark, opts))
        if r.get("status") != "clustered" or r.get("kind") != "delta":
            raise RuntimeError(f"run_cluster on the Delta table {dst}: {r.get('status')} {r.get('messages')}")
        d["files"] = len(bc.delta_live_files(dst))  # the log's files after the commit
        d["dir"] = str(dst)
        d["delta"] = r["delta"]  # read_version, version: one commit
        d["curve"] = DELTA_CURVE
        return d, r

    runs: list[tuple[str, Any]] = [(curve, lambda c=curve: ours_on_path(c)) for curve in a.curves]
    if delta_in:
        runs.append((DELTA_KEY, ours_on_delta))
    by_key: dict[str, list[dict[str, Any]]] = {k: [] for k, _ in runs}
    before = reference()
    for rnd in range(a.rounds):
        log(f"{ds['name']}: clustering round {rnd + 1} of {a.rounds}")
        for k, run in runs:
            d, r = run()
            after = reference()
            d["phases"] = r.get("phases", {})
            d["duration_s"] = r.get("duration_s")
            d["round"] = rnd
            bc.ratio_to_references(d, before, after)
            ref_heap = max(before.get("peak_jvm_heap_mb", 0), after.get("peak_jvm_heap_mb", 0))
            d["reference"]["heap_mb"] = ref_heap
            d["heap_ratio"] = round(d["peak_jvm_heap_mb"] / ref_heap, 3) if ref_heap else None
            by_key[k].append(d)
            before = after
    for k, ds_runs in by_key.items():
        res["curves"][k] = dict(bc.median_run(ds_runs), spread=spread_of(ds_runs))
    shutil.rmtree(base_out, ignore_errors=True)
    bs = res["baselines"]
    res["baseline_mean_s"] = round(sum(b["wall_s"] for b in bs) / len(bs), 3)
    res["baseline_mean_cpu_s"] = round(sum(b["cpu_s"] for b in bs) / len(bs), 1)
    res["baseline_heap_mb"] = max(b.get("peak_jvm_heap_mb", 0) for b in bs)
    res["baseline_jvm_rss_mb"] = max(b["peak_jvm_rss_mb"] for b in bs)
    return res


def spread_of(runs: list[dict[str, Any]]) -> dict[str, list[float]]:
    """The lowest and highest wall and CPU ratio over a strategy's rounds (the headline's range)."""
    out: dict[str, list[float]] = {}
    for key in ("wall_ratio", "cpu_ratio"):
        xs = [r[key] for r in runs if r.get(key) is not None]
        if xs:
            out[key] = [round(min(xs), 3), round(max(xs), 3)]
    return out


def delta_child(argv: list[str]) -> int:
    """``run_all.py --delta-child SRC DST N COLUMNS OUT_JSON [START]``: delta-rs in a fresh process (own peak RSS).

    ``START``: the Delta table to start from (copied to ``DST``, untimed) instead of writing one.
    """
    src, dst, n, columns, out_json, *start = argv
    mon = bc.MemoryMonitor().start()
    res = bc.run_delta(
        Path(src),
        Path(dst),
        int(n),
        mon,
        {},
        columns.split(","),
        match_files=True,
        start=Path(start[0]) if start else None,
    )
    mon.stop()
    import deltalake

    res["version"] = deltalake.__version__
    Path(out_json).write_text(json.dumps(res, default=str))
    return 0


def delta_write_child(argv: list[str]) -> int:
    """``run_all.py --delta-write SRC DST WARMUP_DST OUT_JSON``: the Delta input tables, in a fresh process.

    ``DST``: ``write_deltalake`` of all of ``SRC``'s files, the table every Delta strategy starts from;
    ``WARMUP_DST``: of its first 4 files, for the untimed warm-up of our job on a Delta table.
    """
    src, dst, warm, out_json = argv
    mon = bc.MemoryMonitor().start()
    res = bc.write_delta_input(Path(src), Path(dst), mon)
    bc.write_delta_input(Path(src), Path(warm), mon, first=4)
    mon.stop()
    res.update(table=dst, warmup=warm)
    Path(out_json).write_text(json.dumps(res, default=str))
    return 0


def median_delta_rs(rounds: list[dict[str, Any]]) -> dict[str, Any]:
    """delta-rs over its rounds: the last round's table and files, its ``z_order`` timings the median round's,
    and every round's wall s, CPU s and peak RSS (the report takes the spread of its ratios from them)."""
    keep = ("wall_s", "cpu_s", "peak_python_rss_mb", "load1_end")
    ordered = sorted(rounds, key=lambda r: r["z_order"]["wall_s"])
    out = dict(rounds[-1])
    out["z_order"] = dict(ordered[(len(ordered) - 1) // 2]["z_order"])
    out["z_order"]["rounds"] = [{k: r["z_order"][k] for k in keep if k in r["z_order"]} for r in rounds]
    return out


def write_delta_inputs(ds: dict, work: Path) -> dict[str, Any]:
    """The data set as a Delta table (and a small one for the warm-up), written by delta-rs in a child process.

    Not timed in any comparison: delta-rs's ``z_order`` and our job on a Delta table both start from a copy
    of this one table (same files, same log).
    """
    dst, warm = work / f"{ds['name']}_delta_input", work / f"{ds['name']}_delta_warmup"
    return run_child(["--delta-write", str(ds["src"]), str(dst), str(warm)], work / f"{ds['name']}_delta_input.json")


def run_delta_process(ds: dict, dst: Path, n: int, work: Path) -> dict[str, Any]:
    """delta-rs on the data set in a child Python process: its timings, and its whole peak RSS."""
    args = ["--delta-child", str(ds["src"]), str(dst), str(n), ",".join(ds["columns"])]
    start = [ds["delta_input"]["table"]] if ds.get("delta_input") else []
    return run_child(args, work / f"{ds['name']}_delta.json", start)


def run_child(args: list[str], out_json: Path, tail: list[str] | None = None) -> dict[str, Any]:
    """``run_all.py <args> <out_json> <tail>`` in a child Python process; its JSON, peak RSS and wall time."""
    out_json.unlink(missing_ok=True)
    cmd = [sys.executable, str(Path(__file__).resolve()), *args, str(out_json), *(tail or [])]
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd)
    peak = 0
    proc = psutil.Process(p.pid)
    while p.poll() is None:
        try:
            peak = max(peak, proc.memory_info().rss)
        except psutil.Error:
            pass
        time.sleep(0.1)
    if p.returncode != 0:
        raise RuntimeError(f"{args[0]} child exited with {p.returncode}")
    res = json.loads(out_json.read_text())
    res["process_peak_rss_mb"] = round(peak / MB, 1)
    res["process_wall_s"] = round(time.perf_counter() - t0, 1)
    return res


def previous_incremental(results: Path) -> dict[str, Any] | None:
    """The incremental benchmark's figures in the results.json this run replaces, if any."""
    old = json.loads(results.read_text()).get("incremental") if results.exists() else None
    return old if isinstance(old, dict) and ("scenarios" in old or "policies" in old) else None


def run_incremental(a: argparse.Namespace, work: Path, old: dict | None) -> tuple[dict[str, Any] | None, bool]:
    """``bench_incremental.py`` at ``--incremental-sf`` in a child process: the results to document, and rows ok.

    Documented are the full-scale figures (issue #25): when ``old`` (those of the results.json this run
    replaces) are of a larger scale, they are kept and this run only checks (its JSON stays in
    ``<work>/incremental/``). Nothing to document (None) when it failed and there were none before.
    """
    out_json = work / "incremental" / "incremental_results.json"
    out_json.unlink(missing_ok=True)
    cmd = [sys.executable, str(Path(__file__).resolve().parent / "bench_incremental.py")]
    cmd += ["--sf", f"{a.incremental_sf:g}", "--days", str(a.incremental_days), "--work", str(work / "incremental")]
    log(f"incremental re-clustering benchmark: {' '.join(cmd[1:])}")
    code = subprocess.run([*cmd, "--json-out", str(out_json)]).returncode
    new = json.loads(out_json.read_text()) if out_json.exists() else None
    if new is None:
        log(f"incremental benchmark failed (exit {code}); " + ("keeping the previous figures" if old else "no figures"))
        return old, False
    ok = bool(new.get("rows_check", {}).get("ok"))
    if old and old.get("sf", 0) > new["sf"]:
        log(
            f"incremental at SF{new['sf']:g}: rows {'ok' if ok else 'DIFFER'}; the doc keeps the SF{old['sf']:g} figures"
        )
        return old, ok
    return new, ok


def previous_s3(results: Path) -> dict[str, Any] | None:
    """The S3 benchmark's figures in the results.json this run replaces, if any."""
    old = json.loads(results.read_text()).get("s3") if results.exists() else None
    return old if isinstance(old, dict) and "jobs" in old else None


def run_s3(a: argparse.Namespace, work: Path, old: dict | None) -> tuple[dict[str, Any] | None, bool]:
    """``bench_s3.py`` (the jobs on a moto S3 server and on local disk) in a child process: the figures, and rows ok.

    When the connector jars are not fetched (exit 3: ``make jars``) or the run failed, ``old`` (the figures of the
    results.json this run replaces) is kept; only a failure or a row count that differs makes the run fail.
    """
    out_json = work / "s3" / "s3_results.json"
    out_json.unlink(missing_ok=True)
    cmd = [sys.executable, str(Path(__file__).resolve().parent / "bench_s3.py")]
    cmd += ["--sf", f"{a.s3_sf:g}", "--rounds", str(a.rounds), "--work", str(work / "s3")]
    log(f"the jobs on S3 (moto) and on local disk: {' '.join(cmd[1:])}")
    code = subprocess.run([*cmd, "--json-out", str(out_json)]).returncode
    new = json.loads(out_json.read_text()) if out_json.exists() else None
    if new is None:
        why = "the s3a connector jars are not fetched (make jars)" if code == 3 else f"it failed (exit {code})"
        log(f"S3 benchmark not run: {why}; " + ("keeping the previous figures" if old else "no figures"))
        return old, code == 3
    return new, bool(new.get("rows_ok"))


def machine() -> dict[str, Any]:
    import deltalake
    import duckdb
    import matplotlib
    import pyarrow
    import pyspark

    cpu = platform.processor() or ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    java = subprocess.run(["java", "-version"], capture_output=True, text=True).stderr.splitlines()
    git = lambda *x: subprocess.run(["git", *x], cwd=REPO, capture_output=True, text=True).stdout.rstrip()  # noqa: E731
    return {
        "cpus": os.cpu_count(),
        "cpu_model": cpu,
        "memory_gb": round(psutil.virtual_memory().total / 2**30, 1),
        "os": platform.platform(),
        "python": platform.python_version(),
        "java": java[0] if java else "?",
        "versions": {
            "pyspark": pyspark.__version__,
            "duckdb": duckdb.__version__,
            "deltalake": deltalake.__version__,
            "pyarrow": pyarrow.__version__,
            "matplotlib": matplotlib.__version__,
            "tpchgen-cli": _pkg_version("tpchgen-cli"),
        },
        "git_head": git("rev-parse", "--short", "HEAD"),
        "git_modified": uncommitted(),
    }


def uncommitted() -> list[str]:
    """Paths of the code the figures depend on (jobs, provider, benchmarks) that differ from HEAD."""
    out = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=no", "--", *CODE_PATHS],
        cwd=REPO,
        capture_output=True,
        text=True,
    ).stdout
    return [ln[3:] for ln in out.splitlines() if ln.strip()]


def _pkg_version(name: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(name)
    except PackageNotFoundError:
        return "?"


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args[:1] == ["--delta-child"]:
        return delta_child(args[1:])
    if args[:1] == ["--delta-write"]:
        return delta_write_child(args[1:])
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sf", type=float, default=1.0, help="TPC-H scale factor (default 1)")
    ap.add_argument("--files", type=int, default=64, help="input files of lineitem and output files of every layout")
    ap.add_argument("--skew-rows", type=int, default=4_000_000)
    ap.add_argument("--skew-files", type=int, default=256, help="input files of the skewed table")
    ap.add_argument(
        "--stats-files",
        type=int,
        default=2000,
        help="also time stats collection on lineitem cut into this many files (0: skip)",
    )
    ap.add_argument("--curves", default="linear,zorder,hilbert")
    ap.add_argument("--work", default=str(REPO / ".bench"), help="data and layouts (default .bench/)")
    ap.add_argument("--out", default=str(DEFAULT_OUT), help="results.json and PNGs (default docs/benchmarks/)")
    ap.add_argument(
        "--doc",
        default=None,
        help="markdown to write (default docs/benchmarks.md for the default --out, else <out>/benchmarks.md)",
    )
    ap.add_argument(
        "--rounds",
        type=int,
        default=3,
        help="rounds of every timed rewrite (ours interleaved with the reference; delta-rs after): the doc and "
        "README show each one's median and the range over the rounds (default 3)",
    )
    ap.add_argument(
        "--allow-dirty",
        action="store_true",
        help="with the default --out: run although the tree has uncommitted changes (the doc and README are then "
        "not written: documented figures name the commit that produced them)",
    )
    ap.add_argument("--repeat", type=int, default=5, help="DuckDB query timing rounds (median)")
    ap.add_argument("--timed-queries", type=int, default=6, help="DuckDB-timed queries per timed family")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--no-delta-rs", action="store_true")
    ap.add_argument(
        "--ours-delta",
        default="lineitem",
        help=f"data sets our job also clusters as a Delta table ({DELTA_CURVE}), from the Delta table delta-rs "
        "starts from (comma-separated; empty: none)",
    )
    ap.add_argument("--no-delta-sensor", action="store_true", help="skip the sensor's decision on a Delta log")
    ap.add_argument(
        "--delta-sensor-files", type=int, default=10_000, help="files of the Delta table the sensor decides on"
    )
    ap.add_argument("--keep", action="store_true", help="keep the clustered layouts in --work")
    ap.add_argument(
        "--incremental-sf",
        type=float,
        default=0.2,
        help="scale of the incremental re-clustering benchmark (bench_incremental.py; default 0.2: the doc keeps "
        "figures of a larger scale already in --out's results.json)",
    )
    ap.add_argument("--incremental-days", type=int, default=30, help="appends of the incremental benchmark")
    ap.add_argument(
        "--no-incremental",
        action="store_true",
        help="skip the incremental re-clustering benchmark (the figures already in --out's results.json are kept)",
    )
    ap.add_argument(
        "--s3-sf",
        type=float,
        default=0.05,
        help="scale of lineitem in the S3 benchmark (bench_s3.py: the jobs on a moto server and on local disk)",
    )
    ap.add_argument(
        "--no-s3",
        action="store_true",
        help="skip the S3 benchmark (the figures already in --out's results.json are kept)",
    )
    a = ap.parse_args(argv)
    a.curves = [c.strip() for c in a.curves.split(",") if c.strip()]
    a.ours_delta = [c.strip() for c in a.ours_delta.split(",") if c.strip()]
    work = Path(a.work).resolve()
    out = Path(a.out).resolve()
    default_out = out == DEFAULT_OUT.resolve()
    doc = Path(a.doc).resolve() if a.doc else (DEFAULT_DOC if default_out else out / "benchmarks.md")
    if a.rounds < 1:
        ap.error("--rounds must be at least 1")
    dirty = uncommitted()
    if default_out and dirty and not a.allow_dirty:
        print(
            "run_all: the tree has uncommitted changes ("
            + ", ".join(dirty[:8])
            + "): commit them first, so that docs/benchmarks.md and README name the code that produced their "
            "figures (or pass --out DIR for a try-out, or --allow-dirty to measure without writing the docs)",
            file=sys.stderr,
        )
        return 2
    write_docs = not (default_out and dirty)
    work.mkdir(parents=True, exist_ok=True)
    out.mkdir(parents=True, exist_ok=True)

    t_start = time.perf_counter()
    load = {"start": [round(x, 2) for x in os.getloadavg()], "samples": []}
    res: dict[str, Any] = {
        "started_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "command": "python benchmarks/run_all.py " + " ".join(argv if argv is not None else sys.argv[1:]),
        "args": {k: v for k, v in vars(a).items()},
        "machine": machine(),
        "load": load,
        "datasets": {},
    }
    mon = bc.MemoryMonitor().start()
    specs = dataset_specs(a, work)

    def sample_load(where: str) -> None:
        load["samples"].append(
            {"at": where, "t_s": round(time.perf_counter() - t_start, 1), "load1": round(os.getloadavg()[0], 2)}
        )

    # -- data and query sets
    for ds in specs:
        d, info = timed_phase(mon, None, f"{ds['name']}: generate / reuse data", lambda ds=ds: ds["make"](ds["src"]))
        files = layout_report.data_files(str(ds["src"]))
        r = res["datasets"][ds["name"]] = {
            "title": ds["title"],
            "columns": ds["columns"],
            "key": ds["key"],
            "payload": ds["payload"],
            "input": {
                "dir": str(ds["src"]),
                "rows": info["rows"],
                "files": len(files),
                "bytes": info["bytes"],
                "generated": not info["skipped"],
                "generate_wall_s": d["wall_s"],
            },
            "types": bq.value_type_note(files, ds["columns"]),
        }
        ds["queries"] = bq.build_queries(files, ds["columns"], seed=a.seed)
        r["families"] = bq.families(ds["queries"])
        r["num_queries"] = len(ds["queries"])
    # -- the Delta table both delta-rs and our job start from (untimed; a child process, so not in our RSS)
    for ds in specs:
        if ds["name"] in a.ours_delta or not a.no_delta_rs:
            try:
                ds["delta_input"] = din = write_delta_inputs(ds, work)
                res["datasets"][ds["name"]]["delta_input"] = {k: v for k, v in din.items() if k != "warmup"}
            except Exception as exc:  # noqa: BLE001 - the Delta strategies are optional; say why they failed
                res["datasets"][ds["name"]]["delta_input"] = {"error": f"{type(exc).__name__}: {exc}"}
                log(f"writing the Delta table of {ds['name']} failed: {exc}")
    sample_load("data ready")

    # -- Spark: clustering and stats
    spark = bc.build_spark(64)
    res["spark_version"] = spark.version
    try:
        spark.sparkContext.setLogLevel("WARN")
        heap = JvmHeap(spark)
        for ds in specs:
            res["datasets"][ds["name"]]["clustering"] = cluster_dataset(spark, mon, heap, ds, a, work)
            sample_load(f"{ds['name']} clustered")
        stats: dict[str, Any] = {}
        tables = [(ds["name"], layout_report.data_files(str(ds["src"]))) for ds in specs]
        if a.stats_files:
            many = work / f"lineitem_sf{a.sf:g}_{a.stats_files}"
            generate_lineitem(a.sf, many, files=a.stats_files)
            tables.append((f"lineitem_{a.stats_files}_files", layout_report.data_files(str(many))))
        for name, files in tables:
            log(f"stats timing on {name} ({len(files)} files)")
            s = bench_stats.footer_vs_duckdb(spark, files, 3, core_reader=True)
            s["files"] = len(files)
            stats[name] = s
        res["stats"] = stats
        sample_load("stats timed")
    finally:
        spark.stop()

    # -- delta-rs (after the session stopped; in a child process, so its peak RSS is its own)
    for ds in specs:
        r = res["datasets"][ds["name"]]
        if a.no_delta_rs:
            break
        dst = work / f"{ds['name']}_delta"
        try:
            dr = median_delta_rs([run_delta_process(ds, dst, a.files, work) for _ in range(a.rounds)])
            if ds.get("delta_input"):  # delta-rs started from a copy of the table written before (untimed)
                dr["write"], dr["started_from"] = ds["delta_input"]["write"], ds["delta_input"]["table"]
            r["delta_rs"] = dr
            ds["delta_files"] = dr["live_files"]
        except Exception as exc:  # noqa: BLE001 - the comparison is optional; say why it failed
            r["delta_rs"] = {"error": f"{type(exc).__name__}: {exc}"}
            log(f"delta-rs failed on {ds['name']}: {exc}")
    sample_load("delta-rs done")

    # -- rows of the Delta tables: ours after its commit = before it (time travel) = delta-rs's after its z_order
    rows_mismatch = 0
    for ds in specs:
        ours = res["datasets"][ds["name"]].get("clustering", {}).get("curves", {}).get(DELTA_KEY)
        if ours:
            others = {"delta-rs z_order": work / f"{ds['name']}_delta"} if ds.get("delta_files") else {}
            chk = ours["rows_check"] = bc.delta_rows_check(Path(ours["dir"]), ours["delta"]["read_version"], others)
            log(f"{ds['name']} / {DELTA_KEY}: rows before/after the commit: {chk}")
            if not chk["equal"]:
                rows_mismatch += 1
                log(f"ROWS DIFFER: {ds['name']} / {DELTA_KEY}: {chk}")

    # -- the sensor's decision on a Delta table read through its log (no Spark), in a child process
    if not a.no_delta_sensor:
        import bench_delta_sensor

        log(f"sensor decision on a {a.delta_sensor_files:,}-file Delta table (bench_delta_sensor)")
        try:
            res["delta_sensor"] = bench_delta_sensor.run(
                work / "delta_sensor" / "events", a.delta_sensor_files, 10, a.repeat
            )
        except Exception as exc:  # noqa: BLE001 - say why it failed, keep the other figures
            res["delta_sensor"] = {"error": f"{type(exc).__name__}: {exc}"}
            log(f"delta sensor benchmark failed: {exc}")
        sample_load("delta sensor timed")

    # -- files read (evaluator + DuckDB check) and DuckDB query times, per layout
    violations = 0
    for ds in specs:
        r = res["datasets"][ds["name"]]
        layouts = {"as generated": layout_report.data_files(str(ds["src"]))}
        for curve in a.curves:
            layouts[curve] = layout_report.data_files(str(work / f"{ds['name']}_{curve}"))
        ours = r.get("clustering", {}).get("curves", {}).get(DELTA_KEY)
        if ours:  # the files of the table's log after our commit (replaced files stay on disk until a VACUUM)
            layouts[DELTA_KEY] = bc.delta_live_files(ours["dir"])
        if ds.get("delta_files"):
            layouts["delta-rs z_order"] = ds["delta_files"]
        timed_fams = [bq.family_name("point", [c]) for c in ds["columns"]] + [
            bq.family_name("range", [ds["columns"][0]], 0.01),
            bq.family_name("point", ds["columns"]),
            bq.family_name("range", ds["columns"], bq.MULTI_RANGE_WIDTH[3]),
        ]
        r["layouts"] = {}
        for name, files in layouts.items():
            log(f"{ds['name']} / {name}: {len(ds['queries'])} queries, evaluator + DuckDB check")
            ev = bq.evaluate_layout(files, ds["columns"], ds["queries"])
            ev["duckdb_ms"] = bq.time_queries(
                files, ds["queries"], timed_fams, ds["payload"], per_family=a.timed_queries, repeat=a.repeat
            )
            ev["bytes"] = sum(os.path.getsize(f) for f in files)
            violations += len(ev["violations"])
            if ev["violations"]:
                log(f"VIOLATION: {len(ev['violations'])} pruned files hold matching rows, e.g. {ev['violations'][:3]}")
            r["layouts"][name] = ev
        r["timed_families"] = timed_fams
        sample_load(f"{ds['name']} queries")

    # -- incremental re-clustering over daily appends (bench_incremental.py, its own process and SparkSession)
    incremental_ok, inc = True, previous_incremental(out / "results.json")  # --no-incremental: keep the figures
    if not a.no_incremental:
        inc, incremental_ok = run_incremental(a, work, inc)
        sample_load("incremental")
    if inc:
        res["incremental"] = inc
    # -- the jobs on S3 (a moto server) beside local disk (bench_s3.py, its own process and SparkSession)
    s3_ok, s3 = True, previous_s3(out / "results.json")  # --no-s3: keep the figures
    if not a.no_s3:
        s3, s3_ok = run_s3(a, work, s3)
        sample_load("s3")
    if s3:
        res["s3"] = s3
    # the workload advisor's figures (make bench-advisor, issue #53) are not re-measured here: kept as they are
    if (out / "results.json").exists() and "advisor" in (prev := json.loads((out / "results.json").read_text())):
        res["advisor"] = prev["advisor"]
    mon.stop()
    res["violations"] = violations
    res["rows_mismatch"] = rows_mismatch
    res["wall_s"] = round(time.perf_counter() - t_start, 1)
    load["end"] = [round(x, 2) for x in os.getloadavg()]
    res["finished_utc"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())

    if not a.keep:
        for ds in specs:
            for suffix in [*a.curves, "delta", "delta_input", "delta_warmup", DELTA_KEY.replace(" ", "_")]:
                shutil.rmtree(work / f"{ds['name']}_{suffix}", ignore_errors=True)
    if not write_docs:
        out_json = work / "results-uncommitted.json"
        out_json.write_text(json.dumps(res, indent=1, default=str) + "\n")
        log(f"results: {out_json} (uncommitted tree: {doc} and README not written)")
        return 1 if violations or rows_mismatch or not incremental_ok or not s3_ok else 0
    out_json = out / "results.json"
    out_json.write_text(json.dumps(res, indent=1, default=str) + "\n")
    log(f"results: {out_json} ({res['wall_s']:.0f} s in all, load {load['start'][0]} -> {load['end'][0]})")

    import bench_report

    bench_report.render(res, out, doc, readme=REPO / "README.md" if default_out else None)
    log(f"doc: {doc}")
    return 1 if violations or rows_mismatch or not incremental_ok or not s3_ok else 0


if __name__ == "__main__":
    sys.exit(main())
