"""The DAG of docs/managed-spark.md, run by tests/airflow/test_managed_spark.py with dag.test(): a task builds
the job spec at run time and the service-specific definitions from it (``airflow_zorder.managed_spark``); each
service's real operator receives its definition through XCom; ``SparkJobResultSensor`` reads the run's result.

The test replaces the operators' ``execute`` (the services cannot run here); everything up to it is real.
It lives in a DAG bundle of its own because dag.test() in Airflow 3 only runs DAGs parsed from a bundle.
"""

from __future__ import annotations

import datetime as dt

from airflow.providers.amazon.aws.operators.emr import EmrServerlessStartJobOperator
from airflow.providers.cncf.kubernetes.operators.spark_kubernetes import SparkKubernetesOperator
from airflow.providers.databricks.operators.databricks import DatabricksSubmitRunOperator
from airflow.sdk import DAG, task

from airflow_zorder import spark_job_spec
from airflow_zorder.managed_spark import databricks_run, dataproc_job, emr_serverless_job, spark_application
from airflow_zorder.sensors import SparkJobResultSensor

try:  # the google extra: make test installs it, make test-lowest leaves it out
    from airflow.providers.google.cloud.operators.dataproc import DataprocSubmitJobOperator
except ImportError:
    DataprocSubmitJobOperator = None

PARAMS = {"table": "", "artifacts": "", "columns": ["user_id", "product_id"], "conf": {}}
NEW_CLUSTER = {"spark_version": "18.0.x-scala2.13", "node_type_id": "i3.xlarge", "num_workers": 2}


with DAG(
    "zorder_managed_spark", schedule=None, start_date=dt.datetime(2026, 1, 1), params=PARAMS, catchup=False
) as dag:

    @task(multiple_outputs=True)
    def job_spec(params: dict | None = None) -> dict:
        """Built at run time: one run id per run, the artifacts staged where the services read them."""
        spec = spark_job_spec(
            "cluster",
            table=params["table"],
            columns=params["columns"],
            curve="hilbert",
            conf=params["conf"],
            artifacts=params["artifacts"],
        )
        return {
            "run_id": spec["run_id"],
            "spec": spec,
            "spark_application": spark_application(spec, image="registry.example.com/spark-py:4.1.1"),
            **emr_serverless_job(spec),
            "databricks": databricks_run(spec, new_cluster=NEW_CLUSTER, node_dir="/Volumes/main/ops/zorder_jobs"),
            "dataproc": dataproc_job(spec, cluster_name="zorder"),
        }

    spec = job_spec()
    on_k8s = SparkKubernetesOperator(
        task_id="on_k8s", namespace="spark-jobs", template_spec=spec["spark_application"], get_logs=False
    )
    on_emr = EmrServerlessStartJobOperator(
        task_id="on_emr",
        application_id="00fabcdefghij123",
        execution_role_arn="arn:aws:iam::123456789012:role/zorder-job",
        job_driver=spec["job_driver"],
        configuration_overrides=spec["configuration_overrides"],
    )
    on_databricks = DatabricksSubmitRunOperator(task_id="on_databricks", json=spec["databricks"])
    launchers = [on_k8s, on_emr, on_databricks]
    if DataprocSubmitJobOperator is not None:
        launchers.append(
            DataprocSubmitJobOperator(
                task_id="on_dataproc",
                project_id="zorder-project",
                region="europe-west1",
                job=spec["dataproc"],
                asynchronous=True,
            )
        )
    result = SparkJobResultSensor(
        task_id="result", table="{{ params.table }}", run_id=spec["run_id"], mode="poke", poke_interval=0.5, timeout=30
    )
    launchers >> result
