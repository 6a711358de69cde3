"""What the clustering and the statistics operators share: running one ``spark_jobs`` entry point.

Both are the Spark provider's :class:`SparkSubmitOperator`, so every spark-submit parameter (``conn_id``,
``conf``, executor/driver cores and memory, ``num_executors``, ``deploy_mode``, ``principal``/``keytab``,
``env_vars``, ``verbose``, ``spark_binary``, ...) passes through unchanged. On top of it the operator

* ships the job itself: the entry point script and a ``--py-files`` zip of the Airflow-free code
  (:mod:`airflow_zorder.packaging`); the user packages nothing;
* turns typed, templated parameters (``table``, ``columns``, ...) into the job's options
  (:mod:`airflow_zorder.core.jobs.options`, the contract the jobs parse their flags with);
* returns the job's JSON result (``--result-json``) as XCom and keeps it on ``job_result``;
* attaches the metrics to the asset events of declared ``outlets``;
* refuses a missing Spark connection instead of letting the hook fall back to master ``yarn``;
* publishes the Spark application's link while the job runs, and the History Server's page after.

Deploy mode ``cluster``: the driver runs on the cluster, so it writes its result into the table's stats
store (``<stats location>/results/<run id>.json``, :mod:`airflow_zorder.core.jobs.job_results`) and the
operator reads it back from there. When that file is not there (a catalog table without
``stats_location``, a store the worker cannot read), it falls back to the run's record in the stats
store, or else returns only the run id, the Spark application id and a note saying the result is
unavailable.

YARN cluster mode with the Spark provider's ``durable=True`` (its default from Airflow 3.3) needs
``yarn_track_via_rm_api=True``: the operator turns it on when the Spark connection names the
ResourceManager (extra ``yarn_resourcemanager_webapp_address``), and otherwise fails before submitting,
naming the two fixes. Retries (``durable``): the run id of the submitted job is kept in the task state
store with the job's id, so a retry that reconnects to it, or finds it already succeeded, reports that
run's result; a fresh submission gets a fresh run id. See docs/yarn.md.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import sys
import tempfile
from collections.abc import Mapping, Sequence
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator
from airflow.sdk import Asset, BaseHook
from airflow.sdk.exceptions import AirflowException, AirflowNotFoundException

from airflow_zorder import packaging, spark_jars
from airflow_zorder.core.errors import InvalidInputError, JarsNotFetchedError
from airflow_zorder.core.iceberg.catalogs import write_catalog_file
from airflow_zorder.core.jobs import params
from airflow_zorder.core.jobs.job_results import read_result, result_location
from airflow_zorder.core.jobs.jvm_options import with_jit_conf
from airflow_zorder.core.jobs.option_spec import JobOptions, OperatorParam
from airflow_zorder.core.jobs.options import stats_location_for
from airflow_zorder.core.jobs.run_ids import new_run_id
from airflow_zorder.core.storage.locations import is_path_table, parse_location
from airflow_zorder.hooks.iceberg_catalog import check_one_catalog, connection_catalog
from airflow_zorder.hooks.spark_job import SparkJobHook, resolve_spark_binary
from airflow_zorder.lineage import ZorderLineageMixin
from airflow_zorder.links import SparkApplicationLink, TableHealthLink, history_server_link, push_link
from airflow_zorder.table_access import table_access

if TYPE_CHECKING:
    from airflow_zorder.hooks.file_stats import FileStatsHook

RUN_STATE_KEY = "zorder_run"  # task state store: {"external_id", "run_id"} of the job this task submitted last
RM_ADDRESS_EXTRA = "yarn_resourcemanager_webapp_address"  # the Spark provider's connection extra for the RM
HISTORY_SERVER_EXTRA = "history_server_url"  # Spark connection extra: the Spark History Server's base URL


class SparkJobFailed(AirflowException):
    """The Spark job ran and reported a failure; the message is the job's own one-line reason.

    An Airflow exception (the task fails as Airflow expects), so outside ``airflow_zorder.core.errors``; it carries
    the job's ``result`` and, when the job failed with an error, that error's ``error_type`` (its class, as in
    docs/troubleshooting.md) and ``error_category`` (its category in ``airflow_zorder.core.errors``).
    """

    def __init__(self, message: str, result: Mapping[str, Any] | None = None) -> None:
        super().__init__(message)
        self.result: dict[str, Any] = dict(result or {})
        self.error_type: str | None = self.result.get("error_type")
        self.error_category: str | None = self.result.get("error_category")


def yarn_cluster_tracking(conn: Any, deploy_mode: str, durable: bool, track_via_rm_api: bool, conn_id: str) -> bool:
    """Whether YARN cluster mode must track the application through the ResourceManager's REST API.

    The Spark provider refuses YARN cluster mode with ``durable=True`` unless ``yarn_track_via_rm_api=True``
    (a retry finds its application through the RM). True turns it on: the connection names the RM
    (extra ``yarn_resourcemanager_webapp_address``). Without that address this fails before anything is
    submitted, naming the two fixes. False: nothing to change (not YARN cluster mode, not durable, or
    already on).
    """
    if track_via_rm_api or not durable or deploy_mode != "cluster" or "yarn" not in master_of(conn):
        return False
    if str(conn.extra_dejson.get(RM_ADDRESS_EXTRA) or "").strip():
        return True
    raise AirflowException(
        f"YARN cluster mode with durable=True (the Spark provider's default) tracks the application through the "
        f"YARN ResourceManager's REST API, but Spark connection {conn_id!r} does not name it; nothing was "
        f"submitted. Either add the extra {RM_ADDRESS_EXTRA!r} to the connection (e.g. "
        f'{{"{RM_ADDRESS_EXTRA}": "http://rm.example.com:8088"}}: the operator then sets '
        "yarn_track_via_rm_api=True), or pass durable=False (spark-submit then waits for the application, and a "
        "retry submits it again)."
    )


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


def store_conf(conf: dict[str, Any], table: str, storage_conn_id: str | None) -> dict[str, Any]:
    """``conf`` plus the storage connection's Hadoop settings as ``spark.hadoop.*`` (``conf``'s own win)."""
    if not storage_conn_id:
        return conf
    from airflow_zorder.hooks.connections import store_options

    location = table if is_path_table(table) else None
    hadoop = store_options(storage_conn_id, location).hadoop
    return {**{f"spark.hadoop.{k}": v for k, v in hadoop.items()}, **conf}


def local_connector(
    master: str, table: str, jars: str | None, conf: dict[str, Any]
) -> tuple[str | None, dict[str, Any]]:
    """On a ``local`` master, ``jars`` plus the cached connector of the table's store (``make jars``) and ``conf``
    plus the settings that connector needs on this Spark line (``conf``'s own win); a cluster brings its own
    connectors and settings (docs/connections.md), so there both are left as given."""
    if not master.startswith("local") or not is_path_table(table):
        return jars, conf
    store = spark_jars.store_of(parse_location(table).scheme)
    if store is None:
        return jars, conf
    try:
        found = spark_jars.jars_for([store])
    except JarsNotFetchedError as exc:
        raise AirflowException(f"{table} is on {store}, which the local Spark cannot open yet: {exc}") from exc
    settings = {f"spark.hadoop.{k}": v for k, v in spark_jars.connector_settings([store]).items()}
    return ",".join([*([jars] if jars else []), *found]), {**settings, **conf}


def master_of(conn: Any) -> str:
    """The master URL spark-submit gets from a connection (the Spark provider's own rule)."""
    if conn.conn_type == "spark" and conn.host and ("://" in conn.host or not conn.port):
        master = conn.host
    else:
        master = f"{conn.conn_type}://{conn.host or ''}"
    return f"{master}:{conn.port}" if conn.port else master


def check_deploy_mode(master: str, deploy_mode: str, conn_id: str) -> None:
    """Refuse deploy mode ``cluster`` where spark-submit cannot run the jobs in it: a ``local[...]`` master has no
    cluster to place the driver on, and a standalone master (``spark://``) does not run Python applications there."""
    if deploy_mode != "cluster":
        return
    if master.startswith("local"):
        where = f"master {master} runs everything in one local JVM"
    elif master.startswith("spark://"):
        where = f"Spark standalone master {master} does not run Python applications in deploy mode cluster"
    else:
        return
    raise AirflowException(
        f"deploy mode cluster (deploy_mode=, or the connection's deploy-mode extra) cannot work here: {where}; "
        f"nothing was submitted. Use deploy mode client (the default) with connection {conn_id!r}, or a YARN or "
        "Kubernetes master for cluster mode."
    )


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


class SparkZorderJobOperator(ZorderLineageMixin, SparkSubmitOperator):
    """Run one of airflow-zorder's Spark jobs with spark-submit (base class; see the two operators).

    :param table: Parquet directory path/URI or catalog table ``db.table`` (templated).
    :param application: override the job script (e.g. a ``local://`` or ``s3://`` copy reachable from
        the cluster in deploy mode ``cluster``); default: the installed ``spark_jobs`` script.
    :param ship_py_files: add the zip of the Airflow-free code to ``--py-files`` (default True).
    :param extra_args: more job flags, appended verbatim (templated).
    :param conn_id: the Spark connection; it must exist (a missing one fails the task, it does not
        fall back to YARN). All other :class:`SparkSubmitOperator` parameters pass through.
    :param history_server_url: the Spark History Server (e.g. ``http://shs.example.com:18080``; templated):
        once the job ended, the "Spark application" link points at ``<url>/history/<application id>/``.
        Default: the Spark connection's extra ``history_server_url``, else the ``spark.yarn.historyServer.address``
        of ``conf``; none of them: the link keeps the live URL (YARN's tracking URL, the driver's UI).
    :param iceberg_catalog: ``table`` is ``namespace.table`` of this pyiceberg catalog (``--iceberg-catalog``;
        templated); its properties come from ``.pyiceberg.yaml`` or ``PYICEBERG_CATALOG__<NAME>__<KEY>`` variables
        where the Spark driver runs (docs/iceberg.md).
    :param iceberg_conn_id: instead, an Airflow ``iceberg`` connection (the Iceberg provider's; templated): its
        catalog's properties are written to a file readable by the task's user only and shipped with ``--files``
        (``--iceberg-catalog-file``), so no property is on spark-submit's command line; removed after the run.
    :param storage_conn_id: a standard connection (``aws`` for ``s3a://``; templated) whose credentials, region and
        endpoint the job's Spark uses for the table's store: set as ``spark.hadoop.fs.s3a.*`` conf unless ``conf``
        sets them (Spark's UI redacts keys and secrets). None: the cluster's own (an instance profile, say).
        On a ``local`` master the store's connector jars come from the project's cache (``make jars``).

    Attributes set by :meth:`execute`: ``run_id`` (the job's run; a retry that reconnects takes the earlier
    try's), ``job_result`` (the successful result, also returned as XCom), ``spark_app_url`` (the link).
    """

    job_script: ClassVar[str] = ""
    job_label: ClassVar[str] = ""
    options_class: ClassVar[type[JobOptions]] = JobOptions  # the job's options, declared once
    declared: ClassVar[Sequence[OperatorParam]] = ()  # declared_params(options_class, the operator's own)
    template_fields: Sequence[str] = (
        *SparkSubmitOperator.template_fields,
        "table",
        "columns",
        "extra_args",
        "history_server_url",
        "iceberg_catalog",
        "iceberg_conn_id",
        "storage_conn_id",
    )
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
        history_server_url: str | None = None,
        iceberg_catalog: str | None = None,
        iceberg_conn_id: str | None = None,
        storage_conn_id: str | None = None,
        **kwargs: Any,
    ) -> None:
        if "application_args" in kwargs:
            raise InvalidInputError(
                f"{type(self).__name__} builds the job's arguments itself: use its typed parameters, "
                "and extra_args for any other job flag"
            )
        own = {p.name: kwargs.pop(p.name, p.default) for p in self.declared if p.name != "columns"}
        super().__init__(
            application=application or "", name=name or f"airflow-zorder-{self.job_label}", conn_id=conn_id, **kwargs
        )
        self.table = table
        self.columns = columns
        for name, value in own.items():
            setattr(self, name, value)
        self.extra_args = extra_args
        self.ship_py_files = ship_py_files
        self.history_server_url = history_server_url
        check_one_catalog(iceberg_catalog, iceberg_conn_id)
        self.iceberg_catalog = iceberg_catalog
        self.iceberg_conn_id = iceberg_conn_id
        self.storage_conn_id = storage_conn_id
        self.run_id: str | None = None
        self.spark_app_url: str | None = None
        self.job_result: dict[str, Any] | None = None
        self._hook: SparkJobHook | None = None
        self._link_ti: Any = None
        self._history_link: str | None = None
        self._submitted_id: Any = None
        self.given_plan: dict[str, Any] | None = None  # the plan document job_options() read, if one
        params.check_params(self.options_class, self.job_values())  # literal values now, rendered ones at execution

    def job_values(self) -> dict[str, Any]:
        """The (rendered) parameters the job's options are made of, named as the operator names them."""
        names = params.spec_params(self.options_class)
        return {n: getattr(self, n) for n in names if n != "table"} | {"table": str(self.table)}

    # ----------------------------------------------------------------------- what subclasses provide

    def job_options(self) -> JobOptions:
        """The job's options from the rendered parameters (``core.jobs.params.job_options_from``); a given plan's
        checked document is kept on ``given_plan``."""
        opts, self.given_plan = params.job_options_from(self.options_class, self.job_values(), self.run_id)
        return opts

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
                f"{result.get('error')} ({result.get('error_type')})",
                result,
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

    def _stats_location(self) -> str | None:
        """Where the job keeps its statistics and run results (None: a catalog table without ``stats_location``)."""
        return stats_location_for(str(self.table), getattr(self, "stats_location", None))

    @cached_property
    def stats_hook(self) -> FileStatsHook:
        """The table's stats store with ``stats_conn_id``'s credentials, one hook per task: the plan file and deploy mode
        ``cluster``'s result go through it, so its connection is looked up once (on first use)."""
        from airflow_zorder.hooks.file_stats import FileStatsHook

        return FileStatsHook(
            str(self.table), getattr(self, "stats_location", None), getattr(self, "stats_conn_id", None)
        )

    def prepare(self, conn: Any, workdir: str) -> str | None:
        """Set the application, py-files, conf and the job's arguments; returns the local result file's path.

        ``None`` in deploy mode ``cluster``: the driver writes its result into the stats store instead
        (:func:`~airflow_zorder.core.jobs.job_results.result_location`), when the stats location is known.
        """
        cluster_mode = self._deploy_mode_of(conn) == "cluster"
        self.run_id = new_run_id()
        self.application = self.application or packaging.job_script(self.job_script)
        if self.ship_py_files:
            self.py_files = ",".join([packaging.py_files_zip(), *([self.py_files] if self.py_files else [])])
        self.conf = with_jit_conf(local_python_conf(conn, dict(self.conf or {}), self.env_vars))
        self.conf = store_conf(self.conf, str(self.table), self.storage_conn_id)
        self.jars, self.conf = local_connector(master_of(conn), str(self.table), self.jars, self.conf)
        result_path = None if cluster_mode else os.path.join(workdir, "result.json")
        stats = self._stats_location() if cluster_mode else None
        options = self.job_options()
        options.run_id = self.run_id
        if self.iceberg_conn_id:
            options.iceberg_catalog, options.iceberg_catalog_file = self._ship_catalog(workdir, cluster_mode)
        options.result_json = result_location(stats, self.run_id) if stats else result_path
        self.application_args = [*options.to_args(), *(str(a) for a in self.extra_args or [])]
        return result_path

    def _ship_catalog(self, workdir: str, cluster_mode: bool) -> tuple[str, str]:
        """The ``iceberg`` connection's catalog as ``(name, properties file)``: the file (owner-only) goes with
        ``--files``; the driver finds it by name in cluster mode, by its path in client mode."""
        name, properties = connection_catalog(str(self.iceberg_conn_id))
        path = write_catalog_file(os.path.join(workdir, "iceberg-catalog.json"), name, properties)
        self.files = ",".join([*([self.files] if self.files else []), path])
        return name, os.path.basename(path) if cluster_mode else path

    def execute(self, context: Any) -> dict[str, Any]:
        conn = self.require_connection()
        check_deploy_mode(master_of(conn), self._deploy_mode_of(conn), self._conn_id)
        check_master_reachable(master_of(conn), self._conn_id)
        self._hook = None  # built by SparkSubmitOperator.execute from this run's arguments, kept for on_kill
        self._link_ti, self._submitted_id = context.get("ti"), None
        self.spark_app_url = self.job_result = self._history_link = None
        if yarn_cluster_tracking(
            conn,
            self._deploy_mode_of(conn),
            bool(getattr(self, "durable", False)),  # provider 6.1: no durable, no such check
            self._yarn_track_via_rm_api,
            self._conn_id,
        ):
            self.log.info("YARN cluster mode: tracking the application through the ResourceManager's REST API")
            self._yarn_track_via_rm_api = True
        workdir = tempfile.mkdtemp(prefix="zorder-job-")
        try:
            result_path = self.prepare(conn, workdir)
            self.log.info("%s job on %s: run %s", self.job_label, self.table, self.run_id)
            try:
                super().execute(context)
            except (AirflowException, RuntimeError):
                written = self._read_result(result_path) if result_path else self._cluster_result_file()
                if written:
                    self.check_result(written)  # the job's own reason beats spark-submit's exit code
                raise
            finally:
                self._finish_link(conn)
            result = self._read_result(result_path) if result_path else self._cluster_mode_result()
            if result is None:
                raise AirflowException(
                    f"spark-submit succeeded but the {self.job_label} job wrote no result to "
                    f"{result_path}; see the task log for the job's output"
                )
        finally:
            shutil.rmtree(workdir, ignore_errors=True)
        self.check_result(result)
        # the catalog the table was named in, so the UI finds the table again from this XCom
        result.update(table_access(iceberg_catalog=self.iceberg_catalog, iceberg_conn_id=self.iceberg_conn_id))
        self.job_result = result
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

    def _cluster_result_file(self) -> dict[str, Any] | None:
        """The result the driver wrote into the stats store (deploy mode ``cluster``); None when absent or unreadable."""
        stats = self._stats_location()
        if not stats or not self.run_id:
            return None
        try:
            filesystem = self.stats_hook.get_conn() if getattr(self, "stats_conn_id", None) else None
            found = read_result(stats, self.run_id, filesystem)
        except Exception as exc:  # noqa: BLE001 - best effort: the stats store's record is the fallback
            self.log.warning("the job's result %s could not be read: %s", result_location(stats, self.run_id), exc)
            return None
        if found is not None:
            self.log.info("the job's result read from %s", result_location(stats, self.run_id))
        return found

    def _cluster_mode_result(self) -> dict[str, Any]:
        """The driver's result from the stats store, else what can be known without it (deploy mode ``cluster``)."""
        written = self._cluster_result_file()
        if written is not None:
            return written
        note = (
            "deploy mode cluster: the driver ran on the cluster and its JSON result file is not available "
            "to the Airflow worker"
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
            **({"history_url": self._history_link} if self._history_link else {}),
        }

    # ----------------------------------------------------------------------- the Spark application's link

    def _note_app_url(self, url: str) -> None:
        """spark-submit's log named where the application can be watched: show it in the UI now."""
        self.spark_app_url = url
        if push_link(SparkApplicationLink(), self._link_ti, url):
            self.log.info("Spark application link: %s", url)

    def _history_server(self, conn: Any) -> str | None:
        """The History Server's base URL: the parameter, else the connection's extra, else Spark's YARN conf."""
        extra = conn.extra_dejson if conn is not None else {}
        conf = self.conf or {}
        for value in (
            self.history_server_url,
            extra.get(HISTORY_SERVER_EXTRA),
            conf.get("spark.yarn.historyServer.address"),
        ):
            if value and str(value).strip() not in ("", "None"):
                return str(value).strip()
        return None

    def _finish_link(self, conn: Any) -> None:
        """The job ended: point the link at the History Server's page of the application (when configured)."""
        hook = self._hook
        if hook is None:
            return
        self.spark_app_url = hook.app_url() or self.spark_app_url
        app_id = hook.application_id or hook._yarn_application_id
        history = history_server_link(self._history_server(conn), app_id)
        if history:
            self.spark_app_url = self._history_link = history
            push_link(SparkApplicationLink(), self._link_ti, history)
            self.log.info("Spark application link, now the History Server's: %s", history)

    # ----------------------------------------------------------------------- retries (durable)

    def submit_job(self, context: Any) -> Any:
        """Submit as the provider does, then keep this run's id with the job's id in the task state store."""
        external_id = super().submit_job(context)
        self._submitted_id = external_id
        store = context.get("task_state_store") if getattr(self, "durable", False) else None
        if store is not None and external_id is not None:
            store.set(RUN_STATE_KEY, {"external_id": external_id, "run_id": self.run_id})
        return external_id

    def poll_until_complete(self, external_id: Any, context: Any) -> None:
        self._resume_run(external_id, context)
        return super().poll_until_complete(external_id, context)

    def get_job_result(self, external_id: Any, context: Any) -> Any:
        self._resume_run(external_id, context)
        return super().get_job_result(external_id, context)

    def _resume_run(self, external_id: Any, context: Any) -> None:
        """An earlier try submitted this job (the provider reconnected to it, or found it succeeded): take its run id.

        The result is then read for that run, not for the run id this try prepared and never submitted.
        """
        if external_id is None or external_id == self._submitted_id:
            return
        hook = self._hook
        if hook is not None and hook._is_yarn and hook.deploy_mode == "cluster" and not hook._yarn_application_id:
            hook._yarn_application_id = str(external_id)  # for on_kill and the result's spark info
        store = context.get("task_state_store")
        saved = store.get(RUN_STATE_KEY) if store is not None else None
        if isinstance(saved, dict) and saved.get("external_id") == external_id and saved.get("run_id"):
            self.log.info("resuming job %s of an earlier try: its run is %s", external_id, saved["run_id"])
            self.run_id = str(saved["run_id"])
            return
        self.log.warning(
            "resuming job %s of an earlier try, but its run id was not stored with it: its result is looked up "
            "under this try's run id %s and may be unavailable",
            external_id,
            self.run_id,
        )

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
        hook.on_app_url = self._note_app_url
        return hook

    def on_kill(self) -> None:
        """Stop the Spark application through the hook (spark-submit process, standalone driver, YARN/K8s app)."""
        if self._hook is None:
            self.log.info("on_kill: no Spark application was submitted yet")
            return
        super().on_kill()
