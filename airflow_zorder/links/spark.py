"""Extra link to the Spark application a task runs: live while it runs, the History Server's page after.

Airflow 3 computes a task's extra links on the worker when the task ends and stores them in XCom
(key :attr:`BaseOperatorLink.xcom_key`); the UI reads that XCom. A client-mode driver's UI is gone by
then, so the operators also push the link's XCom themselves (:func:`push_link`) as soon as
spark-submit's log names the application's URL, and again when the job ends, pointing at the Spark
History Server when one is configured (:func:`history_server_link`).
"""

from __future__ import annotations

import logging
from typing import Any

from airflow.sdk import BaseOperatorLink

log = logging.getLogger(__name__)


class SparkApplicationLink(BaseOperatorLink):
    """Link to where the task's Spark application can be watched, when spark-submit's log named it.

    Reads what the operator noted (``spark_app_url``): the driver's Spark UI or YARN's tracking URL
    while the job runs, the History Server's page of the application once it ended (when configured);
    empty when nothing was named (e.g. ``spark.ui.enabled=false``, or a Kubernetes driver pod without a
    UI service).
    """

    name = "Spark application"

    def get_link(self, operator: Any, *, ti_key: Any) -> str:
        return getattr(operator, "spark_app_url", None) or ""


def history_server_link(base: str | None, app_id: str | None) -> str | None:
    """The History Server's page of application ``app_id``: ``<base>/history/<app id>/``; None without both.

    ``base`` may omit the scheme (as Spark's ``spark.yarn.historyServer.address`` does): ``http://`` is assumed.
    The History Server redirects an application with several attempts to its last one.
    """
    base, app_id = (base or "").strip(), (app_id or "").strip()
    if not base or not app_id:
        return None
    if "://" not in base:
        base = f"http://{base}"
    return f"{base.rstrip('/')}/history/{app_id}/"


def push_link(link: BaseOperatorLink, ti: Any, url: str) -> bool:
    """Store ``url`` as ``link``'s XCom of the running task instance ``ti`` now, as the task runner does at the end.

    The value goes straight to the metadata DB (bypassing a custom XCom backend, like the runner's own
    link XComs), so the UI shows it while the task still runs. False (logged) when there is no task
    instance (a bare ``execute()``) or the push failed: a link must never fail the task.
    """
    if ti is None or not url or not getattr(ti, "run_id", None):
        return False
    try:
        from airflow.sdk.bases.xcom import BaseXCom

        map_index = getattr(ti, "map_index", -1)
        BaseXCom._set_xcom_in_db(
            key=link.xcom_key,
            value=url,
            dag_id=ti.dag_id,
            task_id=ti.task_id,
            run_id=ti.run_id,
            map_index=-1 if map_index is None else map_index,
        )
    except Exception:  # noqa: BLE001 - the link is a convenience; the job goes on
        log.warning(
            "could not store the %r link %s yet; it is stored when the task ends", link.name, url, exc_info=True
        )
        return False
    return True
