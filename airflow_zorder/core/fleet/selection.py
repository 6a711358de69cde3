"""The fleet's choice: rank the degraded tables by read savings per byte rewritten, spend the budget down the
ranking (trimming a plan that does not fit whole), and give every table its decision with the reason.

Reasons: ``chosen``; ``budget`` (degraded, but nothing of its plan fits what is left); ``healthy``; ``hold`` (the
sensor's guards: stale stats, too small, re-clustered too recently, or a plan with nothing to rewrite); ``error``
(its evaluation failed: the rest of the fleet goes on). Starvation guard: a table skipped for budget
``starvation_runs`` runs in a row is served before the ranking, its best partition (savings per byte) only, so that
the guard costs the ranking little; a starved table whose plan is one partition is served whole when it fits.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from airflow_zorder.core.fleet.budget import Budget
from airflow_zorder.core.fleet.gain import plan_gain, trim_plan
from airflow_zorder.core.fleet.spec import FleetTable

__all__ = ["DEFAULT_STARVATION_RUNS", "REASONS", "FleetPlan", "TableEvaluation", "select"]

REASONS = ("chosen", "budget", "healthy", "hold", "error")
DEFAULT_STARVATION_RUNS = 3


@dataclass(frozen=True)
class TableEvaluation:
    """One table as the planner found it: the sensor's payload (decision, reasons, plan), or the error."""

    table: FleetTable
    payload: Mapping[str, Any] | None = None
    error: str | None = None
    seconds: float = 0.0  # how long the evaluation took

    @property
    def decision(self) -> str:
        """The sensor's decision, or ``error``."""
        return "error" if self.payload is None else str(self.payload.get("decision"))

    @property
    def plan(self) -> Mapping[str, Any] | None:
        """The incremental plan of a ``recluster`` decision (None otherwise, or when the stats could not give one)."""
        return None if self.payload is None else self.payload.get("plan")

    def health(self) -> dict[str, Any]:
        """What the fleet page shows of the table's health (from the payload)."""
        p = self.payload or {}
        return {
            "decision": self.decision,
            "headline": p.get("headline"),
            "worst_column": p.get("worst_column"),
            "num_files": p.get("num_files"),
            "total_bytes": p.get("total_bytes"),
            "stats_location": p.get("stats_location"),
            "stats_source": p.get("stats_source"),
            "reasons": list(p.get("reasons") or [])[:4],
        }


@dataclass
class FleetPlan:
    """One run's plan: every table's decision (chosen first, in rank order) and what the chosen ones spend."""

    run_id: str
    planned_at: str
    budget: Budget
    starvation_runs: int
    decisions: list[dict[str, Any]] = field(default_factory=list)
    errors: list[dict[str, Any]] = field(default_factory=list)  # discovery rules that failed

    @property
    def chosen(self) -> list[dict[str, Any]]:
        """The chosen tables' decisions, in rank order."""
        return [d for d in self.decisions if d["reason"] == "chosen"]

    def totals(self) -> dict[str, Any]:
        """The run's sums: bytes and Spark time spent, gain chosen against gain available, tables per reason."""
        chosen = self.chosen
        return {
            "tables": len(self.decisions),
            "by_reason": {r: sum(d["reason"] == r for d in self.decisions) for r in REASONS},
            "bytes": sum(d["chosen_bytes"] for d in chosen),
            "spark_seconds": round(sum(d["est_seconds"] for d in chosen), 1),
            "gain": round(sum(d["chosen_gain"] for d in chosen), 3),
            "gain_available": round(sum(d["weighted_gain"] for d in self.decisions), 3),
            "bytes_available": sum(d["planned_bytes"] for d in self.decisions),
        }

    def skipped_runs(self) -> dict[str, int]:
        """Each table's count of runs in a row skipped for budget, after this run (the next run's state)."""
        return {d["table"]: d["skipped_runs"] for d in self.decisions}

    def to_dict(self) -> dict[str, Any]:
        """The run record (JSON-ready): what the record task writes and the fleet page reads."""
        return {
            "run_id": self.run_id,
            "planned_at": self.planned_at,
            "budget": self.budget.to_dict(),
            "starvation_runs": self.starvation_runs,
            "totals": self.totals(),
            "decisions": self.decisions,
            "errors": self.errors,
        }


def _decision(e: TableEvaluation, skipped_before: int) -> dict[str, Any]:
    plan = e.plan
    gain = plan_gain(plan)
    nbytes = int((plan or {}).get("bytes") or 0)
    weight = e.table.weight
    return {
        "table": e.table.table,
        "spec": e.table.to_dict(),
        "health": e.health(),
        "rank": None,
        "reason": e.decision if e.decision in ("healthy", "hold", "error") else "hold",
        "detail": e.error or "",
        "read_weight": weight,
        "planned_bytes": nbytes,
        "planned_gain": round(gain, 4),
        "weighted_gain": round(gain * weight, 4),
        "score": (gain * weight / nbytes * (1 << 30)) if nbytes else 0.0,  # files read saved per GiB rewritten
        "chosen_bytes": 0,
        "chosen_gain": 0.0,
        "est_seconds": 0.0,
        "trimmed": False,
        "skipped_runs_before": skipped_before,
        "skipped_runs": 0,
        "starved": False,
        "evaluation_s": round(e.seconds, 3),
        "plan": None,
        "partitions": [],
    }


def select(
    evaluations: Sequence[TableEvaluation],
    budget: Budget,
    *,
    skipped_runs: Mapping[str, int] | None = None,
    starvation_runs: int = DEFAULT_STARVATION_RUNS,
    run_id: str = "",
    now: dt.datetime | None = None,
) -> FleetPlan:
    """The run's plan (module doc). ``skipped_runs``: each table's runs in a row skipped for budget so far (the fleet
    state); a table at ``starvation_runs`` or more is served first."""
    skipped = dict(skipped_runs or {})
    now = now or dt.datetime.now(dt.UTC)
    rows = [_decision(e, int(skipped.get(e.table.table, 0))) for e in evaluations]
    candidates, plans = [], {}
    for e, d in zip(evaluations, rows):
        if e.decision != "recluster":
            continue
        if d["planned_bytes"] <= 0:
            d["detail"] = "degraded, but its incremental plan rewrites nothing (or could not be made from the stats)"
            continue
        d["starved"] = d["skipped_runs_before"] >= starvation_runs
        candidates.append(d)
        plans[d["table"]] = e.plan
    candidates.sort(key=lambda d: (not d["starved"], -d["skipped_runs_before"] if d["starved"] else 0, -d["score"]))
    spent_bytes, spent_s = 0, 0.0
    for rank, d in enumerate(candidates, start=1):
        d["rank"] = rank
        plan = plans[d["table"]]
        fits = lambda n, b=spent_bytes, s=spent_s: budget.fits(n, b, s)  # noqa: E731
        if d["starved"] and budget.bounded and len(plan["partitions"]) > 1:
            chosen = trim_plan(plan, fits, max_partitions=1)  # served first, its best partition; the rest waits
            d["trimmed"] = chosen is not None
        else:
            chosen = plan if fits(d["planned_bytes"]) else None
        if chosen is None:
            chosen = trim_plan(plan, fits)
            d["trimmed"] = chosen is not None
        if chosen is None:
            d["reason"] = "budget"
            d["skipped_runs"] = d["skipped_runs_before"] + 1
            left = None if budget.max_bytes is None else budget.max_bytes - spent_bytes
            d["detail"] = (
                "degraded; its smallest partition's rewrite does not fit what the budget left"
                + (f" ({left:,} bytes)" if left is not None else "")
                + f"; skipped {d['skipped_runs']} run(s) in a row"
            )
            continue
        d["reason"] = "chosen"
        d["plan"] = chosen
        d["chosen_bytes"] = int(chosen["bytes"])
        d["chosen_gain"] = round(plan_gain(chosen) * d["read_weight"], 4)
        d["est_seconds"] = round(budget.seconds(d["chosen_bytes"]), 1)
        d["partitions"] = [e["partition"] for e in chosen["partitions"] if e["partition"] is not None]
        d["detail"] = ("starved: served before the ranking; " if d["starved"] else "") + (
            f"trimmed to {len(chosen['partitions'])} of {len(plan['partitions'])} partitions" if d["trimmed"] else ""
        )
        spent_bytes += d["chosen_bytes"]
        spent_s += d["est_seconds"]
    order = {"chosen": 0, "budget": 1, "hold": 2, "error": 3, "healthy": 4}
    rows.sort(key=lambda d: (order[d["reason"]], d["rank"] or 0, d["table"]))
    return FleetPlan(
        run_id=run_id or now.strftime("%Y%m%dT%H%M%SZ"),
        planned_at=now.isoformat(),
        budget=budget,
        starvation_runs=starvation_runs,
        decisions=rows,
    )
