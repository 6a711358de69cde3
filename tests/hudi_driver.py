"""A spark-submit script for the Hudi tests: runs a list of steps in ONE JVM (Spark 3.5 + Hudi's bundle, under
``.venv-hudi``: see tests/hudi_tables.py) and writes each step's outcome as JSON.

``spark-submit tests/hudi_driver.py STEPS.json OUT.json``; a step is ``[name, *args]``:

- ``["read", path]``: rows, distinct record keys and an order-free checksum of the data columns, read by Hudi's
  own datasource (the snapshot a Hudi reader sees), plus one column's values per key when asked;
- ``["cluster", *argv]``: the cluster job's ``run_action`` on ``argv`` (its result, or the error's type and text);
- ``["cluster_upsert", path, key_modulo, *argv]``: the cluster job in a thread; once it has scheduled its
  clustering, an upsert by a second Hudi writer (optimistic concurrency control, a file-system lock provider)
  sets ``price = -1`` on the keys divisible by ``key_modulo``; both outcomes reported;
- ``["timeline", path]``: the timeline's instant file names.
"""

from __future__ import annotations

import json
import os
import re
import sys
import threading
import time
import traceback
from typing import Any

OCC = {
    "hoodie.write.concurrency.mode": "optimistic_concurrency_control",
    "hoodie.write.lock.provider": "org.apache.hudi.client.transaction.lock.FileSystemBasedLockProvider",
    "hoodie.cleaner.policy.failed.writes": "LAZY",
}


def read(spark: Any, path: str) -> dict[str, Any]:
    from pyspark.sql import functions as F

    df = spark.read.format("hudi").load(path)
    data = [c for c in df.columns if not c.startswith("_hoodie_")]
    row = df.select(
        F.count("*").alias("rows"),
        F.countDistinct("id").alias("keys"),
        F.sum(F.xxhash64(*data).cast("decimal(38,0)")).alias("checksum"),
        F.sum(F.when(F.col("price") == -1, 1).otherwise(0)).alias("updated"),
    ).collect()[0]
    return {"rows": row["rows"], "keys": row["keys"], "checksum": str(row["checksum"]), "updated": row["updated"]}


def cluster(spark: Any, argv: list[str]) -> dict[str, Any]:
    from airflow_zorder.core.jobs.options import ClusterOptions
    from spark_jobs.cluster_table import run_action

    try:
        return run_action(spark, ClusterOptions.from_args(argv))
    except Exception as exc:  # noqa: BLE001 - the test asserts on the error
        traceback.print_exc()
        return {"status": "failed", "error_type": type(exc).__name__, "error": str(exc)[:2000]}


def upsert(spark: Any, path: str, modulo: int) -> dict[str, Any]:
    from pyspark.sql import functions as F

    df = spark.read.format("hudi").load(path)
    changed = (
        df.where(F.col("id") % modulo == 0)
        .select(*[c for c in df.columns if not c.startswith("_hoodie_")])
        .withColumn("price", F.lit(-1.0))
        .withColumn("ts", F.col("ts") + 1)
    )
    props = dict(
        line.split("=", 1)
        for line in open(os.path.join(path, ".hoodie", "hoodie.properties"), encoding="utf-8").read().splitlines()
        if "=" in line and not line.startswith("#")
    )
    opts = {
        "hoodie.table.name": props["hoodie.table.name"],
        "hoodie.datasource.write.partitionpath.field": props.get("hoodie.table.partition.fields", ""),
        "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.precombine.field": "ts",
        "hoodie.datasource.write.operation": "upsert",
        **OCC,
    }
    try:
        changed.write.format("hudi").options(**opts).mode("append").save(path)
        return {"status": "committed", "rows": changed.count()}
    except Exception as exc:  # noqa: BLE001 - a conflict is one of the two allowed outcomes
        hudi = re.findall(r"org\.apache\.hudi\.exception\.\w+: [^\n]*", str(exc))
        return {"status": "failed", "error": " <- ".join(dict.fromkeys(hudi))[:1500] or str(exc).splitlines()[0]}


def cluster_upsert(spark: Any, path: str, modulo: int, argv: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    marker_dir = os.path.join(path, "_zorder", "hudi")
    job = threading.Thread(target=lambda: out.update(cluster=cluster(spark, argv)))
    job.start()
    deadline = time.time() + 300
    while job.is_alive() and time.time() < deadline and not (os.path.isdir(marker_dir) and os.listdir(marker_dir)):
        time.sleep(0.2)
    out["upsert_while_running"] = job.is_alive()
    out["upsert"] = upsert(spark, path, modulo)
    job.join()
    return out


def timeline(path: str) -> list[str]:
    folder = os.path.join(path, ".hoodie", "timeline")
    return sorted(n for n in os.listdir(folder) if n[0].isdigit())


def main() -> None:
    from pyspark.sql import SparkSession

    steps = json.loads(open(sys.argv[1], encoding="utf-8").read())
    spark = SparkSession.builder.getOrCreate()
    results = []
    for name, *args in steps:
        t = time.time()
        if name == "read":
            got: Any = read(spark, args[0])
        elif name == "cluster":
            got = cluster(spark, list(args))
        elif name == "cluster_upsert":
            got = cluster_upsert(spark, args[0], int(args[1]), list(args[2:]))
        elif name == "timeline":
            got = timeline(args[0])
        else:
            raise ValueError(f"unknown step {name!r}")
        results.append({"step": name, "s": round(time.time() - t, 1), "out": got})
        with open(sys.argv[2], "w", encoding="utf-8") as f:  # after every step: a killed run keeps the ones done
            json.dump(results, f, indent=1, default=str)
    spark.stop()


if __name__ == "__main__":
    main()
