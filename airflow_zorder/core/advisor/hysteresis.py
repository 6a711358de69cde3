"""Columns that do not flap: a recommendation replaces the columns in use only when it saves enough more.

A workload drifts a little from run to run, and two column sets can be nearly as good; switching between them
costs a full rewrite each time for nothing. So the columns in use are kept unless the recommended set reads at
least ``margin`` fewer files than they would (both estimated on the same workload and statistics).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from airflow_zorder.core.advisor.recommend import Recommendation
from airflow_zorder.core.errors import InvalidInputError

__all__ = ["DEFAULT_MARGIN", "Choice", "choose_columns"]

_FIELDS = {f.name for f in dataclasses.fields(Recommendation)}
DEFAULT_MARGIN = 0.1  # switch when the recommendation reads at least 10% fewer files than the columns in use


@dataclass(frozen=True)
class Choice:
    """The columns to use, whether they changed, and why (a line for logs and the payload)."""

    columns: list[str]
    changed: bool
    reason: str


def choose_columns(
    rec: Recommendation | Mapping[str, Any], current: Sequence[str] | None, margin: float = DEFAULT_MARGIN
) -> Choice:
    """The recommendation's columns, or ``current`` when they are as good within ``margin`` (``rec`` made with
    ``current=...``, so that both are estimated alike; the object or its :meth:`~Recommendation.to_dict`)."""
    if not 0 <= margin < 1:
        raise InvalidInputError(f"the auto columns' margin must be in [0, 1), not {margin!r}")
    if isinstance(rec, Mapping):
        rec = Recommendation(**{k: v for k, v in rec.items() if k in _FIELDS})
    current = list(current or [])
    if not rec.columns:
        why = "no query of the workload filters a column of the table"
        return Choice(current, False, why + (f": keeping {', '.join(current)}" if current else ""))
    if not current:
        return Choice(rec.columns, True, f"{', '.join(rec.columns)}: chosen from the workload")
    if rec.columns == current:
        return Choice(current, False, f"{', '.join(current)}: still the workload's best")
    now = rec.current_files_after
    if now is None or rec.files_after <= now * (1 - margin):
        return Choice(
            rec.columns,
            True,
            f"{', '.join(rec.columns)} replace {', '.join(current)}: {rec.files_after:.1f} files a query instead "
            f"of {now if now is not None else float('nan'):.1f} (more than the {margin:.0%} margin)",
        )
    return Choice(
        current,
        False,
        f"{', '.join(current)} kept: {', '.join(rec.columns)} would read {rec.files_after:.1f} files a query "
        f"instead of {now:.1f}, within the {margin:.0%} margin",
    )
