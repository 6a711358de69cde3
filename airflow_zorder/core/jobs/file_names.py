"""Names of the files the clustering job writes: each name carries the run that wrote it.

``part-00007-zorder-<run_id>.parquet``: unique per run and unit, traceable from any listing, and the
*membership* the incremental policy needs (which clustering run produced a file, or none) without a
column of its own in the stats row: a file whose name does not match was never clustered by this job.
The run's curve and columns are in its clustering event (``stats_store.cluster_event``), keyed by run id.
"""

from __future__ import annotations

import re

__all__ = ["clustered_file_name", "run_id_of"]

_NAME = re.compile(r"^part-\d{5,}-zorder-(?P<run>[A-Za-z0-9][A-Za-z0-9._-]*)\.parquet$")


def clustered_file_name(index: int, run_id: str) -> str:
    """The name of a unit's ``index``-th output file of run ``run_id``."""
    if index < 0:
        raise ValueError(f"file index must be >= 0, not {index}")
    return f"part-{index:05d}-zorder-{run_id}.parquet"


def run_id_of(path: str) -> str | None:
    """The run that wrote the file at ``path`` (a name from :func:`clustered_file_name`), else None."""
    m = _NAME.match(path.rstrip("/").rsplit("/", 1)[-1])
    return m.group("run") if m else None
