"""Scores of a table's partitions and columns against the policy's thresholds (above 1: degraded).

Every partition (the whole table when unpartitioned) is scored per column: the column's ``ratio_to_ideal``
and its ``sized_ratio_to_ideal`` (the same with files over 1.25x ``target_file_size`` counted as that many files)
divided by its threshold, and, when set, ``average_depth / max_average_depth`` and ``expected_fraction /
max_files_fraction``; a column's score is the largest of these.  A partition's score is the worst column's
(``aggregate="worst"``) or the mean over columns (``"mean"``).  The inputs are :func:`metrics.table_clustering`'s.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from airflow_zorder.core.policy.thresholds import HealthPolicy

__all__ = [
    "ColumnScore",
    "PartitionScore",
    "Scores",
    "column_score",
    "column_view",
    "partition_score",
    "score_partitions",
]


@dataclass(frozen=True)
class ColumnScore:
    """One column's score and which threshold gave it."""

    score: float
    kind: str  # "ratio" | "size" | "depth" | "fraction"


@dataclass(frozen=True)
class PartitionScore:
    """One scored partition ('' = the whole unpartitioned table)."""

    partition: str
    num_files: int
    bytes: int
    score: float
    worst_column: str
    worst: ColumnScore  # the worst column's score
    worst_metrics: Mapping[str, Any]  # the worst column's metrics in this partition
    ratio_to_ideal: float | None


@dataclass(frozen=True)
class Scores:
    """The scored partitions (in the metrics' order) and each column's worst score over them."""

    partitions: list[PartitionScore]
    worst_per_column: dict[str, ColumnScore]

    @property
    def degraded_partitions(self) -> list[PartitionScore]:
        """Partitions scoring above 1, worst first."""
        return sorted((g for g in self.partitions if g.score > 1.0), key=lambda g: (-g.score, g.partition))

    @property
    def degraded(self) -> bool:
        """Whether any partition scores above 1."""
        return any(g.score > 1.0 for g in self.partitions)


def column_score(cd: Mapping[str, Any] | None, column: str, policy: HealthPolicy) -> ColumnScore | None:
    """The largest of the column's values over their thresholds (None: no metric to judge)."""
    if not cd:
        return None
    comps: list[tuple[float, str]] = []
    ratio, sized = cd.get("ratio_to_ideal"), cd.get("sized_ratio_to_ideal")
    if ratio is not None:
        comps.append((ratio / policy.threshold(column), "ratio"))
    if sized is not None and (ratio is None or sized > ratio * (1 + 1e-9)):  # files bigger than the target
        comps.append((sized / policy.threshold(column), "size"))
    if policy.max_average_depth is not None and cd.get("average_depth") is not None:
        comps.append((cd["average_depth"] / policy.max_average_depth, "depth"))
    if policy.max_files_fraction is not None and cd.get("expected_fraction") is not None:
        comps.append((cd["expected_fraction"] / policy.max_files_fraction, "fraction"))
    if not comps:
        return None
    s, k = max(comps)
    return ColumnScore(float(s), k)


def partition_score(scores: Mapping[str, ColumnScore], aggregate: str) -> tuple[float | None, str | None]:
    """``(score, worst column)`` of one partition from its columns' scores."""
    if not scores:
        return None, None
    worst = max(scores, key=lambda c: (scores[c].score, c))
    if aggregate == "mean":
        return float(np.mean([s.score for s in scores.values()])), worst
    return scores[worst].score, worst


def score_partitions(
    summary: Mapping[str, Any],
    columns: Sequence[str],
    policy: HealthPolicy,
    *,
    partitioned: bool,
    partition_bytes: Mapping[str, float],
) -> Scores:
    """Score every partition of ``summary`` (``metrics.table_clustering``); in a partitioned table the
    whole-table entry and partitions under ``min_partition_files`` are skipped."""
    groups: list[PartitionScore] = []
    col_best: dict[str, ColumnScore] = {}
    for key, p in (summary.get("partitions") or {}).items():
        if partitioned and (key == "" or p["num_files"] < policy.min_partition_files):
            continue
        scores = {c: s for c in columns if (s := column_score(p["columns"].get(c), c, policy)) is not None}
        for c, s in scores.items():
            if c not in col_best or s.score > col_best[c].score:
                col_best[c] = s
        score, worst = partition_score(scores, policy.aggregate)
        if score is None or worst is None:
            continue
        groups.append(
            PartitionScore(
                partition=key,
                num_files=int(p["num_files"]),
                bytes=int(partition_bytes.get(key, 0)),
                score=score,
                worst_column=worst,
                worst=scores[worst],
                worst_metrics=p["columns"][worst],
                ratio_to_ideal=p.get("ratio_to_ideal"),
            )
        )
    return Scores(groups, col_best)


def column_view(
    summary: Mapping[str, Any], columns: Sequence[str], policy: HealthPolicy, scores: Scores
) -> dict[str, dict[str, Any]]:
    """Per column: the table-wide metrics, the within-partition fractions, its threshold and worst score (the
    payload's ``columns``)."""
    out: dict[str, dict[str, Any]] = {}
    for c in columns:
        w = (summary.get("per_column") or {}).get(c) or {}
        read = ideal = n_in_parts = 0.0
        for p in (summary.get("partitions") or {}).values():
            pc_ = p["columns"].get(c)
            if pc_:
                read += pc_.get("expected_files_read") or 0.0
                ideal += pc_.get("ideal_files_read") or 0.0
                n_in_parts += pc_.get("num_files") or 0
        best = scores.worst_per_column.get(c)
        out[c] = {
            "expected_fraction": w.get("expected_fraction"),
            "ideal_fraction": w.get("ideal_fraction"),
            "ratio_to_ideal": w.get("ratio_to_ideal"),
            "partition_ratio": (summary.get("partition_ratio") or {}).get(c),
            "bytes_ratio_to_ideal": w.get("bytes_ratio_to_ideal"),
            "bytes_partition_ratio": (summary.get("bytes_partition_ratio") or {}).get(c),
            "sized_ratio_to_ideal": w.get("sized_ratio_to_ideal"),
            "partition_fraction": read / n_in_parts if n_in_parts else None,
            "partition_ideal_fraction": ideal / n_in_parts if n_in_parts else None,
            "average_overlaps": w.get("average_overlaps"),
            "average_depth": w.get("average_depth"),
            "max_depth": w.get("max_depth"),
            "num_files": w.get("num_files"),
            "files_without_stats": w.get("files_without_stats"),
            "threshold": policy.threshold(c),
            "score": best.score if best else None,
            "over_threshold": bool(best and best.score > 1.0),
        }
    return out
