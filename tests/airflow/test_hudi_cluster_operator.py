"""The cluster operator on a Hudi table adds Hudi's session settings, and on a local master the bundle of the Spark
line its spark-submit runs (airflow_zorder/hudi_spark.py); a Spark line without a bundle fails the task naming the
fix, before anything is submitted. No JVM: the operator's preparation only."""

from __future__ import annotations

from pathlib import Path

import pytest
from airflow.exceptions import AirflowException
from airflow.sdk import Connection

from airflow_zorder import hudi_spark
from airflow_zorder.operators import SparkClusterTableOperator

LOCAL = Connection(conn_id="spark_local", conn_type="spark", host="local[2]")


def _hudi_table(root: Path) -> str:
    (root / ".hoodie").mkdir(parents=True)
    (root / ".hoodie" / "hoodie.properties").write_text("hoodie.table.name=t\n")
    return str(root)


def _spark_submit(root: Path, version: str) -> str:
    site = root / "lib" / "python3.11" / "site-packages" / "pyspark"
    site.mkdir(parents=True)
    (site / "version.py").write_text(f'__version__: str = "{version}"\n')
    (root / "bin").mkdir()
    (root / "bin" / "spark-submit").write_text("#!/bin/sh\n")
    (root / "bin" / "spark-submit").chmod(0o755)
    return str(root / "bin" / "spark-submit")


def test_a_hudi_tables_run_gets_hudis_bundle_and_settings(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("AIRFLOW_ZORDER_JARS_DIR", str(tmp_path / "jars"))
    bundle = tmp_path / "jars" / "3.5" / hudi_spark.FOLDER
    bundle.mkdir(parents=True)
    (bundle / "hudi.jar").write_bytes(b"")
    (bundle / ".complete").write_text("fetched\n")
    table = _hudi_table(tmp_path / "t")
    op = SparkClusterTableOperator(
        task_id="c", table=table, columns=["a"], spark_binary=_spark_submit(tmp_path / "s35", "3.5.8")
    )
    op.add_hudi_session(LOCAL)
    assert op.jars == str(bundle / "hudi.jar")
    assert all(op.conf[k] == v for k, v in hudi_spark.SESSION_CONF.items())

    plain = SparkClusterTableOperator(task_id="p", table=str(tmp_path), columns=["a"], spark_binary=op._spark_binary)
    plain.add_hudi_session(LOCAL)  # not a Hudi table: nothing added
    assert not plain.jars and "spark.sql.extensions" not in (plain.conf or {})

    on42 = SparkClusterTableOperator(
        task_id="f", table=table, columns=["a"], spark_binary=_spark_submit(tmp_path / "s42", "4.2.0")
    )
    with pytest.raises(AirflowException, match="is a Hudi table.*no pinned Hudi bundle"):
        on42.add_hudi_session(LOCAL)
