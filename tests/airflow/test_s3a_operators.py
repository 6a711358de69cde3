"""The user's path on S3, end to end: a DAG of the provider's operators and sensor in a real ``dag.test()`` against a
local moto server. Both jobs run by real spark-submit on ``local[2]`` through ``s3a://`` (hadoop-aws and the AWS SDK
bundle handed over from the ``make jars`` cache), with S3A's credentials from an ordinary ``aws`` connection
(``storage_conn_id``); the sensor decides from the stats on S3 through the same connection."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.fs as pafs
import pytest
from dag_bundles import dag_module, forget_xcoms
from moto_s3 import BUCKET, write_partitioned_table
from table_checks import row_multiset

from airflow_zorder.core.stats import stats_store

pytestmark = pytest.mark.spark
DAG_FILE = Path(__file__).parent / "s3a_dags" / "zorder_s3a_operator_dags.py"


def test_operators_and_sensor_on_s3a_through_an_aws_connection(airflow_db, s3, tmp_path, monkeypatch):
    monkeypatch.setenv("AIRFLOW_CONN_AWS_S3A_LAKE", s3.connection_uri())
    monkeypatch.setenv("AIRFLOW_CONN_SPARK_S3A_LOCAL", json.dumps({"conn_type": "spark", "host": "local[2]"}))
    for var in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(var, raising=False)  # only the connection's keys reach S3
    s3.upload_dir(write_partitioned_table(tmp_path / "events"), "ops/events")
    table = f"s3a://{BUCKET}/ops/events"
    store = pafs.S3FileSystem(
        access_key=s3.access_key, secret_key=s3.secret_key, endpoint_override=s3.endpoint, region="us-east-1"
    )
    before = row_multiset(f"{BUCKET}/ops/events", filesystem=store)
    with dag_module(DAG_FILE, "zorder-s3a-operators") as module:
        try:
            run = module.dag.test(run_conf={"table": table})
            from airflow.utils.session import create_session

            with create_session() as session:
                states = {ti.task_id: str(ti.state) for ti in run.get_task_instances(session=session)}
                xcoms = {t: run.get_task_instance(t, session=session).xcom_pull(task_ids=t) for t in states}
        finally:
            forget_xcoms(module)
    assert states == {"collect_stats": "success", "check_overlap": "success", "recluster": "success"}, states
    assert xcoms["collect_stats"]["files_scanned"] == 0 and xcoms["collect_stats"]["files_total"] == 32
    assert xcoms["check_overlap"]["decision"] == "recluster" and xcoms["check_overlap"]["partitions"] == ["day=2"]
    assert xcoms["recluster"]["status"] == "clustered"
    assert row_multiset(f"{BUCKET}/ops/events", filesystem=store) == before, "rows equal after the run on S3"
    # day=2 was rewritten into 4 files, day=1 untouched; the run's event is in the stats store on S3
    days = {}
    for info in store.get_file_info(pafs.FileSelector(f"{BUCKET}/ops/events", recursive=True)):
        rel = info.path.split("/ops/events/", 1)[1]
        if info.type == pafs.FileType.File and not rel.startswith("_"):
            days.setdefault(rel.split("/", 1)[0], []).append(rel)
    assert (len(days["day=1"]), len(days["day=2"])) == (16, 4), days
    events = stats_store.load_events(f"s3://{BUCKET}/ops/events/_zorder/stats", store)
    assert xcoms["recluster"]["run_id"] in events["run_id"].to_pylist()
