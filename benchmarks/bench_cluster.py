"""Benchmark the clustering job on TPC-H lineitem against a plain range-partition + sort rewrite.

    .venv/bin/python benchmarks/bench_cluster.py [--sf 1] [--work DIR] [--files 64]
        [--curves zorder,hilbert,linear] [--delta-rs | --no-delta-rs]

One run, one SparkSession (local[2], UI off, 4g driver, 64 shuffle partitions) for
everything:

1. data: lineitem at ``--sf`` as ``--files`` Parquet files in generation (l_orderkey)
   order, made by ``benchmarks/tpch_data.py`` in ``<work>/lineitem_sf<SF>_<N>`` (reused);
2. untimed warm-up (:func:`warm_up`): every job on 4 input files, then on all of them, so that
   every timed run is JIT-warm; the whole-input walls are reported as first runs;
3. baseline: ``repartitionByRange(N, l_orderkey).sortWithinPartitions(l_orderkey)``
   written to a fresh directory, before the first curve and after each one (R, c1, R, c2,
   R, ...), as ``run_all.py`` does: each curve's time goal is checked against the mean of
   the two baseline runs around it, so load changes and JVM warm-up during the run shift
   both sides of the ratio alike; ``--rounds`` times (default 5), the goal on the median;
4. per curve: copy the input, ``run_cluster`` on (l_partkey, l_suppkey, l_shipdate),
   wall time around the call, then the point-query layout report;
5. peak RSS per phase of the Python driver, the Spark driver JVM and (for information)
   the Python workers the JVM forks (summed PSS), polled with psutil every 0.2 s;
6. a table, PASS/FAIL for the two goals and ``<work>/bench_cluster.json``;
7. optionally delta-rs ``optimize.z_order`` on the same data, for comparison.

All layouts are measured with the same query values: ``sample_values(input files,
columns, n_values, seed)`` -- exactly what ``point_query_report(input, ..., n_values,
seed)`` draws for the input -- so differences between layouts are not sampling noise.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psutil  # noqa: E402
from bench_env import REPO  # noqa: E402  (sets PYSPARK_PYTHON, sys.path, PYTHONPATH)
from tpch_data import generate_lineitem  # noqa: E402

from airflow_zorder.core.jobs.jvm_options import JIT_OPTION  # noqa: E402
from airflow_zorder.core.policy import point_queries  # noqa: E402
from airflow_zorder.core.stats import footer_stats
from airflow_zorder.evaluation import layout_report

COLUMNS = ["l_partkey", "l_suppkey", "l_shipdate"]
GOAL_FRACTION_FACTOR = 1.5  # (a) every column's fraction <= 1.5 x ideal (zorder, hilbert)
GOAL_TIME_FACTOR = 1.25  # (b) clustering wall time <= 1.25 x baseline mean
GOAL_CURVES = ("zorder", "hilbert")
MB = 1024 * 1024


def log(msg: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


# --------------------------------------------------------------------------- memory


class MemoryMonitor:
    """Polls RSS of this Python process, the Spark driver JVM (java descendant) and its Python workers.

    Also accumulates the CPU seconds all of them use per phase (a figure less sensitive than wall
    time to other load on the machine). Workers' memory is summed PSS: forked workers share the
    daemon's pages, so summed RSS would overcount.
    """

    def __init__(self, interval: float = 0.2) -> None:
        self.interval = interval
        self.me = psutil.Process(os.getpid())
        self._jvm: psutil.Process | None = None
        self._lock = threading.Lock()
        self._peaks = {"python": 0, "jvm": 0, "workers": 0}
        self._cpu_start: dict[int, float] = {}
        self._cpu_last: dict[int, float] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="rss-monitor", daemon=True)

    def start(self) -> MemoryMonitor:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def jvm(self) -> psutil.Process | None:
        if self._jvm is not None and self._jvm.is_running():
            return self._jvm
        self._jvm = None
        try:
            for c in self.me.children(recursive=True):
                try:
                    if c.name().startswith("java"):
                        self._jvm = c
                        break
                except psutil.Error:
                    continue
        except psutil.Error:
            pass
        return self._jvm

    @staticmethod
    def _cpu(p: psutil.Process) -> float:
        t = p.cpu_times()
        return t.user + t.system

    def sample(self) -> tuple[dict[str, int], dict[int, float]]:
        out = {"python": 0, "jvm": 0, "workers": 0}
        cpu: dict[int, float] = {}
        try:
            out["python"] = self.me.memory_info().rss
            cpu[self.me.pid] = self._cpu(self.me)
        except psutil.Error:
            pass
        j = self.jvm()
        if j is not None:
            try:
                out["jvm"] = j.memory_info().rss
                cpu[j.pid] = self._cpu(j)
                for w in j.children(recursive=True):  # pyspark.daemon and its forked workers
                    try:
                        out["workers"] += w.memory_full_info().pss
                        cpu[w.pid] = self._cpu(w)
                    except psutil.Error:
                        continue
            except psutil.Error:
                pass
        return out, cpu

    def _merge(self, s: dict[str, int], cpu: dict[int, float]) -> None:
        for k, v in s.items():
            self._peaks[k] = max(self._peaks[k], v)
        self._cpu_last.update(cpu)

    def _run(self) -> None:
        while not self._stop.is_set():
            s, cpu = self.sample()
            with self._lock:
                self._merge(s, cpu)
            self._stop.wait(self.interval)

    def reset(self) -> None:
        s, cpu = self.sample()
        with self._lock:
            self._peaks = dict(s)
            self._cpu_start = dict(cpu)
            self._cpu_last = dict(cpu)

    def peaks(self) -> tuple[dict[str, int], float]:
        """Peak memory since reset and CPU seconds used since reset (processes alive at a poll)."""
        s, cpu = self.sample()
        with self._lock:
            self._merge(s, cpu)
            used = sum(max(0.0, v - self._cpu_start.get(pid, 0.0)) for pid, v in self._cpu_last.items())
            return dict(self._peaks), used


@contextmanager
def phase(mon: MemoryMonitor, name: str, into: dict[str, Any]):
    """Time a phase and record peak memory and CPU seconds (reset at the start) into ``into``.

    Dirty pages are written out first (``os.sync``), untimed: otherwise the kernel writes back
    the previous phase's output (~200 MB) and the input copy made just before a curve's run on
    the same two CPUs, ~30 s later, in whichever phase is running then.
    """
    log(f"{name} ...")
    os.sync()
    mon.reset()
    t0 = time.perf_counter()
    yield
    wall = time.perf_counter() - t0
    p, cpu = mon.peaks()
    into.update(
        {
            "wall_s": round(wall, 3),
            "cpu_s": round(cpu, 1),
            "load1_end": round(os.getloadavg()[0], 1),
            "peak_python_rss_mb": round(p["python"] / MB, 1),
            "peak_jvm_rss_mb": round(p["jvm"] / MB, 1),
            "peak_workers_pss_mb": round(p["workers"] / MB, 1),
        }
    )
    log(
        f"{name}: {wall:.1f} s wall, {cpu:.0f} s cpu, load {into['load1_end']}, peak RSS python "
        f"{p['python'] / MB:.0f} MB, jvm {p['jvm'] / MB:.0f} MB, workers PSS {p['workers'] / MB:.0f} MB"
    )


# --------------------------------------------------------------------------- helpers


def fresh_dir(path: Path) -> Path:
    if path.exists():
        shutil.rmtree(path)
    return path


def copy_input(src: Path, dst: Path) -> Path:
    fresh_dir(dst).mkdir(parents=True)
    for f in sorted(src.glob("*.parquet")):
        shutil.copyfile(f, dst / f.name)
    return dst


def dir_bytes(files: list[str]) -> int:
    return sum(os.path.getsize(f) for f in files)


def fractions_of(files: list[str], values: dict, columns: list[str] = COLUMNS) -> dict[str, Any]:
    """The point_query_report dict for an explicit list of files (e.g. a Delta table's live files)."""
    stats = footer_stats.read_footers_parallel(files, columns)
    fr = point_queries.files_fraction_for_columns(stats, columns, values)
    n = len(files)
    return {
        "files": n,
        "fractions": {c: round(float(f), 4) for c, f in fr.items()},
        "ideal": round(point_queries.ideal_point_query_fraction(max(n, 1), len(columns)), 4),
    }


def report_of(table_dir: Path, values: dict) -> dict[str, Any]:
    return layout_report.point_query_report(str(table_dir), COLUMNS, values=values)


def code_state() -> dict[str, Any]:
    """Which version of the job was measured: HEAD and uncommitted changes (read-only git calls)."""
    import subprocess

    def git(*args: str) -> str:
        try:
            return subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True, timeout=20).stdout
        except (OSError, subprocess.SubprocessError):
            return ""

    return {
        "head": git("rev-parse", "--short", "HEAD").strip(),
        "modified": [ln[3:] for ln in git("status", "--porcelain", "--", "spark_jobs", "airflow_zorder").splitlines()],
    }


def build_spark(shuffle_partitions: int, conf: dict[str, str] | None = None):
    """The benchmarks' local[2] session; ``conf``: more settings (e.g. an engine's jars, bench_engines.py)."""
    from pyspark.sql import SparkSession

    builder = SparkSession.builder
    for key, value in (conf or {}).items():
        builder = builder.config(key, value)
    return (
        builder.master("local[2]")
        .appName("airflow-zorder-bench-cluster")
        .config("spark.ui.enabled", "false")
        .config("spark.driver.memory", "4g")
        .config("spark.driver.extraJavaOptions", JIT_OPTION)  # as the operators pass it (spark_jobs/jvm_keys.py)
        .config("spark.sql.shuffle.partitions", str(shuffle_partitions))
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.ui.showConsoleProgress", "false")
        .getOrCreate()
    )


# --------------------------------------------------------------------------- phases


def run_baseline(spark, src: Path, out: Path, n: int, key: str = "l_orderkey") -> dict[str, Any]:
    """The reference rewrite: read, ``repartitionByRange(n, key)``, ``sortWithinPartitions(key)``, write."""
    fresh_dir(out)
    df = spark.read.parquet(str(src))
    df.repartitionByRange(n, key).sortWithinPartitions(key).write.parquet(str(out))
    return {"out": str(out)}


def warm_up(
    spark, src: Path, work: Path, n: int, curves: list[str], columns: list[str] = COLUMNS, key: str = "l_orderkey"
) -> dict[str, float]:
    """Untimed: each job once on 4 input files, then once on the whole input; returns the whole-input walls.

    Every timed run then finds its generated code compiled and JIT-warm, as the baseline's is:
    the baseline's code is the same for any input, but a curve's key code holds the plan's
    constants (the search index's clamps), which differ between 4 files and 64, so a 4-file
    warm-up left each curve's first timed run to compile a new class and JIT it cold (SF1
    Hilbert: 7.3 s of JIT against 2.4 s in later runs, 19.8 s against 15.6 s of wall).
    The whole-input walls are reported as each job's first run in this JVM.
    """
    from airflow_zorder.core.jobs.options import ClusterOptions
    from spark_jobs.cluster_table import run_cluster

    log(f"warm-up (untimed): baseline + run_cluster {', '.join(curves)} on 4 input files, then on all")
    t0 = time.perf_counter()
    fresh_dir(work).mkdir(parents=True)
    small = work / "input"
    small.mkdir()
    for f in sorted(src.glob("*.parquet"))[:4]:
        shutil.copyfile(f, small / f.name)
    run_baseline(spark, small, work / "baseline", n, key)
    for curve in curves:
        run_cluster(spark, ClusterOptions(table=str(small), columns=list(columns), curve=curve, num_files=n))
    first: dict[str, float] = {}
    os.sync()
    t = time.perf_counter()
    run_baseline(spark, src, work / "baseline_all", n, key)
    first["baseline"] = round(time.perf_counter() - t, 2)
    for curve in curves:
        table = copy_input(src, work / f"all_{curve}")
        os.sync()
        t = time.perf_counter()
        run_cluster(spark, ClusterOptions(table=str(table), columns=list(columns), curve=curve, num_files=n))
        first[curve] = round(time.perf_counter() - t, 2)
    shutil.rmtree(work, ignore_errors=True)
    log(f"warm-up done in {time.perf_counter() - t0:.1f} s; first whole-input runs: {first}")
    return first


class SubPhaseTimer:
    """Wraps spark_jobs.rewrite's step functions to split run_cluster's stage phase (the job code is untouched).

    Whichever of the known step names the rewrite package's modules define are timed, each where it is
    defined (the API has changed between versions: plan_unit/write_unit, then plan_batch/write_batch).
    """

    NAMES = (
        "count_rows",
        "footer_counts",
        "plan_unit",
        "plan_batch",
        "plain_encoded_columns",
        "encodings_sample",
        "plain_from_sample",
        "route_values",
        "write_unit",
        "write_batch",
        "read_staged",
        "staged_checksum",
    )

    def __init__(self) -> None:
        import importlib
        import pkgutil

        import spark_jobs.rewrite as package

        steps = [
            importlib.import_module(m.name) for m in pkgutil.iter_modules(package.__path__, package.__name__ + ".")
        ]
        self.orig = {
            (mod, n): fn
            for mod in steps
            for n in self.NAMES
            if callable(fn := getattr(mod, n, None)) and fn.__module__ == mod.__name__
        }
        self.times: dict[str, float] = {}

    def __enter__(self) -> SubPhaseTimer:
        for (mod, name), fn in self.orig.items():

            def wrapped(*a, __fn=fn, __name=name, **kw):
                t = time.perf_counter()
                try:
                    return __fn(*a, **kw)
                finally:
                    self.times[__name] = self.times.get(__name, 0.0) + time.perf_counter() - t

            setattr(mod, name, wrapped)
        return self

    def __exit__(self, *exc) -> None:
        for (mod, name), fn in self.orig.items():
            setattr(mod, name, fn)

    def summary(self, result: dict[str, Any]) -> dict[str, float]:
        """Step times, plus the write without its routing job and the rest of the stage phase."""
        subs = {k: round(v, 3) for k, v in self.times.items()}
        plan = subs.get("plan_unit", 0.0) + subs.get("plan_batch", 0.0)
        write = subs.get("write_unit", 0.0) + subs.get("write_batch", 0.0)
        if "route_values" in subs:  # called from inside the write
            subs["write_excl_routes"] = round(write - subs["route_values"], 3)
        phases = result.get("phases", {})
        # the encodings' steps run in a second thread, overlapping these: reported, not added up
        timed = (
            plan
            + write
            + subs.get("count_rows", 0.0)
            + subs.get("footer_counts", 0.0)
            + subs.get("read_staged", 0.0)
            + subs.get("staged_checksum", 0.0)
        )
        subs["stage_other"] = round(phases.get("stage_and_verify_s", 0.0) - timed, 3)
        top = [phases[k] for k in ("stage_and_verify_s", "commit_s", "cleanup_s") if k in phases]  # others nest
        subs["outside_phases"] = round(result.get("duration_s", 0.0) - sum(top), 3)
        return subs


def delta_live_files(table: Path | str, version: int | None = None) -> list[str]:
    """The Delta table's live files at ``version`` (default: the latest) from its log, as local paths.

    Never a directory listing: files a later commit removed (not vacuumed) stay on disk and are not live.
    """
    from deltalake import DeltaTable

    dt = DeltaTable(str(table)) if version is None else DeltaTable(str(table), version=version)
    return [u[len("file://") :] if u.startswith("file://") else u for u in dt.file_uris()]


def write_delta_input(src: Path, dst: Path, mon: MemoryMonitor, first: int | None = None) -> dict[str, Any]:
    """``write_deltalake`` of the input's Parquet files (the first ``first`` of them, if given) into a fresh ``dst``.

    The Delta table every Delta strategy starts from (copied, :func:`copy_table`), so they all start from
    identical files and the same log; timed (as the phase ``delta-rs write_deltalake``) for information only.
    One append per input file, as a table fed by a daily load would be: the Delta table has as many files as
    the Parquet input, and Spark reads them with the same parallelism.
    """
    import pyarrow.dataset as ds
    from deltalake import DeltaTable, write_deltalake

    files = sorted(str(p) for p in src.glob("*.parquet"))[:first]
    fresh_dir(dst)
    w: dict[str, Any] = {}
    with phase(mon, f"delta-rs write_deltalake -> {dst.name}", w):
        for f in files:
            # one thread: a threaded scan hands the batches over in any order, so each run's Delta input (and
            # every Delta layout measured from it) would differ; in file order it is the same every run
            scan = ds.dataset(f, format="parquet").scanner(batch_size=128 * 1024, use_threads=False)
            write_deltalake(str(dst), scan.to_reader(), mode="append")
    t = DeltaTable(str(dst))
    return {"write": w, "written_files": len(t.file_uris()), "version": t.version(), "input_files": len(files)}


def copy_table(src: Path, dst: Path) -> Path:
    """A fresh copy of a whole table directory (a Delta table with its ``_delta_log/``)."""
    shutil.copytree(src, fresh_dir(dst))
    return dst


def delta_rows_checksum(table: Path | str, columns: list[str] | None = None, version: int | None = None) -> dict:
    """Rows and an order-independent checksum of a Delta table at ``version`` (default: the latest), read by delta-rs.

    The checksum is DuckDB's ``sum(hash(<every column>))`` over ``DeltaTable(...).to_pyarrow_dataset()``: the
    log's files at that version with the table's schema, so equal rows in any order and any files give equal
    sums, and a lost, duplicated or changed row changes them.
    """
    import duckdb
    from deltalake import DeltaTable

    dt = DeltaTable(str(table)) if version is None else DeltaTable(str(table), version=version)
    data = dt.to_pyarrow_dataset()
    cols = columns or list(data.schema.names)
    con = duckdb.connect()
    try:
        con.register("t", data)
        q = ", ".join('"' + c.replace('"', '""') + '"' for c in cols)
        rows, total = con.execute(f"SELECT count(*), sum(hash({q}))::VARCHAR FROM t").fetchone()
    finally:
        con.close()
    return {"version": dt.version(), "rows": int(rows), "checksum": total or "0"}


def delta_rows_check(table: Path, before_version: int, others: dict[str, Path] | None = None) -> dict[str, Any]:
    """Rows and checksum (``delta_rows_checksum``) of ``table`` at ``before_version`` and now, and of ``others``.

    ``equal``: every one of them has the same row count and checksum (a rewrite that lost, duplicated or
    changed a row makes it false).
    """
    sums = {"before": delta_rows_checksum(table, version=before_version), "after": delta_rows_checksum(table)}
    for name, path in (others or {}).items():
        if (Path(path) / "_delta_log").is_dir():
            sums[name] = delta_rows_checksum(path)
    first = sums["before"]
    equal = all((s["rows"], s["checksum"]) == (first["rows"], first["checksum"]) for s in sums.values())
    return {**sums, "equal": equal}


def run_delta(
    src: Path,
    dst: Path,
    n: int,
    mon: MemoryMonitor,
    values: dict,
    columns: list[str] = COLUMNS,
    match_files: bool = False,
    start: Path | None = None,
) -> dict[str, Any]:
    """delta-rs: ``write_deltalake`` of the input, then ``optimize.z_order(columns, target_size=bytes / n)``, timed.

    ``start``: a Delta table :func:`write_delta_input` wrote; copied to ``dst`` (untimed) instead of writing
    one, so other strategies can start from the same table (the result has no ``write`` then).
    ``match_files``: when the timed run made other than ``n`` files (delta-rs writes its own
    compression, so its bytes per file differ), ``z_order`` runs again (untimed, up to 3 times) with the
    target size scaled by files made / ``n`` -- the same curve order, cut into about ``n`` files (within
    ``n``/32) -- so layouts are compared at the same file count. ``live_files`` are the table's files after it.
    """
    import deltalake
    from deltalake import DeltaTable

    files = sorted(str(p) for p in src.glob("*.parquet"))
    total = dir_bytes(files)
    out: dict[str, Any] = {"version": deltalake.__version__, "target_size": total // n}
    if start is not None:
        copy_table(start, dst)
        out["written_files"] = len(DeltaTable(str(dst)).file_uris())
    else:
        w = write_delta_input(src, dst, mon)
        out["write"], out["written_files"] = w["write"], w["written_files"]
    out["read_version"] = DeltaTable(str(dst)).version()
    z: dict[str, Any] = {}
    with phase(mon, "delta-rs optimize.z_order", z):
        metrics_out = DeltaTable(str(dst)).optimize.z_order(columns, target_size=total // n)
    out["z_order"] = z
    out["optimize_metrics"] = metrics_out
    out["timed_run_table_version"] = DeltaTable(str(dst)).version()  # read_version + 1: one transaction

    live = delta_live_files(dst)
    out["timed_run_files"] = len(live)
    target = total // n
    for _ in range(3 if match_files else 0):  # each re-cut reads the previous one's files: sizes shift a little
        if abs(len(live) - n) <= max(1, n // 32):
            break
        target = int(target * len(live) / n)
        out["match_target_size"] = target
        log(f"delta-rs made {len(live)} files, not {n}: z_order again (untimed) with target {target:,} bytes")
        DeltaTable(str(dst)).optimize.z_order(columns, target_size=target)
        live = delta_live_files(dst)
    out["live_files"] = live
    out["live_bytes"] = dir_bytes(live)
    out["final_table_version"] = DeltaTable(str(dst)).version()
    if values:
        out["report"] = fractions_of(live, values, columns)
    return out


# --------------------------------------------------------------------------- output


def ratio_to_references(d: dict[str, Any], before: dict[str, Any], after: dict[str, Any]) -> None:
    """Set ``d``'s reference (mean of the baseline runs just before and after it) and its wall and CPU ratios to it.

    Load changes during the run (and the JVM warming up) shift both sides of each ratio alike.
    """
    ref_wall, ref_cpu = (before["wall_s"] + after["wall_s"]) / 2, (before["cpu_s"] + after["cpu_s"]) / 2
    d["reference"] = {"wall_s": round(ref_wall, 3), "cpu_s": round(ref_cpu, 1)}
    d["wall_ratio"] = round(d["wall_s"] / ref_wall, 3)
    d["cpu_ratio"] = round(d["cpu_s"] / ref_cpu, 3) if ref_cpu else None


def median_run(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """One curve's figures over its rounds: the run with the median ratio to its references, plus every round's."""
    ordered = sorted(runs, key=lambda r: r["wall_ratio"])
    mid = dict(ordered[(len(ordered) - 1) // 2])  # details (phases, layout) of the lower-median run
    if len(runs) > 1:
        mid["wall_ratio"] = round(statistics.median(r["wall_ratio"] for r in runs), 3)
        mid["cpu_ratio"] = round(statistics.median(r["cpu_ratio"] for r in runs), 3)
    keep = (
        "wall_s",
        "cpu_s",
        "reference",
        "wall_ratio",
        "cpu_ratio",
        "peak_python_rss_mb",
        "peak_jvm_rss_mb",
        "peak_workers_pss_mb",
        "load1_end",
    )
    mid["rounds"] = [{k: r[k] for k in keep if k in r} for r in runs]
    return mid


def ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}x" if b else "-"


def print_table(res: dict[str, Any]) -> list[tuple[str, bool, str]]:
    ideal = res["ideal"]
    base = res["baseline_mean_s"]
    base_cpu = res["baseline_mean_cpu_s"]
    lines = []
    p = lines.append
    p("")
    p(
        f"TPC-H lineitem SF{res['sf']:g}: {res['input']['rows']:,} rows, {res['input']['files']} files, "
        f"{res['input']['bytes'] / MB:.0f} MB; clustering on {', '.join(COLUMNS)}; "
        f"Spark {res['spark_version']} local[2], 4g driver, {res['shuffle_partitions']} shuffle partitions"
    )
    p("")
    p("Wall time and peak RSS (per phase)")
    hdr = (
        f"{'strategy':<28}{'wall s':>9}{'vs base':>9}{'cpu s':>8}{'vs base':>9}{'py RSS MB':>11}{'JVM RSS MB':>12}"
        f"{'wrk PSS MB':>12}{'files':>7}{'load1':>7}"
    )
    p(hdr)
    p("-" * len(hdr))

    def row(name: str, d: dict, files: Any, spark: bool = True) -> None:
        jvm = f"{d['peak_jvm_rss_mb']:.0f}" if spark else "-"
        wrk = f"{d['peak_workers_pss_mb']:.0f}" if spark else "-"
        p(
            f"{name:<28}{d['wall_s']:>9.1f}{ratio(d['wall_s'], base):>9}{d['cpu_s']:>8.0f}{ratio(d['cpu_s'], base_cpu):>9}"
            f"{d['peak_python_rss_mb']:>11.0f}{jvm:>12}{wrk:>12}{files!s:>7}{d['load1_end']:>7.1f}"
        )

    refs = res.get("baselines") or [res["baseline_before"], res["baseline_after"]]
    for i, b in enumerate(refs):
        row(f"baseline #{i}", b, b.get("files", "-"))
    p(f"{'baseline mean':<28}{base:>9.1f}{'1.00x':>9}{base_cpu:>8.0f}{'1.00x':>9}")
    for curve, c in res["curves"].items():
        for i, r in enumerate(c.get("rounds") or [c]):
            row(f"run_cluster {curve} #{i + 1}", {**c, **r}, c["report"]["files"])
            p(
                f"{'  baseline runs around it':<28}{r['reference']['wall_s']:>9.1f}{r['wall_ratio']:>8.2f}x"
                f"{r['reference']['cpu_s']:>8.0f}{r['cpu_ratio']:>8.2f}x"
            )
    if res.get("delta_rs") and "z_order" in res["delta_rs"]:
        d = res["delta_rs"]
        row("delta-rs write_deltalake", d["write"], d["written_files"], spark=False)
        row("delta-rs optimize.z_order", d["z_order"], d["report"]["files"], spark=False)
    if res.get("first_runs_s"):
        fr = res["first_runs_s"]
        p(
            "(untimed warm-up, each job's first run on the whole input in this JVM: "
            + ", ".join(f"{k} {v:.1f} s" for k, v in fr.items())
            + ")"
        )
    p(
        f"(baseline runs interleaved with the curves: #0, curve 1, #1, curve 2, ...; spread max-min = "
        f"{res['baseline_spread']:.0%} of the mean; each curve's goal ratio is to the mean of the two runs around it)"
    )
    if res.get("delta_rs") and "z_order" in res["delta_rs"]:
        p("(delta-rs runs in this Python process after the SparkSession is stopped: its memory is the py RSS column)")
    p(
        f"(cpu s = user+system seconds of the Python driver, the JVM and its Python workers; load1 = 1-minute "
        f"load average at the end of the phase on this {res['cpus']}-CPU machine)"
    )
    p(
        "(baseline = read + repartitionByRange(l_orderkey) + sortWithinPartitions + write; "
        "run_cluster wall includes its count, sampling, write, re-read count, commit)"
    )
    p("")
    p(
        f"Point queries: mean fraction of files whose min/max contains a value drawn from the data "
        f"(ideal for 64 files, 3 columns = 64^(-1/3) = {ideal:.2f}; goal <= {GOAL_FRACTION_FACTOR} x ideal)"
    )
    hdr2 = f"{'layout':<28}{'files':>6}" + "".join(f"{c:>22}" for c in COLUMNS)
    p(hdr2)
    p("-" * len(hdr2))

    def frow(name: str, rep: dict) -> None:
        cells = "".join(f"{rep['fractions'][c]:>9.3f} ({rep['fractions'][c] / ideal:>5.2f}x id)" for c in COLUMNS)
        p(f"{name:<28}{rep['files']:>6}{cells}")

    frow("as generated (input)", res["input_report"])
    if "report" in res["baseline_before"]:
        frow("baseline (l_orderkey sort)", res["baseline_before"]["report"])
    for curve, c in res["curves"].items():
        frow(f"run_cluster {curve}", c["report"])
    if res.get("delta_rs") and "report" in res["delta_rs"]:
        d = res["delta_rs"]
        frow("delta-rs z_order", d["report"])
        p(f"  (delta-rs made {d['report']['files']} files; its own ideal for that count is {d['report']['ideal']:.3f})")
    p("")
    code = res.get("code", {})
    p(
        f"run_cluster phases (s), job code at {code.get('head', '?')}"
        + (f" + uncommitted changes in {', '.join(code['modified'])}" if code.get("modified") else "")
    )
    for curve, c in res["curves"].items():
        ph = c["result"].get("phases", {})
        sub = c["sub_phases_s"]
        p(
            f"  {curve:<8} "
            + ", ".join(f"{k}={v}" for k, v in ph.items())
            + " | "
            + ", ".join(f"{k}={v}" for k, v in sub.items())
        )
    p("")
    goals = []
    for curve in GOAL_CURVES:
        c = res["curves"].get(curve)
        if not c:
            continue
        worst = max(c["report"]["fractions"].values())
        ok_a = all(f <= GOAL_FRACTION_FACTOR * ideal for f in c["report"]["fractions"].values())
        goals.append(
            (
                f"(a) {curve}: every column's fraction <= {GOAL_FRACTION_FACTOR} x {ideal:.2f} = "
                f"{GOAL_FRACTION_FACTOR * ideal:.3f}",
                ok_a,
                f"worst {worst:.3f}",
            )
        )
    for curve in GOAL_CURVES:
        c = res["curves"].get(curve)
        if not c:
            continue
        rounds = c.get("rounds") or [c]
        ok_b = c["wall_ratio"] <= GOAL_TIME_FACTOR
        goals.append(
            (
                f"(b) {curve}: clustering wall time <= {GOAL_TIME_FACTOR} x the baseline runs around it "
                f"(median over {len(rounds)} round(s))",
                ok_b,
                f"{c['wall_ratio']:.2f}x (rounds: "
                + ", ".join(
                    f"{r['wall_s']:.1f} s / {r['reference']['wall_s']:.1f} s = {r['wall_ratio']:.2f}x" for r in rounds
                )
                + f"; cpu seconds {c['cpu_ratio']:.2f}x)",
            )
        )
    for text, ok, detail in goals:
        p(f"{'PASS' if ok else 'FAIL'}  {text}: {detail}")
    print("\n".join(lines), flush=True)
    return goals


# --------------------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> int:
    try:
        import deltalake  # noqa: F401

        have_delta = True
    except ImportError:
        have_delta = False
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sf", type=float, default=1.0, help="TPC-H scale factor (default 1)")
    ap.add_argument("--work", default=str(REPO / ".bench"), help="work directory (default .bench/)")
    ap.add_argument("--files", type=int, default=64, help="input and output file count (default 64)")
    ap.add_argument("--curves", default="zorder,hilbert,linear", help="curves to run (default zorder,hilbert,linear)")
    ap.add_argument(
        "--delta-rs",
        action=argparse.BooleanOptionalAction,
        default=have_delta,
        help="also run delta-rs optimize.z_order (default on if deltalake imports)",
    )
    ap.add_argument("--n-values", type=int, default=2000, help="query values per column (default 2000)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument(
        "--rounds",
        type=int,
        default=5,
        help="rounds of the curves, each run between two baseline runs (default 5; goal: the median ratio; "
        "single rounds move +-0.1x on a shared 2-core machine, so 3 rounds decide too little)",
    )
    ap.add_argument("--keep", action="store_true", help="keep the rewritten tables (default: delete after measuring)")
    a = ap.parse_args(argv)
    curves = [c.strip() for c in a.curves.split(",") if c.strip()]
    n = a.files
    work = Path(a.work).resolve()
    work.mkdir(parents=True, exist_ok=True)
    src = work / f"lineitem_sf{a.sf:g}_{n}"

    mon = MemoryMonitor().start()
    code = code_state()
    res: dict[str, Any] = {
        "sf": a.sf,
        "files": n,
        "columns": COLUMNS,
        "curves": {},
        "shuffle_partitions": 64,
        "started": time.strftime("%Y-%m-%dT%H:%M:%S"),
        "cpus": os.cpu_count(),
        "total_memory_mb": round(psutil.virtual_memory().total / MB),
        "code": code,
    }

    gen: dict[str, Any] = {}
    with phase(mon, "generate / reuse TPC-H data", gen):
        info = generate_lineitem(a.sf, src, files=n)
    res["input"] = {
        "dir": str(src),
        "rows": info["rows"],
        "files": info["num_files"],
        "bytes": info["bytes"],
        "generated": not info["skipped"],
        "generate_wall_s": gen["wall_s"],
    }

    in_files = layout_report.data_files(str(src))
    values = layout_report.sample_values(in_files, COLUMNS, a.n_values, a.seed)
    res["input_report"] = report_of(src, values)
    res["ideal"] = point_queries.ideal_point_query_fraction(n, len(COLUMNS))

    spark = build_spark(64)
    res["spark_version"] = spark.version
    try:
        spark.sparkContext.setLogLevel("WARN")
        res["first_runs_s"] = warm_up(spark, src, work / "warmup", n, curves)
        out = work / "baseline"
        refs: list[dict[str, Any]] = []

        def reference() -> dict[str, Any]:
            """A baseline run; one before the first curve and one after each (R, c1, R, c2, R, ...)."""
            d: dict[str, Any] = {}
            with phase(mon, f"baseline #{len(refs)}", d):
                run_baseline(spark, src, out, n)
            d["files"] = len(layout_report.data_files(str(out)))
            if not refs:
                d["report"] = report_of(out, values)
            refs.append(d)
            return d

        before = reference()
        for rnd in range(a.rounds):
            for curve in curves:
                dst = work / f"cluster_{curve}"
                d = {}
                log(f"round {rnd + 1}/{a.rounds}: copying input to {dst}")
                copy_input(src, dst)
                with phase(mon, f"run_cluster {curve}", d):
                    from airflow_zorder.core.jobs.options import ClusterOptions
                    from spark_jobs.cluster_table import run_cluster

                    with SubPhaseTimer() as sub:
                        r = run_cluster(
                            spark, ClusterOptions(table=str(dst), columns=list(COLUMNS), curve=curve, num_files=n)
                        )
                d["sub_phases_s"] = sub.summary(r)
                d["result"] = r
                d["report"] = report_of(dst, values)
                log(f"{curve}: fractions {d['report']['fractions']}")
                if not a.keep:
                    shutil.rmtree(dst, ignore_errors=True)
                after = reference()
                ratio_to_references(d, before, after)
                res["curves"].setdefault(curve, []).append(d)
                before = after
        if not a.keep:
            shutil.rmtree(out, ignore_errors=True)
    finally:
        spark.stop()
    res["baselines"] = refs
    res["baseline_before"], res["baseline_after"] = refs[0], refs[-1]
    res["rounds"] = a.rounds
    res["curves"] = {curve: median_run(runs) for curve, runs in res["curves"].items()}
    res["baseline_mean_s"] = round(sum(r["wall_s"] for r in refs) / len(refs), 3)
    res["baseline_mean_cpu_s"] = round(sum(r["cpu_s"] for r in refs) / len(refs), 1)
    walls = [r["wall_s"] for r in refs]
    res["baseline_spread"] = round((max(walls) - min(walls)) / max(res["baseline_mean_s"], 1e-9), 3)

    if a.delta_rs:
        try:
            res["delta_rs"] = run_delta(src, work / "delta_zorder", n, mon, values)
            log(f"delta-rs: fractions {res['delta_rs']['report']['fractions']}")
        except Exception as exc:  # noqa: BLE001 - the comparison is optional; report why it failed
            res["delta_rs"] = {"error": f"{type(exc).__name__}: {exc}"}
            log(f"delta-rs failed: {exc}")
        if not a.keep:
            shutil.rmtree(work / "delta_zorder", ignore_errors=True)
    mon.stop()

    goals = print_table(res)
    res["goals"] = [{"goal": t, "pass": ok, "detail": det} for t, ok, det in goals]
    res["all_pass"] = all(ok for _, ok, _ in goals)
    out_json = work / "bench_cluster.json"
    out_json.write_text(json.dumps(res, indent=2, default=str) + "\n")
    print(f"\nfigures written to {out_json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
