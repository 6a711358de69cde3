"""Write the demo's sample (Hive-partitioned Parquet) as an Apache Hudi copy-on-write table with Hudi's own bundle.

    .venv-hudi/bin/python scripts/demo_hudi_table.py SOURCE TARGET

Runs under ``.venv-hudi`` (pyspark 3.5.8, ``make hudi-env``): Hudi publishes no bundle for the project's Spark 4.2
line, and this machine's Maven mirror serves none for Spark 4. One ``bulk_insert`` in the source's row order (sort mode NONE),
one base file per source file, so the table starts as badly clustered as the sample:
``event_id`` is the record key, ``day`` the partition field (hive-style paths, as the sample's).
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from airflow_zorder.hudi_spark import SESSION_CONF, bundle_jars


def main(source: str, target: str) -> None:
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F

    builder = SparkSession.builder.master("local[2]").appName("zorder-demo-hudi")
    settings = {
        **SESSION_CONF,
        "spark.jars": ",".join(bundle_jars("3.5")),
        "spark.ui.enabled": "false",
        # one Spark partition per source file (never split, never packed): each becomes one base file
        "spark.sql.files.maxPartitionBytes": str(1 << 40),
        "spark.sql.files.openCostInBytes": str(1 << 40),
    }
    for key, value in settings.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    (
        spark.read.parquet(source)
        # hudi-rs 0.5 maps no Avro local-timestamp-micros (Spark 3.5 reads the sample's timestamps as TIMESTAMP_NTZ)
        .withColumn("event_time", F.col("event_time").cast("timestamp"))
        .write.format("hudi")
        .option("hoodie.table.name", "events_hudi")
        .option("hoodie.datasource.write.recordkey.field", "event_id")
        .option("hoodie.datasource.write.precombine.field", "event_time")
        .option("hoodie.datasource.write.partitionpath.field", "day")
        .option("hoodie.datasource.write.hive_style_partitioning", "true")
        .option("hoodie.datasource.write.operation", "bulk_insert")
        .option("hoodie.bulkinsert.sort.mode", "NONE")
        .option("hoodie.parquet.compression.codec", "snappy")
        .mode("overwrite")
        .save(target)
    )
    rows = spark.read.format("hudi").load(target).count()
    print(f"wrote {target}: a Hudi copy-on-write table of {rows:,} rows (Hudi's bundle on Spark {spark.version})")
    spark.stop()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
