"""What re-clustering costs: the bytes other writers added between runs and how many times a run rewrote them."""

from __future__ import annotations

from collections.abc import Mapping

import pyarrow as pa
import pyarrow.compute as pc

from airflow_zorder.core.policy.file_names import run_id_of

__all__ = ["unclustered_file_bytes", "bytes_added", "write_amplification"]


def unclustered_file_bytes(snapshot: pa.Table) -> dict[str, int]:
    """Path -> size of the snapshot's files that no clustering run wrote: the data other writers added.

    A clustering run names every file it writes ``part-NNNNN-zorder-<run_id>.parquet``
    (:func:`airflow_zorder.core.policy.file_names.run_id_of`); any other name is an ingest job's (or any other
    writer's) file.  ``snapshot``: FILE_STATS_SCHEMA rows (one per file and column; a Delta version's rows too).
    """
    if snapshot.num_rows == 0:
        return {}
    out: dict[str, int] = {}
    sizes = pc.fill_null(snapshot["file_size"], 0).to_pylist()
    for path, size in zip(snapshot["path"].to_pylist(), sizes):
        if path is not None and path not in out and run_id_of(path) is None:
            out[path] = int(size)
    return out


def bytes_added(unclustered: Mapping[str, int], previous: Mapping[str, int] | None) -> int:
    """Bytes other writers added between two states of a table: the files in ``unclustered`` (the state a run
    started from, :func:`unclustered_file_bytes`) that are not in ``previous`` (the state the previous run
    started from).  ``previous`` None (the first run): every file no clustering run wrote.

    A file another writer added and no run has rewritten yet is counted once, by the first run after it
    appeared: it is in both states afterwards.  Files are told apart by path.
    """
    if previous is None:
        return int(sum(unclustered.values()))
    return int(sum(size for path, size in unclustered.items() if path not in previous))


def write_amplification(bytes_rewritten: float, added: float | None) -> float | None:
    """Bytes rewritten / bytes added (the benchmarks' and the UI's rule): how many times each added byte was
    rewritten.  None when the bytes added are unknown or zero (nothing to amplify).

    Over several runs, pass the sums (total rewritten / total added), not a mean of the runs' ratios.
    """
    if added is None or added <= 0:
        return None
    return float(bytes_rewritten) / float(added)
