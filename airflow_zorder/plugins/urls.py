"""Links to the table health pages (used by the plugin's nav entry and by the operators' and sensor's extra links)."""

from __future__ import annotations

from urllib.parse import quote

#: Where the plugin's FastAPI app is mounted in the Airflow API server.
URL_PREFIX = "/zorder"


def table_page_path(table: str) -> str:
    """Path (no host) of one table's health page: ``/zorder/table?table=<table, percent-encoded>``."""
    return f"{URL_PREFIX}/table?table={quote(table, safe='')}"


def table_health_url(table: str, base_url: str | None = None) -> str:
    """Absolute URL of a table's health page: ``[api] base_url`` + :func:`table_page_path`.

    ``base_url`` defaults to Airflow's ``[api] base_url`` (empty gives a path relative to the host).
    """
    if base_url is None:
        from airflow.sdk import conf

        base_url = conf.get("api", "base_url", fallback="") or ""
    return base_url.rstrip("/") + table_page_path(table)
