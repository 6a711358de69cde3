"""From the operators' typed parameters to the jobs' options: the one conversion the operators and
``airflow_zorder.spark_job_spec`` share.

Values may be rendered template text (``"True"``, ``"None"``, a JSON plan); the parse-time checks skip values
still to be rendered (:func:`is_template`).  Airflow-free: standard library and core only (the plan checks import
``core.policy.incremental_stats`` when a plan is given).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from airflow_zorder.core.errors import InvalidInputError
from airflow_zorder.core.jobs import options
from airflow_zorder.core.jobs.file_sizing import parse_size
from airflow_zorder.core.jobs.job_results import PLANS_DIR
from airflow_zorder.core.jobs.options import (
    CLUSTER_ACTIONS,
    CURVES,
    STATS_METHODS,
    VERIFY_MODES,
    ClusterOptions,
    CollectOptions,
    new_run_id,
    parse_names,
    stats_location_for,
)
from airflow_zorder.core.storage.io import filesystem_for
from airflow_zorder.core.storage.io.paths import join

__all__ = [
    "PLANS_DIR",
    "check_choice",
    "check_cluster_params",
    "check_collect_params",
    "check_plan_columns",
    "cluster_options",
    "collect_options",
    "given_plan",
    "is_template",
    "optional_bool",
    "optional_count",
    "optional_flag",
    "optional_ratio",
    "plan_location",
    "read_plan",
    "write_plan",
]

_UNSET = ("", "None", "null")


def is_template(value: Any) -> bool:
    """A value still to be rendered (Jinja text or an XCom/mapped argument): checked at execution instead."""
    return (isinstance(value, str) and "{{" in value) or hasattr(value, "resolve")


def check_choice(what: str, value: Any, choices: Sequence[str]) -> None:
    """Refuse a value outside ``choices`` (templates are checked once rendered)."""
    if not is_template(value):
        options.check_choice(what, value, choices)


def optional_count(what: str, value: Any) -> int | None:
    """A positive int from an int or its rendered text; None, "", "None" and "null" mean unset."""
    if value is None or is_template(value) or (isinstance(value, str) and value.strip() in _UNSET):
        return None
    try:
        n = int(value)
    except (TypeError, ValueError):
        raise InvalidInputError(f"{what} must be a positive integer, got {value!r}") from None
    if n < 1:
        raise InvalidInputError(f"{what} must be at least 1, got {n}")
    return n


def optional_bool(what: str, value: Any) -> bool:
    """A bool from a bool or its rendered text (``"True"``, ``"false"``, ``""``: False)."""
    return bool(optional_flag(what, value))


def optional_flag(what: str, value: Any) -> bool | None:
    """True, False, or None (unset: None, ``""``, ``"None"``, ``"null"``) from a bool or its rendered text."""
    if isinstance(value, bool) or value is None:
        return value
    text = str(value).strip().lower()
    if text in ("true", "1", "yes"):
        return True
    if text in ("false", "0", "no"):
        return False
    if text in ("", "none", "null"):
        return None
    raise InvalidInputError(f"{what} must be True or False, got {value!r}")


def optional_ratio(value: Any) -> float | None:
    """``target_ratio`` from a number or its rendered text; None, "" and "None" mean unset (the job's default)."""
    if value is None or str(value).strip() in _UNSET:
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        raise InvalidInputError(f"target_ratio must be a number >= 1 (1 = a perfect grid), got {value!r}") from None


def _optional_size(what: str, value: Any) -> int | None:
    """Bytes from a size (``"512MB"``, an int or its text); None, "", "None" and "null" mean unset."""
    if value is None or str(value).strip() in _UNSET:
        return None
    try:
        return parse_size(value)
    except ValueError as exc:
        raise InvalidInputError(f"{what}: {exc}") from None


def _partitions(value: Any) -> list[str] | None:
    """Partitions from a list or its rendered text; None, [], "", "None" and "null" mean all (unset)."""
    if isinstance(value, str) and value.strip() in _UNSET:
        return None
    return parse_names(value, "partitions") or None


def read_plan(value: Any) -> dict[str, Any] | None:
    """The plan document from a dict (an XComArg, native rendering) or its JSON text (``| tojson``); None, "",
    "None" and "null" mean no plan.  Checked with ``incremental_stats.check_plan``."""
    from airflow_zorder.core.policy.incremental_stats import check_plan

    if isinstance(value, str):
        text = value.strip()
        if text in _UNSET:
            return None
        try:
            value = json.loads(text)
        except ValueError as exc:
            raise InvalidInputError(
                f"plan: cannot read {text[:80]!r} as JSON ({exc}); pass the sensor's XCom 'plan'"
            ) from None
    if value is None:
        return None
    try:
        return check_plan(value)
    except ValueError as exc:
        raise InvalidInputError(f"plan: {exc}") from None


def check_plan_columns(plan: Mapping[str, Any], columns: Sequence[str]) -> None:
    """Refuse a plan made for other clustering columns (compared as the job does: in order, case aside)."""
    from airflow_zorder.core.policy.incremental_stats import made_for

    if not made_for(plan, columns):
        raise InvalidInputError(
            f"plan: the incremental plan was made for columns {list(plan.get('columns') or [])}, but this operator "
            f"clusters {list(columns)}: "
            "give the sensor the same columns, or leave plan unset to let the job plan"
        )


def given_plan(plan: Any, columns: Sequence[str], action: str = "cluster") -> dict[str, Any] | None:
    """The (rendered) ``plan``, checked (document, columns), or None (also for ``recover``/``cleanup``)."""
    if action != "cluster":
        return None
    doc = read_plan(plan)
    if doc is not None:
        check_plan_columns(doc, columns)
    return doc


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


def check_cluster_params(
    *,
    curve: Any,
    verify: Any,
    action: Any,
    num_files: Any,
    incremental: Any,
    plan: Any,
    target_file_size: Any = None,
    target_ratio: Any = None,
    max_rewrite_bytes: Any = None,
    partitions: Any = None,
    retention_hours: Any = None,
) -> None:
    """The clustering parameters' checks that need no rendering (literal values, at DAG parse time).

    The mode rules (``options.check_cluster_modes``) apply when the mode is literal (``action``, ``incremental``
    and ``plan``); a templated value counts as unset until the task renders it and ``ClusterOptions`` checks again.
    """
    for what, value, choices in (
        ("curve", curve, CURVES),
        ("verify", verify, VERIFY_MODES),
        ("action", action, CLUSTER_ACTIONS),
    ):
        check_choice(what, value, choices)
    count = optional_count("num_files", num_files)
    if any(is_template(v) for v in (action, incremental, plan)):
        return  # the mode is known once rendered: checked at execution
    flag = optional_flag("incremental", incremental)
    doc = read_plan(plan)  # a literal plan is checked at DAG parse time
    literal = {
        k: None if is_template(v) else v
        for k, v in (
            ("target_file_size", target_file_size),
            ("target_ratio", target_ratio),
            ("max_rewrite_bytes", max_rewrite_bytes),
            ("partitions", partitions),
        )
    }
    opts = ClusterOptions(
        table="-",
        columns=["-"],
        action=action,
        incremental=flag,
        plan="-" if doc is not None else None,  # where it will be written is decided at execution
        num_files=count,
        target_file_size=_optional_size("target_file_size", literal["target_file_size"]),
        target_ratio=optional_ratio(literal["target_ratio"]),
        max_rewrite_bytes=_optional_size("max_rewrite_bytes", literal["max_rewrite_bytes"]),
        partitions=_partitions(literal["partitions"]),
        retention_hours=retention_hours,
    )
    if doc is not None and action == "cluster":
        opts.check_given_plan(doc)


def check_collect_params(*, method: Any) -> None:
    """The stats parameters' checks (``method`` is not templated: checked as given)."""
    options.check_choice("method", method, STATS_METHODS)


def cluster_options(
    *,
    table: str,
    columns: list[str] | str | None = None,
    partitions: list[str] | str | None = None,
    curve: str = "zorder",
    target_file_size: str | int | None = None,
    num_files: int | str | None = None,
    num_ranges: int | None = None,
    salt_bits: int | None = None,
    verify: str | None = None,
    compression: str | None = None,
    retention_hours: float | None = None,
    lock_ttl: int | None = None,
    action: str = "cluster",
    stats_location: str | None = None,
    incremental: bool | str | None = None,
    plan: dict[str, Any] | str | None = None,
    target_ratio: float | str | None = None,
    max_rewrite_bytes: str | int | None = None,
    run_id: str | None = None,
    iceberg_catalog: str | None = None,
) -> ClusterOptions:
    """The clustering job's options from ``SparkClusterTableOperator``'s (rendered) parameters; unset ones keep
    the job's defaults, and one the run would not use is refused (``options.check_cluster_modes``).  A ``plan``
    becomes ``--plan <stats location>/plans/<run id>.json`` (write it there with :func:`write_plan`) and implies
    ``incremental``."""
    names = parse_names(columns, "columns") or []
    if not names and action == "cluster":
        raise InvalidInputError("columns: name 1 to 16 clustering columns")
    run_id = run_id or new_run_id()  # the plan file is named after the run
    doc = read_plan(plan)
    given = {
        "target_file_size": _optional_size("target_file_size", target_file_size),
        "num_files": optional_count("num_files", num_files),
        "partitions": _partitions(partitions),
        "num_ranges": num_ranges,
        "salt_bits": salt_bits,
        "verify": verify,
        "compression": compression,
        "retention_hours": retention_hours,
        "lock_ttl_s": lock_ttl,
        "stats_location": stats_location or None,
        "incremental": optional_flag("incremental", incremental),
        "plan": "-" if doc is not None else None,  # its location below, once the mode rules accepted it
        "target_ratio": optional_ratio(target_ratio),
        "max_rewrite_bytes": _optional_size("max_rewrite_bytes", max_rewrite_bytes),
        "iceberg_catalog": iceberg_catalog or None,
    }
    opts = ClusterOptions(
        table=str(table),
        columns=names,
        curve=curve,
        action=action,
        run_id=run_id,
        **{k: v for k, v in given.items() if v is not None},
    )
    if doc is not None:
        check_plan_columns(doc, names)
        opts.check_given_plan(doc)
        opts.plan = plan_location(table, stats_location, run_id)
    return opts


def collect_options(
    *,
    table: str,
    columns: list[str] | str | None = None,
    stats_location: str | None = None,
    method: str = "auto",
    stats_table: str | None = None,
    full: bool = False,
    keep_snapshots: int | None = None,
    parallelism: int | None = None,
    allow_errors: bool = False,
    run_id: str | None = None,
    iceberg_catalog: str | None = None,
) -> CollectOptions:
    """The stats job's options from ``SparkCollectFileStatsOperator``'s (rendered) parameters; unset ones keep
    the job's defaults."""
    check_collect_params(method=method)
    opts = CollectOptions(
        table=str(table),
        columns=parse_names(columns, "columns") or None,
        method=method,
        stats_location=stats_location or None,
        stats_table=stats_table or None,
        full=bool(full),
        keep_snapshots=keep_snapshots or None,
        parallelism=parallelism or None,
        allow_errors=bool(allow_errors),
        iceberg_catalog=iceberg_catalog or None,
    )
    if run_id:
        opts.run_id = run_id
    return opts
