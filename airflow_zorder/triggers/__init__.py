"""Triggers: ``FileOverlapTrigger`` watches a table's stats store from the triggerer (reads off the event loop)."""

from airflow_zorder.triggers.file_overlap import FileOverlapTrigger

__all__ = ["FileOverlapTrigger"]
