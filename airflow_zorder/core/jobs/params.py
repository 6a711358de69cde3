"""From the operators' parameters to the jobs' options: the one conversion the operators and
``airflow_zorder.spark_job_spec`` share, driven by the options' declarations (``core.jobs.options``).

Values may be rendered template text (``"True"``, ``"None"``, ``"512MB"``, a JSON plan): each is converted by its
declared kind.  At DAG parse time (:func:`check_params`) a value still to be rendered (:func:`is_template`) is
checked once the task renders it.  Airflow-free: standard library and core only.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from airflow_zorder.core.errors import InvalidInputError
from airflow_zorder.core.jobs.option_spec import ALL_RUNS, OperatorParam, is_unset_text, operator_params
from airflow_zorder.core.jobs.options import ClusterOptions
from airflow_zorder.core.jobs.plan_file import check_plan_for, plan_location, read_plan
from airflow_zorder.core.jobs.run_ids import new_run_id
from airflow_zorder.core.names import parse_names
from airflow_zorder.core.policy.file_sizing import parse_size

__all__ = ["check_params", "is_template", "job_options_from", "optional_flag", "spec_params"]

T = TypeVar("T")
#: Parameters every job takes besides its declared operator parameters (the base operator's).
COMMON = ("table", "iceberg_catalog")
#: The clustering parameters that decide the kind of run (``check_cluster_modes``).
_RUN_DECIDING = ("action", "incremental", "plan")


def is_template(value: Any) -> bool:
    """A value still to be rendered (Jinja text or an XCom/mapped argument): checked at execution instead."""
    return (isinstance(value, str) and "{{" in value) or hasattr(value, "resolve")


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


def _convert(p: OperatorParam, value: Any) -> Any:
    """One (rendered) operator value as the job's option takes it, by its declared kind; None: unset."""
    kind, name = p.spec.kind, p.name
    if kind in ("switch", "mode"):
        flag = optional_flag(name, value)
        return bool(flag) if kind == "switch" else flag
    if is_unset_text(value):
        return None
    if kind == "names":
        return parse_names(value, name) or None
    try:
        if kind == "size":
            return parse_size(value)
        if kind == "int":
            return int(value)
        if kind == "float":
            return float(value)
    except (TypeError, ValueError) as exc:
        what = {"size": "a size like 512MB", "int": "an integer", "float": "a number"}[kind]
        raise InvalidInputError(f"{name} must be {what}, got {value!r} ({exc})") from None
    return value


def spec_params(cls: type) -> list[str]:
    """The parameters :func:`job_options_from` takes for a job (its operator's, named as the operator names them)."""
    return [COMMON[0], *(p.name for p in operator_params(cls)), COMMON[1]]


def _given(cls: type, values: Mapping[str, Any], literal_only: bool) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """The options ``values`` give (field -> converted value) and the plan document, if one."""
    by_name = {p.name: p for p in operator_params(cls)}
    unknown = sorted(set(values) - set(by_name) - set(COMMON))
    if unknown:
        raise InvalidInputError(f"unknown parameter(s) {', '.join(unknown)}; expected {', '.join(spec_params(cls))}")
    run_pending = literal_only and any(is_template(values.get(n)) for n in _RUN_DECIDING)
    given: dict[str, Any] = {}
    doc = None
    for name, value in values.items():
        if name in COMMON:
            given[name] = str(value) if name == "table" else (value or None)
            continue
        p = by_name[name]
        if literal_only and (is_template(value) or (run_pending and p.spec.runs != ALL_RUNS)):
            continue  # checked once rendered (a run-dependent option: once the run's kind is known)
        if p.spec.kind == "plan":
            doc = read_plan(value)
            value = "-" if doc is not None else None  # where it is written is decided with the run id
        else:
            value = _convert(p, value)
        if value is not None:
            given[p.field] = value
    return given, doc


def check_params(cls: type, values: Mapping[str, Any]) -> None:
    """The operator's checks that need no rendering (literal values, at DAG parse time): the same options, rules
    and plan checks as :func:`job_options_from`, with every templated value left for the task to check."""
    given, doc = _given(cls, values, literal_only=True)
    given["table"] = "-"
    if cls is ClusterOptions:
        given["columns"] = ["-"]
    opts = cls(**given)
    if doc is not None and opts.action == "cluster":
        check_plan_for(doc, None, opts.target_file_size)


def job_options_from(cls: type[T], values: Mapping[str, Any], run_id: str | None = None) -> tuple[T, dict | None]:
    """The job's options from its operator's (rendered) parameters (``values``, named as the operator names them),
    and the checked plan document the run is given (None: none).  Unset ones keep the job's defaults; one the run
    would not use is refused (``options.check_cluster_modes``).  A plan becomes ``--plan <stats location>/plans/
    <run id>.json``: write the returned document there (``plan_file.write_plan``)."""
    given, doc = _given(cls, values, literal_only=False)
    opts = cls(**given, run_id=run_id or new_run_id())  # type: ignore[call-arg]
    if doc is None or getattr(opts, "action", "cluster") != "cluster":
        return opts, None
    check_plan_for(doc, opts.columns, opts.target_file_size)  # type: ignore[attr-defined]
    opts.plan = plan_location(str(values["table"]), values.get("stats_location"), opts.run_id)  # type: ignore[attr-defined]
    return opts, doc
