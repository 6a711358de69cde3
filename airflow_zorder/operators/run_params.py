"""The example DAGs' run parameters (``full``, ``num_files``, ``target_file_size``), from the clustering options'
declarations: one definition for every DAG that re-clusters with the sensor's plan."""

from __future__ import annotations

from dataclasses import fields
from typing import Any

from airflow.sdk import Param

from airflow_zorder.core.errors import InvalidInputError
from airflow_zorder.core.jobs.options import ClusterOptions
from airflow_zorder.core.policy.file_sizing import DEFAULT_TARGET_FILE_SIZE

__all__ = ["RUN_PARAMS", "run_params"]

RUN_PARAMS = ("num_files", "target_file_size", "full")  # the names run_params knows


def _minimum(name: str) -> Any:
    """The declared lower bound of a clustering option."""
    return next(f.metadata["option"].minimum for f in fields(ClusterOptions) if f.name == name)


def run_params(*names: str, **descriptions: str) -> dict[str, Param]:
    """The run parameters ``names`` (of :data:`RUN_PARAMS`, in that order in the DAG's form); ``descriptions``
    replaces one's description.  The size's description says it sizes a full rewrite too when ``full`` is one."""
    unknown = sorted(set(names) - set(RUN_PARAMS))
    if unknown:
        raise InvalidInputError(f"run_params: unknown {', '.join(unknown)}; expected some of {', '.join(RUN_PARAMS)}")
    size = "output file size target, e.g. 128MB: the sensor's incremental plan sizes its files by it"
    made = {
        "num_files": lambda: Param(
            None,
            type=["null", "integer"],
            minimum=_minimum("num_files"),
            description=descriptions.get("num_files")
            or "with full=true only: exact output files per partition, instead of target_file_size. Without full, "
            "recluster fails saying so (the incremental plan sizes files by target_file_size)",
        ),
        "target_file_size": lambda: Param(
            f"{DEFAULT_TARGET_FILE_SIZE >> 20}MB",
            type="string",
            description=descriptions.get("target_file_size")
            or size + (", and so does a full rewrite (unless num_files)" if "full" in names else ""),
        ),
        "full": lambda: Param(
            False,
            type="boolean",
            description=descriptions.get("full")
            or "rewrite every file of the degraded partitions instead of running the sensor's incremental plan "
            "(needed for num_files)",
        ),
    }
    return {name: made[name]() for name in names}
