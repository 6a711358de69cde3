"""``spark_job_spec``: what any Spark launcher needs to run one of the two jobs, for teams whose Spark runs
elsewhere (Kubernetes, EMR Serverless, Dataproc, Databricks).

The options are the operators' own typed parameters, converted by the same code (``core.jobs.params``), so a
spec runs the job exactly as ``SparkClusterTableOperator`` / ``SparkCollectFileStatsOperator`` would.  The job
leaves its JSON result in the stats store (``core.jobs.job_results``), where ``SparkJobResultSensor`` reads it.
Airflow-free.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

from airflow_zorder import packaging
from airflow_zorder.core.errors import InvalidInputError
from airflow_zorder.core.jobs import params, plan_file
from airflow_zorder.core.jobs.job_results import result_location
from airflow_zorder.core.jobs.jvm_options import with_jit_conf
from airflow_zorder.core.jobs.option_spec import JobOptions
from airflow_zorder.core.jobs.options import ClusterOptions, CollectOptions, stats_location_for
from airflow_zorder.core.jobs.run_ids import new_run_id
from airflow_zorder.core.storage.io import filesystem_for
from airflow_zorder.core.storage.io.paths import join

__all__ = ["JOBS", "SPEC_OPTIONS", "job_option_names", "spark_job_spec"]

#: job name -> (entry script, the job's options: their declarations name the spec's options)
JOBS: dict[str, tuple[str, type[JobOptions]]] = {
    "cluster": ("cluster_table.py", ClusterOptions),
    "collect_stats": ("collect_stats.py", CollectOptions),
}
#: What the spec takes besides the job's options.
SPEC_OPTIONS: tuple[str, ...] = ("run_id", "extra_args", "conf", "artifacts", "filesystem")


def job_option_names(job: str) -> list[str]:
    """The job's options, named as its operator names them (``table``, ``columns``, ``curve``, ...)."""
    _check_job(job)
    return params.spec_params(JOBS[job][1])


def _check_job(job: str) -> None:
    if job not in JOBS:
        raise InvalidInputError(f"spark_job_spec: unknown job {job!r}; expected one of {', '.join(JOBS)}")


def copy_artifacts(prefix: str, paths: Sequence[str], filesystem: Any = None) -> list[str]:
    """Copy local files to ``<prefix>/<file name>`` through the one I/O seam (``filesystem_for``; ``filesystem``
    as it takes it, None: the store's default credentials); returns the copies' locations."""
    fs = filesystem_for(prefix, filesystem=filesystem)
    fs.mkdirs(prefix)
    out = []
    for path in paths:
        name = os.path.basename(path)
        with open(path, "rb") as fh:
            fs.write_atomic(join(prefix, name), fh.read())
        out.append(join(prefix, name))
    return out


def spark_job_spec(job: str, **options: Any) -> dict[str, Any]:
    """What a Spark launcher needs to run ``job`` (``"cluster"`` or ``"collect_stats"``) with ``options``.

    ``options``: the operator's typed parameters (``table``, ``columns``, ``curve``, ``partitions``,
    ``incremental``, ``plan``, ``stats_location``, ``method``, ...; :func:`job_option_names`), plus ``run_id``
    (default: a new one), ``extra_args`` (more job flags), ``conf`` (more Spark conf), ``artifacts`` (None: the
    local entry script and py-files zip; a prefix (URI or path): both are copied there and the spec points
    there) and ``filesystem`` (opens the stats location and ``artifacts``, as ``filesystem_for`` takes
    it; None: the store's default credentials).

    Returns ``job``, ``entry_point``, ``py_files`` (a list), ``arguments`` (with ``--run-id`` and
    ``--result-json <result_location>``), ``conf`` (with the JIT flag), ``run_id``, ``stats_location`` and
    ``result_location`` (where the job leaves its JSON result: read it with ``core.jobs.job_results.read_result``).
    A given ``plan`` is written to ``<stats location>/plans/<run id>.json`` now and passed as ``--plan``.
    """
    _check_job(job)
    names = job_option_names(job)
    unknown = sorted(set(options) - set(names) - set(SPEC_OPTIONS))
    if unknown:
        raise InvalidInputError(
            f"spark_job_spec({job!r}): unknown option(s) {', '.join(unknown)}; "
            f"valid options for {job}: {', '.join([*names, *SPEC_OPTIONS])}"
        )
    table = options.get("table")
    if not table or not str(table).strip():
        raise InvalidInputError(
            f"spark_job_spec({job!r}): table is required (a Parquet directory path/URI or db.table)"
        )
    stats_location = stats_location_for(str(table), options.get("stats_location"))
    if stats_location is None:
        raise InvalidInputError(
            f"spark_job_spec({job!r}): {table!r} is a catalog table, so its stats location (where the job leaves "
            "its result, and a plan is written) is only known to the metastore: pass stats_location="
        )
    run_id = str(options.get("run_id") or new_run_id())
    filesystem = options.get("filesystem")
    job_options = {k: v for k, v in options.items() if k in names}
    script, options_class = JOBS[job]
    opts, doc = params.job_options_from(options_class, job_options, run_id)
    if doc is not None:
        plan_file.write_plan(doc, stats_location, run_id, filesystem)
    result_at = result_location(stats_location, run_id)
    opts.result_json = result_at
    entry_point, py_files = packaging.job_script(script), [packaging.py_files_zip()]
    artifacts = options.get("artifacts")
    if artifacts is not None and str(artifacts).strip():
        entry_point, *py_files = copy_artifacts(str(artifacts).strip(), [entry_point, *py_files], filesystem)
    conf: Mapping[str, Any] = options.get("conf") or {}
    return {
        "job": job,
        "entry_point": entry_point,
        "py_files": py_files,
        "arguments": [*opts.to_args(), *(str(a) for a in options.get("extra_args") or [])],
        "conf": {str(k): str(v) for k, v in with_jit_conf(conf).items()},
        "run_id": run_id,
        "stats_location": stats_location,
        "result_location": result_at,
    }
