"""Fixtures of the UI tests: real stats stores in temp dirs, and SimpleAuthManager users with known passwords."""

from __future__ import annotations

import json

import pytest
from ui_stores import (
    PASSWORD,
    USER,
    VIEWER,
    VIEWER_PASSWORD,
    Store,
    build_appends_store,
    build_delta_store,
    build_events_store,
    build_orders_store,
)

from airflow_zorder.core.stats.stats_location import default_stats_location


def sensor_decision(store: Store) -> dict:
    """One poke of the provider's ``FileOverlapSensor`` (``incremental_plan`` on, the default) on ``store``'s table:
    it records its decision, with the incremental plan, in the stats store; returns its XCom (the payload)."""
    from airflow_zorder.sensors.file_overlap import FileOverlapSensor

    sensor = FileOverlapSensor(
        task_id="check_overlap",
        table=store.table,
        stats_location=None if store.location == default_stats_location(store.table) else store.location,
    )
    return sensor.poke({}).xcom_value


@pytest.fixture(scope="module")
def stores(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Store]:
    root = tmp_path_factory.mktemp("ui-stores")
    appends, delta = build_appends_store(root), build_delta_store(root)
    appends.decision = sensor_decision(appends)
    delta.decision = sensor_decision(delta)
    return {
        "events": build_events_store(root),
        "orders": build_orders_store(root),
        "missing": Store(str(root / "lake" / "never-collected"), "", [], [], None),
        "appends": appends,
        "delta": delta,
    }


@pytest.fixture(scope="module")
def auth_env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """SimpleAuthManager with two known users (an admin and a viewer), as environment variables."""
    d = tmp_path_factory.mktemp("auth")
    pw = d / "passwords.json"
    pw.write_text(json.dumps({USER: PASSWORD, VIEWER: VIEWER_PASSWORD}))
    return {
        "AIRFLOW__CORE__AUTH_MANAGER": "airflow.api_fastapi.auth.managers.simple.simple_auth_manager.SimpleAuthManager",
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS": f"{USER}:admin,{VIEWER}:viewer",
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE": str(pw),
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_ALL_ADMINS": "False",
        "AIRFLOW__ZORDER__CACHE_TTL_S": "0",
    }
