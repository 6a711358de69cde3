"""A workload: the statements run against a table, each with its engine's SQL dialect and where it was read.

Here: a ``.sql`` file or a directory of them (split into statements by sqlglot's tokenizer); the other sources
are :mod:`~airflow_zorder.core.advisor.spark_events` and :mod:`~airflow_zorder.core.advisor.query_history`, and
:func:`~airflow_zorder.core.advisor.sources.read_workload` picks one from a path's shape.
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

__all__ = ["ENGINES", "Statement", "dialect_of", "read_sql", "split_statements"]

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
