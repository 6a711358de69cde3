"""Where a job run's JSON result is kept in the stats store, and reading it back.

A job launched outside Airflow (Kubernetes, EMR Serverless, Dataproc, Databricks, YARN cluster mode) writes its
result with ``--result-json <stats location>/results/<run id>.json`` (``spark_jobs/cli.py``); the operators and
``SparkJobResultSensor`` read it from there with :func:`read_result`.  Airflow-free; pyarrow only when reading.
"""

from __future__ import annotations

import json
import time
from typing import Any

from airflow_zorder.core.errors import InvalidInputError
from airflow_zorder.core.jobs.run_ids import run_started
from airflow_zorder.core.storage.io import FileSystem, filesystem_for
from airflow_zorder.core.storage.io.paths import join

__all__ = [
    "PLANS_DIR",
    "RESULTS_DIR",
    "RUN_FILE_DIRS",
    "prune_run_files",
    "read_result",
    "result_location",
]

RESULTS_DIR = "results"  # <stats location>/results/<run id>.json
PLANS_DIR = "plans"  # <stats location>/plans/<run id>.json: the plan a run was given, where its driver reads it
RUN_FILE_DIRS = (RESULTS_DIR, PLANS_DIR)  # the stats store's per-run files


def _result_name(run_id: str) -> str:
    """``<run id>.json``; refuses a run id that is empty or would name another directory."""
    run = str(run_id or "").strip()
    if not run or "/" in run or "\\" in run or run in (".", ".."):
        raise InvalidInputError(
            f"run_id {run_id!r} cannot name a result file: pass the run id the job was given (--run-id)"
        )
    return f"{run}.json"


def result_location(stats_location: str, run_id: str) -> str:
    """Where run ``run_id`` writes its JSON result: ``<stats location>/results/<run id>.json``."""
    if not str(stats_location or "").strip():
        raise InvalidInputError("stats_location is empty: the run's result is kept in the table's stats store")
    return join(str(stats_location).strip(), RESULTS_DIR, _result_name(run_id))


def read_result(stats_location: str, run_id: str, filesystem: Any | None = None) -> dict[str, Any] | None:
    """The JSON result run ``run_id`` wrote to :func:`result_location`; None while it is absent.

    ``filesystem``: what ``FileStatsHook.get_conn()`` returns (passed to ``filesystem_for``); None opens
    the location with the store's default credentials.  A file that is not a JSON object raises ValueError naming it.
    """
    where = result_location(stats_location, run_id)
    try:
        text = filesystem_for(where, filesystem=filesystem).read_text(where)
    except FileNotFoundError:
        return None
    try:
        doc = json.loads(text)
    except ValueError as exc:
        raise ValueError(
            f"the job's result {where} is not valid JSON ({exc}); was it written by another tool?"
        ) from None
    if not isinstance(doc, dict):
        raise ValueError(f"the job's result {where} is not a JSON object but {type(doc).__name__}")
    return doc


def prune_run_files(fs: FileSystem, base: str, retention_s: float, now: float | None = None) -> list[str]:
    """Delete the results and plans of runs started more than ``retention_s`` ago; returns their paths.

    The run's start comes from its id (``run_ids.run_started``); files of run ids in another form are never touched.
    """
    now = time.time() if now is None else now
    deleted = []
    for directory in RUN_FILE_DIRS:
        for f in fs.list_files(join(base, directory), recursive=False):
            name = f.path.rstrip("/").rsplit("/", 1)[-1]
            started = run_started(name)
            if started is not None and now - started > retention_s:
                path = join(base, directory, name)
                fs.delete(path)
                deleted.append(path)
    return deleted
