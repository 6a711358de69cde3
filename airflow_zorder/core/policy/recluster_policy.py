"""Is a table's file overlap bad enough to re-cluster?  The sensor's (and the UI's) decision rules.

Airflow-free: a stats snapshot (``stats_store.load_latest``) and the table's events go in, a compact
JSON-serialisable payload comes out (decision, human-readable reasons with the numbers, per-column
metrics, the partitions to re-cluster).  The metrics are :func:`metrics.table_clustering`'s; nothing is
re-derived here.  :func:`evaluate` runs the steps, each in its own module:

1. choose the columns and the ``d`` of the ideal (:mod:`.column_choice`): the columns asked for, else the
   last re-clustering's, else all with stats; ``d`` is the number of columns the table was last clustered
   on when the watched columns are among them, else the number of watched columns;
2. measure them (:func:`metrics.table_clustering`) and read the snapshot's files and times (:mod:`.snapshot_facts`);
3. score every partition (the whole table when unpartitioned) per column (:mod:`.scoring`): the column's
   ``ratio_to_ideal`` (expected files a point query reads / the ideal ``N ** (1 - 1/d)``) divided by its
   threshold, and, when set, ``average_depth / max_average_depth`` and ``expected_fraction /
   max_files_fraction``; a column's score is the largest of these.  A partition's score is the worst
   column's (``aggregate="worst"``) or the mean over columns (``"mean"``); above 1 it is degraded;
4. guards (:mod:`.guards`): stats older than ``max_stats_age`` or collected before the last re-clustering,
   and tables below ``min_files`` / ``min_bytes``, give ``hold`` (no decision).  A degraded table
   re-clustered less than ``min_interval_since_cluster`` ago, or with less than ``min_new_data_fraction`` of
   its bytes written since, is ``hold`` too (anti-thrash).  Otherwise degraded -> ``recluster``, else ``healthy``;
5. on ``recluster``, when ``incremental`` parameters are given, the incremental plan of the listed partitions (the
   whole table when unpartitioned): :func:`incremental_stats.plan_table` over the chosen columns, the files to
   rewrite and the estimated ratio before and after (:mod:`.incremental`), as the payload's ``plan``;
6. the reasons (:mod:`.reasons`, plus one line summing up the plan) and the payload (:mod:`.payload`).

:class:`HealthPolicy` (:mod:`.thresholds`) holds the thresholds; :mod:`.events` records decisions as events.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from airflow_zorder.core.layout.curves import CURVES
from airflow_zorder.core.policy import metrics
from airflow_zorder.core.policy.column_choice import (
    ColumnChoice,
    available_columns,
    choose_columns,
    default_columns,
    parse_columns,
)
from airflow_zorder.core.policy.events import (
    DECISION_EVENT,
    Events,
    last_cluster_event,
    last_decision,
    record_decision,
)
from airflow_zorder.core.policy.guards import DECISIONS, check_guards, next_recheck_at
from airflow_zorder.core.policy.incremental import IncrementalParams
from airflow_zorder.core.policy.incremental_stats import plan_table
from airflow_zorder.core.policy.payload import WORST_PARTITIONS_LISTED, decision_payload, listed_partitions
from airflow_zorder.core.policy.reasons import decision_reasons, plan_line
from airflow_zorder.core.policy.scoring import Scores, column_view, score_partitions
from airflow_zorder.core.policy.snapshot_facts import SnapshotFacts, snapshot_facts, snapshot_time
from airflow_zorder.core.policy.thresholds import HealthPolicy
from airflow_zorder.core.stats import stats_store

__all__ = [
    "DECISIONS",
    "DECISION_EVENT",
    "WORST_PARTITIONS_LISTED",
    "HealthPolicy",
    "IncrementalParams",
    "default_columns",
    "last_cluster_event",
    "parse_columns",
    "snapshot_time",
    "evaluate",
    "incremental_plan",
    "measure",
    "record_decision",
    "last_decision",
    "next_recheck_at",
]


def measure(
    snapshot: pa.Table, available: Sequence[str], choice: ColumnChoice, target_file_size: int | None = None
) -> dict[str, Any]:
    """:func:`metrics.table_clustering` of the chosen columns (an empty summary when there are none)."""
    cols = choice.columns
    if not cols:
        return {"per_column": {}, "partition_ratio": {}, "partitions": {}, "worst_column": None, "headline": None}
    stats = snapshot
    if set(cols) != set(available):
        stats = stats.filter(pc.is_in(stats["column_name"], pa.array(cols, pa.string())))
    return metrics.table_clustering(
        stats, cols, num_clustering_columns=choice.num_clustering_columns, target_file_size=target_file_size
    )


def incremental_plan(
    snapshot: pa.Table,
    choice: ColumnChoice,
    facts: SnapshotFacts,
    scores: Scores,
    policy: HealthPolicy,
    params: IncrementalParams,
) -> tuple[dict[str, Any] | None, str]:
    """``(plan document, reason line)`` for the partitions a ``recluster`` payload lists (the whole table when
    unpartitioned); a plan the stats cannot give (ValueError) is None, the line saying why: the job then plans."""
    if params.trigger_ratio is None:  # plans are amortised against the ratio this sensor re-clusters at
        params = dataclasses.replace(params, trigger_ratio=policy.max_ratio_to_ideal)
    listed = listed_partitions(scores, policy)
    units: list[str | None] = [g.partition for g in listed] if facts.partitioned else [None]
    num_files = sum(g.num_files for g in listed) if facts.partitioned else facts.num_files
    try:
        plan = plan_table(
            snapshot,
            choice.columns,
            partitions=units,
            params=params,
            num_clustering_columns=choice.num_clustering_columns,
        )
    except ValueError as exc:
        return None, f"incremental plan not computed ({exc}); an incremental run plans for itself"
    return plan, plan_line(plan, num_files, facts.partitioned)


def evaluate(
    snapshot: pa.Table,
    columns: Sequence[str] | str | None = None,
    policy: HealthPolicy | None = None,
    *,
    events: Events = None,
    now: dt.datetime | None = None,
    table: str = "",
    stats_location: str = "",
    collected_at: dt.datetime | str | None = None,
    num_clustering_columns: int | None = None,
    incremental: IncrementalParams | None = None,
) -> dict[str, Any]:
    """Decide ``recluster`` / ``healthy`` / ``hold`` for a stats snapshot (see the module doc).

    ``snapshot``: FILE_STATS_SCHEMA rows (``stats_store.load_latest``); ``events``: the table's events
    (``stats_store.load_events``) for the last re-clustering; ``collected_at``: when the stats were last
    confirmed current (the newest collection run), default the snapshot's own time; ``now``: default the
    clock; ``incremental``: attach the incremental plan made with these parameters to a ``recluster``
    payload (its ``plan``; None: no plan).  Unknown ``columns`` raise InvalidInputError naming the columns with
    statistics.
    """
    policy = policy or HealthPolicy()
    now = stats_store.as_datetime(now) or dt.datetime.now(dt.UTC)
    available = available_columns(snapshot)
    last = last_cluster_event(events)
    choice = choose_columns(
        available, columns, events, last_cluster=last, table=table, num_clustering_columns=num_clustering_columns
    )
    summary = measure(snapshot, available, choice, policy.target_file_size)
    facts = snapshot_facts(snapshot, last_cluster=last, now=now, collected_at=collected_at)
    scores = score_partitions(
        summary, choice.columns, policy, partitioned=facts.partitioned, partition_bytes=facts.partition_bytes
    )
    view = column_view(summary, choice.columns, policy, scores)
    guards = check_guards(policy, facts, has_columns=bool(choice.columns), degraded=scores.degraded, now=now)
    decision = guards.decision(scores.degraded)
    reasons = decision_reasons(
        decision,
        guards,
        scores,
        view,
        policy,
        columns=choice.columns,
        partitioned=facts.partitioned,
        worst_column=summary.get("worst_column"),
        notes=choice.notes,
    )
    plan = None
    if decision == "recluster" and incremental is not None:
        if incremental.curve is None and last is not None and last.get("curve") in CURVES:
            incremental = dataclasses.replace(incremental, curve=last["curve"])  # the curve the table was cut by
        plan, line = incremental_plan(snapshot, choice, facts, scores, policy, incremental)
        reasons.append(line)
    return decision_payload(
        decision=decision,
        reasons=reasons,
        choice=choice,
        facts=facts,
        scores=scores,
        column_view=view,
        summary=summary,
        policy=policy,
        now=now,
        table=table,
        stats_location=stats_location,
        plan=plan,
    )
