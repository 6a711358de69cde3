"""SparkSubmitHook that also notes where the running application can be watched.

spark-submit's output is read line by line by the provider's hook (which already picks out the
YARN application id, the Kubernetes driver pod and the standalone driver id); this subclass
additionally keeps the Spark application id, the driver's Spark UI address and YARN's tracking
URL when the log names them, for the operators' extra link.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from airflow.providers.apache.spark.hooks.spark_submit import SparkSubmitHook

# Spark < 4 logs "Bound SparkUI to ..., and started at URL"; Spark 4 only "Stopped Spark web UI at URL"
_UI_RE = re.compile(r"(?:SparkUI.*?started at|Spark web UI at) (https?://\S+)")
_TRACKING_RE = re.compile(r"tracking URL: (https?://\S+)")
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
    """SparkSubmitHook recording ``application_id``, ``spark_ui_url`` and ``tracking_url`` from spark-submit's log."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.application_id: str | None = None
        self.spark_ui_url: str | None = None
        self.tracking_url: str | None = None

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
        """Keep the first application id, Spark UI and tracking URL a log line names."""
        if self.spark_ui_url is None and (m := _UI_RE.search(line)):
            self.spark_ui_url = m.group(1).rstrip(".,")
        if self.tracking_url is None and (m := _TRACKING_RE.search(line)):
            self.tracking_url = m.group(1).rstrip(".,")
        if self.application_id is None:
            for rx in _APP_ID_RES:
                if m := rx.search(line):
                    self.application_id = m.group(1).rstrip(".,")
                    break

    def _process_spark_submit_log(self, itr: Iterator[Any]) -> None:
        def noting() -> Iterator[Any]:
            for line in itr:
                self.note_log_line(str(line))
                yield line

        super()._process_spark_submit_log(noting())
