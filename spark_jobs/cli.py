"""What every spark-submit entry point shares: its SparkSession and how it reports its JSON result."""

from __future__ import annotations

import json
import os
import re
import traceback
from collections.abc import Callable
from typing import Any


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


def emit_result(result: dict[str, Any], result_path: str | None) -> None:
    """Print the result as JSON and, when asked, write it to ``result_path`` (the operators' XCom source)."""
    text = json.dumps(result, indent=2, default=str)
    if result_path:
        os.makedirs(os.path.dirname(os.path.abspath(result_path)) or ".", exist_ok=True)
        with open(result_path, "w", encoding="utf-8") as fh:
            fh.write(text)
    print(text)


def run_job(
    app_name: str,
    table: str,
    run_id: str,
    result_path: str | None,
    work: Callable[[Any], tuple[dict[str, Any], int]],
    expected: tuple[type[BaseException], ...],
    log: Callable[[str], None],
) -> int:
    """Run ``work(spark)`` -> (result, exit code); any failure becomes a failure result and exit 1.

    The result JSON is written either way (the operators read it); failures not among the
    ``expected`` kinds also print their traceback. Simulated crashes (BaseException) pass through.
    """
    spark = build_session(app_name)
    try:
        result, code = work(spark)
    except Exception as exc:  # noqa: BLE001 - every failure becomes a result JSON and exit code 1
        if not isinstance(exc, expected):
            traceback.print_exc()
        result = failure_result(table, run_id, exc)
        log(f"FAILED: {exc}")
        code = 1
    emit_result(result, result_path)
    spark.stop()
    return code


def failure_result(table: str, run_id: str, exc: BaseException) -> dict[str, Any]:
    """The JSON result of a failed run: what failed and why, in the message the user should read."""
    return {
        "status": "failed",
        "table": table,
        "run_id": run_id,
        "error": str(exc).strip(),
        "error_type": type(exc).__name__,
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
