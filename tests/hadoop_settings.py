"""Hadoop settings on the tests' shared SparkSession for a block or a module only (a connector's, an emulator's)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from airflow_zorder.spark_jars import apply_hadoop_conf


@contextmanager
def hadoop_settings(spark, settings: dict[str, str]) -> Iterator[None]:
    """``settings`` on the driver's Hadoop configuration for the block, then the previous values (or none) again;
    Hadoop's cached filesystems are dropped both times, so each open sees the settings of its moment."""
    conf = spark._jsc.hadoopConfiguration()
    before = {k: conf.getRaw(k) for k in settings}
    apply_hadoop_conf(spark, settings)
    try:
        yield
    finally:
        for k, v in before.items():
            conf.unset(k) if v is None else conf.set(k, v)
        spark._jvm.org.apache.hadoop.fs.FileSystem.closeAll()
