"""The decision's reasons: human-readable lines with the numbers (guards first, then the degraded partitions or
columns, then notes)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from airflow_zorder.core.policy.formatting import format_bytes, format_percent
from airflow_zorder.core.policy.guards import GuardFindings
from airflow_zorder.core.policy.scoring import ColumnScore, Scores
from airflow_zorder.core.policy.thresholds import HealthPolicy

__all__ = ["NAMED_IN_REASONS", "column_line", "decision_reasons", "plan_line", "short_why"]

NAMED_IN_REASONS = 5  # degraded partitions named in the reasons; the rest are counted


def _num(x: float) -> str:
    return f"{x:.1f}" if abs(x - round(x, 1)) < 1e-9 else f"{x:.3g}"


def _pct(x: float) -> str:
    return format_percent(x, None)


def short_why(column: str, cs: ColumnScore, cd: Mapping[str, Any], policy: HealthPolicy) -> str:
    """Why one partition is degraded, e.g. 'l_suppkey 4.1x the ideal, threshold 2.0x'."""
    if cs.kind == "depth":
        return f"{column} average depth {_num(cd['average_depth'])} > {_num(policy.max_average_depth or 0)}"
    if cs.kind == "fraction":
        return f"{column} reads {_pct(cd['expected_fraction'])} of files > {_pct(policy.max_files_fraction or 0)}"
    if cs.kind == "size":
        return (
            f"{column} {cd['sized_ratio_to_ideal']:.1f}x the ideal counting files bigger than the target as several, "
            f"threshold {_num(policy.threshold(column))}x"
        )
    return f"{column} {cd['ratio_to_ideal']:.1f}x the ideal, threshold {_num(policy.threshold(column))}x"


def column_line(column: str, c: Mapping[str, Any], policy: HealthPolicy, partitioned: bool, kind: str) -> str:
    """One reason line with the numbers, e.g. 'l_suppkey: a point query reads 41% of 64 files, 4.1x ...'."""
    thr = policy.threshold(column)
    if kind == "depth":
        return (
            f"{column}: average depth {_num(c['average_depth'])} files (max_average_depth "
            f"{_num(policy.max_average_depth or 0)}), max depth {c['max_depth']}"
        )
    if kind == "fraction":
        return (
            f"{column}: a point query reads {_pct(c['expected_fraction'])} of {c['num_files']} files "
            f"(max_files_fraction {_pct(policy.max_files_fraction or 0)})"
        )
    if kind == "size":
        size = format_bytes(policy.target_file_size or 0)
        reads = "partitions read more than" if partitioned else f"a point query reads {c['sized_ratio_to_ideal']:.1f}x"
        return (
            f"{column}: counting each file over 1.25x the target ({size}) as that many target files, {reads} the "
            f"ideal (threshold {_num(thr)}x): the files are bigger than the target"
        )
    if partitioned:
        return (
            f"{column}: within partitions, a point query reads {_pct(c['partition_fraction'])} of a partition's "
            f"files, {c['partition_ratio']:.1f}x the ideal {_pct(c['partition_ideal_fraction'])} "
            f"(threshold {_num(thr)}x)"
        )
    return (
        f"{column}: a point query reads {_pct(c['expected_fraction'])} of {c['num_files']} files, "
        f"{c['ratio_to_ideal']:.1f}x the ideal {_pct(c['ideal_fraction'])} (threshold {_num(thr)}x)"
    )


def _score_lines(
    columns: Sequence[str],
    column_view: Mapping[str, Mapping[str, Any]],
    scores: Scores,
    policy: HealthPolicy,
    *,
    partitioned: bool,
    worst_column: str | None,
) -> list[str]:
    """The degraded partitions (partitioned) or the columns over their thresholds, else the worst column."""
    lines: list[str] = []
    degraded = scores.degraded_partitions
    if partitioned:
        n_eligible = len(scores.partitions)
        if degraded:
            named = ", ".join(
                f"{g.partition} ({short_why(g.worst_column, g.worst, g.worst_metrics, policy)})"
                for g in degraded[:NAMED_IN_REASONS]
            )
            more = len(degraded) - NAMED_IN_REASONS
            lines.append(
                f"{len(degraded)} of {n_eligible} partitions need re-clustering: {named}"
                + (f" and {more} more" if more > 0 else "")
            )
        elif columns:
            lines.append(f"no partition over its thresholds ({n_eligible} evaluated)")
        for c in columns:
            if column_view[c]["partition_ratio"] is not None:
                lines.append(column_line(c, column_view[c], policy, True, "ratio"))
    elif columns and scores.partitions:
        over = [c for c in columns if column_view[c]["over_threshold"]]
        shown = over or ([worst_column] if worst_column else [])
        for c in shown:
            best = scores.worst_per_column.get(c)
            line = column_line(c, column_view[c], policy, False, best.kind if best else "ratio")
            lines.append(line if over else f"healthy: worst column {line}")
    if policy.aggregate == "mean" and scores.partitions:
        top = max(scores.partitions, key=lambda g: g.score)
        lines.append(
            f"aggregate 'mean': mean over columns of value/threshold is {top.score:.2f}"
            + (f" in {top.partition}" if partitioned else "")
            + " (degraded above 1)"
        )
    return lines


def decision_reasons(
    decision: str,
    guards: GuardFindings,
    scores: Scores,
    column_view: Mapping[str, Mapping[str, Any]],
    policy: HealthPolicy,
    *,
    columns: Sequence[str],
    partitioned: bool,
    worst_column: str | None,
    notes: Sequence[str] = (),
) -> list[str]:
    """All reason lines of a decision: guards, scores, ``notes`` (then the guards' and files without stats), and
    the ``max_partitions`` cut."""
    reasons = guards.stale + guards.small
    if guards.thrash and decision == "hold":
        reasons.extend(f"degraded, but held: {t}" for t in guards.thrash)
    reasons.extend(
        _score_lines(columns, column_view, scores, policy, partitioned=partitioned, worst_column=worst_column)
    )
    reasons.extend(notes)
    reasons.extend(guards.notes)
    for c in columns:
        nws = column_view[c].get("files_without_stats") or 0
        if nws:
            reasons.append(
                f"{c}: {nws} of {column_view[c]['num_files']} files have no usable statistics "
                "(counted as read; re-clustering cannot fix that)"
            )
    cap = policy.max_partitions
    n_degraded = len(scores.degraded_partitions)
    if partitioned and cap is not None and n_degraded > cap:
        reasons.append(
            f"listing the worst {cap} of {n_degraded} degraded partitions (max_partitions); "
            "the rest follow in later runs"
        )
    return reasons


def plan_line(plan: Mapping[str, Any], num_files: int, partitioned: bool) -> str:
    """The incremental plan in one line, e.g. 'incremental plan: rewrite 12 files (1.5 GiB) of 76 in 2 partitions,
    worst ratio 3.1 -> 1.2 (estimated)'; ``num_files``: the files of the units it was made for."""
    k = len(plan["partitions"])
    where = f" in {k} partition{'' if k == 1 else 's'}" if partitioned else ""
    if not plan["files"]:
        return f"incremental plan: nothing to rewrite among {num_files} files, worst ratio {plan['ratio_before']:.2f}"
    return (
        f"incremental plan: rewrite {plan['files']} files ({format_bytes(plan['bytes'])}) of {num_files}{where}, "
        f"worst ratio {plan['ratio_before']:.2f} -> {plan['ratio_after']:.2f} (estimated)"
    )
