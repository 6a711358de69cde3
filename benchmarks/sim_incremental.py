"""Quick numpy simulation of issue 25's benchmark: never / full / incremental re-clustering over 30 appends.

    nice -n 10 .venv/bin/python benchmarks/sim_incremental.py [--rows 300000] [--days 30] [--skew 0] [--quiet]

No Spark, no Parquet: a "file" is an in-memory block of rows of 3 integer columns.  The base (``--rows``
rows) is clustered into 64 files: rows sorted by the Hilbert key (:func:`curves.curve_keys`) of their
per-column rank ids, cut into equal files.  Each day appends ``rows / days`` fresh rows in 2 unsorted files;
then the sensor rule (the worst column's ``ratio_to_ideal`` from :func:`metrics.partition_clustering` over
FILE_STATS_SCHEMA rows, d = 3) compared with ``--threshold`` triggers a re-cluster per policy:

* never: nothing;
* full: every file rewritten into ``round(bytes / target)`` files (today's job);
* incremental: :func:`incremental_stats.plan_from_stats`, each bin clustered among itself.

The target file size is the base's file size.  Bytes are rows x 24.  Reported per day: bytes rewritten, files,
worst ratio after the day's action; in total: write amplification (bytes rewritten / bytes appended), the mean
and worst of the daily worst ratio.  Issue 25's goal: incremental's mean <= full's + 0.2, never above 1.5, with
at most 1/5 of full's bytes (moonshot 1/10).
"""

from __future__ import annotations

import argparse
import datetime as dt
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from airflow_zorder.core.layout import curve_keys
from airflow_zorder.core.policy import incremental, incremental_stats, metrics
from airflow_zorder.core.stats.stats_schema import file_stats_table

COLUMNS = ("a", "b", "c")
ROW_BYTES = 24
DOMAIN = 1_000_000
_NOW = dt.datetime(2025, 1, 1, tzinfo=dt.UTC)


@dataclass
class File:
    """An in-memory data file: its rows (n x 3) and the clustering run that wrote it (None: never)."""

    path: str
    rows: np.ndarray
    run: str | None

    @property
    def bytes(self) -> int:
        """Size on 'disk'."""
        return int(self.rows.shape[0]) * ROW_BYTES


def fresh_rows(rng: np.random.Generator, n: int, skew: float) -> np.ndarray:
    """``n`` rows of 3 integer columns, uniform (skew 0) or denser near 0 (value = U ** (1 + skew))."""
    u = rng.random((n, len(COLUMNS)))
    return np.floor(u ** (1.0 + skew) * DOMAIN).astype(np.int64)


def cluster(rows: np.ndarray, k: int, seed: int = 0) -> list[np.ndarray]:
    """Cut rows into ``k`` files as the job does (:func:`curve_keys.build_plan`: per-column quantile range ids ->
    Hilbert key -> file boundaries at key quantiles snapped to curve cells), from a sample of <= 100,000 rows."""
    table = pa.table({c: rows[:, j] for j, c in enumerate(COLUMNS)})
    rng = np.random.default_rng(seed)
    sample = table.take(rng.choice(rows.shape[0], min(rows.shape[0], 100_000), replace=False))
    plan = curve_keys.build_plan(sample, COLUMNS, "hilbert", k, salt_bits=0)
    keys = curve_keys.compute_keys(plan, [table.column(c).combine_chunks() for c in COLUMNS], None)
    fid = curve_keys.file_ids(plan, keys)
    order = np.argsort(fid, kind="stable")
    cuts = np.searchsorted(fid[order], np.arange(1, k))
    return [part for part in np.split(rows[order], cuts) if part.shape[0]]


def stats_rows(files: list[File]):
    """FILE_STATS_SCHEMA rows (one per file and column) plus the path -> run mapping."""
    cols: dict[str, list] = {k: [] for k in ("path", "file_size", "file_rows", "column_name", "min_value", "max_value")}
    for f in files:
        lo, hi = f.rows.min(axis=0), f.rows.max(axis=0)
        for j, c in enumerate(COLUMNS):
            for k, v in zip(cols, (f.path, f.bytes, f.rows.shape[0], c, str(lo[j]), str(hi[j]))):
                cols[k].append(v)
    n = len(cols["path"])
    cols.update(snapshot_id=[1] * n, table_name=["sim"] * n, arrow_type=["int64"] * n)
    cols.update(has_stats=[True] * n, collected_at=[_NOW] * n)
    return file_stats_table(cols, n), {f.path: f.run for f in files}


def worst_ratio(files: list[File]) -> float:
    """The sensor's number: the worst column's ratio to ideal (d = 3)."""
    stats, _ = stats_rows(files)
    per_col = next(iter(metrics.partition_clustering(stats, COLUMNS, num_clustering_columns=3).values()))
    return max(cc.ratio_to_ideal for cc in per_col.values())


class Table:
    """One policy's copy of the table."""

    def __init__(self, name: str, base: list[File]) -> None:
        self.name, self.files, self.runs = name, list(base), 0
        self.rewritten: list[int] = []
        self.ratios: list[float] = []
        self.reasons: tuple[str, ...] = ()

    def rewrite(self, groups: list[tuple[list[File], int]]) -> int:
        """Cluster each group of files among itself into its number of files; return the bytes rewritten."""
        self.runs += 1
        gone = {f.path for g, _ in groups for f in g}
        out = [f for f in self.files if f.path not in gone]
        for b, (g, k) in enumerate(groups):
            for i, part in enumerate(cluster(np.concatenate([f.rows for f in g]), k)):
                out.append(File(f"{self.name}-r{self.runs}-b{b}-{i}", part, f"{self.name}-r{self.runs}-b{b}"))
        self.files = out
        return sum(f.bytes for g, _ in groups for f in g)

    def recluster(self, target: int, params: incremental.IncrementalParams) -> int:
        """The policy's re-clustering run (bytes rewritten)."""
        if self.name == "never":
            return 0
        if self.name == "full":
            total = sum(f.bytes for f in self.files)
            return self.rewrite([(self.files, max(1, round(total / target)))])
        stats, runs = stats_rows(self.files)
        plan = incremental_stats.plan_from_stats(stats, runs, params=params, num_clustering_columns=3)
        self.reasons = plan.reasons
        by_path = {f.path: f for f in self.files}
        return (
            self.rewrite([([by_path[p] for p in b.paths], b.num_output_files) for b in plan.bins]) if plan.bins else 0
        )


def simulate(args: argparse.Namespace, params: incremental.IncrementalParams | None = None) -> dict[str, Table]:
    """Run the 30 days for every policy; return the tables with their per-day figures."""
    rng = np.random.default_rng(args.seed)
    base_rows = fresh_rows(rng, args.rows, args.skew)
    base = [File(f"base-{i}", r, "base") for i, r in enumerate(cluster(base_rows, 64))]
    target = base[0].bytes
    params = params or incremental.IncrementalParams(
        target_ratio=args.target_ratio,
        target_file_bytes=target,
        min_new_files=args.min_new_files,
        min_new_bytes=int(args.min_new_target_files * target),
        seal_bytes=int(args.seal_target_files * target) if args.seal_target_files else None,
    )
    tables = {name: Table(name, base) for name in ("never", "full", "incremental")}
    per_day = args.rows // args.days
    for day in range(1, args.days + 1):
        new = fresh_rows(rng, per_day, args.skew)
        halves = np.array_split(new, 2)
        for t in tables.values():
            t.files += [File(f"day{day}-{i}", h, None) for i, h in enumerate(halves)]
            before = worst_ratio(t.files)
            t.rewritten.append(t.recluster(target, params) if before > args.threshold else 0)
            t.ratios.append(worst_ratio(t.files) if t.rewritten[-1] else before)
        if not args.quiet:
            cells = [f"{t.rewritten[-1] / 1e6:7.1f} MB {len(t.files):4d} f {t.ratios[-1]:.2f}" for t in tables.values()]
            print(f"day {day:2d}  " + "  |  ".join(cells))
            if args.reasons and tables["incremental"].rewritten[-1]:
                print("        " + "\n        ".join(tables["incremental"].reasons))
    return tables


def main() -> None:
    """Parse flags, simulate, print the totals."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=300_000, help="base rows (the appends add as many over the days)")
    ap.add_argument("--days", type=int, default=30)
    ap.add_argument("--threshold", type=float, default=1.5, help="the sensor's worst ratio to ideal")
    ap.add_argument("--skew", type=float, default=0.0, help="0 = uniform; 1 = value = U**2 * domain")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--quiet", action="store_true", help="totals only")
    ap.add_argument("--reasons", action="store_true", help="print the incremental plan's reasons")
    d = incremental.IncrementalParams()
    ap.add_argument("--target-ratio", type=float, default=d.target_ratio)
    ap.add_argument("--min-new-files", type=int, default=d.min_new_files)
    ap.add_argument("--min-new-target-files", type=float, default=d.min_new_bytes / d.target_file_bytes)
    ap.add_argument(
        "--seal-target-files", type=float, default=(d.seal_bytes or 0) / d.target_file_bytes, help="0: never seal"
    )
    args = ap.parse_args()
    t0 = time.perf_counter()
    if not args.quiet:
        print("per day: bytes rewritten, files, worst ratio after the day  (never | full | incremental)")
    tables = simulate(args)
    appended = args.rows // args.days * args.days * ROW_BYTES
    full_bytes = sum(tables["full"].rewritten) or 1
    print(f"\n{'policy':12s} {'runs':>4s} {'rewritten MB':>12s} {'WA':>6s} {'vs full':>7s} {'mean':>5s} {'worst':>5s}")
    for t in tables.values():
        b = sum(t.rewritten)
        print(
            f"{t.name:12s} {t.runs:4d} {b / 1e6:12.1f} {b / appended:6.2f} {b / full_bytes:7.3f} "
            f"{np.mean(t.ratios):5.2f} {max(t.ratios):5.2f}"
        )
    print(f"({time.perf_counter() - t0:.1f} s)")


if __name__ == "__main__":
    main()
