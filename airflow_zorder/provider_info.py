"""Provider metadata for Airflow's provider discovery (``apache_airflow_provider`` entry point)."""

from __future__ import annotations

from typing import Any

from airflow_zorder import __version__

INTEGRATION = "Z-order clustering"


def get_provider_info() -> dict[str, Any]:
    """Return the provider description; ``package-name`` must equal the distribution name.

    The UI plugin is registered through the ``airflow.plugins`` entry point (a ``plugins`` key here
    is ignored by lazy provider discovery). Connections are the Spark provider's ``spark`` type.
    """
    return {
        "package-name": "airflow-zorder",
        "name": "Z-order clustering",
        "description": "Re-cluster Parquet tables along Z-order / Hilbert curves with Spark and watch file overlap.",
        "versions": [__version__],
        "integrations": [
            {
                "integration-name": INTEGRATION,
                "tags": ["apache", "spark"],
            }
        ],
        "operators": [
            {
                "integration-name": INTEGRATION,
                "python-modules": [
                    "airflow_zorder.operators.cluster_table",
                    "airflow_zorder.operators.collect_stats",
                ],
            }
        ],
        "sensors": [
            {"integration-name": INTEGRATION, "python-modules": ["airflow_zorder.sensors.file_overlap"]}
        ],
        "hooks": [
            {
                "integration-name": INTEGRATION,
                "python-modules": ["airflow_zorder.hooks.file_stats", "airflow_zorder.hooks.spark_job"],
            }
        ],
        "triggers": [
            {"integration-name": INTEGRATION, "python-modules": ["airflow_zorder.triggers.file_overlap"]}
        ],
        "extra-links": [
            "airflow_zorder.links.spark.SparkApplicationLink",
            "airflow_zorder.links.table_health.TableHealthLink",
        ],
    }
