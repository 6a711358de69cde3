"""Evaluate a fleet's tables several at a time (threads: the reads wait on storage, not on the CPU); a table whose
evaluation fails is an ``error`` evaluation, never the fleet's end."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from airflow_zorder.core.fleet.selection import TableEvaluation
from airflow_zorder.core.fleet.spec import FleetTable

__all__ = ["DEFAULT_WORKERS", "evaluate_fleet"]

DEFAULT_WORKERS = 8

Evaluator = Callable[[FleetTable], Mapping[str, Any]]


def _one(evaluate: Evaluator, table: FleetTable) -> TableEvaluation:
    start = time.perf_counter()
    try:
        payload = evaluate(table)
    except Exception as exc:  # noqa: BLE001 - recorded with its reason; the other tables go on
        return TableEvaluation(table, error=f"{type(exc).__name__}: {exc}", seconds=time.perf_counter() - start)
    return TableEvaluation(table, payload=payload, seconds=time.perf_counter() - start)


def evaluate_fleet(
    tables: Sequence[FleetTable], evaluate: Evaluator, max_workers: int = DEFAULT_WORKERS
) -> list[TableEvaluation]:
    """Each table's evaluation (``evaluate(table)``: the sensor's payload with its plan), in the tables' order."""
    if max_workers <= 1 or len(tables) <= 1:
        return [_one(evaluate, t) for t in tables]
    with ThreadPoolExecutor(max_workers=min(max_workers, len(tables)), thread_name_prefix="zorder-fleet") as pool:
        return list(pool.map(lambda t: _one(evaluate, t), tables))
