"""Generate a badly clustered sample table (Hive-partitioned Parquet) for the demo and the tests.

Rows are shuffled before they are cut into files, so every file spans nearly the whole
range of every column: the worst case for min/max data skipping.
"""

from __future__ import annotations

import argparse
import datetime as dt
import decimal
import os

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

COUNTRIES = ["AR", "AU", "BR", "CA", "CN", "DE", "ES", "FR", "GB", "IN", "IT", "JP", "KR", "MX", "NL", "US"]


def make_rows(rows: int, seed: int = 7) -> pa.Table:
    """A synthetic event table: ids, a skewed user id, timestamps, strings, decimals and doubles."""
    rng = np.random.default_rng(seed)
    base = dt.datetime(2026, 1, 1)
    micros = rng.integers(0, 4 * 86_400_000_000, rows)
    user = (rng.zipf(1.3, rows) % 1_000_000).astype(np.int64)
    cents = rng.integers(-50_000, 5_000_000, rows)
    return pa.table(
        {
            "event_id": pa.array(np.arange(rows, dtype=np.int64)),
            "user_id": pa.array(user),
            "product_id": pa.array(rng.integers(0, 50_000, rows).astype(np.int32)),
            "event_time": pa.array(np.datetime64(base, "us") + micros.astype("timedelta64[us]")),
            "country": pa.array([COUNTRIES[i] for i in rng.integers(0, len(COUNTRIES), rows)]),
            "amount": pa.array([decimal.Decimal(int(c)).scaleb(-2) for c in cents], type=pa.decimal128(12, 2)),
            "score": pa.array(rng.normal(0, 1, rows)),
        }
    )


def write_table(
    path: str, rows: int = 200_000, files_per_partition: int = 8, partitioned: bool = True, seed: int = 7
) -> dict[str, int]:
    """Write the table at ``path`` (``day=YYYY-MM-DD/`` partitions when ``partitioned``); return counts."""
    table = make_rows(rows, seed)
    rng = np.random.default_rng(seed + 1)
    table = table.take(pa.array(rng.permutation(rows)))
    os.makedirs(path, exist_ok=True)
    written = 0
    if partitioned:
        days = table.column("event_time").cast(pa.date32())
        groups = {
            d: table.filter(pa.compute.equal(days, pa.scalar(d, pa.date32()))) for d in sorted(set(days.to_pylist()))
        }
    else:
        groups = {None: table}
    for day, part in groups.items():
        folder = os.path.join(path, f"day={day.isoformat()}") if day is not None else path
        os.makedirs(folder, exist_ok=True)
        for i, chunk in enumerate(np.array_split(np.arange(part.num_rows), files_per_partition)):
            if len(chunk):
                pq.write_table(part.take(pa.array(chunk)), os.path.join(folder, f"part-{i:05d}.parquet"))
                written += 1
    return {"rows": rows, "files": written}


def main() -> None:
    """CLI: ``python -m airflow_zorder.evaluation.sample_data PATH [--rows N] [--files-per-partition K]``."""
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("path")
    p.add_argument("--rows", type=int, default=200_000)
    p.add_argument("--files-per-partition", type=int, default=8)
    p.add_argument("--unpartitioned", action="store_true")
    a = p.parse_args()
    out = write_table(a.path, a.rows, a.files_per_partition, not a.unpartitioned)
    print(f"wrote {out['rows']} rows in {out['files']} files to {a.path}")


if __name__ == "__main__":
    main()
