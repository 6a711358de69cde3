"""Extra link to the Spark application a task ran: YARN's tracking URL or the driver's Spark UI."""

from __future__ import annotations

from typing import Any

from airflow.sdk import BaseOperatorLink


class SparkApplicationLink(BaseOperatorLink):
    """Link to where the task's Spark application can be watched, when spark-submit's log named it.

    Airflow 3 computes links on the worker when the task finishes and stores them in XCom, so this
    reads what the operator noted while it ran (``spark_app_url``); empty when nothing was named
    (e.g. ``spark.ui.enabled=false``, or a Kubernetes driver pod without a UI service).
    """

    name = "Spark application"

    def get_link(self, operator: Any, *, ti_key: Any) -> str:
        return getattr(operator, "spark_app_url", None) or ""
