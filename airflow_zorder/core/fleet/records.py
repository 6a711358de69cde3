"""The fleet's records, through the I/O seam: one JSON file per run (``<home>/runs/<time>-<run id>.json``: every table's
decision and the budget spent) and the state the next run starts from (``<home>/state.json``: each table's runs in a
row skipped for budget). The fleet page reads them."""

from __future__ import annotations

import json
import re
from typing import Any

from airflow_zorder.core.storage.io import filesystem_for
from airflow_zorder.core.storage.io.paths import join

__all__ = ["fleet_home", "load_runs", "load_state", "write_run"]


def fleet_home(base: str, name: str) -> str:
    """Where fleet ``name`` keeps its records under ``base`` (e.g. a stats home): ``<base>/_zorder_fleet/<name>``."""
    return join(base, "_zorder_fleet", name)


def load_state(home: str, filesystem: Any = None) -> dict[str, Any]:
    """The state the last run left (``{"skipped_runs": {table: n}, "run_id"}``); empty before the first run."""
    fs = filesystem_for(home, filesystem=filesystem)
    path = join(home, "state.json")
    if not fs.exists(path):
        return {"skipped_runs": {}, "run_id": None}
    return json.loads(fs.read_text(path))


def _without_files(record: dict[str, Any]) -> dict[str, Any]:
    """The record without its plans' file lists (the bins): what was rewritten is counted, not listed, so that a
    fleet's records stay small however many files its tables hold (the jobs keep their plans)."""
    decisions = []
    for d in record.get("decisions") or []:
        plan = d.get("plan")
        if plan:
            parts = [{k: v for k, v in p.items() if k != "bins"} for p in plan.get("partitions") or []]
            d = {**d, "plan": {**plan, "partitions": parts}}
        decisions.append(d)
    return {**record, "decisions": decisions}


def write_run(home: str, record: dict[str, Any], filesystem: Any = None) -> str:
    """Write a run's record (without its plans' file lists), then the state the next run starts from (each
    atomically); returns the record's path."""
    fs = filesystem_for(home, filesystem=filesystem)
    fs.mkdirs(join(home, "runs"))
    record = _without_files(record)
    path = join(home, "runs", _file_name(record))
    fs.write_atomic(path, json.dumps(record, indent=1, sort_keys=True, default=str))
    skipped = {d["table"]: d["skipped_runs"] for d in record.get("decisions") or [] if d.get("skipped_runs")}
    fs.write_atomic(join(home, "state.json"), json.dumps({"run_id": record["run_id"], "skipped_runs": skipped}))
    return path


def _file_name(record: dict[str, Any]) -> str:
    """``<planned at>-<run id>.json``, characters a store might mind replaced: names sort in time order."""
    stamp = re.sub(r"[^0-9]", "", str(record.get("planned_at") or ""))[:20]
    return f"{stamp}-{re.sub(r'[^A-Za-z0-9._-]', '_', str(record['run_id']))}.json"


def load_runs(home: str, limit: int | None = None, filesystem: Any = None) -> list[dict[str, Any]]:
    """The run records, oldest first (the newest ``limit`` when given); none before the first run."""
    fs = filesystem_for(home, filesystem=filesystem)
    runs_dir = join(home, "runs")
    if not fs.exists(runs_dir):
        return []
    paths = sorted(f.path for f in fs.list_files(runs_dir, recursive=False) if f.path.endswith(".json"))
    if limit is not None:
        paths = paths[-limit:]
    return [json.loads(fs.read_text(p)) for p in paths]
