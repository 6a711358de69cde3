"""Real small Parquet tables with a known layout, and their stats collected without Spark.

``write_table`` writes 16 files per partition holding two integer columns ``a`` and ``b`` in
[0, 99]: *clustered* puts each file in one cell of a 4 x 4 grid (a point query on either column
reads 4 of 16 files = the ideal for d = 2, ratio 1.0); *scrambled* makes every file span the whole
range (16 of 16 files read, ratio 4.0).  ``collect`` reads the real footers with
``core.stats.footer_stats`` and commits a snapshot with ``stats_store.write_snapshot``, as the Spark
collector's footer method does.
"""

from __future__ import annotations

import datetime as dt
import os
import shutil
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from airflow_zorder.core.stats import footer_stats, stats_schema, stats_store
from airflow_zorder.core.stats.stats_location import default_stats_location

COLUMNS = ["a", "b"]
FILES_PER_PARTITION = 16
ROWS_PER_FILE = 40


def _file_values(layout: str, f: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
    if layout == "clustered":
        cells = {"a": f // 4, "b": f % 4}
        lo = {c: 25 * k for c, k in cells.items()}
        hi = {c: 25 * k + 24 for c, k in cells.items()}
    elif layout == "scrambled":
        lo = {c: 0 for c in COLUMNS}
        hi = {c: 99 for c in COLUMNS}
    else:
        raise ValueError(layout)
    out = {}
    for c in COLUMNS:
        v = rng.integers(lo[c], hi[c] + 1, ROWS_PER_FILE)
        v[0], v[1] = lo[c], hi[c]  # exact bounds: the expected metrics are exact
        out[c] = v.astype(np.int64)
    return out


def write_partition(root: Path, partition: str, layout: str, seed: int = 0) -> None:
    """(Re)write one partition ('' = the table root of an unpartitioned table) with ``layout``."""
    d = root / partition if partition else root
    if partition and d.exists():
        shutil.rmtree(d)
    elif not partition:
        for old in root.glob("*.parquet"):
            old.unlink()
    d.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    tag = uuid.uuid4().hex[:6]
    for f in range(FILES_PER_PARTITION):
        pq.write_table(pa.table(_file_values(layout, f, rng)), d / f"part-{f:03d}-{tag}.parquet")


def write_table(root: Path, layouts: Mapping[str, str], seed: int = 0) -> Path:
    """A table under ``root``: ``{partition: "clustered" | "scrambled"}`` ('' alone = unpartitioned)."""
    root.mkdir(parents=True, exist_ok=True)
    for i, (partition, layout) in enumerate(sorted(layouts.items())):
        write_partition(root, partition, layout, seed + i)
    return root


def collect(
    root: Path,
    stats_location: str | None = None,
    collected_at: dt.datetime | None = None,
    filesystem: object = None,
    columns: list[str] | None = None,
) -> int:
    """Read the table's footers (of ``columns``, default ``COLUMNS``) and commit a stats snapshot; returns its id."""
    columns = columns or COLUMNS
    paths = footer_stats.list_parquet_files(str(root))
    ft = footer_stats.read_footers(paths, columns)
    at = collected_at or dt.datetime.now(dt.UTC)
    n = ft.num_rows
    parts = ft["partition"].to_pylist()
    mtimes = {p: int(os.stat(p).st_mtime * 1000) for p in paths}
    rows = stats_schema.replace_columns(
        ft,
        {  # the footer rows, completed as the collector completes them
            "table_name": [str(root)] * n,
            "partition_values": [[tuple(s.split("=", 1)) for s in p.split("/")] if p else None for p in parts],
            "file_mtime_ms": [mtimes[p] for p in ft["path"].to_pylist()],
            "collected_at": [at] * n,
            **stats_schema.bound_columns(ft["min_value"], ft["max_value"], ft["arrow_type"]),
        },
    )
    run = {
        "run_id": uuid.uuid4().hex[:8],
        "table_name": str(root),
        "table_kind": "path",
        "status": "ok",
        "method": "footer",
        "columns": columns,
        "collected_at": stats_store.iso_utc(at),
        "files_total": len(paths),
    }
    location = stats_location or default_stats_location(str(root))
    return stats_store.write_snapshot(location, rows, run, filesystem=filesystem)


def record_cluster(
    root: Path, at: dt.datetime, partitions: list[str] | None = None, stats_location: str | None = None
) -> None:
    """A clustering event as the clustering job records it (``stats_store.cluster_event`` keys)."""
    stats_store.record_event(
        stats_location or default_stats_location(str(root)),
        {
            "kind": "cluster",
            "run_id": uuid.uuid4().hex[:8],
            "table_name": str(root),
            "at": at,
            "status": "clustered",
            "columns": COLUMNS,
            "curve": "hilbert",
            "partitions": partitions or [],
        },
    )


def degrade_when(root: Path, ready: Callable[[], bool], timeout: float = 60.0) -> threading.Thread:
    """Start a thread that waits until ``ready()`` (e.g. the watcher evaluated a few times), then rewrites
    the (unpartitioned) table scrambled and collects its stats: deterministic however slow the machine is."""

    def work() -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and not ready():
            time.sleep(0.05)
        write_partition(root, "", "scrambled")
        collect(root)

    t = threading.Thread(target=work, daemon=True)
    t.start()
    return t


def count_checks(monkeypatch) -> list[int]:
    """Count finished ``FileStatsHook.check`` calls (the sensor's and the trigger's evaluations) in this
    process, each as the id of the thread it ran in."""
    from airflow_zorder.hooks.file_stats import FileStatsHook

    calls: list[int] = []
    real = FileStatsHook.check

    def counting(self, *a, **kw):
        out = real(self, *a, **kw)
        calls.append(threading.get_ident())  # counted once finished: readiness means "evaluated N times"
        return out

    monkeypatch.setattr(FileStatsHook, "check", counting)
    return calls
