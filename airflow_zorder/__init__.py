"""airflow-zorder: keep Parquet tables clustered along space-filling curves, from Airflow.

The ``core`` subpackage is Airflow-free and is what the Spark jobs import; hooks,
operators, sensors and triggers (Airflow) build on top of it.  :func:`spark_job_spec`
(Airflow-free) describes a job for any Spark launcher; it is imported on first use,
so ``import airflow_zorder`` stays light.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from airflow_zorder.version import __version__

__all__ = ["__version__", "spark_job_spec"]

if TYPE_CHECKING:
    from airflow_zorder.job_spec import spark_job_spec


def __getattr__(name: str) -> Any:
    """``airflow_zorder.spark_job_spec``, imported on first use."""
    if name == "spark_job_spec":
        from airflow_zorder.job_spec import spark_job_spec

        return spark_job_spec
    raise AttributeError(f"module 'airflow_zorder' has no attribute {name!r}")
