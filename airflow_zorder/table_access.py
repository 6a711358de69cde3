"""What the tasks and the UI plugin agree on: how a task's return value names the way to its table, and the URL of
the table's health page. Here, outside the plugin, so the operators, the sensor and their links need no UI code."""

from __future__ import annotations

from urllib.parse import quote

#: Where the plugin's FastAPI app is mounted in the Airflow API server.
URL_PREFIX = "/zorder"
#: The API server's address when ``[api] base_url`` is not set (what Airflow 3's task runner assumes for its links).
DEFAULT_BASE_URL = "http://localhost:8080"
#: The fields naming an Iceberg table's catalog (one of them), in a return value and in ``[zorder] tables``.
CATALOG_KEYS = ("iceberg_catalog", "iceberg_conn_id")


def table_access(
    conn_id: str | None = None, iceberg_catalog: str | None = None, iceberg_conn_id: str | None = None
) -> dict[str, str]:
    """The fields a task's return value carries, besides ``table`` and ``stats_location``, so that the health pages
    find the table again (``plugins.discovery.xcom_tables``): the store's connection and the Iceberg catalog, those
    that were given."""
    given = {"conn_id": conn_id, "iceberg_catalog": iceberg_catalog, "iceberg_conn_id": iceberg_conn_id}
    return {k: str(v) for k, v in given.items() if v}


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
