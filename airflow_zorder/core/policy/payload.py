"""The decision payload: the JSON-serialisable dict the sensor returns (XCom) and records, and the UI shows."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from typing import Any

from airflow_zorder.core.policy.column_choice import ColumnChoice
from airflow_zorder.core.policy.formatting import format_time
from airflow_zorder.core.policy.scoring import PartitionScore, Scores
from airflow_zorder.core.policy.snapshot_facts import SnapshotFacts
from airflow_zorder.core.policy.thresholds import HealthPolicy

__all__ = ["WORST_PARTITIONS_LISTED", "decision_payload", "listed_partitions"]

WORST_PARTITIONS_LISTED = 20  # per-partition detail kept in the payload (the XCom); the rest is counted


def _partition_row(g: PartitionScore) -> dict[str, Any]:
    return {
        "partition": g.partition,
        "num_files": g.num_files,
        "bytes": g.bytes,
        "score": g.score,
        "worst_column": g.worst_column,
        "ratio_to_ideal": g.ratio_to_ideal,
    }


def listed_partitions(scores: Scores, policy: HealthPolicy) -> list[PartitionScore]:
    """The degraded partitions the payload lists (and the clustering job re-clusters): worst first, at most
    ``max_partitions``."""
    degraded = scores.degraded_partitions
    cap = policy.max_partitions
    return degraded if cap is None else degraded[:cap]


def decision_payload(
    *,
    decision: str,
    reasons: Sequence[str],
    choice: ColumnChoice,
    facts: SnapshotFacts,
    scores: Scores,
    column_view: Mapping[str, dict[str, Any]],
    summary: Mapping[str, Any],
    policy: HealthPolicy,
    now: dt.datetime,
    table: str,
    stats_location: str,
    plan: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The payload of one evaluation (keys in a fixed order: it is recorded as JSON and compared); ``plan``: the
    incremental plan document (``incremental_stats.plan_table``) of a ``recluster`` decision, else None."""
    partitioned = facts.partitioned
    degraded = scores.degraded_partitions
    listed = listed_partitions(scores, policy)
    ranked = sorted(scores.partitions, key=lambda g: (-g.score, g.partition))
    return {
        "table": table,
        "stats_location": stats_location,
        "decision": decision,
        "degraded": bool(degraded),
        "reasons": list(reasons),
        "evaluated_at": format_time(now),
        "snapshot_id": facts.snapshot_id,
        "stats_collected_at": format_time(facts.stats_time),
        "stats_age_s": facts.stats_age_s,
        "num_files": facts.num_files,
        "total_bytes": facts.total_bytes,
        "num_partitions": facts.num_partitions,
        "columns": dict(column_view),
        "columns_source": choice.source,
        "num_clustering_columns": choice.num_clustering_columns,
        "worst_column": summary.get("worst_column"),
        "headline": summary.get("headline"),
        "last_cluster_at": format_time(facts.last_cluster_at),
        "new_data_fraction": facts.new_data_fraction,
        "partitions": [g.partition for g in listed] if partitioned else [],
        "partitions_degraded": len(degraded) if partitioned else 0,
        "partitions_evaluated": len(scores.partitions) if partitioned else 0,
        "worst_partitions": [_partition_row(g) for g in ranked[:WORST_PARTITIONS_LISTED]] if partitioned else [],
        "worst_partitions_truncated": partitioned and len(scores.partitions) > WORST_PARTITIONS_LISTED,
        "policy": policy.to_dict(),
        "plan": None if plan is None else dict(plan),
    }
