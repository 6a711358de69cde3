"""A batch's units (files, rows, output files, plan) and the columns the rewrite adds to their rows."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from airflow_zorder.core.layout.curve_keys import KeyPlan

UNIT_COL, KEY_COL, ROUTE_COL, HASH_COL = "__zorder_unit", "__zorder_key", "__zorder_route", "__zorder_hash"


@dataclass
class UnitWork:
    """One unit in a batch: its files, how many rows, how many output files, and (later) its plan."""

    index: int
    label: str
    paths: list[str]
    num_files: int
    rows: int = 0
    plan: KeyPlan | None = None
    # cluster on these columns only, in this curve order; the others collapsed to one range
    on: tuple[str, ...] | None = None


def file_offsets(units: Sequence[UnitWork]) -> tuple[dict[int, int], int]:
    """Global output-file index of each unit's first file, and the total number of files."""
    offsets, total = {}, 0
    for u in units:
        offsets[u.index] = total
        total += u.plan.num_files if u.plan else 0
    return offsets, total
