"""Links to the table health pages: the plugin's nav entry, the UI's own links, and the operators' and sensor's
extra links all build them here."""

from __future__ import annotations

from urllib.parse import quote

#: Where the plugin's FastAPI app is mounted in the Airflow API server.
URL_PREFIX = "/zorder"
#: The API server's address when ``[api] base_url`` is not set (what Airflow 3's task runner assumes for its links).
DEFAULT_BASE_URL = "http://localhost:8080"


def api_base_url() -> str:
    """Airflow's ``[api] base_url`` without a trailing ``/``, or :data:`DEFAULT_BASE_URL` when it is not set."""
    from airflow.sdk import conf

    return (conf.get("api", "base_url", fallback="") or DEFAULT_BASE_URL).rstrip("/")


def table_page_path(table: str) -> str:
    """Path (no host) of one table's health page: ``/zorder/table?table=<table, percent-encoded>``."""
    return f"{URL_PREFIX}/table?table={quote(table, safe='')}"


def table_health_url(table: str, base_url: str | None = None) -> str:
    """Absolute URL of a table's health page: ``base_url`` (default :func:`api_base_url`) + :func:`table_page_path`."""
    return (api_base_url() if base_url is None else base_url).rstrip("/") + table_page_path(table)
