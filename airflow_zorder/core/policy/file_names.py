"""Names of the files the clustering job writes: each name carries the run that wrote it.

``part-00007-zorder-<run_id>.parquet``: unique per run and unit, traceable from any listing, and the
*membership* the incremental policy needs (which clustering run produced a file, or none) without a
column of its own in the stats row: a file whose name does not match was never clustered by this job.
A bin of an incremental plan adds its index, ``part-00007-b2-zorder-<run_id>.parquet``: the bins of one run
were clustered apart, and the policy must see them as the separate groups they are.
The run's curve and columns are in its clustering event (``stats_store.cluster_event``), keyed by run id.
"""

from __future__ import annotations

import re

__all__ = ["clustered_file_name", "membership_of", "run_id_of"]

_NAME = re.compile(r"^part-\d{5,}(?:-b(?P<bin>\d+))?-zorder-(?P<run>[A-Za-z0-9][A-Za-z0-9._-]*)\.parquet$")


def clustered_file_name(index: int, run_id: str, bin: int | None = None) -> str:
    """The name of a unit's ``index``-th output file of run ``run_id`` (of plan bin ``bin``, if one)."""
    if index < 0:
        raise ValueError(f"file index must be >= 0, not {index}")
    if bin is not None and bin < 0:
        raise ValueError(f"bin must be >= 0, not {bin}")
    return f"part-{index:05d}{'' if bin is None else f'-b{bin}'}-zorder-{run_id}.parquet"


def run_id_of(path: str) -> str | None:
    """The run that wrote the file at ``path`` (a name from :func:`clustered_file_name`), else None."""
    m = _NAME.match(path.rstrip("/").rsplit("/", 1)[-1])
    return m.group("run") if m else None


def membership_of(path: str) -> str | None:
    """The group the file at ``path`` was clustered in: its run, and its plan bin when the run had several
    (``<run_id>/b<bin>``); None when no clustering run wrote it."""
    m = _NAME.match(path.rstrip("/").rsplit("/", 1)[-1])
    if not m:
        return None
    return m.group("run") if m.group("bin") is None else f"{m.group('run')}/b{m.group('bin')}"
