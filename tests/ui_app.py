"""Airflow's API server app (core) with the UI plugin, signed in as an admin: for tests of the pages on a table
in each store (tests/ui/test_ui_s3.py, tests/airflow/test_gcs_store.py, tests/airflow/test_azure_store.py)."""

from __future__ import annotations

import json
import secrets
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

import pytest

USER = "zorder-admin"


@contextmanager
def signed_in_client(workdir: Path, env: Mapping[str, str]) -> Iterator[object]:
    """A ``TestClient`` of the app with ``env`` set (``[zorder] tables``, connections), SimpleAuthManager with one
    admin whose bearer token every request carries, and the pages' cache off and empty."""
    from airflow.api_fastapi.app import create_app, purge_cached_app
    from fastapi.testclient import TestClient

    from airflow_zorder.plugins import page_data

    password = secrets.token_hex(8)
    passwords = workdir / "passwords.json"
    passwords.write_text(json.dumps({USER: password}))
    with pytest.MonkeyPatch.context() as mp:
        for key, value in {
            "AIRFLOW__CORE__AUTH_MANAGER": "airflow.api_fastapi.auth.managers.simple.simple_auth_manager."
            "SimpleAuthManager",
            "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS": f"{USER}:admin",
            "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE": str(passwords),
            "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_ALL_ADMINS": "False",
            "AIRFLOW__ZORDER__CACHE_TTL_S": "0",
            "AIRFLOW__API_AUTH__JWT_SECRET": secrets.token_hex(32),
            **env,
        }.items():
            mp.setenv(key, value)
        purge_cached_app()
        page_data.CACHE.clear()
        try:
            with TestClient(create_app(apps="core")) as client:
                r = client.post("/auth/token", json={"username": USER, "password": password})
                assert r.status_code == 201, r.text
                client.headers["Authorization"] = f"Bearer {r.json()['access_token']}"
                yield client
        finally:
            purge_cached_app()
