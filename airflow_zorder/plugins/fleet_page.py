"""The fleet page's data and charts: the fleet DAGs' run records (``core.fleet.records`` under
:mod:`airflow_zorder.fleet_records`), as the last run's table of decisions and the budget and savings per run."""

from __future__ import annotations

from typing import Any

from airflow_zorder.core.stats.stats_store import as_datetime
from airflow_zorder.plugins import charts
from airflow_zorder.plugins.rendering import fmt_bytes

__all__ = ["fleet_charts", "fleet_detail", "fleets"]

RUNS_SHOWN = 60


def fleets(readable_dag_ids: set[str]) -> list[str]:
    """The fleets (their DAG ids) that recorded a run, those the user may read."""
    from airflow_zorder.fleet_records import fleet_names

    return [n for n in fleet_names() if n in readable_dag_ids]


def fleet_detail(name: str) -> dict[str, Any]:
    """The fleet's last run (every table's health, rank, reason, planned cost and gain) and each run's budget,
    spending and savings."""
    from airflow_zorder.core.fleet import records
    from airflow_zorder.fleet_records import fleet_records_home

    home = fleet_records_home(name)
    runs = records.load_runs(home, limit=RUNS_SHOWN)
    per_run = []
    for r in runs:
        t = r.get("totals") or {}
        budget = r.get("budget") or {}
        per_run.append(
            {
                "run_id": r["run_id"],
                "at": as_datetime(r.get("planned_at")),
                "budget_bytes": budget.get("max_bytes"),
                "budget_seconds": budget.get("max_spark_seconds"),
                "planned_bytes": t.get("bytes"),
                "rewritten_bytes": t.get("bytes_rewritten"),
                "available_bytes": t.get("bytes_available"),
                "gain": t.get("gain"),
                "gain_available": t.get("gain_available"),
                "by_reason": t.get("by_reason") or {},
                "failed": t.get("rewrites_failed"),
            }
        )
    last = runs[-1] if runs else None
    return {
        "name": name,
        "home": home,
        "runs": per_run,
        "last": last,
        "decisions": (last or {}).get("decisions") or [],
        "state": records.load_state(home),
    }


def fleet_charts(d: dict[str, Any]) -> dict[str, str]:
    """The budget spent per run (bytes chosen and rewritten, against the budget) and the read savings each run bought
    (files a point query reads saved, read-weighted, against what every degraded table's plan would have bought)."""
    runs = [r for r in d["runs"] if r["at"] is not None]

    def series(name: str, key: str, scale: float = 1.0) -> charts.Series:
        return charts.Series(
            name=name,
            points=[(r["at"], None if r.get(key) is None else r[key] / scale) for r in runs],
            ids=[r["run_id"] for r in runs],
        )

    mib = float(1 << 20)
    refs = []
    budgets = {r["budget_bytes"] for r in runs if r.get("budget_bytes")}
    if len(budgets) == 1:
        b = budgets.pop()
        refs.append(charts.RefLine(b / mib, f"budget {fmt_bytes(b)}"))
    spent = charts.line_chart(
        [
            series("chosen (MiB)", "planned_bytes", mib),
            series("rewritten (MiB)", "rewritten_bytes", mib),
            series("all plans (MiB)", "available_bytes", mib),
        ],
        refs=refs,
        title="Budget spent per run",
        y_label="MiB rewritten",
    )
    savings = charts.line_chart(
        [series("bought", "gain"), series("all degraded tables' plans", "gain_available")],
        title="Read savings per run",
        y_label="files read saved (weighted)",
    )
    return {"spent": spent, "savings": savings}
