"""What every spark-submit entry point shares: its SparkSession and how it reports its JSON result."""

from __future__ import annotations

import json
import os
import re
import traceback
from collections.abc import Callable
from typing import Any

from airflow_zorder.core.errors import EXIT_FAILED, InvalidInputError, ZorderError, describe
from airflow_zorder.core.storage import locations
from airflow_zorder.core.storage.io.paths import scheme_of


def build_session(app_name: str):
    """The job's SparkSession; master and resources come from spark-submit (ZORDER_HIVE=1 adds Hive support).

    Executors get :data:`spark_jobs.jvm_keys.JIT_OPTION`; the driver's JVM is already running,
    so spark-submit must pass it there (the operators do) for local mode.
    """
    from pyspark import SparkConf
    from pyspark.sql import SparkSession

    from airflow_zorder.core.jobs.jvm_options import with_jit_option

    builder = SparkSession.builder.appName(app_name)
    # executors start after this: let them JIT-compile the (large) generated key code
    executor_opts = SparkConf().get("spark.executor.extraJavaOptions", "")
    builder = builder.config("spark.executor.extraJavaOptions", with_jit_option(executor_opts))
    if os.environ.get("ZORDER_HIVE", "") == "1":
        builder = builder.enableHiveSupport()
    return builder.getOrCreate()


#: Hadoop's S3 connector (hadoop-aws), which serves ``s3://`` too where nothing else is bound to that scheme
def emit_result(result: dict[str, Any], result_path: str | None, spark: Any = None, in_store: bool = False) -> None:
    """Print the result as JSON and, when asked, write it to ``result_path`` (the operators' XCom source).

    A URI, or the run's place in the stats store (``in_store``: ``<stats location>/results/<run id>.json``, where
    a driver on the cluster leaves its result), is written as the jobs write the stats store (``filesystem_for``
    with the session: pyarrow for local paths, else the cluster's Hadoop filesystems, so a plain path resolves as
    the table's does).
    Any other plain path is on the driver's own disk: the operators pass a temp file of the worker in client mode.
    """
    text = json.dumps(result, indent=2, default=str)
    print(text)
    if not result_path:
        return
    scheme = scheme_of(result_path)
    if (scheme or in_store) and spark is not None:
        from airflow_zorder.core.storage.io import filesystem_for

        filesystem_for(result_path, spark).write_atomic(result_path, text)
        return
    if scheme not in ("", "file"):
        raise InvalidInputError(
            f"--result-json {result_path!r} is not a local path, and there is no SparkSession to write it"
        )
    path = locations.parse_location(result_path).local_path()
    os.makedirs(os.path.dirname(os.path.abspath(path)) or ".", exist_ok=True)
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text)


def run_job(
    app_name: str,
    table: str,
    run_id: str,
    result_path: str | None,
    work: Callable[[Any], tuple[dict[str, Any], int]],
    log: Callable[[str], None],
    stats_location: str | None = None,
) -> int:
    """Run ``work(spark)`` -> (result, exit code); any failure becomes a failure result and the error's exit code.

    A :class:`~airflow_zorder.core.errors.ZorderError` is a failure the package explains: its class gives the
    exit code, ``error_type`` and ``error_category``. Anything else is unexpected: exit 1, category ``unexpected``,
    and its traceback printed. The result JSON is written either way (the operators read it; failing to write it
    fails the run). Simulated crashes (BaseException) pass through.
    """
    spark = build_session(app_name)
    try:
        result, code = work(spark)
    except Exception as exc:  # noqa: BLE001 - every failure becomes a result JSON and an exit code
        if not isinstance(exc, ZorderError):
            traceback.print_exc()
        result = failure_result(table, run_id, exc)
        log(f"FAILED: {exc}")
        code = describe(exc)[2]
    try:
        emit_result(result, result_path, spark, in_store=is_store_result(table, stats_location, run_id, result_path))
    except Exception as exc:  # noqa: BLE001 - the run is done; a result nobody can read must fail the launch
        log(f"could not write the JSON result to {result_path}: {type(exc).__name__}: {exc}")
        code = code or EXIT_FAILED
    spark.stop()
    return code


def is_store_result(table: str, stats_location: str | None, run_id: str, result_path: str | None) -> bool:
    """Whether ``result_path`` is this run's place in the table's stats store (``job_results.result_location``)."""
    from airflow_zorder.core.jobs.job_results import result_location
    from airflow_zorder.core.jobs.options import stats_location_for

    stats = stats_location_for(table, stats_location)
    if not result_path or not stats or not run_id:
        return False
    try:
        return result_path == result_location(stats, run_id)
    except ValueError:
        return False


def failure_result(table: str, run_id: str, exc: BaseException) -> dict[str, Any]:
    """The JSON result of a failed run: what failed and why, in the message the user should read.

    ``error_type``: the error's class (``docs/troubleshooting.md`` is keyed on it); ``error_category``: its
    category in :mod:`airflow_zorder.core.errors` (``unexpected`` for anything that is not a ZorderError).
    """
    error_type, category, _ = describe(exc)
    return {
        "status": "failed",
        "table": table,
        "run_id": run_id,
        "error": str(exc).strip(),
        "error_type": error_type,
        "error_category": category,
    }


_BOILERPLATE = re.compile(
    r"\s*(SQLSTATE: \w+|Please check .*|If not, please convert .*|If necessary, consider .*)$",
    re.IGNORECASE | re.DOTALL,
)


def spark_error_text(exc: BaseException, limit: int = 600) -> str:
    """What went wrong in a failed Spark call, in one line: each distinct cause's message, outermost first.

    A Py4J error's own text starts with "An error occurred while calling o123.parquet" and a Java
    stack trace; the messages of its cause chain (Spark's error class and text, then e.g. "file:/t/x.parquet
    is not a Parquet file. Expected magic number at tail") are what names the problem.
    """
    parts: list[str] = []
    java = getattr(exc, "java_exception", None)
    depth = 0
    while java is not None and depth < 8:
        try:
            msg = str(java.getMessage() or "")
        except Exception:  # noqa: BLE001 - the JVM may be gone; fall back to the Python text
            break
        msg = " ".join(_BOILERPLATE.sub("", msg).split())
        if msg and not any(msg in p or p in msg for p in parts):
            parts.append(msg[:limit])
        try:
            java = java.getCause()
        except Exception:  # noqa: BLE001
            break
        depth += 1
    if not parts:
        lines = [ln.strip(" :") for ln in str(exc).strip().splitlines()]
        lines = [ln for ln in lines if ln and not ln.startswith(("An error occurred while calling", "at "))]
        parts = [" ".join(_BOILERPLATE.sub("", lines[0]).split())[:limit]] if lines else [type(exc).__name__]
    return "; caused by: ".join(parts)
