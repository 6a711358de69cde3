"""The incremental plan a clustering run is given: read and checked once per process, written where the job reads it.

The operator (or ``spark_job_spec``) reads the sensor's plan, checks it (:func:`read_plan`, :func:`check_plan_for`)
and writes it to ``<stats location>/plans/<run id>.json`` (:func:`write_plan`); the job's driver reads that file
and applies the same two checks.  Airflow-free; the plan format's checks (``core.policy.incremental_stats``) are
imported when a plan is given.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from airflow_zorder.core.errors import InvalidInputError
from airflow_zorder.core.jobs.job_results import PLANS_DIR
from airflow_zorder.core.jobs.option_spec import is_unset_text
from airflow_zorder.core.jobs.options import stats_location_for
from airflow_zorder.core.storage.io import filesystem_for
from airflow_zorder.core.storage.io.paths import join

__all__ = ["check_plan_for", "plan_file_size", "plan_location", "read_plan", "write_plan"]


def read_plan(value: Any, where: str = "plan") -> dict[str, Any] | None:
    """The plan document from a dict (an XComArg, native rendering) or its JSON text (``| tojson``, a plan file),
    checked (``incremental_stats.check_plan``); None, "", "None" and "null" mean no plan."""
    from airflow_zorder.core.policy.incremental_stats import check_plan

    if isinstance(value, str):
        if is_unset_text(value):
            return None
        text = value.strip()
        try:
            value = json.loads(text)
        except ValueError as exc:
            raise InvalidInputError(
                f"{where}: cannot read {text[:80]!r} as JSON ({exc}); pass the sensor's XCom 'plan'"
            ) from None
    if value is None:
        return None
    try:
        return check_plan(value)
    except ValueError as exc:
        raise InvalidInputError(f"{where}: {exc}") from None


def plan_file_size(doc: Mapping[str, Any]) -> int | None:
    """The output file size a plan was made for (the sensor's ``target_file_size``; a plan written before it was
    named so says ``target_file_bytes``); None when the document does not say."""
    made = doc.get("params") or {}
    value = made.get("target_file_size", made.get("target_file_bytes"))
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def check_plan_for(doc: Mapping[str, Any], columns: Sequence[str] | None, target_file_size: int | None) -> None:
    """Refuse a plan made for other clustering columns (in order, case aside; None: not known yet) or another file
    size than ``target_file_size`` (None: the plan's): its bins carry their output file counts."""
    from airflow_zorder.core.policy.incremental_stats import made_for

    if columns is not None and not made_for(doc, columns):
        raise InvalidInputError(
            f"the incremental plan was made for columns {list(doc.get('columns') or [])}, but this run "
            f"clusters {list(columns)}: give the sensor the same columns, or leave plan unset to let the job plan"
        )
    planned = plan_file_size(doc)
    if target_file_size is not None and planned is not None and planned != target_file_size:
        raise InvalidInputError(
            f"target_file_size (--target-file-size) is {target_file_size} bytes, but the given plan sized its files "
            f"for {planned} bytes (the sensor's target_file_size): give the sensor the same size, or leave "
            "target_file_size unset to run the plan as it was made"
        )


def plan_location(table: str, stats_location: str | None, run_id: str) -> str:
    """Where run ``run_id``'s plan is written for the job: ``<stats location>/plans/<run id>.json``."""
    location = stats_location_for(str(table), stats_location)
    if location is None:
        raise InvalidInputError(
            f"plan: {table!r} is a catalog table, so the plan file has no default place: pass "
            "stats_location= (the sensor's), where the plan is written for the job to read"
        )
    return join(location, PLANS_DIR, f"{run_id}.json")


def write_plan(doc: Mapping[str, Any], stats_location: str, run_id: str, filesystem: Any = None) -> str:
    """Write a plan to ``<stats_location>/plans/<run id>.json`` (``filesystem`` as ``filesystem_for`` takes it;
    None: the store's default credentials); returns that location."""
    fs = filesystem_for(stats_location, filesystem=filesystem)
    fs.mkdirs(join(stats_location, PLANS_DIR))
    fs.write_atomic(join(stats_location, PLANS_DIR, f"{run_id}.json"), json.dumps(doc, separators=(",", ":")))
    return join(stats_location, PLANS_DIR, f"{run_id}.json")
