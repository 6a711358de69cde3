"""Hudi's Spark side without Spark: which bundle a spark-submit gets (airflow_zorder/hudi_spark.py), and the
clustering settings the job derives from its options (spark_jobs/hudi_clustering.py)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from airflow_zorder import hudi_spark
from airflow_zorder.core.errors import InvalidInputError, JarsNotFetchedError
from airflow_zorder.core.jobs.options import ClusterOptions


def _spark_submit(root: Path, layout: str, version: str) -> Path:
    """A spark-submit laid out as pip's pyspark in a virtualenv, pyspark's own bin/, or a Spark distribution."""
    if layout == "venv":
        (root / "lib/python3.11/site-packages/pyspark").mkdir(parents=True)
        (root / "lib/python3.11/site-packages/pyspark/version.py").write_text(f'__version__: str = "{version}"\n')
    elif layout == "pyspark":
        root.mkdir(parents=True)
        (root / "version.py").write_text(f'__version__ = "{version}"\n')
    else:
        (root / "jars").mkdir(parents=True)
        (root / "jars" / f"spark-core_2.13-{version}.jar").write_bytes(b"")
    (root / "bin").mkdir(exist_ok=True)
    binary = root / "bin" / "spark-submit"
    binary.write_text("#!/bin/sh\n")
    binary.chmod(0o755)
    return binary


@pytest.mark.parametrize("layout", ["venv", "pyspark", "distribution"])
def test_the_spark_line_a_spark_submit_runs_is_read_from_its_files(tmp_path: Path, layout: str) -> None:
    assert hudi_spark.spark_version_of(str(_spark_submit(tmp_path / layout, layout, "3.5.8"))) == "3.5.8"
    assert hudi_spark.spark_version_of(str(tmp_path / "nowhere" / "spark-submit")) is None


def test_a_local_run_gets_the_bundle_of_its_line_and_that_sparks_python(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("AIRFLOW_ZORDER_JARS_DIR", str(tmp_path / "jars"))
    folder = tmp_path / "jars" / "3.5" / hudi_spark.FOLDER
    folder.mkdir(parents=True)
    (folder / "hudi-spark3.5-bundle_2.12-1.2.0.jar").write_bytes(b"")
    (folder / ".complete").write_text("fetched\n")
    binary = _spark_submit(tmp_path / "venv35", "venv", "3.5.8")
    (binary.parent / "python").write_text("")
    jars, conf = hudi_spark.submit_settings(
        "local[2]", str(binary), "a.jar", {"spark.pyspark.python": sys.executable, "spark.serializer": "mine"}
    )
    assert jars == f"a.jar,{folder / 'hudi-spark3.5-bundle_2.12-1.2.0.jar'}"
    assert conf["spark.sql.extensions"] == hudi_spark.SESSION_CONF["spark.sql.extensions"]
    assert conf["spark.serializer"] == "mine"  # the task's own conf wins
    assert conf["spark.pyspark.python"] == str(binary.parent / "python")
    # a cluster brings its bundle: only the session settings
    assert hudi_spark.submit_settings("yarn", str(binary), None, {}) == (None, hudi_spark.SESSION_CONF)


def test_a_line_without_a_bundle_or_a_missing_bundle_names_the_fix(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("AIRFLOW_ZORDER_JARS_DIR", str(tmp_path / "jars"))
    with pytest.raises(InvalidInputError, match="no pinned Hudi bundle"):
        hudi_spark.submit_settings("local[2]", str(_spark_submit(tmp_path / "s42", "venv", "4.2.0")), None, {})
    with pytest.raises(JarsNotFetchedError, match="make hudi-env"):
        hudi_spark.submit_settings("local[2]", str(_spark_submit(tmp_path / "s35", "venv", "3.5.8")), None, {})
    with pytest.raises(InvalidInputError, match="cannot tell which Spark"):
        hudi_spark.submit_settings("local", str(tmp_path / "none" / "spark-submit"), None, {})


def test_only_a_hudi_base_path_is_a_hudi_table(tmp_path: Path) -> None:
    (tmp_path / "t" / ".hoodie").mkdir(parents=True)
    assert not hudi_spark.is_hudi_table(str(tmp_path / "t"))  # no hoodie.properties: not a table (yet)
    (tmp_path / "t" / ".hoodie" / "hoodie.properties").write_text("hoodie.table.name=t\n")
    assert hudi_spark.is_hudi_table(str(tmp_path / "t"))
    assert not hudi_spark.is_hudi_table(str(tmp_path))
    assert not hudi_spark.is_hudi_table("db.table")


def test_the_clustering_settings_put_every_file_group_in_the_plan() -> None:
    from spark_jobs.hudi_clustering import ORDER_STRATEGY, UNBOUNDED, clustering_options

    opts = ClusterOptions(table="/t", columns=["a"], compression="zstd")
    got = clustering_options(opts, 128 << 20)
    assert got["hoodie.clustering.plan.strategy.target.file.max.bytes"] == str(128 << 20)
    assert int(got["hoodie.clustering.plan.strategy.small.file.limit"]) == UNBOUNDED  # healthy sizes re-clustered
    assert int(got["hoodie.clustering.plan.strategy.max.bytes.per.group"]) == UNBOUNDED  # one group a partition
    assert got["hoodie.parquet.compression.codec"] == "zstd"
    from airflow_zorder.core.jobs.options import CURVES

    assert set(ORDER_STRATEGY) == set(CURVES)  # every curve of ours has its Hudi name
