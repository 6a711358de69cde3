"""Benchmark the sensor's decision on a Delta table read through its log (no Spark, no stats job).

    .venv/bin/python benchmarks/bench_delta_sensor.py [--files 10000] [--commits 10] [--repeat 5] [--dir DIR] [--keep]

1. builds a local Delta table of ``--files`` small files (three int32 columns of random values, so every file
   spans each column's range and the decision is ``recluster``) with ``deltalake.write_deltalake`` in
   ``--commits`` commits (delta-rs cuts a commit into files of ~1,024 rows with ``target_file_size=1``);
2. in a fresh Python process (so its peak RSS is the sensor's own), times the sensor's decision,
   ``FileStatsHook(table).evaluate(columns=["a", "b", "c"])``, ``--repeat`` times each:
   *cold*: a new hook each time (the whole log read, the stats rows built, the metrics computed),
   *warm*: the same hook again (only new commits read; the rows of an unchanged version are reused),
   plus the trigger's change signal (``get_change_signal`` on a warm hook) and the first call of the process
   (imports included), reported apart, and the cold path's parts: reading the log (``DeltaLog.refresh``) and
   building the stats rows (``DeltaLog.snapshot``; the rest is the metrics);
3. writes a checkpoint (``DeltaTable.create_checkpoint``) and measures again.

Prints medians, peak RSS and PASS/FAIL for the goal (cold decision under 1 s).  The table goes to a
temporary directory, removed at the end, unless ``--keep`` or ``--dir`` (an existing table there of the right
size is reused); then the figures are written beside it to ``bench_delta_sensor.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

COLUMNS = ["a", "b", "c"]
GOAL_S = 1.0


def build_table(root: Path, files: int, commits: int, seed: int = 0) -> dict[str, float]:
    """A Delta table of about ``files`` files written by delta-rs in ``commits`` commits (or reuse one)."""
    import numpy as np
    import pyarrow as pa
    from deltalake import DeltaTable, write_deltalake

    if (root / "_delta_log").is_dir() and len(DeltaTable(str(root)).file_uris()) >= files:
        return {"write_s": 0.0, "reused": True}
    shutil.rmtree(root, ignore_errors=True)
    rng = np.random.default_rng(seed)
    rows_per_file = 1024  # delta-rs closes a file after each 1,024-row batch when target_file_size is tiny
    started = time.perf_counter()
    done = 0
    while done < files:
        per_commit = min(-(-files // commits), files - done)
        n = per_commit * rows_per_file
        data = pa.table({c: pa.array(rng.integers(0, 1_000_000, n, dtype=np.int32)) for c in COLUMNS})
        write_deltalake(str(root), data, mode="append", target_file_size=1)
        done = len(DeltaTable(str(root)).file_uris())
    return {"write_s": time.perf_counter() - started, "reused": False}


def _peak_rss_mb() -> float:
    """This process's peak RSS: ``VmHWM`` (reset by exec), not ``ru_maxrss``, which keeps the peak of the
    process that forked it (``run_all.py``'s, ~0.9 GB, when ``make bench`` runs this)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def measure(table: str, repeat: int) -> dict[str, object]:
    """The child process: time the sensor's decision; prints one JSON line."""

    os.environ.setdefault("AIRFLOW_HOME", tempfile.mkdtemp(prefix="bench-delta-airflow-"))
    os.environ.setdefault("AIRFLOW__CORE__LOAD_EXAMPLES", "False")
    t0 = time.perf_counter()
    from airflow_zorder.core.delta import delta_log
    from airflow_zorder.hooks.file_stats import FileStatsHook

    rss_imports_mb = _peak_rss_mb()
    first_hook = FileStatsHook(table)
    first = first_hook.evaluate(columns=COLUMNS)
    first_s = time.perf_counter() - t0

    cold = []
    for _ in range(repeat):
        t = time.perf_counter()
        payload = FileStatsHook(table).evaluate(columns=COLUMNS)
        cold.append(time.perf_counter() - t)
    read, rows = [], []  # where a cold decision goes: reading the log, building the stats rows (rest: metrics)
    for _ in range(repeat):
        log = delta_log.DeltaLog(table)
        t = time.perf_counter()
        log.refresh()
        read.append(time.perf_counter() - t)
        t = time.perf_counter()
        log.snapshot(COLUMNS)
        rows.append(time.perf_counter() - t)
    hook = FileStatsHook(table)
    hook.evaluate(columns=COLUMNS)
    warm, signal = [], []
    for _ in range(repeat):
        t = time.perf_counter()
        hook.evaluate(columns=COLUMNS)
        warm.append(time.perf_counter() - t)
        t = time.perf_counter()
        hook.get_change_signal()
        signal.append(time.perf_counter() - t)
    return {
        "decision": payload["decision"],
        "num_files": payload["num_files"],
        "snapshot_id": payload["snapshot_id"],
        "first_call_s": first_s,
        "first_decision": first["decision"],
        "cold_s": statistics.median(cold),
        "cold_all_s": cold,
        "warm_s": statistics.median(warm),
        "warm_all_s": warm,
        "signal_s": statistics.median(signal),
        "log_read_s": statistics.median(read),
        "rows_s": statistics.median(rows),
        "rss_after_imports_mb": rss_imports_mb,
        "peak_rss_mb": _peak_rss_mb(),
    }


def run_child(table: Path, repeat: int) -> dict[str, object]:
    out = subprocess.run(
        [sys.executable, __file__, "--measure", str(table), "--repeat", str(repeat)],
        check=True,
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def run(table: Path, files: int, commits: int, repeat: int) -> dict[str, Any]:
    """Build (or reuse) the table, then measure without and with a checkpoint; the figures as a dict.

    A reused table that already has a checkpoint is measured with it only.  ``make bench`` (``run_all.py``)
    calls this and keeps the table in its work directory.
    """
    from deltalake import DeltaTable

    started = time.perf_counter()
    built = build_table(table, files, commits)
    dt_ = DeltaTable(str(table))
    info = {"files": len(dt_.file_uris()), "version": dt_.version(), **built}
    results: dict[str, Any] = {
        "table": info,
        "goal_s": GOAL_S,
        "repeat": repeat,
        "measured_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    if not (table / "_delta_log" / "_last_checkpoint").exists():
        results["no_checkpoint"] = run_child(table, repeat)
        dt_.create_checkpoint()
    results["checkpoint"] = run_child(table, repeat)
    results["total_s"] = time.perf_counter() - started
    try:
        results["load_avg"] = os.getloadavg()
    except OSError:
        pass
    return results


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--files", type=int, default=10_000)
    ap.add_argument("--commits", type=int, default=10)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--dir", help="where the table goes (default: a temporary directory)")
    ap.add_argument("--keep", action="store_true", help="keep the table")
    ap.add_argument("--measure", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.measure:
        print(json.dumps(measure(args.measure, args.repeat)))
        return 0

    base = Path(args.dir) if args.dir else Path(tempfile.mkdtemp(prefix="bench-delta-"))
    table = base / "events"
    try:
        results = run(table, args.files, args.commits, args.repeat)
        info = results["table"]
        print(
            f"{'log':<14} {'decision':<10} {'first call':>10} {'cold (med)':>11} {'log read':>9} "
            f"{'rows':>7} {'warm (med)':>11} {'signal':>8} {'peak RSS (imports)':>19}"
        )
        measured = [n for n in ("no_checkpoint", "checkpoint") if n in results]
        for name in measured:
            r = results[name]
            print(
                f"{name:<14} {r['decision']:<10} {r['first_call_s']:>9.3f}s {r['cold_s']:>10.3f}s "
                f"{r['log_read_s']:>8.3f}s {r['rows_s']:>6.3f}s {r['warm_s']:>10.3f}s "
                f"{r['signal_s'] * 1000:>6.1f}ms {r['peak_rss_mb']:>7.0f}MB ({r['rss_after_imports_mb']:.0f}MB)"
            )
        ok = all(results[n]["cold_s"] < GOAL_S for n in measured)
        print(
            f"{'PASS' if ok else 'FAIL'}: cold decision on {info['files']} files under {GOAL_S:g} s "
            f"(median of {args.repeat}); load average {results.get('load_avg')}"
        )
        if args.dir or args.keep:
            (base / "bench_delta_sensor.json").write_text(json.dumps(results, indent=2, default=str))
            print(f"kept: {table} and {base / 'bench_delta_sensor.json'}")
        return 0 if ok else 1
    finally:
        if not args.keep and not args.dir:
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
