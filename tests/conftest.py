"""Shared fixtures: one real local SparkSession per test session (JVM start costs ~10 s), and a
throw-away Airflow home with a real SQLite metadata DB (set before anything imports Airflow).

``make test`` runs the suite in pytest-xdist workers (scripts/test.sh): each worker is a test session of its
own (its Airflow home, metadata DB, SparkSession, moto servers and temp dirs), and a module never spans two
workers (``--dist loadfile``). The reliability suite's figures are added up here over the workers."""

from __future__ import annotations

import json
import os
import sys
import tempfile
from collections import Counter
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


# --------------------------------------------------------------------------- the order of modules in xdist workers

#: The longest modules (seconds on a 2-core machine, full suite and make test-lowest), handed out first so that
#: the workers end together (--dist loadfile --no-loadscope-reorder: a worker asks for the next module as it
#: finishes one); the others follow in their usual order.
LONGEST_FIRST = (
    "tests/integration/test_hudi_clustering.py",  # ~320 s (Spark 3.5 + Hudi: tables, a driver, a SIGKILLed run)
    "tests/reliability/test_s3_commit.py",  # ~200 s (moto through s3a; a spark-submit SIGKILLed)
    "tests/airflow/test_s3a_operators.py",  # ~90 s (two spark-submits on s3a)
    "tests/integration/test_s3a_jobs.py",  # ~90 s (moto through s3a: both jobs, five tables; the Hive metastore's first use)
    "tests/airflow/test_dags.py",  # 65 s; 88 s on Airflow 3.2.0
    "tests/integration/test_cluster_delta.py",  # 57 s
    "tests/airflow/test_azure_store.py",  # 35 s (Azurite, a stats job, dag.test, the UI app)
    "tests/airflow/test_file_overlap_sensor.py",  # 24 s; 69 s on Airflow 3.2.0
    "tests/airflow/test_standalone_cluster.py",  # 49 s
    "tests/airflow/test_delta_watch.py",  # 21 s; 51 s on Airflow 3.2.0
    "tests/ui/test_ui_browser.py",  # 39 s
    "tests/integration/test_cluster_job.py",  # 35 s
    "tests/reliability/test_kills.py",  # 31 s
    "tests/airflow/test_job_spec_submit.py",  # 30 s
    "tests/airflow/test_lineage.py",  # 27 s
    "tests/integration/test_crash_recovery.py",  # 30 s
    "tests/integration/test_jvm_keys.py",  # 25 s
)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return  # one process: the usual order
    rank = {module: i for i, module in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::")[0], len(rank)))  # stable: the rest keep their order


# --------------------------------------------------------------------------- the reliability suite's figures

#: figures sent by pytest-xdist workers (the controller runs no test, so it never imports reliability_kit)
_WORKER_FIGURES: dict = {"figures": Counter(), "by_module": {}, "soak": False, "seeds": []}


def _own_figures() -> dict | None:
    """This process's figures (tests/reliability/reliability_kit.py), or None if no reliability test ran here."""
    kit = sys.modules.get("reliability_kit")
    if kit is None or not kit.FIGURES:
        return None
    return {
        "figures": dict(kit.FIGURES),
        "by_module": {m: dict(c) for m, c in kit.BY_MODULE.items()},
        "soak": kit.SOAK,
        "seeds": kit.SEEDS,
    }


def pytest_sessionfinish(session: pytest.Session) -> None:
    workeroutput = getattr(session.config, "workeroutput", None)  # set in pytest-xdist workers only
    if workeroutput is not None and (own := _own_figures()):
        workeroutput["reliability_figures"] = json.dumps(own)


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error) -> None:  # pytest-xdist's controller: a worker finished
    sent = getattr(node, "workeroutput", {}).get("reliability_figures")
    if sent:
        got = json.loads(sent)
        _WORKER_FIGURES["figures"].update(got["figures"])
        for module, counts in got["by_module"].items():
            _WORKER_FIGURES["by_module"].setdefault(module, Counter()).update(counts)
        _WORKER_FIGURES["soak"], _WORKER_FIGURES["seeds"] = got["soak"], got["seeds"]


def pytest_terminal_summary(terminalreporter) -> None:
    """The reliability suite's totals ("reliability figures"), also as JSON to ``$ZORDER_RELIABILITY_FIGURES``."""
    data = _own_figures() or (_WORKER_FIGURES if _WORKER_FIGURES["figures"] else None)
    if data is None:
        return
    figures, soak = data["figures"], data["soak"]
    keys = ["cases", "kills", "rows_checked", "rows_lost", "rows_extra"]
    keys += sorted(k for k in figures if k not in keys)
    terminalreporter.write_sep("-", "reliability figures" + (" (soak)" if soak else ""))
    terminalreporter.write_line(", ".join(f"{k}={figures.get(k, 0)}" for k in keys))
    path = os.environ.get("ZORDER_RELIABILITY_FIGURES")
    if path:
        with open(path, "w", encoding="utf-8") as fh:
            json.dump(
                {
                    "soak": soak,
                    "seeds": data["seeds"],
                    **{k: figures.get(k, 0) for k in keys},
                    "by_module": {m: dict(c) for m, c in sorted(data["by_module"].items())},
                },
                fh,
                indent=1,
            )


# --------------------------------------------------------------------------- fixtures


@pytest.fixture
def perfect_grid_curve(monkeypatch: pytest.MonkeyPatch) -> None:
    """The incremental rule's logic apart from the curve: any file count cuts a perfect grid (``k ** (1 - 1/d)``
    files read per column) instead of the curve's measured cost (tests of that: tests/unit/test_curve_cost.py)."""
    import numpy as np

    from airflow_zorder.core.layout import curve_cost

    monkeypatch.setattr(curve_cost, "files_read", lambda curve, k, d: np.full(d, float(k) ** (1.0 - 1.0 / d)))


@pytest.fixture(scope="session")
def airflow_db() -> str:
    """Create the real SQLite metadata DB of the session's Airflow home once; returns AIRFLOW_HOME."""
    from airflow.utils import db

    db.initdb()
    return AIRFLOW_HOME


@pytest.fixture(scope="session")
def spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    """A real local[2] SparkSession with Hive support (embedded Derby metastore) in a temp dir, with the object
    stores' connector jars that ``make jars`` fetched (``s3a://`` for the S3 tests: ~0.5 s more to start)."""
    from pyspark.sql import SparkSession

    from airflow_zorder.core.jobs.jvm_options import JIT_OPTION
    from airflow_zorder.spark_jars import fetched_jars

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
        .config("spark.jars", ",".join(fetched_jars()))
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
def gcs() -> Iterator[object]:
    """A real GCS endpoint: the bundled fake-gcs-server (``tests/fake_gcs.py``), for one module."""
    from fake_gcs import start_fake_gcs

    server = start_fake_gcs()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def azurite(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    """A real Azure Blob endpoint: Azurite from npm (``tests/azurite.py``), with the container ``lake``, for one
    module; skipped where npm could not install it."""
    from azurite import azurite_binary, start_azurite

    binary = azurite_binary()
    if binary is None:
        pytest.skip("azurite-blob is not installed (scripts/bootstrap installs it into .venv/azurite with npm)")
    server = start_azurite(tmp_path_factory.mktemp("azurite"), binary)
    yield server
    server.stop()


@pytest.fixture(scope="module")
def s3a(spark, s3) -> object:
    """The shared SparkSession pointed at this module's moto server through ``s3a://`` (hadoop-aws from ``make
    jars``), with the settings an ``aws`` connection gives (``StoreOptions.hadoop``); returns the server."""
    from airflow_zorder.core.errors import JarsNotFetchedError
    from airflow_zorder.spark_jars import apply_hadoop_conf, jars_for

    try:
        jars_for(["s3a"])
    except JarsNotFetchedError as exc:
        pytest.fail(str(exc))
    apply_hadoop_conf(spark, s3.hadoop_conf())
    return s3


@pytest.fixture(scope="module")
def lake(spark, s3a, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """Tables in the moto bucket whose stats the real stats job collected and wrote through ``s3a://``
    (``moto_s3.build_lake``)."""
    from moto_s3 import build_lake

    return build_lake(spark, s3a, tmp_path_factory.mktemp("lake"))
