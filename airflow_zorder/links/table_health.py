"""Extra link to the table's health page served by the provider's UI plugin."""

from __future__ import annotations

from typing import Any

from airflow.sdk import BaseOperatorLink

from airflow_zorder.table_access import table_health_url


class TableHealthLink(BaseOperatorLink):
    """Link to the health page (clustering over time) of the table the task worked on (its ``table``):
    ``{[api] base_url}/zorder/table?table=<table, percent-encoded>``."""

    name = "Table health"

    def get_link(self, operator: Any, *, ti_key: Any) -> str:
        table = getattr(operator, "table", None)
        return table_health_url(table) if isinstance(table, str) and table else ""
