"""Extra link to the table's health page served by the provider's UI plugin."""

from __future__ import annotations

from typing import Any

from airflow.sdk import BaseOperatorLink

DEFAULT_BASE_URL = "http://localhost:8080"


def api_base_url() -> str:
    """Airflow's ``[api] base_url``, or ``http://localhost:8080`` when it is not set."""
    from airflow.sdk import conf

    return (conf.get("api", "base_url", fallback="") or DEFAULT_BASE_URL).rstrip("/")


def table_health_link(table: str) -> str:
    """``{[api] base_url}/zorder/table?table=<table, percent-encoded>``."""
    from airflow_zorder.plugins.urls import table_health_url

    return table_health_url(table, base_url=api_base_url())


class TableHealthLink(BaseOperatorLink):
    """Link to the health page (clustering over time) of the table the task worked on (its ``table``)."""

    name = "Table health"

    def get_link(self, operator: Any, *, ti_key: Any) -> str:
        table = getattr(operator, "table", None)
        return table_health_link(table) if isinstance(table, str) and table else ""
