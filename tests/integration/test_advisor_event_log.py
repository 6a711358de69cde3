"""The advisor reads a real Spark event log: a local SparkSession with ``spark.eventLog.enabled`` (in its own
process: event logging is fixed when a SparkContext starts, so the tests' shared session cannot write one) runs
queries on a Parquet table, and the advisor finds the table's filters in the log, from the plans' pushed filters
and from the SQL text Spark keeps as an execution's description."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from airflow_zorder.core.advisor.recommend import advise
from airflow_zorder.core.advisor.sources import read_workload
from airflow_zorder.core.stats import footer_stats

SCRIPT = textwrap.dedent(
    """
    import sys
    from pyspark.sql import SparkSession
    table, logs = sys.argv[1], sys.argv[2]
    spark = (SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")
             .config("spark.eventLog.enabled", "true").config("spark.eventLog.dir", logs).getOrCreate())
    spark.read.parquet(table).createOrReplaceTempView("t")
    for i in range(6):  # plans only: the description is the call site
        spark.sql(f"SELECT count(*) FROM t WHERE b = {i * 7} AND a >= {i}").collect()
    spark.read.parquet(table).where("b IN (1, 2) AND s LIKE 'x1%'").count()
    sql = "WITH w AS (SELECT * FROM t WHERE b BETWEEN 10 AND 20) SELECT count(*) FROM w WHERE w.a < 5"
    spark.sparkContext.setLocalProperty("spark.job.description", sql)  # as the Thrift server does
    spark.sql(sql).collect()
    spark.stop()
    """
)


def test_filters_from_a_real_event_log(tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    root = tmp_path / "t"
    root.mkdir()
    for i in range(8):
        pq.write_table(
            pa.table(
                {"a": rng.integers(0, 100, 200), "b": rng.integers(0, 100, 200), "s": [f"x{j}" for j in range(200)]}
            ),
            root / f"f{i}.parquet",
        )
    logs = tmp_path / "events"
    logs.mkdir()
    subprocess.run([sys.executable, "-c", SCRIPT, str(root), logs.as_uri()], check=True, timeout=300)
    statements = list(read_workload(logs))
    assert len(statements) == 8  # one scan per execution (the view's creation scans nothing)
    assert sum(s.sql.startswith("WITH w AS") for s in statements) == 1  # the SQL text, used as is
    stats = footer_stats.read_footers(footer_stats.list_parquet_files(str(root)), ["a", "b", "s"])
    rec = advise(statements, stats, str(root))  # path tables are named by their location in the plans
    assert rec.status == {"ok": 7, "other_table": 1}  # the CTE names the view `t`, not the path
    assert rec.column_use == {"b": 7, "a": 6, "s": 1}
    by_table = advise(statements, stats, "t")
    assert by_table.status["ok"] == 1 and by_table.column_use == {"b": 1, "a": 1}
    assert "b" in rec.columns
