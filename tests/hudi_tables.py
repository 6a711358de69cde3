"""Real Apache Hudi tables for the tests, written by Hudi's own Spark bundle under ``.venv-hudi`` (``make hudi-env``).

``.venv`` runs Spark 4.2, whose line has no Hudi bundle on this machine's Maven mirror; ``.venv-hudi`` runs pyspark
3.5.8 with ``hudi-spark3.5-bundle_2.12`` (airflow_zorder/hudi_spark.py). :func:`hudi_tables` writes every kind of
table the tests need in ONE spark-submit JVM (~1 min on 2 cores), once per test session (cached by root folder):

- ``cow_part``: copy-on-write, partitioned by ``region`` (2 partitions), several file groups each;
- ``cow_plain``: copy-on-write, unpartitioned (bulk_insert), several file groups;
- ``mor``: merge-on-read, an insert then an upsert of 500 rows (log files beside the base files);
- ``bucket``: copy-on-write with a bucket index of 4 buckets;
- ``pending``: copy-on-write, partitioned, with a clustering scheduled and never executed (a requested
  replacecommit on the timeline).

Columns: ``id`` long (record key), ``user_id`` int, ``product`` string, ``price`` double, ``day`` date, ``region``
string, ``ts`` long (ordering field); :data:`ROWS` rows. Run as a script (``spark-submit tests/hudi_tables.py OUT
[NAME ...]``) it is the writer itself. :func:`submit` runs any PySpark script the same way (the Hudi jar and
session settings added), for tests that drive Hudi's Spark side.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
HUDI_VENV = Path(os.environ.get("HUDI_VENV", REPO / ".venv-hudi"))
LINE = "3.5"
ROWS = 4000
TABLES = ("cow_part", "cow_plain", "mor", "bucket", "pending")
#: root folder -> the tables written there (one JVM per test session)
_WRITTEN: dict[Path, dict[str, Path]] = {}


def missing() -> str | None:
    """Why Hudi's Spark side cannot run here (a skip reason), or None."""
    if not (HUDI_VENV / "bin" / "spark-submit").exists():
        return f"no {HUDI_VENV} (pyspark 3.5.8 for Hudi's bundle): run `make hudi-env`"
    from airflow_zorder.core.errors import JarsNotFetchedError
    from airflow_zorder.hudi_spark import bundle_jars

    try:
        bundle_jars(LINE)
    except JarsNotFetchedError as exc:
        return str(exc)
    return None


def submit_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of a spark-submit under .venv-hudi: its pyspark, this checkout first on the path."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYSPARK_", "SPARK_HOME", "PYTHONPATH"))}
    python = str(HUDI_VENV / "bin" / "python")
    spark_home = next((HUDI_VENV / "lib").glob("python3*/site-packages/pyspark"))
    env.update(
        {
            "SPARK_HOME": str(spark_home),
            "PYSPARK_PYTHON": python,
            "PYSPARK_DRIVER_PYTHON": python,
            "PYTHONPATH": str(REPO),
            "SPARK_LOCAL_IP": "127.0.0.1",
            **(extra or {}),
        }
    )
    return env


def submit_cmd(script: Path | str, *args: str, conf: dict[str, str] | None = None) -> list[str]:
    """``spark-submit`` of ``script`` on ``local[2]`` with Hudi's bundle and session settings (+ ``conf``)."""
    from airflow_zorder.hudi_spark import submit_conf

    jars, settings = submit_conf(LINE)
    settings = {
        **settings,
        "spark.ui.enabled": "false",
        "spark.sql.shuffle.partitions": "4",
        "spark.driver.memory": "1g",
        **(conf or {}),
    }
    cmd = [str(HUDI_VENV / "bin" / "spark-submit"), "--master", "local[2]", "--jars", ",".join(jars)]
    for key, value in settings.items():
        cmd += ["--conf", f"{key}={value}"]
    return [*cmd, str(script), *args]


def submit(script: Path | str, *args: str, conf: dict[str, str] | None = None, timeout: float = 600) -> str:
    """Run ``script`` by :func:`submit_cmd` to its end; its stdout. AssertionError with the log's tail if it fails."""
    done = subprocess.run(
        submit_cmd(script, *args, conf=conf), env=submit_env(), capture_output=True, text=True, timeout=timeout
    )
    assert done.returncode == 0, f"spark-submit {script} failed ({done.returncode}):\n{done.stderr[-4000:]}"
    return done.stdout


def hudi_tables(root: Path) -> dict[str, Path]:
    """Every table of :data:`TABLES` under ``root`` (written once per test session and root): name -> path."""
    if root not in _WRITTEN:
        root.mkdir(parents=True, exist_ok=True)
        submit(Path(__file__), str(root), *TABLES)
        _WRITTEN[root] = {name: root / name for name in TABLES}
    return _WRITTEN[root]


# --------------------------------------------------------------------------- the writer (under spark-submit)


def _frame(spark: Any, rows: int) -> Any:
    from pyspark.sql import functions as F

    return (
        spark.range(0, rows)
        .withColumn("user_id", (F.col("id") * 7919 % 1000).cast("int"))
        .withColumn("product", F.concat(F.lit("p"), (F.col("id") % 97).cast("string")))
        .withColumn("price", (F.col("id") % 1000) / 10.0)
        .withColumn("day", F.expr("date_add(date'2024-01-01', cast(id % 30 as int))"))
        .withColumn("region", F.when(F.col("id") % 2 == 0, "eu").otherwise("us"))
        .withColumn("ts", F.col("id"))
    )


def _write(df: Any, path: str, mode: str = "overwrite", **options: str) -> None:
    # ~250 rows a file: Hudi estimates 1 KB a record on a table's first commit
    opts = {
        "hoodie.table.name": Path(path).name,
        "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.precombine.field": "ts",
        "hoodie.parquet.max.file.size": str(256 * 1024),
        "hoodie.parquet.small.file.limit": "0",
        "hoodie.metadata.index.column.stats.enable": "true",
        **options,
    }
    df.repartition(4).write.format("hudi").options(**opts).mode(mode).save(path)


def write(spark: Any, root: str, names: list[str]) -> None:
    """Write the named tables of :data:`TABLES` under ``root`` with ``spark`` (a session with Hudi's bundle)."""
    from pyspark.sql import functions as F

    df = _frame(spark, ROWS)
    part = {"hoodie.datasource.write.partitionpath.field": "region"}
    mor = {"hoodie.datasource.write.table.type": "MERGE_ON_READ"}
    for name in names:
        path = f"{root}/{name}"
        if name == "cow_part":
            _write(df, path, **part)
        elif name == "cow_plain":
            _write(df, path, **{"hoodie.datasource.write.operation": "bulk_insert"})
        elif name == "mor":
            _write(df, path, **mor)
            changed = df.where(F.col("id") % 8 == 0).withColumn("price", F.lit(1.0)).withColumn("ts", F.col("ts") + 1)
            _write(changed, path, mode="append", **mor, **{"hoodie.datasource.write.operation": "upsert"})
        elif name == "bucket":
            _write(
                df,
                path,
                **{
                    "hoodie.index.type": "BUCKET",
                    "hoodie.bucket.index.num.buckets": "4",
                    "hoodie.datasource.write.operation": "upsert",
                },
            )
        elif name == "pending":
            _write(df, path, **part)
            spark.sql(
                f"CALL run_clustering(path => '{path}', order => 'user_id', order_strategy => 'hilbert', "
                "op => 'schedule', options => 'hoodie.clustering.plan.strategy.small.file.limit=1073741824')"
            ).collect()
        else:
            raise ValueError(f"unknown Hudi test table {name!r}: one of {', '.join(TABLES)}")


if __name__ == "__main__":
    from pyspark.sql import SparkSession

    session = SparkSession.builder.getOrCreate()
    write(session, sys.argv[1], sys.argv[2:])
    session.stop()
