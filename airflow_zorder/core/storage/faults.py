"""Fault injection for crash tests: kill (or fake-kill) the process at a named point.

Set ``ZORDER_FAULT=<point>`` (or ``<point>:<k>`` = the k-th time the point is
reached in this process) to SIGKILL the process there: a real crash, no
``finally`` blocks, no cleanup. With ``ZORDER_FAULT_MODE=raise`` a
:class:`SimulatedCrash` is raised instead, for fast in-process tests; it is a
``BaseException`` so ordinary ``except Exception`` cleanup cannot swallow it.
With ``ZORDER_FAULT_MODE=enospc`` an ``OSError(ENOSPC)`` is raised instead: a
full disk at exactly that step (for stores where a tiny filesystem cannot be
mounted). Unset, :func:`fault_point` costs one environment lookup.
"""

from __future__ import annotations

import errno
import os
import signal
import sys
import threading

__all__ = [
    "FAULT_ENV",
    "FAULT_MODE_ENV",
    "CLEANUP_FAULT_POINTS",
    "DELTA_FAULT_POINTS",
    "ICEBERG_FAULT_POINTS",
    "FAULT_POINTS",
    "JOB_FAULT_POINTS",
    "STATS_FAULT_POINTS",
    "SimulatedCrash",
    "fault_point",
    "reset_fault_counters",
]

FAULT_ENV = "ZORDER_FAULT"
FAULT_MODE_ENV = "ZORDER_FAULT_MODE"

#: Points the commit protocol (``commit.py``) passes, in the order a commit reaches them.
#: ``mid_swap`` is reached after every single file move (also when ``recover`` redoes moves);
#: ``mid_rollback`` between deleting a run's staging dir and recording ``rolled_back``.
FAULT_POINTS: tuple[str, ...] = (
    "after_begin",
    "before_commit_record",
    "after_commit_record",
    "mid_swap",
    "after_swap",
    "before_done",
    "mid_rollback",
)

#: Points the clustering job itself passes (outside the commit protocol).
JOB_FAULT_POINTS: tuple[str, ...] = ("after_stage",)  # all units staged and verified, nothing committed

#: Points of a Delta table's commit (``core/tables/delta_table.py``), in order: the journal lists the files to
#: place; after each staged file is placed in the table directory; all placed, before the Delta commit; after it.
DELTA_FAULT_POINTS: tuple[str, ...] = (
    "delta_before_place",
    "delta_mid_place",
    "delta_before_commit",
    "delta_after_commit",
)

#: Points of an Iceberg table's commit (``core/tables/iceberg_table.py``), as for Delta: the journal lists the files to
#: place; after each staged file is placed under the data location; all placed, before the snapshot; after it.
ICEBERG_FAULT_POINTS: tuple[str, ...] = (
    "iceberg_before_place",
    "iceberg_mid_place",
    "iceberg_before_commit",
    "iceberg_after_commit",
)

#: Points of ``commit.cleanup`` (purging expired trash / staging of finished runs): after each deletion.
CLEANUP_FAULT_POINTS: tuple[str, ...] = ("mid_cleanup",)

#: Points of the statistics job and its store (``collect_stats.py``, ``stats_store.write_snapshot``), in order:
#: footers/scan done and nothing written; snapshot file about to be published (its commit point);
#: published but no run record; run record but no ``_latest.json``; after each old snapshot deleted
#: by ``--keep-snapshots``.
STATS_FAULT_POINTS: tuple[str, ...] = (
    "stats_after_read",
    "stats_before_publish",
    "stats_after_publish",
    "stats_after_run_record",
    "stats_mid_prune",
)


class SimulatedCrash(BaseException):
    """Raised at a fault point when ``ZORDER_FAULT_MODE=raise`` (stands in for SIGKILL)."""


_counts: dict[str, int] = {}
_counts_lock = threading.Lock()


def reset_fault_counters() -> None:
    """Forget how often each point was reached (tests run several scenarios in one process)."""
    with _counts_lock:
        _counts.clear()


def _parse(spec: str) -> tuple[str, int]:
    name, sep, nth = spec.strip().partition(":")
    if not name:
        raise ValueError(f"{FAULT_ENV}={spec!r}: expected '<point>' or '<point>:<k>'")
    if not sep:
        return name, 1
    try:
        k = int(nth)
    except ValueError:
        raise ValueError(f"{FAULT_ENV}={spec!r}: k must be a positive integer") from None
    if k < 1:
        raise ValueError(f"{FAULT_ENV}={spec!r}: k must be a positive integer")
    return name, k


def fault_point(name: str) -> None:
    """Crash here if ``ZORDER_FAULT`` names this point (and this is its k-th visit)."""
    spec = os.environ.get(FAULT_ENV)
    if not spec:
        return
    target, k = _parse(spec)
    if target != name:
        return
    with _counts_lock:
        _counts[name] = seen = _counts.get(name, 0) + 1
    if seen != k:
        return
    message = f"fault injected at {name!r} (visit {seen})"
    mode = os.environ.get(FAULT_MODE_ENV, "").strip().lower()
    if mode == "raise":
        raise SimulatedCrash(message)
    if mode == "enospc":
        raise OSError(errno.ENOSPC, f"No space left on device ({message})")
    try:
        sys.stderr.write(f"ZORDER_FAULT: {message}: SIGKILL pid {os.getpid()}\n")
        sys.stderr.flush()
    finally:
        os.kill(os.getpid(), signal.SIGKILL)
