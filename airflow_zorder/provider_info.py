"""Provider metadata for Airflow's provider discovery (``apache_airflow_provider`` entry point)."""

from __future__ import annotations

from typing import Any

from airflow_zorder.version import __version__

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
        "config": {
            "zorder": {
                "description": "Table health pages of the airflow-zorder UI plugin.",
                "options": {
                    "tables": {
                        "description": "Tables the health pages list besides those found in this provider's "
                        "XComs: comma- or newline-separated 'table', 'table|stats_location' or "
                        "'table|stats_location|conn_id'.",
                        "version_added": "0.1.0",
                        "type": "string",
                        "example": "s3a://lake/events|s3://lake/events/_zorder/stats|aws_lake",
                        "default": "",
                    },
                    "xcom_scan_limit": {
                        "description": "How many of the newest XComs of this provider's tasks are read to "
                        "discover tables.",
                        "version_added": "0.1.0",
                        "type": "integer",
                        "example": "5000",
                        "default": "1000",
                    },
                    "cache_ttl_s": {
                        "description": "Seconds a table's evaluated health is cached by the UI (recomputed at "
                        "once when a new snapshot, run or event appears).",
                        "version_added": "0.1.0",
                        "type": "float",
                        "example": "300",
                        "default": "60",
                    },
                },
            }
        },
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
                    "airflow_zorder.operators.recommend_columns",
                ],
            }
        ],
        "sensors": [
            {
                "integration-name": INTEGRATION,
                "python-modules": ["airflow_zorder.sensors.file_overlap", "airflow_zorder.sensors.job_result"],
            }
        ],
        "hooks": [
            {
                "integration-name": INTEGRATION,
                "python-modules": [
                    "airflow_zorder.hooks.file_stats",
                    "airflow_zorder.hooks.spark_job",
                    "airflow_zorder.hooks.athena_history",
                ],
            }
        ],
        "triggers": [{"integration-name": INTEGRATION, "python-modules": ["airflow_zorder.triggers.file_overlap"]}],
        "extra-links": [
            "airflow_zorder.links.spark.SparkApplicationLink",
            "airflow_zorder.links.table_health.TableHealthLink",
        ],
    }
