"""The fleet's choice: rank the degraded tables by read savings per byte rewritten, spend the budget on their plans'
partitions by weighted savings per byte (so a table's weak partitions never take the place of another's strong ones,
and what is left is filled with the partitions that fit), and give every table its decision with the reason.

Reasons: ``chosen``; ``budget`` (degraded, but nothing of its plan fits what is left); ``healthy``; ``hold`` (the
sensor's guards: stale stats, too small, re-clustered too recently, or a plan with nothing to rewrite); ``error``
(its evaluation failed: the rest of the fleet goes on). Starvation guard: a table skipped for budget
``starvation_runs`` runs in a row is served before the ranking, its best partition (savings per byte) that fits; its
other partitions wait their turn with the rest.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from airflow_zorder.core.fleet.budget import Budget
from airflow_zorder.core.fleet.gain import partition_score, plan_gain, subplan
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


def _fill(
    candidates: Sequence[dict[str, Any]], plans: Mapping[str, Mapping[str, Any]], budget: Budget
) -> dict[str, list[Mapping[str, Any]]]:
    """Each candidate's partitions the budget buys: the starved tables' best partition first (a starved table of one
    partition whole), then every partition of every candidate by weighted files saved per byte, each taken when it
    fits beside what is taken (a table's Spark job overhead counted once)."""
    kept: dict[str, list[Mapping[str, Any]]] = {d["table"]: [] for d in candidates}
    taken: dict[str, int] = {d["table"]: 0 for d in candidates}  # bytes taken per table
    spent = [0, 0.0]  # bytes, estimated Spark seconds

    def take(table: str, entry: Mapping[str, Any]) -> bool:
        size, before = int(entry.get("bytes") or 0), taken[table]
        # the table's job grows by ``size``: its time estimate is replaced, its overhead counted once
        if not budget.fits(before + size, spent[0] - before, spent[1] - budget.seconds(before)):
            return False
        kept[table].append(entry)
        taken[table] = before + size
        spent[0] += size
        spent[1] += budget.seconds(before + size) - budget.seconds(before)
        return True

    queue = []
    for d in candidates:
        entries = sorted(plans[d["table"]]["partitions"], key=lambda e: (-partition_score(e), str(e.get("partition"))))
        if d["starved"] and budget.bounded:  # served first: its best partition that fits; the rest waits its turn
            first = next((j for j, e in enumerate(entries) if take(d["table"], e)), None)
            entries = entries if first is None else entries[:first] + entries[first + 1 :]
        queue += [(-partition_score(e) * d["read_weight"], d["rank"], j, d["table"], e) for j, e in enumerate(entries)]
    for *_, table, entry in sorted(queue, key=lambda q: q[:3]):
        take(table, entry)
    return kept


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
    for rank, d in enumerate(candidates, start=1):
        d["rank"] = rank
    kept = _fill(candidates, plans, budget)
    spent_bytes = sum(int(e.get("bytes") or 0) for entries in kept.values() for e in entries)
    for d in candidates:
        plan = plans[d["table"]]
        if not kept[d["table"]]:
            d["reason"] = "budget"
            d["skipped_runs"] = d["skipped_runs_before"] + 1
            left = None if budget.max_bytes is None else budget.max_bytes - spent_bytes
            d["detail"] = (
                "degraded; its smallest partition's rewrite does not fit what the budget left"
                + (f" ({left:,} bytes)" if left is not None else "")
                + f"; skipped {d['skipped_runs']} run(s) in a row"
            )
            continue
        chosen = subplan(plan, kept[d["table"]])
        d["trimmed"] = len(chosen["partitions"]) < len(plan["partitions"])
        d["reason"] = "chosen"
        d["plan"] = chosen
        d["chosen_bytes"] = int(chosen["bytes"])
        d["chosen_gain"] = round(plan_gain(chosen) * d["read_weight"], 4)
        d["est_seconds"] = round(budget.seconds(d["chosen_bytes"]), 1)
        d["partitions"] = [e["partition"] for e in chosen["partitions"] if e["partition"] is not None]
        d["detail"] = ("starved: served before the ranking; " if d["starved"] else "") + (
            f"trimmed to {len(chosen['partitions'])} of {len(plan['partitions'])} partitions" if d["trimmed"] else ""
        )
    order = {"chosen": 0, "budget": 1, "hold": 2, "error": 3, "healthy": 4}
    rows.sort(key=lambda d: (order[d["reason"]], d["rank"] or 0, d["table"]))
    return FleetPlan(
        run_id=run_id or now.strftime("%Y%m%dT%H%M%SZ"),
        planned_at=now.isoformat(),
        budget=budget,
        starvation_runs=starvation_runs,
        decisions=rows,
    )
