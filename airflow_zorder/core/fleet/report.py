"""A fleet run as text: one line per table (rank, reason, planned and chosen bytes, gain) and the totals; the plan
task's log, the demo and the simulator print it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from airflow_zorder.core.policy.formatting import format_bytes

__all__ = ["format_run"]


def _bytes(n: int | None) -> str:
    return format_bytes(n) if n else "-"


def format_run(record: Mapping[str, Any], width: int = 44) -> str:
    """The run record (``FleetPlan.to_dict``, with the record task's outcomes when present) as a text table."""
    budget = record.get("budget") or {}
    bound = []
    if budget.get("max_bytes") is not None:
        bound.append(f"{format_bytes(budget['max_bytes'])} rewritten")
    if budget.get("max_spark_seconds") is not None:
        bound.append(f"{budget['max_spark_seconds']:.0f} s of Spark")
    lines = [
        f"fleet run {record.get('run_id')}: budget {' and '.join(bound) or 'unbounded'}",
        f"{'rank':>4}  {'table':<{width}} {'reason':<8} {'headline':>8} {'planned':>10} {'chosen':>10} "
        f"{'gain':>7}  detail",
    ]
    for d in record.get("decisions") or []:
        name = d["table"] if len(d["table"]) <= width else "…" + d["table"][-(width - 1) :]
        headline = (d.get("health") or {}).get("headline")
        outcome = d.get("outcome") or {}
        detail = d.get("detail") or ""
        if outcome:
            detail = f"{outcome.get('status')}: {_bytes(outcome.get('bytes'))} rewritten; {detail}".rstrip("; ")
        lines.append(
            f"{d.get('rank') or '':>4}  {name:<{width}} {d['reason']:<8} "
            f"{'' if headline is None else f'{headline:.2f}':>8} {_bytes(d.get('planned_bytes')):>10} "
            f"{_bytes(d.get('chosen_bytes')):>10} {d.get('chosen_gain') or d.get('weighted_gain') or 0:>7.2f}  "
            f"{detail[:120]}"
        )
    t = record.get("totals") or {}
    if t:
        by = ", ".join(f"{n} {r}" for r, n in (t.get("by_reason") or {}).items() if n)
        kept = t["gain"] / t["gain_available"] if t.get("gain_available") else 1.0
        lines.append(
            f"spent {_bytes(t.get('bytes'))} of {_bytes(t.get('bytes_available'))} planned "
            f"(~{t.get('spark_seconds', 0):.0f} s of Spark), {kept:.0%} of the planned read savings; {by}"
        )
    for err in record.get("errors") or []:
        lines.append(f"discovery rule {err.get('rule')} failed: {err.get('error')}")
    return "\n".join(lines)
