"""Generate the skewed synthetic table of the benchmarks (numpy + pyarrow, seeded, scrambled order).

    python benchmarks/skewed_data.py --out DIR [--rows 4000000] [--files 256] [--seed 7] [--force]

Columns (one row per event, rows in random order, cut into ``--files`` files of equal row count
``events-00000.parquet`` ...; the files therefore all span nearly every column's whole range):

* ``event_id``  int64: a permutation of 0..rows-1 (unique; the key of the plain range-partitioned rewrite);
* ``user_id``   int64: Zipf-distributed (exponent 1.1 over 1,000,000 users: at 4M rows the most frequent
  user holds ~12 % of rows, the top 100 ~53 %); ranks are scattered over 0..10^9 so hot users are not all
  at one end;
* ``status``    int32: 90 % of rows are ``0``, the rest uniform over 1..999 (a mostly-one-value column);
* ``customer``  string ``customer-000000000000-<n>``, ``n`` uniform over 0..999,999, not zero-padded:
  a 22-character common prefix, and string order differs from numeric order (``...-10`` < ``...-9``);
* ``event_time`` timestamp[us, UTC] uniform over 2025; ``amount`` double (log-normal).

Idempotent like ``tpch_data.py``: ``DIR/_SKEWED.json`` records the parameters; when they match, nothing
is generated. Other parameters are an error unless ``--force`` (deletes ``events-*.parquet`` and the marker).
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
import pyarrow.parquet as pq

MARKER = "_SKEWED.json"
COLUMNS = ["user_id", "status", "customer"]  # the clustering columns of the benchmarks
KEY = "event_id"
PREFIX = "customer-000000000000-"
ZIPF_S = 1.1
USERS = 1_000_000
DOMINANT_SHARE = 0.9


def _data_files(out: Path) -> list[Path]:
    return sorted(p for p in out.glob("events-*.parquet") if p.is_file())


def skewed_table(rows: int, seed: int = 7) -> pa.Table:
    """The table in memory (rows already in random order)."""
    rng = np.random.default_rng(seed)
    weights = np.arange(1, USERS + 1, dtype=np.float64) ** -ZIPF_S
    cdf = np.cumsum(weights)
    cdf /= cdf[-1]
    rank = np.minimum(np.searchsorted(cdf, rng.random(rows), side="right"), USERS - 1)
    user_of_rank = np.sort(rng.choice(1_000_000_000, size=USERS, replace=False)).astype(np.int64)
    rng.shuffle(user_of_rank)
    user_id = user_of_rank[rank]
    status = np.where(rng.random(rows) < DOMINANT_SHARE, 0, rng.integers(1, 1000, rows)).astype(np.int32)
    n = pa.array(rng.integers(0, 1_000_000, rows)).cast(pa.string())
    customer = pc.binary_join_element_wise(pa.scalar(PREFIX), n, pa.scalar(""))
    start = np.datetime64("2025-01-01T00:00:00", "us").astype(np.int64)
    year_us = 365 * 86400 * 1_000_000
    event_time = pa.array(start + rng.integers(0, year_us, rows), pa.int64()).cast(pa.timestamp("us", tz="UTC"))
    amount = np.round(rng.lognormal(3.0, 1.0, rows), 2)
    event_id = rng.permutation(rows).astype(np.int64)
    return pa.table(
        {
            KEY: event_id,
            "user_id": user_id,
            "status": status,
            "customer": customer,
            "event_time": event_time,
            "amount": amount,
        }
    )


def generate_skewed(
    out: str | Path,
    rows: int = 4_000_000,
    files: int = 256,
    *,
    seed: int = 7,
    force: bool = False,
    compression: str = "snappy",
) -> dict:
    """Write the table into ``out``; summary dict (rows, num_files, bytes, seconds, skipped, paths)."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    marker = out / MARKER
    params = {"rows": int(rows), "files": int(files), "seed": int(seed)}
    if marker.exists():
        info = json.loads(marker.read_text())
        if {k: info.get(k) for k in params} == params and len(_data_files(out)) == files:
            return {**info, "seconds": 0.0, "skipped": True, "paths": [str(p) for p in _data_files(out)]}
        if not force:
            raise FileExistsError(f"{out} already holds a skewed table generated with {info}; use --force")
    elif _data_files(out) and not force:
        raise FileExistsError(f"{out} has events-*.parquet files but no marker; use --force")
    for p in _data_files(out):
        p.unlink()
    marker.unlink(missing_ok=True)
    if not 1 <= files <= rows:
        raise ValueError(f"files must be in 1..rows, got {files}")

    t0 = time.perf_counter()
    table = skewed_table(rows, seed)
    base, extra = divmod(rows, files)
    at = 0
    for i in range(files):
        take = base + (1 if i < extra else 0)
        pq.write_table(table.slice(at, take), out / f"events-{i:05d}.parquet", compression=compression)
        at += take
    seconds = time.perf_counter() - t0
    data = _data_files(out)
    info = {
        **params,
        "num_files": len(data),
        "bytes": sum(p.stat().st_size for p in data),
        "generated_seconds": round(seconds, 3),
        "columns": COLUMNS,
        "key": KEY,
    }
    marker.write_text(json.dumps(info, indent=1) + "\n")
    return {**info, "seconds": seconds, "skipped": False, "paths": [str(p) for p in data]}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--rows", type=int, default=4_000_000)
    ap.add_argument("--files", type=int, default=256)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--force", action="store_true")
    a = ap.parse_args(argv)
    try:
        r = generate_skewed(a.out, a.rows, a.files, seed=a.seed, force=a.force)
    except (FileExistsError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(
        f"skewed table {'already present' if r['skipped'] else 'generated'}: rows={r['rows']:,} "
        f"files={r['num_files']} bytes={r['bytes']:,} seconds={r['seconds']:.2f} out={a.out}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
