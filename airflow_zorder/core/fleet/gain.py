"""What re-clustering a table buys: the files a point query reads saved, from the incremental plan's own estimates,
and a plan trimmed to what the budget leaves (whole partitions, best savings per byte first)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

__all__ = ["partition_gain", "partition_score", "plan_gain", "subplan", "trim_plan"]


def partition_gain(entry: Mapping[str, Any]) -> float:
    """Files a point query reads saved in one plan partition: the mean over its columns (a query on each column
    alike) of the plan's ``files_read_before - files_read_after`` (``incremental.ColumnEstimate``), at least 0."""
    cols = entry.get("columns") or []
    if not cols:
        return 0.0
    saved = [float(c.get("files_read_before") or 0.0) - float(c.get("files_read_after") or 0.0) for c in cols]
    return max(0.0, sum(saved) / len(saved))


def partition_score(entry: Mapping[str, Any]) -> float:
    """Files read saved per byte rewritten of one plan partition (what the trimming and the fleet's fill rank by)."""
    return partition_gain(entry) / max(1, int(entry.get("bytes") or 0))


def plan_gain(plan: Mapping[str, Any] | None) -> float:
    """Files read saved by a whole plan document (summed over its partitions; a query reads every partition)."""
    return sum(partition_gain(e) for e in (plan or {}).get("partitions") or [])


def trim_plan(
    plan: Mapping[str, Any], fits: Callable[[int], bool], max_partitions: int | None = None
) -> dict[str, Any] | None:
    """The plan keeping only partitions that fit (``fits(bytes so far)``), best saved files per byte first, at most
    ``max_partitions``; its totals recomputed (the job checks them against the bins). None: not one partition fits."""
    entries = sorted(plan.get("partitions") or [], key=lambda e: (-partition_score(e), str(e.get("partition"))))
    kept, total = [], 0
    for e in entries:
        if max_partitions is not None and len(kept) >= max_partitions:
            break
        size = int(e.get("bytes") or 0)
        if fits(total + size):
            kept.append(e)
            total += size
    return subplan(plan, kept) if kept else None


def subplan(plan: Mapping[str, Any], kept: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The plan keeping only the partitions ``kept`` (in the plan's own order), its totals recomputed (the job checks
    them against the bins); the plan itself when it keeps them all."""
    if len(kept) == len(plan.get("partitions") or []):
        return dict(plan)
    kept = sorted(kept, key=lambda e: (e.get("partition") is not None, e.get("partition") or ""))
    return {
        **plan,
        "files": sum(int(e["files"]) for e in kept),
        "bytes": sum(int(e.get("bytes") or 0) for e in kept),
        "num_output_files": sum(int(e["num_output_files"]) for e in kept),
        "ratio_before": max(float(e.get("ratio_before") or 0.0) for e in kept),
        "ratio_after": max(float(e.get("ratio_after") or 0.0) for e in kept),
        "partitions": kept,
    }
