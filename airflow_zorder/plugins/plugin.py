"""The ``airflow.plugins`` entry point: mounts the table health pages in the API server and adds a nav entry."""

from __future__ import annotations

from airflow.plugins_manager import AirflowPlugin

from airflow_zorder.plugins.app import TITLE, create_app
from airflow_zorder.table_access import URL_PREFIX


class ZorderPlugin(AirflowPlugin):
    """Table health pages (``/zorder/``) and the fleet page (``/zorder/fleet``), shown inside Airflow's UI under
    Browse → Table health and Browse → Fleet."""

    name = "zorder"
    fastapi_apps = [{"app": create_app(), "url_prefix": URL_PREFIX, "name": TITLE}]
    external_views = [
        {
            "name": "Table health",
            "href": f"{URL_PREFIX}/",
            "url_route": "zorder",  # embedded in the UI at /plugin/zorder
            "destination": "nav",
            "category": "browse",
        },
        {
            "name": "Fleet",
            "href": f"{URL_PREFIX}/fleet",
            "url_route": "zorder-fleet",  # the fleet DAGs' runs: decisions, budget spent, savings
            "destination": "nav",
            "category": "browse",
        },
    ]
