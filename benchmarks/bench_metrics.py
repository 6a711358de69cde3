"""Benchmark the clustering metrics (and the pruning evaluator) on a synthetic footer stats table.

    .venv/bin/python benchmarks/bench_metrics.py [--files 250000] [--partitions 100] [--repeat 3]

Builds a :data:`~airflow_zorder.core.stats.stats_schema.FILE_STATS_SCHEMA` table with one
row per (file, column) -- 250,000 files x 4 columns = 1,000,000 rows by
default -- directly as Arrow arrays (no Parquet files, no footers), in the
same text encoding ``read_footers`` writes, then times
:func:`~airflow_zorder.core.policy.metrics.table_clustering` on it (best and all of
``--repeat`` runs; the goal is < 3 s for 1M rows), then one
:func:`~airflow_zorder.core.skipping.pruning.prune` over all files.

Columns (numbers, so every bound goes through the text decoding of
``column_bounds``):

* ``id``   int64: files hold disjoint, sorted ranges inside each partition;
* ``k``    int32: random wide ranges (badly clustered);
* ``x``    double: random ranges with fractions;
* ``d``    date32: a few days per file, overlapping neighbours.

About 0.5 % of the rows have missing stats and 0.2 % are all-null files.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from airflow_zorder.core.policy import metrics
from airflow_zorder.core.skipping import pruning  # noqa: E402
from airflow_zorder.core.stats.stats_schema import file_stats_table  # noqa: E402

COLUMNS = ("id", "k", "x", "d")


def build_stats_table(num_files: int, num_partitions: int, seed: int = 0) -> pa.Table:
    """A synthetic stats table (FILE_STATS_SCHEMA), file-major like ``read_footers`` (vectorised, ~1 s for 1M rows)."""
    rng = np.random.default_rng(seed)
    n = num_files
    part_idx = np.sort(rng.integers(0, num_partitions, n))
    part_names = pa.array([f"dt=2024-{1 + p // 28:02d}-{1 + p % 28:02d}" for p in range(num_partitions)])
    partition = part_names.take(pa.array(part_idx))
    paths = pc.binary_join_element_wise(partition, pa.array(np.arange(n)).cast(pa.string()), pa.scalar("/part-"))
    paths = pc.binary_join_element_wise(paths, pa.scalar(".parquet"), pa.scalar(""))

    def text(a: np.ndarray, t: pa.DataType) -> pa.Array:
        return pa.array(a).cast(t).cast(pa.string())

    # id: sorted disjoint ranges
    lo = np.arange(n, dtype=np.int64) * 1000
    blocks = {"id": (text(lo, pa.int64()), text(lo + rng.integers(0, 999, n), pa.int64()), "int64", "INT64")}
    a = rng.integers(-(2**31), 2**31 - 1, n)
    b = rng.integers(-(2**31), 2**31 - 1, n)
    blocks["k"] = (text(np.minimum(a, b), pa.int32()), text(np.maximum(a, b), pa.int32()), "int32", "INT32")
    x0 = rng.normal(0, 1e6, n)
    blocks["x"] = (text(x0, pa.float64()), text(x0 + rng.exponential(1e4, n), pa.float64()), "double", "DOUBLE")
    d0 = 18000 + np.arange(n) // 50 + rng.integers(0, 5, n)
    blocks["d"] = (
        pa.array(d0.astype(np.int32)).view(pa.date32()).cast(pa.string()),
        pa.array((d0 + rng.integers(0, 10, n)).astype(np.int32)).view(pa.date32()).cast(pa.string()),
        "date32[day]",
        "INT32",
    )

    ncol = len(COLUMNS)
    rows = n * ncol
    # file-major order: row r = file r // ncol, column r % ncol
    file_of = np.repeat(np.arange(n), ncol)
    col_of = np.tile(np.arange(ncol), n)
    mins = pa.concat_arrays([blocks[c][0] for c in COLUMNS])
    maxs = pa.concat_arrays([blocks[c][1] for c in COLUMNS])
    take = pa.array(col_of * n + file_of)
    mins, maxs = mins.take(take), maxs.take(take)
    arrow_type = pa.array([blocks[c][2] for c in COLUMNS]).take(pa.array(col_of))
    physical = pa.array([blocks[c][3] for c in COLUMNS]).take(pa.array(col_of))
    u = rng.random(rows)
    missing = u < 0.005
    all_null = (u >= 0.005) & (u < 0.007)
    has_stats = ~missing
    nulls = np.where(all_null, 1000, 0)
    none = pa.array(missing | all_null)
    mins = pc.if_else(none, pa.scalar(None, pa.string()), mins)
    maxs = pc.if_else(none, pa.scalar(None, pa.string()), maxs)
    exact = pc.if_else(none, pa.scalar(None, pa.bool_()), pa.scalar(True))
    cols = {
        "path": paths.take(pa.array(file_of)),
        "table_name": pa.repeat(pa.scalar("synthetic"), rows),
        "column_name": pa.array(list(COLUMNS)).take(pa.array(col_of)),
        "arrow_type": arrow_type,
        "physical_type": physical,
        "min_value": mins,
        "max_value": maxs,
        "null_count": pa.array(nulls, pa.int64()),
        "value_count": pa.array(np.full(rows, 1000), pa.int64()),
        "has_stats": pa.array(has_stats),
        "min_exact": exact,
        "max_exact": exact,
        "reason": pc.if_else(pa.array(missing), pa.scalar("row_group_without_stats"), pa.scalar(None, pa.string())),
        "num_row_groups": pa.array(np.ones(rows, dtype=np.int32)),
        "file_rows": pa.array(np.full(rows, 1000), pa.int64()),
        "file_size": pa.array(np.full(rows, 1 << 20), pa.int64()),
        "partition": partition.take(pa.array(file_of)),
        "created_by": pa.array(np.full(rows, "synthetic"), pa.string()),
        "method": pa.repeat(pa.scalar("footer"), rows),
    }
    return file_stats_table(cols, rows)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--files", type=int, default=250_000)
    ap.add_argument("--partitions", type=int, default=100)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--goal", type=float, default=3.0, help="seconds for table_clustering (PASS/FAIL)")
    ap.add_argument("--json", action="store_true", help="also print the summary (without partitions)")
    args = ap.parse_args()

    t0 = time.perf_counter()
    stats = build_stats_table(args.files, args.partitions)
    t_build = time.perf_counter() - t0
    print(
        f"stats table: {stats.num_rows:,} rows ({args.files:,} files x {len(COLUMNS)} columns, "
        f"{args.partitions} partitions), built in {t_build:.2f} s"
    )

    times, cpu = [], []
    summary = None
    for _ in range(args.repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        summary = metrics.table_clustering(stats, list(COLUMNS))
        times.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    best = min(times)
    print(
        f"table_clustering: best {best:.3f} s wall ({min(cpu):.3f} s CPU), "
        f"runs {', '.join(f'{t:.3f}' for t in times)} s"
    )
    assert summary is not None
    for c in COLUMNS:
        pc_ = summary["per_column"][c]
        print(
            f"  {c:>3}: avg_overlaps {pc_['average_overlaps']:.1f}  avg_depth {pc_['average_depth']:.1f}  "
            f"max_depth {pc_['max_depth']}  fraction {pc_['expected_fraction']:.4f}  "
            f"ratio {pc_['ratio_to_ideal']:.2f}  partition_ratio {summary['partition_ratio'][c]:.2f}"
        )
    print(
        f"  headline {summary['headline']:.2f} (worst column {summary['worst_column']}, "
        f"worst partition {summary['worst_partition']})"
    )
    pred = "(id BETWEEN 1000000 AND 2000000 OR k IN (1, 2, 3)) AND NOT d < DATE '2020-01-01' AND x > 0"
    t0 = time.perf_counter()
    res = pruning.prune(stats, pred)
    print(f"prune: {time.perf_counter() - t0:.3f} s for {res.num_files:,} files, kept {res.num_kept:,}: {pred}")
    if args.json:
        print(json.dumps({k: v for k, v in summary.items() if k != "partitions"}, indent=1))
    ok = best < args.goal
    print(f"{'PASS' if ok else 'FAIL'}: {stats.num_rows:,} stats rows in {best:.3f} s (goal < {args.goal} s)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
