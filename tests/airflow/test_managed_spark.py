"""The managed Spark services' own Airflow operators, built from a real ``spark_job_spec`` through
``airflow_zorder.managed_spark``, as docs/managed-spark.md shows them.

Real parts: the spec of a real small table (its artifacts really copied to a ``file:`` prefix), the providers'
operators (cncf-kubernetes, amazon, databricks) with their own template rendering and payload code, a
``dag.test()`` on a real SQLite metadata DB passing the definitions through XCom, ``SparkJobResultSensor``, botocore's
own validation of the EMR Serverless ``StartJobRun`` request and google-cloud-dataproc's ``SubmitJobRequest``.
Mocked, because the services cannot run here (no network, no Kubernetes, EMR, Dataproc or Databricks): the
operators' ``execute``, replaced by a recorder of the definition it would send (and, for EMR, a job that leaves
its result where ``--result-json`` says); for Dataproc only the API client, so the operator and its hook run and the
request they build goes through google-cloud-dataproc's own ``SubmitJobRequest``. The Google provider comes with the
``google`` extra (installed by ``make test``, not by ``make test-lowest``: its test skips there).
"""

from __future__ import annotations

import copy
import datetime as dt
from pathlib import Path
from typing import Any

import pytest
from dag_bundles import dag_module

from airflow_zorder import spark_job_spec
from airflow_zorder.evaluation.sample_data import write_table
from airflow_zorder.managed_spark import databricks_run, dataproc_job, emr_serverless_job, spark_application

DAG_FILE = Path(__file__).parent / "managed_spark_dags" / "zorder_managed_spark_dags.py"
COLUMNS = ["user_id", "product_id"]
USER_CONF = {"spark.executor.memory": "3g", "spark.driver.extraJavaOptions": "-Xss4m -Dzorder.test=1"}


@pytest.fixture(scope="module")
def table(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = str(tmp_path_factory.mktemp("managed") / "events")
    write_table(path, rows=200, files_per_partition=2)
    return path


@pytest.fixture(scope="module")
def artifacts(tmp_path_factory: pytest.TempPathFactory) -> str:
    return f"file://{tmp_path_factory.mktemp('artifacts')}/zorder/jobs"


@pytest.fixture(scope="module")
def spec(table: str, artifacts: str) -> dict[str, Any]:
    return spark_job_spec(
        "cluster", table=table, columns=COLUMNS, curve="hilbert", partitions=["day=2024-01-01"], conf=USER_CONF,
        artifacts=artifacts,
    )  # fmt: skip


def assert_carries(spec: dict, *, entry_point: str, py_files: list[str], arguments: list[str], conf: dict) -> None:
    """The definition runs the spec: same entry point and py-files, every argument in order, every conf entry."""
    assert entry_point == spec["entry_point"]
    assert py_files == spec["py_files"]
    assert arguments == spec["arguments"]
    assert {k: conf.get(k) for k in spec["conf"]} == spec["conf"]


def test_the_spec_is_staged_and_complete(spec: dict, artifacts: str) -> None:
    """What the services are given: both files copied under ``artifacts=``, the run's result flag and the JIT flag."""
    assert spec["entry_point"] == f"{artifacts}/cluster_table.py"
    assert [Path(p.removeprefix("file://")).is_file() for p in [spec["entry_point"], *spec["py_files"]]] == [True] * 2
    args = spec["arguments"]
    assert args[args.index("--result-json") + 1] == spec["result_location"]
    assert args[args.index("--run-id") + 1] == spec["run_id"]
    assert "-XX:-DontCompileHugeMethods" in spec["conf"]["spark.executor.extraJavaOptions"]
    assert spec["conf"]["spark.driver.extraJavaOptions"].startswith("-Xss4m -Dzorder.test=1")


# ------------------------------------------------------------------ the doc's DAG, run with dag.test()

CAPTURED: dict[str, Any] = {}


def _record_k8s(self: Any, context: Any) -> None:
    """SparkKubernetesOperator: the SparkApplication its launcher would create (the launcher's own body code)."""
    from airflow.providers.cncf.kubernetes.operators.custom_object_launcher import CustomObjectLauncher

    launcher = CustomObjectLauncher(
        name="zorder", namespace=self.namespace, kube_client=None, custom_obj_api=None,
        template_body=copy.deepcopy(self.template_body),
    )  # fmt: skip
    CAPTURED["k8s"] = launcher.body


def _record_emr(self: Any, context: Any) -> str:
    """EmrServerlessStartJobOperator: the rendered request; the 'job' leaves its result where --result-json says."""
    from spark_jobs.cli import emit_result

    CAPTURED["emr"] = {"job_driver": self.job_driver, "configuration_overrides": self.configuration_overrides}
    args = self.job_driver["sparkSubmit"]["entryPointArguments"]
    run_id = args[args.index("--run-id") + 1]
    emit_result({"status": "clustered", "run_id": run_id, "after": {"files": 2}}, args[args.index("--result-json") + 1])
    return "job-run-1"


class _RecordingDataprocClient:
    """The JobControllerClient the Dataproc hook would create: the request is coerced by the client library's own
    ``SubmitJobRequest`` (an unknown field or a wrong type raises) and kept; the job comes back as submitted."""

    def submit_job(self, request: Any, retry: Any = None, timeout: Any = None, metadata: Any = ()) -> Any:
        from google.cloud import dataproc_v1

        CAPTURED["dataproc"] = dataproc_v1.SubmitJobRequest(request)
        return dataproc_v1.Job(reference={"project_id": request["project_id"], "job_id": "zorder-job-1"})


def _has_google_provider() -> bool:
    try:
        import airflow.providers.google.cloud.hooks.dataproc  # noqa: F401
    except ImportError:
        return False
    return True


def _record_databricks(self: Any, context: Any) -> None:
    """DatabricksSubmitRunOperator: the payload it would POST to runs/submit (its own merge and normalisation)."""
    CAPTURED["databricks"] = self._prepare_submit_json(context)


@pytest.fixture(scope="module")
def doc_dag_run(table: str, artifacts: str, airflow_db: str) -> Any:
    from airflow.providers.amazon.aws.operators.emr import EmrServerlessStartJobOperator
    from airflow.providers.cncf.kubernetes.operators.spark_kubernetes import SparkKubernetesOperator
    from airflow.providers.databricks.operators.databricks import DatabricksSubmitRunOperator

    CAPTURED.clear()
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(SparkKubernetesOperator, "execute", _record_k8s)
        mp.setattr(EmrServerlessStartJobOperator, "execute", _record_emr)
        mp.setattr(DatabricksSubmitRunOperator, "execute", _record_databricks)
        if _has_google_provider():
            from airflow.providers.google.cloud.hooks.dataproc import DataprocHook

            mp.setattr(DataprocHook, "get_job_client", lambda self, region=None: _RecordingDataprocClient())
            conn = '{"conn_type": "google_cloud_platform", "extra": {"project": "zorder-project"}}'
            mp.setenv("AIRFLOW_CONN_GOOGLE_CLOUD_DEFAULT", conn)  # the hook's connection; no credentials are used
        with dag_module(DAG_FILE, "zorder-managed-spark-tests") as module:
            conf = {"table": table, "artifacts": artifacts, "columns": COLUMNS, "conf": USER_CONF}
            return module.dag.test(run_conf=conf, logical_date=dt.datetime(2026, 1, 2, tzinfo=dt.UTC))


def _xcoms(run: Any) -> dict[tuple[str, str], Any]:
    from airflow.models.xcom import XComModel
    from airflow.utils.session import create_session
    from sqlalchemy import select

    with create_session() as session:
        rows = session.scalars(
            select(XComModel).where(XComModel.dag_id == run.dag_id, XComModel.run_id == run.run_id)
        ).all()
        return {(r.task_id, r.key): XComModel.deserialize_value(r) for r in rows}


def test_the_doc_dag_runs_and_the_sensor_returns_the_runs_result(doc_dag_run: Any) -> None:
    from airflow.utils.session import create_session

    with create_session() as session:
        states = {ti.task_id: str(ti.state) for ti in doc_dag_run.get_task_instances(session=session)}
    launchers = ["on_k8s", "on_emr", "on_databricks", *(["on_dataproc"] if _has_google_provider() else [])]
    assert states == dict.fromkeys(["job_spec", *launchers, "result"], "success")
    xcoms = _xcoms(doc_dag_run)
    spec = xcoms[("job_spec", "spec")]
    assert xcoms[("result", "return_value")] == {"status": "clustered", "run_id": spec["run_id"], "after": {"files": 2}}


def test_spark_kubernetes_operator_creates_the_specs_application(doc_dag_run: Any) -> None:
    spec = _xcoms(doc_dag_run)[("job_spec", "spec")]
    app = CAPTURED["k8s"]
    assert (app["apiVersion"], app["kind"]) == ("sparkoperator.k8s.io/v1beta2", "SparkApplication")
    body = app["spec"]
    assert (body["type"], body["mode"]) == ("Python", "cluster")
    assert_carries(
        spec, entry_point=body["mainApplicationFile"], py_files=body["deps"]["pyFiles"],
        arguments=body["arguments"], conf=body["sparkConf"],
    )  # fmt: skip


def test_emr_serverless_operator_sends_the_spec(doc_dag_run: Any) -> None:
    spec = _xcoms(doc_dag_run)[("job_spec", "spec")]
    sent = CAPTURED["emr"]
    submit = sent["job_driver"]["sparkSubmit"]
    params = submit["sparkSubmitParameters"].split()
    assert params[0] == "--py-files"
    (defaults,) = sent["configuration_overrides"]["applicationConfiguration"]
    assert defaults["classification"] == "spark-defaults"
    assert_carries(
        spec, entry_point=submit["entryPoint"], py_files=params[1].split(","), arguments=submit["entryPointArguments"],
        conf=defaults["properties"],
    )  # fmt: skip
    # botocore's own check of the StartJobRun request (field names, types), as boto3 does before sending
    import botocore.session
    from botocore.validate import ParamValidator

    shape = botocore.session.get_session().get_service_model("emr-serverless").operation_model("StartJobRun")
    request = {
        "applicationId": "00fabcdefghij123",
        "clientToken": "t",
        "executionRoleArn": "arn:aws:iam::123456789012:role/zorder-job",
        "jobDriver": sent["job_driver"],
        "configurationOverrides": sent["configuration_overrides"],
    }
    report = ParamValidator().validate(request, shape.input_shape)
    assert not report.has_errors(), report.generate_report()


def test_databricks_operator_posts_the_spec(doc_dag_run: Any) -> None:
    spec = _xcoms(doc_dag_run)[("job_spec", "spec")]
    payload = CAPTURED["databricks"]
    task = payload["spark_python_task"]
    cluster = payload["new_cluster"]
    zips = cluster["spark_env_vars"]["PYTHONPATH"].split(":")
    assert zips == [f"/Volumes/main/ops/zorder_jobs/{Path(p).name}" for p in spec["py_files"]]
    assert_carries(
        spec, entry_point=task["python_file"], py_files=spec["py_files"], arguments=task["parameters"],
        conf=cluster["spark_conf"],
    )  # fmt: skip
    # normalise_json_content sends numbers as strings, as the Jobs API accepts them
    assert cluster["num_workers"] == "2" and payload["run_name"] == f"zorder-cluster-{spec['run_id']}"


def test_dataproc_operator_submits_the_spec(doc_dag_run: Any) -> None:
    """DataprocSubmitJobOperator and its hook, real: the request they send to Dataproc's JobController."""
    pytest.importorskip("airflow.providers.google.cloud.operators.dataproc", reason="the google extra")
    xcoms = _xcoms(doc_dag_run)
    spec = xcoms[("job_spec", "spec")]
    request = CAPTURED["dataproc"]
    assert (request.project_id, request.region) == ("zorder-project", "europe-west1")
    assert request.job.placement.cluster_name == "zorder"
    job = request.job.pyspark_job
    assert_carries(
        spec, entry_point=job.main_python_file_uri, py_files=list(job.python_file_uris), arguments=list(job.args),
        conf=dict(job.properties),
    )  # fmt: skip
    assert xcoms[("on_dataproc", "return_value")] == "zorder-job-1"


def test_dataproc_job_is_a_valid_submit_request(spec: dict) -> None:
    """The ``job`` DataprocSubmitJobOperator passes to ``JobControllerClient.submit_job(request={..., "job": job})``:
    proto-plus refuses an unknown field name, so this checks every name and type."""
    from google.cloud import dataproc_v1

    request = dataproc_v1.SubmitJobRequest(
        project_id="p", region="europe-west1", job=dataproc_job(spec, cluster_name="c")
    )
    job = request.job.pyspark_job
    assert request.job.placement.cluster_name == "c"
    assert_carries(
        spec, entry_point=job.main_python_file_uri, py_files=list(job.python_file_uris), arguments=list(job.args),
        conf=dict(job.properties),
    )  # fmt: skip
    with pytest.raises(ValueError):
        dataproc_v1.SubmitJobRequest(job={"pyspark_job": {"main_python_file": "gs://b/x.py"}})


def test_spark_kubernetes_templates_a_literal_application_as_files(spec: dict, airflow_db: str) -> None:
    """Why the doc passes the SparkApplication through XCom: the operator's template_ext ('json', no dot) makes
    Jinja load every string ending in 'json' (``--result-json``) as a template file."""
    from airflow.providers.cncf.kubernetes.operators.spark_kubernetes import SparkKubernetesOperator
    from airflow.sdk import DAG
    from jinja2 import TemplateNotFound

    with DAG("k8s_literal", schedule=None) as dag:
        op = SparkKubernetesOperator(task_id="t", template_spec=spark_application(spec, image="i"))
    with pytest.raises(TemplateNotFound, match="--result-json"):
        op.render_template_fields({}, jinja_env=dag.get_template_env())


def test_builders_refuse_worker_paths_and_bad_input(table: str) -> None:
    local = spark_job_spec("collect_stats", table=table, columns=COLUMNS)
    for build in (
        lambda s: spark_application(s, image="i"),
        emr_serverless_job,
        lambda s: dataproc_job(s, cluster_name="c"),
        lambda s: databricks_run(s, new_cluster={}, node_dir="/Volumes/a/b/c"),
    ):
        with pytest.raises(ValueError, match=r"is a path on the Airflow worker.*artifacts="):
            build(local)
        with pytest.raises(
            ValueError, match=r"not a spark_job_spec\(...\) result \(missing py_files, arguments, conf\)"
        ):
            build({"entry_point": "s3://b/x.py"})
    staged = {**local, "entry_point": "s3://b/x.py", "py_files": ["s3://b/z.zip"]}
    with pytest.raises(ValueError, match="node_dir 'Volumes/a' must be the absolute path"):
        databricks_run(staged, new_cluster={}, node_dir="Volumes/a")
    kept = databricks_run(staged, new_cluster={"spark_env_vars": {"PYTHONPATH": "/opt/lib"}}, node_dir="/Volumes/a")
    assert kept["new_cluster"]["spark_env_vars"]["PYTHONPATH"] == "/Volumes/a/z.zip:/opt/lib"
