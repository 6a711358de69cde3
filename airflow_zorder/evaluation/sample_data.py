"""Generate a badly clustered sample table (Hive-partitioned Parquet, Delta Lake or Iceberg) for the demo and tests.

Rows are shuffled before they are cut into files, so every file spans nearly the whole
range of every column: the worst case for min/max data skipping.
"""

from __future__ import annotations

import argparse
import datetime as dt
import decimal
import os
from collections.abc import Iterator

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


def _file_chunks(
    rows: int, files_per_partition: int, partitioned: bool, seed: int
) -> Iterator[tuple[dt.date | None, int, pa.Table]]:
    """(day or None, file number, rows) for every file of the sample table: shuffled rows cut into files."""
    table = make_rows(rows, seed)
    rng = np.random.default_rng(seed + 1)
    table = table.take(pa.array(rng.permutation(rows)))
    if partitioned:
        days = table.column("event_time").cast(pa.date32())
        groups = {
            d: table.filter(pa.compute.equal(days, pa.scalar(d, pa.date32()))) for d in sorted(set(days.to_pylist()))
        }
    else:
        groups = {None: table}
    for day, part in groups.items():
        for i, chunk in enumerate(np.array_split(np.arange(part.num_rows), files_per_partition)):
            if len(chunk):
                yield day, i, part.take(pa.array(chunk))


def write_table(
    path: str, rows: int = 200_000, files_per_partition: int = 8, partitioned: bool = True, seed: int = 7
) -> dict[str, int]:
    """Write the table at ``path`` (``day=YYYY-MM-DD/`` partitions when ``partitioned``); return counts."""
    os.makedirs(path, exist_ok=True)
    written = 0
    for day, i, chunk in _file_chunks(rows, files_per_partition, partitioned, seed):
        folder = os.path.join(path, f"day={day.isoformat()}") if day is not None else path
        os.makedirs(folder, exist_ok=True)
        pq.write_table(chunk, os.path.join(folder, f"part-{i:05d}.parquet"))
        written += 1
    return {"rows": rows, "files": written}


def write_delta_table(
    path: str, rows: int = 200_000, files_per_partition: int = 8, partitioned: bool = True, seed: int = 7
) -> dict[str, int]:
    """The same rows as a Delta Lake table written by delta-rs (a ``day`` date column partitions it when
    ``partitioned``), one commit per file number: ``files_per_partition`` appends; return counts."""
    from airflow_zorder.core.delta.delta_log import deltalake_module

    deltalake = deltalake_module("writing the Delta sample table")
    by_file: dict[int, list[pa.Table]] = {}
    for day, i, chunk in _file_chunks(rows, files_per_partition, partitioned, seed):
        if day is not None:
            chunk = chunk.append_column("day", pa.array([day] * chunk.num_rows, pa.date32()))
        by_file.setdefault(i, []).append(chunk)
    for i in sorted(by_file):
        deltalake.write_deltalake(
            path, pa.concat_tables(by_file[i]), mode="append", partition_by=["day"] if partitioned else None
        )
    return {"rows": rows, "files": len(deltalake.DeltaTable(path).file_uris())}


def write_iceberg_table(
    catalog: str,
    identifier: str,
    properties: dict[str, str] | None = None,
    rows: int = 200_000,
    files_per_partition: int = 8,
    partitioned: bool = True,
    seed: int = 7,
) -> dict[str, int]:
    """The same rows as an Iceberg table ``identifier`` (namespace.table) of the pyiceberg catalog ``catalog``
    (``properties`` over its configuration), identity-partitioned by a ``day`` date column when ``partitioned``,
    one append per file number (one file per partition each); an existing table of that name is replaced."""
    from airflow_zorder.core.iceberg.catalogs import load_catalog

    cat = load_catalog(catalog, properties)
    cat.create_namespace_if_not_exists(identifier.rpartition(".")[0])
    if cat.table_exists(identifier):
        cat.purge_table(identifier)
    by_file: dict[int, list[pa.Table]] = {}
    for day, i, chunk in _file_chunks(rows, files_per_partition, partitioned, seed):
        if day is not None:
            chunk = chunk.append_column("day", pa.array([day] * chunk.num_rows, pa.date32()))
        by_file.setdefault(i, []).append(chunk)
    table = cat.create_table(identifier, schema=pa.concat_tables(by_file[0]).schema)
    if partitioned:
        with table.update_spec() as spec:
            spec.add_identity("day")
    for i in sorted(by_file):
        table.append(pa.concat_tables(by_file[i]))
    return {"rows": rows, "files": sum(1 for _ in table.scan().plan_files())}


def main() -> None:
    """CLI: ``python -m airflow_zorder.evaluation.sample_data PATH [--rows N] [--files-per-partition K] [--delta]``."""
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("path")
    p.add_argument("--rows", type=int, default=200_000)
    p.add_argument("--files-per-partition", type=int, default=8)
    p.add_argument("--unpartitioned", action="store_true")
    p.add_argument("--delta", action="store_true", help="write a Delta Lake table (needs the [delta] extra)")
    p.add_argument(
        "--iceberg-catalog",
        help="write an Iceberg table: PATH is namespace.table of this pyiceberg catalog (needs the [iceberg] extra)",
    )
    a = p.parse_args()
    if a.iceberg_catalog:
        out = write_iceberg_table(a.iceberg_catalog, a.path, None, a.rows, a.files_per_partition, not a.unpartitioned)
        kind = f"an Iceberg table of catalog {a.iceberg_catalog}"
    else:
        write = write_delta_table if a.delta else write_table
        out = write(a.path, a.rows, a.files_per_partition, not a.unpartitioned)
        kind = "a Delta Lake table" if a.delta else "Parquet"
    print(f"wrote {out['rows']} rows in {out['files']} files to {a.path} ({kind})")


if __name__ == "__main__":
    main()
