"""Benchmark the sensor's decision on a Hudi table read through its timeline (hudi-rs + footers; no Spark, no stats job).

    .venv/bin/python benchmarks/bench_hudi_sensor.py [--file-groups 10000] [--repeat 5] [--dir DIR]
        [--merge-into docs/benchmarks/results.json --doc docs/benchmarks.md]

1. builds a copy-on-write Hudi table of ``--file-groups`` file groups (three int columns of random values, so every
   file spans each column's range and the decision is ``recluster``) with Hudi's own Spark bundle: one
   ``bulk_insert`` (sort mode NONE) of a frame cut into that many Spark partitions, under ``.venv-hudi``'s
   spark-submit (Spark 3.5.8 + hudi-spark3.5-bundle 1.2.0; ``make hudi-env``); a table already at ``--dir`` is reused;
2. in a fresh Python process (its peak RSS the sensor's own), times ``FileStatsHook(table).evaluate(columns)``:
   *first* (imports, the timeline, every base file's footer read), *new hook, warm process* (a new hook as a
   deferrable sensor's trigger or a poke makes each time: the timeline and latest slices read again, the footers of
   unchanged base files reused from the process), *same hook* (the rows of an unchanged instant reused), and the
   trigger's change signal (``get_change_signal``: the latest completed instant).

Prints medians, peak RSS and PASS/FAIL for the goal (a decision on 10,000 file groups under 1 s once warm).
With ``--merge-into``/``--doc`` it rewrites only its key ``hudi_sensor`` and its section of docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench_doc import merge_into, splice_section

REPO = Path(__file__).resolve().parent.parent
for p in (REPO, REPO / "tests"):
    if str(p) not in sys.path:
        sys.path.insert(0, str(p))

COLUMNS = ["a", "b", "c"]
GOAL_S = 1.0
KEY = "hudi_sensor"
BEGIN, END = "<!-- bench_hudi_sensor:begin -->", "<!-- bench_hudi_sensor:end -->"

WRITER = r"""
import sys
from pyspark.sql import SparkSession, functions as F
root, groups = sys.argv[1], int(sys.argv[2])
spark = SparkSession.builder.getOrCreate()
df = spark.range(0, groups * 64).select(
    F.col("id"), *[(F.hash(F.col("id"), F.lit(s)) % 1000000).cast("int").alias(c) for s, c in enumerate("abc")]
).repartition(groups)
(df.write.format("hudi").option("hoodie.table.name", "wide").option("hoodie.datasource.write.recordkey.field", "id")
   .option("hoodie.datasource.write.precombine.field", "id").option("hoodie.datasource.write.operation", "bulk_insert")
   .option("hoodie.bulkinsert.sort.mode", "NONE").option("hoodie.bulkinsert.shuffle.parallelism", str(groups))
   .option("hoodie.datasource.write.keygenerator.class", "org.apache.hudi.keygen.NonpartitionedKeyGenerator")
   .mode("overwrite").save(root))
spark.stop()
"""


def build_table(root: Path, groups: int) -> dict[str, Any]:
    """A COW table of ``groups`` file groups written by Hudi's bundle (or the one already at ``root``)."""
    import hudi
    from hudi_tables import submit

    if (root / ".hoodie").is_dir():
        have = len(hudi.HudiTableBuilder.from_base_uri(str(root)).build().get_file_slices())
        if have >= groups:
            return {"write_s": 0.0, "reused": True, "file_groups": have}
    script = Path(tempfile.mkdtemp(prefix="bench-hudi-")) / "write_wide.py"
    script.write_text(WRITER)
    started = time.perf_counter()
    submit(script, str(root), str(groups), conf={"spark.driver.memory": "4g"}, timeout=3600)
    have = len(hudi.HudiTableBuilder.from_base_uri(str(root)).build().get_file_slices())
    return {"write_s": round(time.perf_counter() - started, 1), "reused": False, "file_groups": have}


def _peak_rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024.0
    return 0.0


def measure(table: str, repeat: int) -> dict[str, Any]:
    """The child process: time the sensor's decision; prints one JSON line."""
    os.environ.setdefault("AIRFLOW_HOME", tempfile.mkdtemp(prefix="bench-hudi-airflow-"))
    os.environ.setdefault("AIRFLOW__CORE__LOAD_EXAMPLES", "False")
    t0 = time.perf_counter()
    from airflow_zorder.hooks.file_stats import FileStatsHook

    first = FileStatsHook(table).evaluate(columns=COLUMNS)
    first_s = time.perf_counter() - t0
    new_hook, slices = [], []
    for _ in range(repeat):
        t = time.perf_counter()
        payload = FileStatsHook(table).evaluate(columns=COLUMNS)
        new_hook.append(time.perf_counter() - t)
        t = time.perf_counter()
        FileStatsHook(table).metadata_format.snapshot()
        slices.append(time.perf_counter() - t)
    hook = FileStatsHook(table)
    hook.evaluate(columns=COLUMNS)
    same, signal = [], []
    for _ in range(repeat):
        t = time.perf_counter()
        hook.evaluate(columns=COLUMNS)
        same.append(time.perf_counter() - t)
        t = time.perf_counter()
        hook.get_change_signal()
        signal.append(time.perf_counter() - t)
    return {
        "decision": payload["decision"],
        "num_files": payload["num_files"],
        "first_s": round(first_s, 3),
        "first_decision": first["decision"],
        "new_hook_s": round(statistics.median(new_hook), 3),
        "new_hook_range_s": [round(min(new_hook), 3), round(max(new_hook), 3)],
        "slices_s": round(statistics.median(slices), 3),
        "same_hook_s": round(statistics.median(same), 3),
        "signal_s": round(statistics.median(signal), 3),
        "peak_rss_mb": round(_peak_rss_mb(), 1),
    }


def hudi_sensor_section(r: dict[str, Any]) -> list[str]:
    """This benchmark's section of docs/benchmarks.md (between its markers), from ``results["hudi_sensor"]``."""
    m = r["measured"]
    ok = "PASS" if m["new_hook_s"] < GOAL_S else "FAIL"
    return [
        BEGIN,
        "## Watching a Hudi table (hudi-rs + footers, no Spark)",
        "",
        f"A copy-on-write Hudi table of {m['num_files']:,} file groups (3 int columns, written by Hudi "
        f"{r['hudi_bundle']} on Spark {r['spark_line']}), read by hudi-rs {r['hudi_rs']} and pyarrow: "
        f"`FileStatsHook(table).evaluate(columns=['a', 'b', 'c'])`, median of {r['repeat']} "
        f"(`benchmarks/bench_hudi_sensor.py` at git `{r.get('git_head', '?')}`, {r.get('cpus', '?')} CPUs, load average "
        f"{r.get('load_start', 0.0):.1f} at the start).",
        "",
        "| what | seconds |",
        "|---|---:|",
        f"| first decision of a process (imports, timeline, {m['num_files']:,} footers read) | {m['first_s']:.2f} |",
        f"| a new hook in a warm process (timeline listed again; slices, footers and rows reused) | {m['new_hook_s']:.3f} |",
        f"| opening the table with a new hook (config, timeline listing; the latest slices reused while the completed "
        f"instants are unchanged) | {m['slices_s']:.3f} |",
        f"| the same hook again (unchanged instant) | {m['same_hook_s']:.3f} |",
        f"| the trigger's change signal (latest completed instant) | {m['signal_s']:.3f} |",
        "",
        f"Decision `{m['decision']}`; peak RSS {m['peak_rss_mb']:.0f} MB. Goal: a decision on 10,000 file groups "
        f"under {GOAL_S:.0f} s once warm: **{ok}**.",
        END,
    ]


def render(r: dict[str, Any]) -> str:
    return "\n".join(hudi_sensor_section(r))


def merge(results: dict[str, Any], into: Path | None, doc: Path | None) -> None:
    if into:
        merge_into(into, KEY, results)
    if doc:
        splice_section(doc, BEGIN, END, render(results))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--file-groups", type=int, default=10_000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--dir", type=Path, default=Path(tempfile.gettempdir()) / "bench-hudi-sensor")
    ap.add_argument("--merge-into", type=Path)
    ap.add_argument("--doc", type=Path)
    ap.add_argument("--measure", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.measure:
        print(json.dumps(measure(args.measure, args.repeat)))
        return 0
    import hudi

    from airflow_zorder.hudi_spark import BUNDLES

    built = build_table(args.dir / "wide", args.file_groups)
    load_start = os.getloadavg()[0]
    print(f"table: {built}", flush=True)
    out = subprocess.run(
        [sys.executable, __file__, "--measure", str(args.dir / "wide"), "--repeat", str(args.repeat)],
        check=True,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    measured = json.loads(out.stdout.strip().splitlines()[-1])
    results = {
        "git_head": subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True
        ).stdout.strip(),
        "cpus": os.cpu_count(),
        "load_start": load_start,
        "measured": measured,
        "build": built,
        "repeat": args.repeat,
        "spark_line": "3.5.8",
        "hudi_bundle": BUNDLES["3.5"].version,
        "hudi_rs": getattr(hudi, "__version__", "?"),
    }
    print(json.dumps(results, indent=1))
    print(render(results))
    merge(results, args.merge_into, args.doc)
    return 0 if measured["new_hook_s"] < GOAL_S else 1


if __name__ == "__main__":
    sys.exit(main())
