"""Sensors: ``FileOverlapSensor`` decides from a table's stats whether file overlap warrants re-clustering;
``SparkJobResultSensor`` reads back the result of a job that ran outside Airflow."""

from airflow_zorder.sensors.file_overlap import FileOverlapSensor
from airflow_zorder.sensors.job_result import SparkJobResultSensor

__all__ = ["FileOverlapSensor", "SparkJobResultSensor"]
