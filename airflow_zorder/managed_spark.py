"""Turn a :func:`airflow_zorder.spark_job_spec` into the job definition of a managed Spark service.

One small function per service, each returning exactly what that service's Airflow operator takes, so a DAG
does not hand-copy the entry point, the py-files zip, the arguments and the conf (with the JIT flag) into four
different shapes.  Plain dicts, Airflow-free: ``docs/managed-spark.md`` shows each in a DAG, and
``tests/airflow/test_managed_spark.py`` builds the real operators from them.
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping
from typing import Any

from airflow_zorder.core.errors import InvalidInputError

__all__ = ["databricks_run", "dataproc_job", "emr_serverless_job", "spark_application"]

_SPEC_KEYS = ("entry_point", "py_files", "arguments", "conf")


def _staged(spec: Mapping[str, Any], service: str) -> None:
    """Refuse a spec that is not a spec, or whose files are on the Airflow worker's disk (no service sees them)."""
    missing = [k for k in _SPEC_KEYS if k not in spec]
    if missing:
        raise InvalidInputError(f"{service}: not a spark_job_spec(...) result (missing {', '.join(missing)})")
    local = [p for p in [spec["entry_point"], *spec["py_files"]] if "://" not in str(p)]
    if local:
        raise InvalidInputError(
            f"{service}: {', '.join(map(str, local))} is a path on the Airflow worker, which the service cannot "
            "read: build the spec with artifacts='<a URI the service reads>' (e.g. s3://bucket/zorder/jobs)"
        )


def spark_application(
    spec: Mapping[str, Any],
    *,
    image: str,
    spark_version: str = "4.1.1",
    driver: Mapping[str, Any] | None = None,
    executor: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """A spark-on-k8s ``SparkApplication`` (``sparkoperator.k8s.io/v1beta2``) for ``SparkKubernetesOperator``'s
    ``template_spec``. ``image``: Spark >= 4.1 with Python, pyarrow and numpy; stage with ``artifacts='s3a://...'``
    (the Hadoop scheme open-source Spark reads). ``driver`` / ``executor``: the pods' resources."""
    _staged(spec, "spark_application")
    return {
        "apiVersion": "sparkoperator.k8s.io/v1beta2",
        "kind": "SparkApplication",
        "spec": {
            "type": "Python",
            "pythonVersion": "3",
            "mode": "cluster",
            "image": image,
            "sparkVersion": spark_version,
            "mainApplicationFile": spec["entry_point"],
            "deps": {"pyFiles": list(spec["py_files"])},
            "arguments": list(spec["arguments"]),
            "sparkConf": dict(spec["conf"]),
            "restartPolicy": {"type": "Never"},  # a rerun is Airflow's retry, with a new run id
            "driver": dict(driver or {"cores": 1, "memory": "2g", "serviceAccount": "spark"}),
            "executor": dict(executor or {"instances": 2, "cores": 1, "memory": "2g"}),
        },
    }


def emr_serverless_job(spec: Mapping[str, Any]) -> dict[str, Any]:
    """``job_driver`` and ``configuration_overrides`` for ``EmrServerlessStartJobOperator``: the conf goes in the
    ``spark-defaults`` classification, where a value with spaces (Java options) needs no quoting."""
    _staged(spec, "emr_serverless_job")
    return {
        "job_driver": {
            "sparkSubmit": {
                "entryPoint": spec["entry_point"],
                "entryPointArguments": list(spec["arguments"]),
                "sparkSubmitParameters": f"--py-files {','.join(spec['py_files'])}",
            }
        },
        "configuration_overrides": {
            "applicationConfiguration": [{"classification": "spark-defaults", "properties": dict(spec["conf"])}]
        },
    }


def dataproc_job(spec: Mapping[str, Any], *, cluster_name: str) -> dict[str, Any]:
    """The ``job`` of ``DataprocSubmitJobOperator`` (a ``google.cloud.dataproc.v1.Job``): a ``pyspark_job`` on
    ``cluster_name``; stage with ``artifacts='gs://...'``."""
    _staged(spec, "dataproc_job")
    return {
        "placement": {"cluster_name": cluster_name},
        "pyspark_job": {
            "main_python_file_uri": spec["entry_point"],
            "python_file_uris": list(spec["py_files"]),
            "args": list(spec["arguments"]),
            "properties": dict(spec["conf"]),
        },
    }


def databricks_run(spec: Mapping[str, Any], *, new_cluster: Mapping[str, Any], node_dir: str) -> dict[str, Any]:
    """The ``json`` of ``DatabricksSubmitRunOperator``: a ``spark_python_task`` on a new cluster.

    A Python task takes no ``--py-files``, so the zip goes on ``PYTHONPATH`` (driver and executors) as the nodes
    see it: ``node_dir`` is the directory where every node sees the staged artifacts (a Unity Catalog volume,
    ``/Volumes/<catalog>/<schema>/<volume>/...``, whose storage is the ``artifacts=`` URI).  The spec's conf
    goes into the cluster's ``spark_conf`` (JVM options apply only when the JVMs start).
    """
    _staged(spec, "databricks_run")
    if not str(node_dir).startswith("/"):
        raise InvalidInputError(
            f"databricks_run: node_dir {node_dir!r} must be the absolute path where every node sees the staged "
            "artifacts, e.g. /Volumes/main/ops/zorder_jobs"
        )
    cluster = dict(new_cluster)
    env = dict(cluster.get("spark_env_vars") or {})
    zips = [posixpath.join(node_dir, posixpath.basename(p)) for p in spec["py_files"]]
    env["PYTHONPATH"] = ":".join([*zips, *([env["PYTHONPATH"]] if env.get("PYTHONPATH") else [])])
    cluster["spark_env_vars"] = env
    cluster["spark_conf"] = {**dict(cluster.get("spark_conf") or {}), **dict(spec["conf"])}
    return {
        "run_name": f"zorder-{spec.get('job', 'job')}-{spec.get('run_id', '')}".rstrip("-"),
        "new_cluster": cluster,
        "spark_python_task": {"python_file": spec["entry_point"], "parameters": list(spec["arguments"])},
    }
