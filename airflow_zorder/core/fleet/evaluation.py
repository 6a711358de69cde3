"""Evaluate a fleet's tables several at a time: threads (the reads wait on storage), in as many forked processes as
the worker has cores when asked (the sensor's rules and plans are CPU-bound Python: one interpreter is one core). A
table whose evaluation fails is an ``error`` evaluation, never the fleet's end."""

from __future__ import annotations

import multiprocessing
import os
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any

from airflow_zorder.core.fleet.selection import TableEvaluation
from airflow_zorder.core.fleet.spec import FleetTable

__all__ = ["DEFAULT_WORKERS", "MIN_TABLES_PER_PROCESS", "cores", "evaluate_fleet"]

DEFAULT_WORKERS = 8
MIN_TABLES_PER_PROCESS = 16  # fewer: a fork costs more than it saves
START_TIMEOUT_S = 60.0  # the forked processes wait this long for each other before a share starts

Evaluator = Callable[[FleetTable], Mapping[str, Any]]

_FORKED: tuple[Evaluator, Sequence[FleetTable], int, int, Any] | None = None  # what the forked processes evaluate


def cores() -> int:
    """The CPUs this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def _one(evaluate: Evaluator, table: FleetTable) -> TableEvaluation:
    start = time.perf_counter()
    try:
        payload = evaluate(table)
    except Exception as exc:  # noqa: BLE001 - recorded with its reason; the other tables go on
        return TableEvaluation(table, error=f"{type(exc).__name__}: {exc}", seconds=time.perf_counter() - start)
    return TableEvaluation(table, payload=payload, seconds=time.perf_counter() - start)


def _threaded(tables: Sequence[FleetTable], evaluate: Evaluator, max_workers: int) -> list[TableEvaluation]:
    if max_workers <= 1 or len(tables) <= 1:
        return [_one(evaluate, t) for t in tables]
    with ThreadPoolExecutor(max_workers=min(max_workers, len(tables)), thread_name_prefix="zorder-fleet") as pool:
        return list(pool.map(lambda t: _one(evaluate, t), tables))


def _forked_share(index: int) -> list[TableEvaluation]:
    """In a forked process: every ``step``-th table from ``index`` (the evaluator is inherited, never pickled). The
    shares start together at a barrier, so a process waiting there takes no second share: one share per process."""
    assert _FORKED is not None
    evaluate, tables, threads, step, started = _FORKED
    started.wait(START_TIMEOUT_S)
    return _threaded(tables[index::step], evaluate, threads)


def evaluate_fleet(
    tables: Sequence[FleetTable], evaluate: Evaluator, max_workers: int = DEFAULT_WORKERS, processes: int = 1
) -> list[TableEvaluation]:
    """Each table's evaluation (``evaluate(table)``: the sensor's payload with its plan), in the tables' order:
    ``max_workers`` threads in all, over ``processes`` forked processes (where ``fork`` exists and each gets at least
    ``MIN_TABLES_PER_PROCESS`` tables; else threads only), one share of the tables each. A process pool that breaks,
    or whose processes do not all start, falls back to threads."""
    global _FORKED
    processes = min(processes, len(tables) // MIN_TABLES_PER_PROCESS)
    if processes <= 1 or "fork" not in multiprocessing.get_all_start_methods():
        return _threaded(tables, evaluate, max_workers)
    fork = multiprocessing.get_context("fork")
    _FORKED = (evaluate, list(tables), max(1, max_workers // processes), processes, fork.Barrier(processes))
    try:
        with ProcessPoolExecutor(processes, mp_context=fork) as pool:
            shares = list(pool.map(_forked_share, range(processes)))
    except (BrokenProcessPool, threading.BrokenBarrierError):
        return _threaded(tables, evaluate, max_workers)
    finally:
        _FORKED = None
    out: list[TableEvaluation] = [None] * len(tables)  # type: ignore[list-item]
    for index, share in enumerate(shares):
        out[index::processes] = share
    return out
