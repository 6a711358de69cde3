"""What the tests check a table with, shared by every test module (``tests/`` is on ``sys.path``).

* :func:`visible_files`: every data file a reader of the directory sees, with a hash of its bytes
  ("the table is untouched" = this is identical before and after);
* :func:`row_multiset`: the table's rows as a multiset of row hashes (order-free; duplicates count;
  NaN, -0.0, nulls, time zones and partition values included), compared with :func:`diff_rows`;
* :func:`stats_consistent`: the latest stats snapshot describes exactly the visible files and rows;
* :func:`spark_submit`: run one of the jobs through the real ``spark-submit`` with the project's Python.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds

from airflow_zorder.core.stats.stats_location import default_stats_location

REPO = Path(__file__).resolve().parents[1]
SPARK_SUBMIT = Path(sys.executable).parent / "spark-submit"


def visible_files(root: str) -> dict[str, str]:
    """relpath -> sha1 of every visible data file (what a reader of the directory sees)."""
    out = {}
    for d, dirs, files in os.walk(root):
        dirs[:] = [x for x in dirs if not x.startswith(("_", "."))]
        for f in files:
            if not f.startswith(("_", ".")):
                p = os.path.join(d, f)
                with open(p, "rb") as fh:
                    out[os.path.relpath(p, root)] = hashlib.sha1(fh.read()).hexdigest()
    return out


def read_table(root: str, filesystem=None) -> pa.Table:
    """All rows of a (possibly Hive-partitioned) table as a reader sees them, over the union of the files' schemas
    (``filesystem``: a pyarrow filesystem ``root`` is a path in, e.g. S3's ``bucket/prefix``)."""
    kw = dict(format="parquet", partitioning="hive", ignore_prefixes=["_", "."], filesystem=filesystem)
    first = ds.dataset(root, **kw)
    schema = pa.unify_schemas(
        [f.physical_schema for f in first.get_fragments()] or [first.schema], promote_options="permissive"
    )
    for name, typ in (
        zip(first.partitioning.schema.names, first.partitioning.schema.types) if first.partitioning else []
    ):
        if name not in schema.names:
            schema = schema.append(pa.field(name, typ))
    return ds.dataset(root, schema=schema, **kw).to_table()


def _canonical(col: pa.ChunkedArray) -> pa.ChunkedArray:
    """One representation per value: dictionaries decoded, timestamps as UTC microseconds."""
    t = col.type
    if pa.types.is_dictionary(t):
        return _canonical(col.cast(t.value_type))
    if pa.types.is_timestamp(t):
        return col.cast(pa.timestamp("us", tz="UTC" if t.tz else None))
    return col


def row_multiset(root_or_table: str | pa.Table, ignore: tuple[str, ...] = (), filesystem=None) -> Counter:
    """The rows as a multiset of 64-bit row hashes (columns by name, so column order does not matter)."""
    import pandas as pd

    t = read_table(root_or_table, filesystem) if isinstance(root_or_table, str) else root_or_table
    names = sorted(n for n in t.column_names if n not in ignore)
    if not t.num_rows:
        return Counter()
    frame = pa.table({n: _canonical(t.column(n)) for n in names}).to_pandas(
        types_mapper=None, timestamp_as_object=False, date_as_object=True
    )
    # objects (decimals, dates, bytes) hash through their repr: exact, and equal values hash alike
    for n in names:
        if frame[n].dtype == object:
            frame[n] = frame[n].map(repr)
    hashes = pd.util.hash_pandas_object(frame, index=False).to_numpy()
    return Counter(hashes.tolist())


def diff_rows(before: Counter, after: Counter) -> tuple[int, int]:
    """(rows lost, rows added or duplicated) between two multisets; (0, 0) means identical."""
    return sum((before - after).values()), sum((after - before).values())


def stats_consistent(root: str, rows: int) -> list[str]:
    """Problems of the latest stats snapshot of a path table vs the table itself ([] = consistent)."""
    from airflow_zorder.core.stats import stats_store

    stats = stats_store.load_latest(default_stats_location(root))
    problems = []
    files = {os.path.normpath(os.path.join(root, p)) for p in visible_files(root)}
    per_file = stats.group_by("path", use_threads=False).aggregate([("file_rows", "max")])
    paths = {os.path.normpath(p.replace("file://", "").replace("file:", "")) for p in per_file["path"].to_pylist()}
    if paths != files:
        problems.append(
            f"stats list {len(paths)} files, the table has {len(files)}: "
            f"missing {sorted(files - paths)[:3]}, extra {sorted(paths - files)[:3]}"
        )
    total = pc.sum(per_file["file_rows_max"]).as_py() or 0
    if total != rows:
        problems.append(f"stats count {total} rows, the table has {rows}")
    ids = stats_store.list_snapshots(default_stats_location(root))
    if ids and stats_store.latest_snapshot_id(default_stats_location(root)) != ids[-1]:
        problems.append(f"latest snapshot id is not the newest snapshot file {ids[-1]}")
    return problems


def spark_submit(
    job: str,
    *args: str,
    env: dict[str, str] | None = None,
    conf: dict[str, str] | None = None,
    timeout: float = 600,
    popen: bool = False,
    unset: tuple[str, ...] = (),
):
    """Run ``spark_jobs/<job>.py`` with the real spark-submit on local[2]; CompletedProcess (or Popen).
    ``unset``: prefixes of this process's environment variables the job must not see."""
    cmd = [
        str(SPARK_SUBMIT),
        "--master",
        "local[2]",
        "--conf",
        "spark.ui.enabled=false",
        "--conf",
        "spark.sql.shuffle.partitions=4",
    ]
    for k, v in (conf or {}).items():
        cmd += ["--conf", f"{k}={v}"]
    cmd += [str(REPO / "spark_jobs" / f"{job}.py"), *args]
    full_env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(unset or ("\0",))},
        "PYSPARK_PYTHON": sys.executable,
        "PYSPARK_DRIVER_PYTHON": sys.executable,
        "PYTHONPATH": str(REPO),
        **(env or {}),
    }
    if popen:  # own process group, so a test can SIGKILL spark-submit, its JVM and its Python together
        return subprocess.Popen(
            cmd, env=full_env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True
        )
    return subprocess.run(cmd, env=full_env, capture_output=True, text=True, timeout=timeout)
