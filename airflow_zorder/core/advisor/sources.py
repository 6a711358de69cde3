"""Any workload by its path's shape: a Spark event log, a Trino or Athena history export, or SQL files."""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from airflow_zorder.core.advisor import query_history, spark_events
from airflow_zorder.core.advisor.workload import Statement, read_sql
from airflow_zorder.core.errors import InvalidInputError

__all__ = ["read_workload", "statements_of"]


def read_workload(path: str | os.PathLike[str], engine: str | None = None) -> Iterator[Statement]:
    """Statements from ``path`` by its shape: a Spark event log (a file or directory of JSON lines with
    ``SparkListener`` events), a Trino or Athena history export (``.json``/``.jsonl``/``.csv``), or SQL files."""
    p = Path(path)
    if not p.exists():
        raise InvalidInputError(f"no workload at {str(p)!r}: give SQL files, a Spark event log or a history export")
    if spark_events.is_event_log(p):
        return spark_events.read_event_log(p)
    if p.is_file() and p.suffix.lower() in (".json", ".jsonl", ".csv"):
        return query_history.read_history(p, engine or "trino")
    return read_sql(p, engine or "sql")


def statements_of(workload: Any, engine: str | None = None) -> list[Statement]:
    """A workload given as a path (SQL files, an event log, a history export: :func:`read_workload`), a
    :class:`~airflow_zorder.core.advisor.workload.Statement`, or a list of either (an operator's parameter)."""
    if isinstance(workload, Statement):
        return [workload]
    if isinstance(workload, (str, os.PathLike)):
        return list(read_workload(workload, engine))
    if isinstance(workload, Iterable):
        return [s for w in workload for s in statements_of(w, engine)]
    raise InvalidInputError(f"not a workload: {workload!r}; give paths of SQL files, event logs or history exports")
