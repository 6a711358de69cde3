"""What the policy reads off a stats snapshot besides the metrics: its data files (partition, size, time), when
the stats were collected, and how much data was written since the last re-clustering."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from airflow_zorder.core.stats import stats_schema, stats_store

__all__ = ["SnapshotFacts", "data_files", "snapshot_facts", "snapshot_time"]


@dataclass(frozen=True)
class SnapshotFacts:
    """The snapshot's files and times, as the guards and the payload use them."""

    num_files: int
    total_bytes: int
    partition_names: list[str]  # sorted; '' for files outside partitions
    partition_bytes: dict[str, float]
    snapshot_id: int | None
    stats_time: dt.datetime | None  # when the stats were last confirmed current
    stats_age_s: float | None
    last_cluster_at: dt.datetime | None
    new_data_fraction: float | None  # bytes written since the last re-clustering / all bytes (None: unknown)

    @property
    def partitioned(self) -> bool:
        """Whether any file is inside a partition."""
        return any(p != "" for p in self.partition_names)

    @property
    def num_partitions(self) -> int:
        """Partitions with files ('' not counted)."""
        return len([p for p in self.partition_names if p != ""])


def data_files(snapshot: pa.Table) -> dict[str, np.ndarray]:
    """One entry per distinct data file: partition ('' if none), size, mtime (ms; NaN unknown)."""
    n = snapshot.num_rows
    if n == 0:
        return {"partition": np.array([], dtype=object), "size": np.zeros(0), "mtime_ms": np.zeros(0)}
    enc = pc.dictionary_encode(snapshot["path"]).combine_chunks()
    codes = enc.indices.to_numpy(zero_copy_only=False)
    _, first = np.unique(codes, return_index=True)
    take = pa.array(first)

    def col(name: str, fill: Any) -> np.ndarray:
        if name not in snapshot.column_names:
            return np.full(len(first), fill, dtype=object if isinstance(fill, str) else float)
        arr = snapshot[name].take(take)
        if isinstance(fill, str):
            return np.array([fill if v is None else v for v in arr.to_pylist()], dtype=object)
        return arr.cast(pa.float64()).fill_null(np.nan).to_numpy(zero_copy_only=False)

    return {
        "partition": col("partition", ""),
        "size": col("file_size", np.nan),
        "mtime_ms": col("file_mtime_ms", np.nan),
    }


def snapshot_time(snapshot: pa.Table, latest_run: Mapping[str, Any] | None = None) -> dt.datetime | None:
    """When the stats were last confirmed current: the newest collection run when it found this snapshot
    current (``latest_run``, e.g. ``stats_store.latest_run``), else the snapshot's own run record (file
    metadata), else its newest row."""
    own = _own_snapshot_time(snapshot)
    if latest_run and latest_run.get("collected_at") and "snapshot_id" in snapshot.column_names and snapshot.num_rows:
        if latest_run.get("snapshot_id") == pc.max(snapshot["snapshot_id"]).as_py():
            run_at = stats_store.as_datetime(latest_run["collected_at"])
            return max(t for t in (run_at, own) if t is not None)
    return own


def _own_snapshot_time(snapshot: pa.Table) -> dt.datetime | None:
    md = snapshot.schema.metadata or {}
    raw = md.get(stats_schema.RUN_METADATA_KEY)
    if raw:
        try:
            t = stats_store.as_datetime(json.loads(raw).get("collected_at"))
            if t is not None:
                return t
        except (ValueError, TypeError):
            pass
    if "collected_at" in snapshot.column_names and snapshot.num_rows:
        return stats_store.as_datetime(pc.max(snapshot["collected_at"]).as_py())
    return None


def _partition_bytes(partitions: np.ndarray, sizes: np.ndarray) -> dict[str, float]:
    """Bytes per partition (unknown sizes: 0), in the order the partitions first appear: one pass in numpy, not one
    Python step a file (a fleet's planning reads hundreds of thousands of files)."""
    if not len(partitions):
        return {}
    names, first, inverse = np.unique(partitions.astype(str), return_index=True, return_inverse=True)
    sums = np.bincount(inverse.reshape(-1), weights=np.nan_to_num(sizes, nan=0.0), minlength=len(names))
    return {str(names[i]): float(sums[i]) for i in np.argsort(first, kind="stable")}


def snapshot_facts(
    snapshot: pa.Table,
    *,
    last_cluster: Mapping[str, Any] | None,
    now: dt.datetime,
    collected_at: dt.datetime | str | None = None,
) -> SnapshotFacts:
    """The facts of ``snapshot`` at ``now``; ``collected_at`` overrides the snapshot's own time
    (:func:`snapshot_time`)."""
    files = data_files(snapshot)
    num_files = int(len(files["size"]))
    total_bytes = int(np.nansum(files["size"])) if num_files else 0
    snapshot_id = (
        int(pc.max(snapshot["snapshot_id"]).as_py())
        if "snapshot_id" in snapshot.column_names and snapshot.num_rows
        else None
    )
    stats_time = stats_store.as_datetime(collected_at) or snapshot_time(snapshot)
    age_s = max((now - stats_time).total_seconds(), 0.0) if stats_time else None
    last_at = stats_store.as_datetime(last_cluster.get("at")) if last_cluster else None

    new_fraction = None
    if last_at is not None and num_files and total_bytes > 0 and not np.isnan(files["mtime_ms"]).all():
        newer = files["mtime_ms"] > last_at.timestamp() * 1000.0
        new_fraction = float(np.nansum(files["size"][newer]) / total_bytes)

    part_bytes = _partition_bytes(files["partition"], files["size"])
    return SnapshotFacts(
        num_files=num_files,
        total_bytes=total_bytes,
        partition_names=sorted(part_bytes),
        partition_bytes=part_bytes,
        snapshot_id=snapshot_id,
        stats_time=stats_time,
        stats_age_s=age_s,
        last_cluster_at=last_at,
        new_data_fraction=new_fraction,
    )
