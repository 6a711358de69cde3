"""Benchmark the sensor's decision on an Iceberg table read through its manifests (no Spark, no stats job).

    .venv/bin/python benchmarks/bench_iceberg_sensor.py [--files 10000] [--commits 5] [--repeat 5] [--dir DIR]

1. builds an Iceberg table of ``--files`` data files in a pyiceberg SQL catalog on SQLite: one real tiny Parquet file,
   then ``--files`` manifest entries pointing at copies of its path with random bounds on three long columns (every
   file spans a random range, so the decision is ``recluster``), appended in ``--commits`` fast appends;
2. times the sensor's decision, ``FileStatsHook(table, iceberg_catalog=...).evaluate(columns=["a", "b", "c"])``,
   ``--repeat`` times: *cold* (a new hook: the catalog, the manifests, the stats rows, the metrics) and *warm* (the
   same hook again), plus the cold path's parts: the manifests to stats rows (``metadata_stats``).

Prints medians and PASS/FAIL for the goal (cold decision under 1 s).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

COLUMNS = ["a", "b", "c"]
GOAL_S = 1.0
CATALOG = "zorderbench"


def build_table(home: Path, files: int, commits: int, seed: int = 0) -> dict[str, float]:
    """``bench.big``: ``files`` manifest entries with random bounds (real metadata, one real data file)."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    from pyiceberg.conversions import to_bytes
    from pyiceberg.io.pyarrow import parquet_file_to_data_file, schema_to_pyarrow
    from pyiceberg.manifest import DataFile, DataFileContent, FileFormat
    from pyiceberg.types import LongType

    from airflow_zorder.core.iceberg.catalogs import embedded_properties, load_catalog

    props = embedded_properties(str(home))
    cat = load_catalog(CATALOG, props)
    cat.create_namespace_if_not_exists("bench")
    if cat.table_exists("bench.big"):
        return {"write_s": 0.0, "reused": True, **props}
    t = cat.create_table("bench.big", schema=pa.schema([(c, pa.int64()) for c in COLUMNS]))
    template = f"{t.location()}/data/template.parquet"
    os.makedirs(os.path.dirname(template.removeprefix("file://")), exist_ok=True)
    pq.write_table(pa.table({c: [1, 2] for c in COLUMNS}, schema=schema_to_pyarrow(t.schema())), template[7:])
    tpl = parquet_file_to_data_file(t.io, t.metadata, template)
    ids = {c: t.schema().find_field(c).field_id for c in COLUMNS}
    rnd = random.Random(seed)
    started = time.perf_counter()
    per = -(-files // commits)
    for c in range(commits):
        with t.transaction() as tx, tx.update_snapshot().fast_append() as fa:
            for i in range(c * per, min(files, (c + 1) * per)):
                lo, hi = {}, {}
                for fid in ids.values():  # every file spans most of each column's range: "recluster"
                    a = rnd.randrange(0, 100_000)
                    lo[fid], hi[fid] = (
                        to_bytes(LongType(), a),
                        to_bytes(LongType(), a + rnd.randrange(800_000, 900_000)),
                    )
                fa.append_data_file(
                    DataFile.from_args(
                        content=DataFileContent.DATA,
                        file_path=f"{t.location()}/data/part-{i:05d}.parquet",
                        file_format=FileFormat.PARQUET,
                        partition=tpl.partition,
                        record_count=1024,
                        file_size_in_bytes=40_000,
                        value_counts=tpl.value_counts,
                        null_value_counts={fid: 0 for fid in ids.values()},
                        lower_bounds=lo,
                        upper_bounds=hi,
                    )
                )
    return {"write_s": round(time.perf_counter() - started, 2), "reused": False, **props}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--files", type=int, default=10_000)
    ap.add_argument("--commits", type=int, default=5)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--dir", default=None, help="keep the catalog and table here (reused when present)")
    ap.add_argument("--json", default=None, help="also write the figures here")
    a = ap.parse_args(argv)
    home = Path(a.dir) if a.dir else Path(tempfile.mkdtemp(prefix="zorder-iceberg-sensor-"))
    built = build_table(home, a.files, a.commits)
    props = {k: v for k, v in built.items() if k in ("type", "uri", "warehouse")}
    for key, value in props.items():
        os.environ[f"PYICEBERG_CATALOG__{CATALOG.upper()}__{key.upper()}"] = value
    from airflow_zorder.hooks.file_stats import FileStatsHook

    first = time.perf_counter()
    FileStatsHook("bench.big", iceberg_catalog=CATALOG).evaluate(columns=COLUMNS)
    first_s = time.perf_counter() - first
    cold, warm, rows = [], [], []
    payload = {}
    for _ in range(a.repeat):
        t0 = time.perf_counter()
        hook = FileStatsHook("bench.big", iceberg_catalog=CATALOG)
        payload = hook.evaluate(columns=COLUMNS)
        cold.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        hook.evaluate(columns=COLUMNS)
        warm.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        hook.metadata_format.metadata_stats(COLUMNS)
        rows.append(time.perf_counter() - t0)
    out = {
        "files": a.files,
        "decision": payload.get("decision"),
        "write_s": built["write_s"],
        "first_s": round(first_s, 3),
        "cold_s": round(statistics.median(cold), 3),
        "warm_s": round(statistics.median(warm), 3),
        "manifests_to_rows_s": round(statistics.median(rows), 3),
        "goal_s": GOAL_S,
    }
    out["pass"] = out["cold_s"] < GOAL_S
    print(json.dumps(out, indent=2))
    print(
        f"{'PASS' if out['pass'] else 'FAIL'}: cold decision {out['cold_s']} s on {a.files} files (goal < {GOAL_S} s)"
    )
    if a.json:
        Path(a.json).write_text(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
