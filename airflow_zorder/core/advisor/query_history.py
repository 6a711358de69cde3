"""Query histories as workloads: Trino's ``system.runtime.queries`` and Athena's query executions.

Trino keeps its recent queries in ``system.runtime.queries`` (``query_id``, ``state``, ``query``, ...); this reads
them from an export of that table (``SELECT * FROM system.runtime.queries`` saved as JSON, JSON lines or CSV, e.g.
by the Trino CLI's ``--output-format JSON|CSV_HEADER``), not from a live server. Athena's are read through its API
(``list_query_executions`` + ``batch_get_query_execution``, :class:`~airflow_zorder.hooks.athena_history.
AthenaQueryHistoryHook`) or from that API's JSON (``{"QueryExecutions": [...]}``). Only queries that finished are
workload: a failed query read nothing.
"""

from __future__ import annotations

import csv
import json
import os
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from airflow_zorder.core.advisor.workload import Statement
from airflow_zorder.core.errors import InvalidInputError

__all__ = ["athena_statements", "read_history", "trino_statements"]

TRINO_DONE = {"FINISHED"}
ATHENA_DONE = {"SUCCEEDED"}


def trino_statements(rows: Iterable[Mapping[str, Any]], source: str = "trino") -> Iterator[Statement]:
    """Statements of ``system.runtime.queries`` rows (``query`` and ``state``; rows without a state count)."""
    for row in rows:
        text, state = row.get("query"), row.get("state")
        if text and (state is None or str(state).upper() in TRINO_DONE):
            yield Statement(str(text), "trino", f"{source}:{row.get('query_id', '')}")


def athena_statements(executions: Iterable[Mapping[str, Any]]) -> Iterator[Statement]:
    """Statements of Athena ``QueryExecution`` records that succeeded (DML: queries, not DDL or utility)."""
    for ex in executions:
        state = (ex.get("Status") or {}).get("State")
        if ex.get("Query") and state in ATHENA_DONE and ex.get("StatementType", "DML") == "DML":
            context = ex.get("QueryExecutionContext") or {}
            yield Statement(
                ex["Query"], "athena", f"athena:{ex.get('QueryExecutionId', '')}", {"database": context.get("Database")}
            )


def read_history(path: str | os.PathLike[str], engine: str = "trino") -> Iterator[Statement]:
    """Statements from an exported history: Athena's API JSON (``QueryExecutions``), or Trino's
    ``system.runtime.queries`` rows as a JSON array, JSON lines or CSV with a header."""
    p = Path(path)
    text = p.read_text(errors="replace")
    if p.suffix.lower() == ".csv":
        return trino_statements(csv.DictReader(text.splitlines()), str(p))
    try:
        data: Any = json.loads(text)
    except json.JSONDecodeError:
        try:
            data = [json.loads(line) for line in text.splitlines() if line.strip()]
        except json.JSONDecodeError as exc:
            raise InvalidInputError(
                f"{p} is neither JSON nor JSON lines ({exc}): export the history as either"
            ) from None
    if isinstance(data, dict) and "QueryExecutions" in data:
        return athena_statements(data["QueryExecutions"])
    rows = data if isinstance(data, list) else [data]
    if engine == "athena":
        return athena_statements(rows)
    return trino_statements(rows, str(p))
