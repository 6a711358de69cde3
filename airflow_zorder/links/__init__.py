"""Operator extra links: the Spark application's UI and the table's health page."""

from airflow_zorder.links.spark import SparkApplicationLink, history_server_link, push_link
from airflow_zorder.links.table_health import TableHealthLink

__all__ = ["SparkApplicationLink", "TableHealthLink", "history_server_link", "push_link"]
