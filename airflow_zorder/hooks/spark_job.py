"""SparkSubmitHook that also notes where the running application can be watched.

spark-submit's output is read line by line by the provider's hook (which already picks out the
YARN application id, the Kubernetes driver pod and the standalone driver id); this subclass
additionally keeps the Spark application id, the driver's Spark UI address and YARN's tracking
URL when the log names them, and calls ``on_app_url`` as soon as that address is known (or changes),
so the operators can publish their extra link while the application still runs.

Spark 4 names the UI's full URL only when it stops ("Stopped Spark web UI at ..."); while it runs it
logs the UI's port ("Successfully started service 'SparkUI' on port N") and, a moment later, the
driver's host (``BlockManagerId(driver, HOST, ...)``): the live URL is ``http://HOST:N``.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from airflow.providers.apache.spark.hooks.spark_submit import SparkSubmitHook

# Spark < 4 logs "Bound SparkUI to ..., and started at URL"; Spark 4 only "Stopped Spark web UI at URL"
_UI_RE = re.compile(r"(?:SparkUI.*?started at|Spark web UI at) (https?://\S+)")
_TRACKING_RE = re.compile(r"tracking URL: (https?://\S+)")
_UI_PORT_RE = re.compile(r"Successfully started service '?SparkUI'? on port (\d+)")
_DRIVER_HOST_RE = re.compile(r"BlockManagerId\(driver, ([^,\s]+), \d+")
_APP_ID_RES = (
    re.compile(r"\b(application_\d+_\d+)\b"),  # YARN
    re.compile(r"Connected to Spark cluster with app ID (\S+)"),  # standalone
    re.compile(r"spark-app-selector -> (spark-[a-z0-9]+)"),  # Kubernetes
)


def resolve_spark_binary(binary: str) -> str:
    """``binary`` if it runs from PATH (or is a path), else pyspark's own copy (``<pyspark>/bin/<binary>``).

    pyspark, a dependency of this provider, ships spark-submit; its ``bin/`` copy finds its Spark
    home by itself, so a worker whose PATH lacks the environment's ``bin`` still has a Spark.
    """
    if shutil.which(binary) is not None:
        return binary
    spec = None if os.sep in binary else importlib.util.find_spec("pyspark")
    if spec is not None and spec.origin:
        bundled = Path(spec.origin).parent / "bin" / binary
        if bundled.is_file() and os.access(bundled, os.X_OK):
            return str(bundled)
    raise FileNotFoundError(
        f"{binary!r} is not on PATH and pyspark has no bin/{binary}: add Spark's bin directory "
        "to PATH or pass spark_binary= (the full path of spark-submit)"
    )


class SparkJobHook(SparkSubmitHook):
    """SparkSubmitHook recording ``application_id``, ``spark_ui_url`` and ``tracking_url`` from spark-submit's log.

    ``on_app_url``: called with :meth:`app_url` each time a log line makes it known or changes it (the
    driver's live UI, then YARN's tracking URL, which wins); exceptions it raises are logged, never raised.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.application_id: str | None = None
        self.spark_ui_url: str | None = None
        self.tracking_url: str | None = None
        self.on_app_url: Callable[[str], None] | None = None
        self._ui_port: str | None = None
        self._driver_host: str | None = None
        self._ui_url_derived = False

    @property
    def master(self) -> str:
        """The resolved Spark master URL (from the connection)."""
        return self._connection["master"]

    @property
    def deploy_mode(self) -> str:
        """``client`` (driver runs here) or ``cluster`` (driver runs on the cluster)."""
        return self._connection["deploy_mode"] or "client"

    def app_url(self) -> str | None:
        """Where to watch the application: YARN's tracking URL, else the driver's Spark UI, else None."""
        return self.tracking_url or self.spark_ui_url

    def note_log_line(self, line: str) -> None:
        """Keep the first application id, Spark UI and tracking URL a log line names; report a new app URL."""
        before = self.app_url()
        if m := _UI_RE.search(line):
            if self.spark_ui_url is None or self._ui_url_derived:  # the URL as Spark prints it beats ours
                self.spark_ui_url, self._ui_url_derived = m.group(1).rstrip(".,"), False
        if self._ui_port is None and (m := _UI_PORT_RE.search(line)):
            self._ui_port = m.group(1)
        if self._driver_host is None and (m := _DRIVER_HOST_RE.search(line)):
            self._driver_host = m.group(1)
        if self.spark_ui_url is None and self._ui_port and self._driver_host:
            self.spark_ui_url, self._ui_url_derived = f"http://{self._driver_host}:{self._ui_port}", True
        if self.tracking_url is None and (m := _TRACKING_RE.search(line)):
            self.tracking_url = m.group(1).rstrip(".,")
        if self.application_id is None:
            for rx in _APP_ID_RES:
                if m := rx.search(line):
                    self.application_id = m.group(1).rstrip(".,")
                    break
        after = self.app_url()
        if after and after != before and self.on_app_url is not None:
            try:
                self.on_app_url(after)
            except Exception:  # noqa: BLE001 - publishing a link must never break the job's log processing
                self.log.warning("could not publish the Spark application's URL %s", after, exc_info=True)

    def _process_spark_submit_log(self, itr: Iterator[Any]) -> None:
        def noting() -> Iterator[Any]:
            for line in itr:
                self.note_log_line(str(line))
                yield line

        super()._process_spark_submit_log(noting())
