"""Which columns the policy judges, and the ``d`` of the ideal ``N ** (1 - 1/d)`` they are judged against.

The columns asked for (checked against the columns with statistics), else the last re-clustering's, else every
column with statistics; ``d`` is the number of columns the table was last clustered on when the judged columns are
among them, else the number of judged columns.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from airflow_zorder.core.errors import InvalidInputError
from airflow_zorder.core.names import parse_names
from airflow_zorder.core.policy.events import Events, last_cluster_event

__all__ = ["ColumnChoice", "available_columns", "choose_columns", "default_columns", "parse_columns"]


@dataclass(frozen=True)
class ColumnChoice:
    """The judged columns, where they came from, the ``d`` of the ideal, and notes for the reasons."""

    columns: list[str]
    source: str  # "argument" | "last_cluster_event" | "all_columns"
    num_clustering_columns: int
    notes: list[str] = field(default_factory=list)


def available_columns(snapshot: pa.Table) -> list[str]:
    """The columns with statistics in ``snapshot`` (its ``column_name`` values), sorted."""
    if snapshot.num_rows == 0:
        return []
    return sorted(c for c in pc.unique(snapshot["column_name"]).to_pylist() if c is not None)


def default_columns(snapshot_columns: Sequence[str], events: Events) -> tuple[list[str], str]:
    """``(columns, source)``: the last clustering's columns that have stats, else every column with stats."""
    last = last_cluster_event(events)
    have = set(snapshot_columns)
    if last and last.get("columns"):
        cols = [c for c in last["columns"] if c in have]
        if cols:
            return cols, "last_cluster_event"
    return sorted(have), "all_columns"


def parse_columns(columns: Sequence[str] | str | None) -> list[str] | None:
    """Columns as a list: a sequence, a comma-separated string or a JSON list (templated values); None stays None.

    The jobs' one name parser (:func:`airflow_zorder.core.names.parse_names`); no names give None.
    """
    return parse_names(columns, "columns") or None


def choose_columns(
    available: Sequence[str],
    columns: Sequence[str] | str | None,
    events: Events,
    *,
    last_cluster: Mapping[str, Any] | None,
    table: str = "",
    num_clustering_columns: int | None = None,
) -> ColumnChoice:
    """The columns to judge among ``available`` (see the module doc); unknown requested columns raise
    InvalidInputError."""
    requested = parse_columns(columns)
    cluster_cols = [str(c) for c in (last_cluster or {}).get("columns") or []]
    notes: list[str] = []
    if requested is not None:
        unknown = [c for c in requested if c not in available]
        if unknown:
            where = f" of {table}" if table else ""
            raise InvalidInputError(
                f"unknown column(s) {unknown}: the statistics{where} have {available or 'no columns'}"
                + (" (collect stats for them first)" if available else "")
            )
        cols, source = list(dict.fromkeys(requested)), "argument"
    else:
        cols, source = default_columns(available, events)
        missing = [c for c in cluster_cols if c not in available]
        if missing and source == "last_cluster_event":
            notes.append(f"columns of the last re-clustering without statistics (not evaluated): {missing}")
    if num_clustering_columns is not None:
        d = int(num_clustering_columns)
    elif cluster_cols and set(cols) <= set(cluster_cols):
        d = len(cluster_cols)
    else:
        d = max(len(cols), 1)
    return ColumnChoice(cols, source, d, notes)
