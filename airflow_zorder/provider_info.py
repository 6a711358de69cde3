"""Provider metadata for Airflow's provider discovery (``apache_airflow_provider`` entry point)."""

from __future__ import annotations

from typing import Any

from airflow_zorder import __version__


def get_provider_info() -> dict[str, Any]:
    """Return the provider description; ``package-name`` must equal the distribution name."""
    return {
        "package-name": "airflow-zorder",
        "name": "Z-order clustering",
        "description": "Re-cluster Parquet tables along Z-order / Hilbert curves with Spark and watch file overlap.",
        "versions": [__version__],
    }
