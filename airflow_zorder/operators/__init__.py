"""Operators: the clustering and the statistics Spark jobs, run through the Spark provider's spark-submit."""

from airflow_zorder.operators.cluster_table import SparkClusterTableOperator
from airflow_zorder.operators.collect_stats import SparkCollectFileStatsOperator

__all__ = ["SparkClusterTableOperator", "SparkCollectFileStatsOperator"]
