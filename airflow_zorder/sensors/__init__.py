"""Sensors: ``FileOverlapSensor`` decides from a table's stats whether file overlap warrants re-clustering."""

from airflow_zorder.sensors.file_overlap import FileOverlapSensor

__all__ = ["FileOverlapSensor"]
