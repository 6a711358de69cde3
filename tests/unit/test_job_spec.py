"""``airflow_zorder.spark_job_spec`` and the job results in the stats store (``core.jobs.job_results``).

The spec's arguments are compared with the operators' own ``job_options().to_args()`` for the same parameters
(the operators are only built, nothing is submitted); the jobs' argparse parses them back.  Files are written
for real: the plan and the copied artifacts on local disk, and on S3 through a local moto server.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

import airflow_zorder
from airflow_zorder import packaging
from airflow_zorder.core.jobs.job_results import RESULTS_DIR, read_result, result_location
from airflow_zorder.core.jobs.jvm_options import JIT_OPTION
from airflow_zorder.core.jobs.options import ClusterOptions, CollectOptions
from airflow_zorder.core.policy.incremental_stats import PLAN_FORMAT, PLAN_VERSION
from airflow_zorder.job_spec import job_option_names, spark_job_spec
from spark_jobs.cli import emit_result, is_store_result

COLUMNS = ["a", "b"]
CLUSTER_PARAMS = [
    {"table": "/data/events", "columns": "a,b"},
    {
        "table": "s3a://lake/events",
        "columns": COLUMNS,
        "partitions": ["day=1", {"day": "2"}],
        "curve": "hilbert",
        "target_file_size": "256MB",
        "num_ranges": 512,
        "salt_bits": 0,
        "verify": "full",
        "compression": "zstd",
        "retention_hours": 2.5,
        "lock_ttl": 30,
        "stats_location": "s3a://lake/stats/events",
        "incremental": "True",
        "target_ratio": "1.2",
        "max_rewrite_bytes": "1GB",
    },
    {
        "table": "/data/events",
        "columns": "a",
        "num_files": "3",  # full rewrites only
        "incremental": "False",
        "target_ratio": "None",
        "max_rewrite_bytes": "",
    },
    {"table": "db.events", "stats_location": "/stats/events", "columns": "", "action": "cleanup"},
]
COLLECT_PARAMS = [
    {"table": "/data/events"},
    {
        "table": "db.events",
        "columns": "a,b",
        "stats_location": "hdfs://nn/stats/events",
        "method": "scan",
        "stats_table": "ops.events_stats",
        "full": True,
        "keep_snapshots": 3,
        "parallelism": 8,
        "allow_errors": True,
    },
]


def a_plan(columns: list[str]) -> dict:
    """A plan document as the sensor hands it (``incremental_stats.check_plan`` accepts it)."""
    return {
        "format": PLAN_FORMAT,
        "version": PLAN_VERSION,
        "columns": columns,
        "files": 2,
        "bytes": 200,
        "partitions": [
            {"partition": "day=1", "bins": [{"paths": ["day=1/x.parquet", "day=1/y.parquet"], "num_output_files": 1}]}
        ],
    }


def operator_args(operator_cls, params: dict, run_id: str, result_json: str) -> list[str]:
    """The operator's own job arguments for ``params`` (run id and result file as the spec sets them)."""
    op = operator_cls(task_id="t", **params)
    op.run_id = run_id
    opts = op.job_options()
    opts.result_json = result_json
    return opts.to_args()


@pytest.mark.parametrize("params", CLUSTER_PARAMS)
def test_cluster_arguments_equal_the_operators(params):
    from airflow_zorder.operators import SparkClusterTableOperator

    spec = spark_job_spec("cluster", **params)
    assert spec["arguments"] == operator_args(
        SparkClusterTableOperator, params, spec["run_id"], spec["result_location"]
    )
    opts = ClusterOptions.from_args(spec["arguments"])  # the job's own argparse
    assert (opts.run_id, opts.result_json) == (spec["run_id"], spec["result_location"])
    assert spec["entry_point"] == packaging.job_script("cluster_table.py")


@pytest.mark.parametrize("params", COLLECT_PARAMS)
def test_collect_stats_arguments_equal_the_operators(params):
    from airflow_zorder.operators import SparkCollectFileStatsOperator

    spec = spark_job_spec("collect_stats", **params, run_id="r-1")
    assert spec["run_id"] == "r-1"
    args = operator_args(SparkCollectFileStatsOperator, params, "r-1", spec["result_location"])
    assert spec["arguments"] == args
    opts = CollectOptions.from_args(spec["arguments"])
    assert (opts.run_id, opts.method, opts.result_json) == (
        "r-1",
        params.get("method", "auto"),
        spec["result_location"],
    )
    assert spec["entry_point"] == packaging.job_script("collect_stats.py")


def test_result_location_is_in_the_stats_store():
    spec = spark_job_spec("cluster", table="/data/events", columns="a", run_id="20260101T000000-abc")
    assert spec["stats_location"] == "/data/events/_zorder/stats"
    assert spec["result_location"] == "/data/events/_zorder/stats/results/20260101T000000-abc.json"
    assert spec["result_location"] == result_location(spec["stats_location"], spec["run_id"])
    given = spark_job_spec("collect_stats", table="db.t", stats_location="s3://b/st/", run_id="r")
    assert given["result_location"] == "s3://b/st/results/r.json"
    assert given["arguments"][-2:] == ["--result-json", "s3://b/st/results/r.json"]
    assert (
        spark_job_spec("cluster", table="/t", columns="a")["run_id"]
        != spark_job_spec("cluster", table="/t", columns="a")["run_id"]
    )


def test_conf_has_the_jit_flag_and_keeps_the_users():
    spec = spark_job_spec(
        "cluster",
        table="/t",
        columns="a",
        conf={"spark.executor.extraJavaOptions": "-Dx=1", "spark.executor.instances": 4},
        extra_args=["--key-engine", "arrow"],
    )
    assert spec["conf"]["spark.driver.extraJavaOptions"] == JIT_OPTION
    assert spec["conf"]["spark.executor.extraJavaOptions"] == f"-Dx=1 {JIT_OPTION}"
    assert spec["conf"]["spark.executor.instances"] == "4"  # every value is text, as launchers want it
    assert spec["arguments"][-2:] == ["--key-engine", "arrow"]
    assert ClusterOptions.from_args(spec["arguments"]).key_engine == "arrow"
    assert spec["py_files"] == [packaging.py_files_zip()]


def test_unknown_options_and_jobs_are_refused_naming_the_valid_ones():
    with pytest.raises(ValueError, match=r"unknown option\(s\) curve; valid options for collect_stats: table, columns"):
        spark_job_spec("collect_stats", table="/t", curve="hilbert")
    with pytest.raises(ValueError, match=r"unknown option\(s\) application_args, colums; valid options for cluster"):
        spark_job_spec("cluster", table="/t", colums="a", application_args=[])
    with pytest.raises(ValueError, match="unknown job 'optimize'; expected one of cluster, collect_stats"):
        spark_job_spec("optimize", table="/t")
    with pytest.raises(ValueError, match="table is required"):
        spark_job_spec("cluster", columns="a")
    with pytest.raises(ValueError, match="curve='peano' is not one of zorder, hilbert, linear"):
        spark_job_spec("cluster", table="/t", columns="a", curve="peano")
    with pytest.raises(ValueError, match="method='fast' is not one of auto, footer, scan"):
        spark_job_spec("collect_stats", table="/t", method="fast")
    with pytest.raises(ValueError, match=re.escape("columns (--columns) is required: name 1 to 16 clustering columns")):
        spark_job_spec("cluster", table="/t")
    assert "lock_ttl" in job_option_names("cluster") and "method" in job_option_names("collect_stats")


def test_a_catalog_table_needs_a_stats_location():
    with pytest.raises(
        ValueError, match="'db.events' is a catalog table, so its stats location .* pass stats_location="
    ):
        spark_job_spec("collect_stats", table="db.events")


def test_the_plan_is_written_and_passed(tmp_path):
    from airflow_zorder.core.storage.io.local import LocalFileSystem
    from spark_jobs.incremental_units import read_plan

    plan = a_plan(COLUMNS)
    table = str(tmp_path / "events")
    spec = spark_job_spec("cluster", table=table, columns=COLUMNS, plan=json.dumps(plan), run_id="r7")
    opts = ClusterOptions.from_args(spec["arguments"])
    assert opts.plan == f"{table}/_zorder/stats/plans/r7.json" and opts.incremental
    assert read_plan(LocalFileSystem(), opts.plan) == plan  # the job's own reader
    with pytest.raises(ValueError, match=r"made for columns \['a', 'b'\], but this run clusters \['b', 'a'\]"):
        spark_job_spec("cluster", table=table, columns="b,a", plan=plan, run_id="r8")
    assert not Path(f"{table}/_zorder/stats/plans/r8.json").exists()


def test_artifacts_are_copied_to_a_local_prefix(tmp_path):
    prefix = tmp_path / "artifacts"
    spec = spark_job_spec("collect_stats", table="/t", artifacts=str(prefix))
    zip_name = Path(packaging.py_files_zip()).name
    assert spec["entry_point"] == f"{prefix}/collect_stats.py"
    assert spec["py_files"] == [f"{prefix}/{zip_name}"]
    assert Path(spec["entry_point"]).read_bytes() == Path(packaging.job_script("collect_stats.py")).read_bytes()
    assert Path(spec["py_files"][0]).read_bytes() == Path(packaging.py_files_zip()).read_bytes()


def test_artifacts_plan_and_result_on_s3(s3):
    """A moto S3 server (checks signatures): the artifacts and the plan are written there, the result read back."""
    from pyarrow import fs as pafs

    fs = pafs.S3FileSystem(
        access_key=s3.access_key,
        secret_key=s3.secret_key,
        endpoint_override=s3.endpoint.split("://", 1)[1],
        scheme="http",
        region="us-east-1",
    )
    spec = spark_job_spec(
        "cluster",
        table="s3a://lake/events",
        columns=COLUMNS,
        stats_location="s3://lake/stats/events",
        plan=a_plan(COLUMNS),
        run_id="r-s3",
        artifacts="s3://lake/jobs/v1",
        filesystem=fs,
    )
    keys = s3.keys()
    zip_name = Path(packaging.py_files_zip()).name
    assert {"jobs/v1/cluster_table.py", f"jobs/v1/{zip_name}", "stats/events/plans/r-s3.json"} <= set(keys)
    assert spec["entry_point"] == "s3://lake/jobs/v1/cluster_table.py"
    assert spec["py_files"] == [f"s3://lake/jobs/v1/{zip_name}"]
    body = s3.client().get_object(Bucket="lake", Key=f"jobs/v1/{zip_name}")["Body"].read()
    assert body == Path(packaging.py_files_zip()).read_bytes()
    assert read_result("s3://lake/stats/events", "r-s3", fs) is None
    s3.client().put_object(Bucket="lake", Key="stats/events/results/r-s3.json", Body=b'{"status": "clustered"}')
    assert read_result("s3://lake/stats/events", "r-s3", fs) == {"status": "clustered"}


def test_read_result_absent_bad_and_good(tmp_path):
    stats = str(tmp_path / "stats")
    assert read_result(stats, "r1") is None
    (tmp_path / "stats" / RESULTS_DIR).mkdir(parents=True)
    path = tmp_path / "stats" / RESULTS_DIR / "r1.json"
    path.write_text("{truncated")
    with pytest.raises(ValueError, match=f"the job's result {path} is not valid JSON"):
        read_result(stats, "r1")
    path.write_text("[1, 2]")
    with pytest.raises(ValueError, match="is not a JSON object but list"):
        read_result(stats, "r1")
    path.write_text('{"status": "ok", "run_id": "r1"}')
    assert read_result(stats, "r1") == {"status": "ok", "run_id": "r1"}
    assert read_result(f"file://{stats}", "r1") == {"status": "ok", "run_id": "r1"}
    for bad in ("", "../r1", "a/b"):
        with pytest.raises(ValueError, match="cannot name a result file"):
            result_location(stats, bad)


def test_emit_result_writes_local_paths_and_uris_through_the_store(tmp_path, capsys):
    """A plain path is the driver's own disk; a URI goes through the jobs' stats-store IO (``filesystem_for``: for
    ``file:`` it needs no JVM, so a stand-in session object suffices here; the real job runs in
    tests/airflow/test_job_spec_submit.py)."""
    result = {"status": "ok", "run_id": "r1"}
    emit_result(result, str(tmp_path / "a" / "result.json"))
    assert json.loads((tmp_path / "a" / "result.json").read_text()) == result
    emit_result(result, f"file://{tmp_path}/stats/results/r1.json", spark=object())
    assert read_result(str(tmp_path / "stats"), "r1") == result
    with pytest.raises(ValueError, match="is not a local path, and there is no SparkSession"):
        emit_result(result, "s3a://lake/stats/results/r1.json")
    assert json.loads(capsys.readouterr().out.split("\n}\n")[0] + "}") == result


def test_a_plain_result_path_is_in_the_store_only_when_it_is_the_runs_place_there():
    """Cluster mode passes ``<stats>/results/<run>.json`` as a plain path for a plain-path table: the driver must
    write it where the table's plain paths resolve (the stats IO), not on its own disk; a worker's temp file stays local."""
    assert is_store_result("/data/t", None, "r1", "/data/t/_zorder/stats/results/r1.json")
    assert is_store_result("db.t", "/lake/stats", "r1", "/lake/stats/results/r1.json")
    assert not is_store_result("/data/t", None, "r1", "/tmp/zorder-job-x/result.json")
    assert not is_store_result("/data/t", None, "r2", "/data/t/_zorder/stats/results/r1.json")
    assert not is_store_result("db.t", None, "r1", "/lake/stats/results/r1.json")


def test_old_plans_and_results_are_pruned_by_their_run_time(tmp_path):
    """The cluster job's cleanup drops per-run files older than the retention; other names are never touched."""
    import time

    from airflow_zorder.core.jobs.job_results import prune_run_files
    from airflow_zorder.core.storage.io import filesystem_for

    fs, base = filesystem_for(str(tmp_path)), str(tmp_path)
    old, new = "20260101T000000-0123abcd.json", time.strftime("%Y%m%dT%H%M%S") + "-89abcdef.json"
    for d in ("plans", "results"):
        (tmp_path / d).mkdir()
        for name in (old, new, "my-run.json"):
            (tmp_path / d / name).write_text("{}")
    deleted = prune_run_files(fs, base, retention_s=24 * 3600.0)
    assert sorted(p.rsplit("/", 2)[-2] + "/" + p.rsplit("/", 1)[-1] for p in deleted) == [
        f"plans/{old}",
        f"results/{old}",
    ]
    assert sorted(p.name for p in (tmp_path / "results").iterdir()) == sorted([new, "my-run.json"])
    assert prune_run_files(fs, base, retention_s=0.0, now=time.time() + 5) and not (tmp_path / "plans" / new).exists()
    assert (tmp_path / "plans" / "my-run.json").exists()
    assert prune_run_files(fs, str(tmp_path / "none"), retention_s=0.0) == []


def test_import_airflow_zorder_stays_light():
    """``import airflow_zorder`` loads neither Airflow nor pyarrow; ``spark_job_spec`` is there on first use."""
    code = (
        "import sys, airflow_zorder; "
        "heavy = [m for m in sys.modules if m.split('.')[0] in ('airflow', 'pyarrow', 'numpy', 'pyspark')]; "
        "assert not heavy, heavy; "
        "from airflow_zorder import spark_job_spec; "
        "assert 'airflow' not in sys.modules; print(spark_job_spec.__name__)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "spark_job_spec"
    assert airflow_zorder.spark_job_spec is spark_job_spec
