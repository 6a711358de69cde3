"""A workload: the statements run against a table, each with its engine's SQL dialect and where it was read.

Sources: a ``.sql`` file or a directory of them (split into statements by sqlglot), and the readers of
:mod:`~airflow_zorder.core.advisor.spark_events` and :mod:`~airflow_zorder.core.advisor.query_history`;
:func:`read_workload` picks one from a path's shape.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlglot.dialects.dialect import Dialect
from sqlglot.errors import SqlglotError
from sqlglot.tokens import TokenType

from airflow_zorder.core.errors import InvalidInputError

__all__ = ["ENGINES", "Statement", "dialect_of", "read_sql", "read_workload", "split_statements"]

#: engine name -> sqlglot dialect name (the engines whose histories the advisor reads, and plain SQL)
ENGINES = {"spark": "spark", "trino": "trino", "athena": "athena", "presto": "presto", "duckdb": "duckdb", "sql": ""}


@dataclass(frozen=True)
class Statement:
    """One statement of a workload: its SQL (or, from a Spark plan, its pushed filters), engine and origin."""

    sql: str
    engine: str = "sql"
    source: str = ""  # where it was read: a file, an event log, a query id
    extra: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)


def dialect_of(engine: str) -> Dialect:
    """The sqlglot dialect of an engine of :data:`ENGINES`."""
    try:
        return Dialect.get_or_raise(ENGINES[engine.lower()] or None)
    except KeyError:
        raise InvalidInputError(f"unknown SQL engine {engine!r}: use one of {', '.join(ENGINES)}") from None


def split_statements(text: str, engine: str = "sql") -> list[str]:
    """``text`` cut into statements at its top-level semicolons, by sqlglot's tokenizer (so a ``;`` inside a
    string or a comment does not cut); a text the tokenizer refuses is one statement (the parser reports it)."""
    try:
        tokens = dialect_of(engine).tokenize(text)
    except SqlglotError:
        return [text.strip()] if text.strip() else []
    out, start = [], 0
    for tok in tokens:
        if tok.token_type == TokenType.SEMICOLON:
            out.append(text[start : tok.start].strip())
            start = tok.end + 1
    out.append(text[start:].strip())
    return [s for s in out if s]


def read_sql(path: str | os.PathLike[str], engine: str = "sql") -> Iterator[Statement]:
    """The statements of a ``.sql`` file, or of every ``*.sql`` file under a directory (sorted by path)."""
    root = Path(path)
    if not root.exists():
        raise InvalidInputError(f"no SQL workload at {str(root)!r}: give a .sql file or a directory of them")
    files = sorted(p for p in root.rglob("*.sql") if p.is_file()) if root.is_dir() else [root]
    for f in files:
        for i, sql in enumerate(split_statements(f.read_text(errors="replace"), engine)):
            yield Statement(sql, engine, f"{f}#{i + 1}")


def read_workload(path: str | os.PathLike[str], engine: str | None = None) -> Iterator[Statement]:
    """Statements from ``path`` by its shape: a Spark event log (a file or directory of JSON lines with
    ``SparkListener`` events), a Trino or Athena history export (``.json``/``.jsonl``/``.csv``), or SQL files."""
    from airflow_zorder.core.advisor import query_history, spark_events

    p = Path(path)
    if not p.exists():
        raise InvalidInputError(f"no workload at {str(p)!r}: give SQL files, a Spark event log or a history export")
    if spark_events.is_event_log(p):
        return spark_events.read_event_log(p)
    if p.is_file() and p.suffix.lower() in (".json", ".jsonl", ".csv"):
        return query_history.read_history(p, engine or "trino")
    return read_sql(p, engine or "sql")
