"""The guards that hold a decision, and the decision itself.

Stats older than ``max_stats_age`` or collected before the last re-clustering, and tables below ``min_files`` /
``min_bytes``, give ``hold`` (no decision).  A degraded table re-clustered less than ``min_interval_since_cluster``
ago, or with less than ``min_new_data_fraction`` of its bytes written since, is ``hold`` too (anti-thrash).
Otherwise degraded -> ``recluster``, else ``healthy``.  :func:`next_recheck_at` says when the clock alone could
change a decision.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from airflow_zorder.core.policy.formatting import format_duration, format_percent, format_time
from airflow_zorder.core.policy.snapshot_facts import SnapshotFacts
from airflow_zorder.core.policy.thresholds import HealthPolicy
from airflow_zorder.core.stats import stats_store

__all__ = ["DECISIONS", "GuardFindings", "check_guards", "next_recheck_at"]

DECISIONS = ("recluster", "healthy", "hold")


@dataclass(frozen=True)
class GuardFindings:
    """Why the decision is held, one list per guard, and notes on guards that could not be applied."""

    stale: list[str] = field(default_factory=list)  # stats too old, or older than the last re-clustering
    small: list[str] = field(default_factory=list)  # nothing to decide, or too small to be worth it
    thrash: list[str] = field(default_factory=list)  # anti-thrash (only checked for a degraded table)
    notes: list[str] = field(default_factory=list)

    def decision(self, degraded: bool) -> str:
        """``hold`` when stale or small, else ``healthy`` unless degraded, then ``hold`` on thrash, else ``recluster``."""
        if self.stale or self.small:
            return "hold"
        if not degraded:
            return "healthy"
        return "hold" if self.thrash else "recluster"


def check_guards(
    policy: HealthPolicy, facts: SnapshotFacts, *, has_columns: bool, degraded: bool, now: dt.datetime
) -> GuardFindings:
    """Apply every guard of ``policy`` to the snapshot's ``facts`` at ``now``."""
    out = GuardFindings()
    num_files, stats_time, age_s, last_at = facts.num_files, facts.stats_time, facts.stats_age_s, facts.last_cluster_at
    if not has_columns or num_files == 0:
        out.small.append("no data files with column statistics in the latest snapshot: nothing to decide")
    if stats_time is None:
        out.stale.append("the snapshot has no collection time: collect stats again")
    elif policy.max_stats_age is not None and age_s is not None and age_s > policy.max_stats_age.total_seconds():
        out.stale.append(
            f"stats are {format_duration(age_s)} old (collected {format_time(stats_time)}), older than "
            f"max_stats_age {format_duration(policy.max_stats_age.total_seconds())}: collect stats "
            "before deciding"
        )
    if stats_time is not None and last_at is not None and stats_time < last_at:
        out.stale.append(
            f"stats were collected ({format_time(stats_time)}) before the last re-clustering "
            f"({format_time(last_at)}): collect stats again before deciding"
        )
    if num_files and num_files < policy.min_files:
        out.small.append(f"only {num_files} files (min_files {policy.min_files}): too small to re-cluster")
    if num_files and facts.total_bytes < policy.min_bytes:
        out.small.append(f"only {facts.total_bytes} bytes (min_bytes {policy.min_bytes}): too small to re-cluster")
    if degraded and last_at is not None:
        since = (now - last_at).total_seconds()
        if policy.min_interval_since_cluster is not None and since < policy.min_interval_since_cluster.total_seconds():
            out.thrash.append(
                f"the last re-clustering finished {format_duration(since)} ago "
                f"(min_interval_since_cluster "
                f"{format_duration(policy.min_interval_since_cluster.total_seconds())})"
            )
        if policy.min_new_data_fraction > 0:
            new_fraction = facts.new_data_fraction
            if new_fraction is None:
                out.notes.append(
                    "bytes written since the last re-clustering are unknown (no file times): "
                    "min_new_data_fraction not applied"
                )
            elif new_fraction < policy.min_new_data_fraction:
                out.thrash.append(
                    f"only {format_percent(new_fraction, None)} of the bytes were written since the "
                    f"last re-clustering (min_new_data_fraction "
                    f"{format_percent(policy.min_new_data_fraction, None)})"
                )
    return out


def next_recheck_at(
    payload: Mapping[str, Any],
    policy: HealthPolicy | None = None,
    now: dt.datetime | str | float | None = None,
    *,
    slack_s: float = 1.0,
) -> float | None:
    """The earliest time (Unix seconds) at which the clock alone could change ``payload``'s decision, with no
    new snapshot, run or event: the stats turning older than ``max_stats_age`` (-> ``hold``), or, for a degraded
    table, ``min_interval_since_cluster`` since the last re-clustering running out (``hold`` -> ``recluster``).

    From the payload's ``stats_collected_at`` / ``last_cluster_at`` / ``degraded`` and ``policy`` (default the
    payload's own).  Only times after ``now`` (default the payload's ``evaluated_at``) count; ``slack_s`` is
    added so that an evaluation at the returned time is past the boundary.  None: no such time.
    """
    if policy is None:
        policy = HealthPolicy.from_dict(payload.get("policy"))
    now_t = stats_store.as_datetime(now if now is not None else payload.get("evaluated_at")) or dt.datetime.now(dt.UTC)
    times: list[dt.datetime] = []
    stats_at = stats_store.as_datetime(payload.get("stats_collected_at"))
    if stats_at is not None and policy.max_stats_age is not None:
        times.append(stats_at + policy.max_stats_age)
    last_at = stats_store.as_datetime(payload.get("last_cluster_at"))
    if last_at is not None and payload.get("degraded") and policy.min_interval_since_cluster is not None:
        times.append(last_at + policy.min_interval_since_cluster)
    ahead = [t for t in times if t >= now_t]
    return min(ahead).timestamp() + slack_s if ahead else None
