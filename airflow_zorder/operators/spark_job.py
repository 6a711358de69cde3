"""What the clustering and the statistics operators share: running one ``spark_jobs`` entry point.

Both are the Spark provider's :class:`SparkSubmitOperator`, so every spark-submit parameter (``conn_id``,
``conf``, executor/driver cores and memory, ``num_executors``, ``deploy_mode``, ``principal``/``keytab``,
``env_vars``, ``verbose``, ``spark_binary``, ...) passes through unchanged. On top of it the operator

* ships the job itself: the entry point script and a ``--py-files`` zip of the Airflow-free code
  (:mod:`airflow_zorder.packaging`); the user packages nothing;
* turns typed, templated parameters (``table``, ``columns``, ...) into the job's options
  (:mod:`airflow_zorder.core.jobs.options`, the contract the jobs parse their flags with);
* returns the job's JSON result (written to a temp file on the worker via ``--result-json``) as XCom;
* attaches the metrics to the asset events of declared ``outlets``;
* refuses a missing Spark connection instead of letting the hook fall back to master ``yarn``.

Deploy mode ``cluster``: the driver runs on the cluster, so the result file is written there and is
not readable here. The operator then returns what it can find without the driver: the run's record in
the table's stats store (matched by the run id it passed), or, when that is not reachable, only the
run id, the Spark application id and a note saying the result is unavailable.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator
from airflow.sdk import Asset, BaseHook
from airflow.sdk.exceptions import AirflowException, AirflowNotFoundException

from airflow_zorder import packaging
from airflow_zorder.core.jobs.jvm_options import with_jit_conf
from airflow_zorder.core.jobs.options import ClusterOptions, CollectOptions, new_run_id
from airflow_zorder.hooks.spark_job import SparkJobHook, resolve_spark_binary
from airflow_zorder.links import SparkApplicationLink, TableHealthLink


class SparkJobFailed(AirflowException):
    """The Spark job ran and reported a failure; the message is the job's own one-line reason."""


def local_python_conf(conn: Any, conf: dict[str, Any], env_vars: dict[str, Any] | None) -> dict[str, Any]:
    """For a ``local[...]`` master with no Python configured, run Spark's Python as this worker's interpreter.

    The driver and executors then have exactly what the worker has (pyspark, pyarrow). Clusters need
    their own ``spark.pyspark.python`` (or ``PYSPARK_PYTHON``): it is never guessed for them.
    """
    configured = ("spark.pyspark.python", "spark.pyspark.driver.python")
    if any(k in conf for k in configured) or "PYSPARK_PYTHON" in (env_vars or {}) or os.environ.get("PYSPARK_PYTHON"):
        return conf
    host = (conn.host or "") if conn.conn_type == "spark" else ""
    if host.startswith("local"):
        return {**conf, "spark.pyspark.python": sys.executable}
    return conf


def master_of(conn: Any) -> str:
    """The master URL spark-submit gets from a connection (the Spark provider's own rule)."""
    if conn.conn_type == "spark" and conn.host and ("://" in conn.host or not conn.port):
        master = conn.host
    else:
        master = f"{conn.conn_type}://{conn.host or ''}"
    return f"{master}:{conn.port}" if conn.port else master


def check_master_reachable(master: str, conn_id: str, timeout_s: float = 10.0) -> None:
    """Fail at once when a standalone master (``spark://host:port[,host2:port2]``) accepts no connection.

    spark-submit itself would retry every 20 s and then leave the job's driver without executors; one
    TCP connect per master address tells the user which connection points where, before anything runs.
    """
    if not master.startswith("spark://"):
        return
    errors = []
    for addr in master[len("spark://") :].split(","):
        host, sep, port = addr.strip().rpartition(":")
        host, port = (host, port) if sep else (port, "7077")
        try:
            socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s).close()
            return
        except (OSError, ValueError) as exc:
            errors.append(f"{host}:{port}: {getattr(exc, 'strerror', None) or exc}")
    raise AirflowException(
        f"Spark master {master} of connection {conn_id!r} is unreachable ({'; '.join(errors)}); nothing was "
        "submitted. Check the connection's host and port and that the Spark master is running."
    )


class SparkZorderJobOperator(SparkSubmitOperator):
    """Run one of airflow-zorder's Spark jobs with spark-submit (base class; see the two operators).

    :param table: Parquet directory path/URI or catalog table ``db.table`` (templated).
    :param application: override the job script (e.g. a ``local://`` or ``s3://`` copy reachable from
        the cluster in deploy mode ``cluster``); default: the installed ``spark_jobs`` script.
    :param ship_py_files: add the zip of the Airflow-free code to ``--py-files`` (default True).
    :param extra_args: more job flags, appended verbatim (templated).
    :param conn_id: the Spark connection; it must exist (a missing one fails the task, it does not
        fall back to YARN). All other :class:`SparkSubmitOperator` parameters pass through.
    """

    job_script: ClassVar[str] = ""
    job_label: ClassVar[str] = ""
    template_fields: Sequence[str] = (*SparkSubmitOperator.template_fields, "table", "columns", "extra_args")
    template_fields_renderers = {"conf": "json", "env_vars": "json", "extra_args": "json"}
    operator_extra_links = (SparkApplicationLink(), TableHealthLink())
    ui_color = "#e8f1f5"

    def __init__(
        self,
        *,
        table: str,
        columns: list[str] | str | None = None,
        application: str | None = None,
        ship_py_files: bool = True,
        extra_args: list[str] | None = None,
        name: str | None = None,
        conn_id: str = "spark_default",
        **kwargs: Any,
    ) -> None:
        if "application_args" in kwargs:
            raise ValueError(
                f"{type(self).__name__} builds the job's arguments itself: use its typed parameters, "
                "and extra_args for any other job flag"
            )
        super().__init__(
            application=application or "", name=name or f"airflow-zorder-{self.job_label}", conn_id=conn_id, **kwargs
        )
        self.table = table
        self.columns = columns
        self.extra_args = extra_args
        self.ship_py_files = ship_py_files
        self.run_id: str | None = None
        self.spark_app_url: str | None = None
        self._hook: SparkJobHook | None = None

    # ----------------------------------------------------------------------- what subclasses provide

    def job_options(self) -> ClusterOptions | CollectOptions:
        """The job's options from the (rendered) typed parameters."""
        raise NotImplementedError

    def job_arguments(self) -> list[str]:
        """The job's flags from the (rendered) typed parameters (``job_options().to_args()``)."""
        return self.job_options().to_args()

    def asset_extra(self, result: dict[str, Any]) -> dict[str, Any]:
        """The metrics attached to the asset events of the task's outlets."""
        raise NotImplementedError

    def result_from_store(self, run_id: str) -> dict[str, Any] | None:
        """The run's record as the job left it in the table's stats store (deploy mode ``cluster``)."""
        return None

    def enrich_result(self, result: dict[str, Any]) -> None:
        """Add figures computed on the worker to a successful result (before XCom and asset events)."""

    def check_result(self, result: dict[str, Any]) -> None:
        """Raise when a result the job wrote says the run did not succeed."""
        if result.get("status") == "failed":
            raise SparkJobFailed(
                f"{self.job_label} job failed for table {result.get('table', self.table)}: "
                f"{result.get('error')} ({result.get('error_type')})"
            )

    # ----------------------------------------------------------------------- execution

    def require_connection(self) -> Any:
        """The Spark connection, or a clear error (SparkSubmitHook would silently use master ``yarn``)."""
        try:
            return BaseHook.get_connection(self._conn_id)
        except AirflowNotFoundException as exc:
            env = "AIRFLOW_CONN_" + self._conn_id.upper()
            raise AirflowException(
                f"Spark connection {self._conn_id!r} does not exist, so there is no Spark master to submit to "
                "(the Spark provider would silently fall back to master 'yarn'). Create it, e.g. "
                f"`airflow connections add {self._conn_id} --conn-type spark --conn-host 'spark://HOST:7077'` "
                f'or `export {env}=\'{{"conn_type": "spark", "host": "local[*]"}}\'`, '
                "or pass conn_id= naming an existing Spark connection."
            ) from exc

    def _deploy_mode_of(self, conn: Any) -> str:
        return self._deploy_mode or conn.extra_dejson.get("deploy-mode") or "client"

    def prepare(self, conn: Any, workdir: str) -> str | None:
        """Set the application, py-files, conf and the job's arguments; returns the result file's path.

        ``None`` in deploy mode ``cluster``: the driver's result file would be written on the cluster.
        """
        cluster_mode = self._deploy_mode_of(conn) == "cluster"
        self.run_id = new_run_id()
        self.application = self.application or packaging.job_script(self.job_script)
        if self.ship_py_files:
            self.py_files = ",".join([packaging.py_files_zip(), *([self.py_files] if self.py_files else [])])
        self.conf = with_jit_conf(local_python_conf(conn, dict(self.conf or {}), self.env_vars))
        result_path = None if cluster_mode else os.path.join(workdir, "result.json")
        options = self.job_options()
        options.run_id, options.result_json = self.run_id, result_path
        self.application_args = [*options.to_args(), *(str(a) for a in self.extra_args or [])]
        return result_path

    def execute(self, context: Any) -> dict[str, Any]:
        conn = self.require_connection()
        check_master_reachable(master_of(conn), self._conn_id)
        self._hook = None  # built by SparkSubmitOperator.execute from this run's arguments, kept for on_kill
        workdir = tempfile.mkdtemp(prefix="zorder-job-")
        try:
            result_path = self.prepare(conn, workdir)
            self.log.info("%s job on %s: run %s", self.job_label, self.table, self.run_id)
            try:
                super().execute(context)
            except AirflowException:
                written = self._read_result(result_path) if result_path else None
                if written:
                    self.check_result(written)  # the job's own reason beats spark-submit's exit code
                raise
            finally:
                if self._hook is not None:
                    self.spark_app_url = self._hook.app_url()
            result = self._read_result(result_path) if result_path else self._cluster_mode_result()
            if result is None:
                raise AirflowException(
                    f"spark-submit succeeded but the {self.job_label} job wrote no result to "
                    f"{result_path}; see the task log for the job's output"
                )
        finally:
            shutil.rmtree(workdir, ignore_errors=True)
        self.check_result(result)
        result["spark"] = self._spark_info()
        self.enrich_result(result)
        self._emit_asset_events(context, result)
        return result

    def _read_result(self, path: str) -> dict[str, Any] | None:
        try:
            return json.loads(Path(path).read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        except ValueError as exc:
            raise AirflowException(f"the {self.job_label} job's result {path} is not valid JSON: {exc}") from exc

    def _cluster_mode_result(self) -> dict[str, Any]:
        """What can be known without the driver's result file (it stays on the cluster)."""
        note = (
            "deploy mode cluster: the driver ran on the cluster, so its JSON result file is not available "
            "on the Airflow worker"
        )
        found = None
        try:
            found = self.result_from_store(self.run_id or "")
        except Exception as exc:  # noqa: BLE001 - reading the store is best effort; say why it failed
            note += f"; the run's record in the stats store could not be read ({type(exc).__name__}: {exc})"
        if found is not None:
            return {**found, "result_available": False, "source": "stats store", "note": note}
        return {
            "status": "submitted",
            "table": self.table,
            "run_id": self.run_id,
            "result_available": False,
            "note": note + "; see the Spark application's logs for the result",
        }

    def _spark_info(self) -> dict[str, Any]:
        hook = self._hook
        if hook is None:
            return {}
        return {
            "master": hook.master,
            "deploy_mode": hook.deploy_mode,
            "application_id": hook.application_id or hook._yarn_application_id or hook._driver_id,
            "app_url": hook.app_url(),
        }

    def _emit_asset_events(self, context: Any, result: dict[str, Any]) -> None:
        assets = [o for o in self.outlets or [] if isinstance(o, Asset)]
        if not assets:
            return
        extra = self.asset_extra(result)
        for asset in assets:
            context["outlet_events"][asset].extra.update(extra)

    # ----------------------------------------------------------------------- hook

    def _get_hook(self) -> SparkJobHook:
        """The provider's hook (same parameters as SparkSubmitOperator passes) that also notes the app's URL."""
        hook = SparkJobHook(
            conf=self.conf,
            conn_id=self._conn_id,
            files=self.files,
            py_files=self.py_files,
            archives=self._archives,
            driver_class_path=self.driver_class_path,
            jars=self.jars,
            java_class=self._java_class,
            packages=self.packages,
            exclude_packages=self.exclude_packages,
            repositories=self._repositories,
            total_executor_cores=self._total_executor_cores,
            executor_cores=self._executor_cores,
            executor_memory=self._executor_memory,
            driver_memory=self._driver_memory,
            keytab=self.keytab,
            principal=self.principal,
            proxy_user=self.proxy_user,
            name=self.name,
            num_executors=self._num_executors,
            status_poll_interval=self._status_poll_interval,
            application_args=self.application_args,
            env_vars=self.env_vars,
            verbose=self._verbose,
            spark_binary=self._spark_binary,
            properties_file=self.properties_file,
            yarn_queue=self._yarn_queue,
            deploy_mode=self._deploy_mode,
            use_krb5ccache=self._use_krb5ccache,
            post_submit_commands=self.post_submit_commands,
            track_driver_via_k8s_api=self._track_driver_via_k8s_api,
            yarn_track_via_rm_api=self._yarn_track_via_rm_api,
            yarn_rm_auth=self._yarn_rm_auth,
        )
        hook._connection["spark_binary"] = resolve_spark_binary(hook._connection["spark_binary"])
        return hook

    def on_kill(self) -> None:
        """Stop the Spark application through the hook (spark-submit process, standalone driver, YARN/K8s app)."""
        if self._hook is None:
            self.log.info("on_kill: no Spark application was submitted yet")
            return
        super().on_kill()
