"""Shared fixtures: one real local SparkSession per test session (JVM start costs ~10 s), and a
throw-away Airflow home with a real SQLite metadata DB (set before anything imports Airflow)."""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")

REPO = Path(__file__).resolve().parents[1]
# Never touch the user's Airflow home: every test session gets its own, with the repo's dags/.
AIRFLOW_HOME = tempfile.mkdtemp(prefix="zorder-airflow-home-")
os.environ["AIRFLOW_HOME"] = AIRFLOW_HOME
os.environ["AIRFLOW__CORE__LOAD_EXAMPLES"] = "False"
os.environ["AIRFLOW__CORE__DAGS_FOLDER"] = str(REPO / "dags")
os.environ["AIRFLOW__CORE__UNIT_TEST_MODE"] = "True"
os.environ.setdefault("AIRFLOW__LOGGING__LOGGING_LEVEL", "WARNING")


def pytest_sessionstart(session: pytest.Session) -> None:
    """Stop at once when pyspark and pyspark-client differ (a mixed pyspark/ folder fails in odd places)."""
    from airflow_zorder.spark_versions import check_pyspark_pairing

    try:
        check_pyspark_pairing()
    except RuntimeError as exc:
        raise pytest.UsageError(str(exc)) from None


@pytest.fixture(scope="session")
def airflow_db() -> str:
    """Create the real SQLite metadata DB of the session's Airflow home once; returns AIRFLOW_HOME."""
    from airflow.utils import db

    db.initdb()
    return AIRFLOW_HOME


@pytest.fixture(scope="session")
def spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    """A real local[2] SparkSession with Hive support (embedded Derby metastore) in a temp dir."""
    from pyspark.sql import SparkSession

    from airflow_zorder.core.jobs.jvm_options import JIT_OPTION

    base = tmp_path_factory.mktemp("spark")
    session = (
        SparkSession.builder.master("local[2]")
        .appName("airflow-zorder-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.sql.warehouse.dir", str(base / "warehouse"))
        .config("spark.driver.extraJavaOptions", f"-Dderby.system.home={base / 'derby'} {JIT_OPTION}")
        .config("javax.jdo.option.ConnectionURL", f"jdbc:derby:;databaseName={base / 'metastore_db'};create=true")
        .config("spark.sql.session.timeZone", "UTC")
        .enableHiveSupport()
        .getOrCreate()
    )
    yield session
    session.stop()


@pytest.fixture(scope="module")
def s3(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    """A real S3 endpoint: a local moto server checking signatures (``tests/moto_s3.py``), for one module."""
    from moto_s3 import start_moto

    server = start_moto(tmp_path_factory.mktemp("moto"))
    yield server
    server.stop()


@pytest.fixture(scope="module")
def lake(spark, s3, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """Tables in the moto bucket whose stats the real stats job collected (``moto_s3.build_lake``)."""
    from moto_s3 import build_lake

    return build_lake(spark, s3, tmp_path_factory.mktemp("lake"))
