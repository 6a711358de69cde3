"""The SQL dialect of the project's predicates: sqlglot's default with ``"..."`` and `````...````` identifiers and
``X'..'`` bytes.

Spark and DuckDB read what :mod:`~airflow_zorder.core.skipping.predicates` writes in it, and
:mod:`~airflow_zorder.core.skipping.predicate_sql` reads it back; both sides take it from here.
"""

from __future__ import annotations

import re
from functools import lru_cache

from sqlglot import exp, tokens
from sqlglot.dialects.dialect import Dialect
from sqlglot.errors import SqlglotError

__all__ = ["DIALECT", "PredicateDialect", "quote_identifier"]


class PredicateDialect(Dialect):
    """sqlglot's default dialect, plus backquoted identifiers (Spark) and hex byte strings (``X'0aff'``)."""

    class Tokenizer(tokens.Tokenizer):
        IDENTIFIERS = ['"', "`"]
        HEX_STRINGS = [("x'", "'"), ("X'", "'")]


DIALECT = PredicateDialect()

_PLAIN_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@lru_cache(maxsize=4096)
def quote_identifier(name: str) -> str:
    """``name`` as SQL: bare when the dialect reads it back as that column (not a keyword), else double-quoted."""
    if _PLAIN_NAME.fullmatch(name):
        try:
            tree = DIALECT.parse(f"{name} = 1")
        except SqlglotError:
            tree = []
        left = tree[0].this if len(tree) == 1 and isinstance(tree[0], exp.EQ) else None
        if isinstance(left, exp.Column) and not left.table and left.name == name:
            return name
    return '"' + name.replace('"', '""') + '"'
