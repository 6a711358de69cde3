"""The operators: spark-submit pass-through, templated job flags, the shipped py-files, result and failure
handling, on_kill, links and the provider's registration.

Real parts: the provider's SparkSubmitHook builds every command line; the job flags are parsed by the
jobs' own argparse; spark-submit really runs (a failing job, and one killed through on_kill); the
provider list comes from `airflow providers list`. YARN and Kubernetes cannot run here: for them only
the command line is checked (no cluster is contacted).
"""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
import threading
import time
import zipfile
from pathlib import Path
from urllib.parse import quote

import pytest
from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator
from airflow.sdk import DAG
from airflow.sdk.exceptions import AirflowException

from airflow_zorder import packaging
from airflow_zorder.core.jobs.jvm_options import JIT_OPTION, with_jit_conf
from airflow_zorder.core.jobs.options import ClusterOptions, CollectOptions
from airflow_zorder.core.names import parse_names
from airflow_zorder.core.stats.stats_location import default_stats_location
from airflow_zorder.hooks.spark_job import SparkJobHook
from airflow_zorder.links import SparkApplicationLink, TableHealthLink
from airflow_zorder.operators import SparkClusterTableOperator, SparkCollectFileStatsOperator
from airflow_zorder.operators.spark_job import SparkJobFailed

YARN = '{"conn_type": "spark", "host": "yarn", "extra": {"queue": "from-conn"}}'
YARN_CLUSTER = '{"conn_type": "spark", "host": "yarn", "extra": {"deploy-mode": "cluster"}}'
LOCAL = '{"conn_type": "spark", "host": "local[1]"}'

PASS_THROUGH = dict(
    conf={"spark.sql.shuffle.partitions": "7", "spark.executor.memoryOverhead": "384m"},
    files="/etc/hosts",
    jars="/opt/a.jar",
    driver_class_path="/opt/drv.jar",
    packages="g:a:1",
    exclude_packages="g:b",
    repositories="https://repo.example",
    archives="/opt/env.tgz#env",
    total_executor_cores=5,
    executor_cores=3,
    executor_memory="3g",
    driver_memory="2g",
    num_executors=4,
    keytab="/etc/user.keytab",
    principal="user@REALM",
    proxy_user="etl",
    name="nightly-zorder",
    env_vars={"HADOOP_USER_NAME": "etl"},
    verbose=True,
    properties_file="/etc/spark.conf",
    yarn_queue="etl-q",
)


@pytest.fixture
def conns(monkeypatch):
    monkeypatch.setenv("AIRFLOW_CONN_SPARK_YARN", YARN)
    monkeypatch.setenv("AIRFLOW_CONN_SPARK_YARN_CLUSTER", YARN_CLUSTER)
    monkeypatch.setenv("AIRFLOW_CONN_SPARK_LOCAL", LOCAL)


def submit_command(op, tmp_path) -> list[str]:
    """The spark-submit command the operator would run (prepared exactly as execute does)."""
    op.prepare(op.require_connection(), str(tmp_path))
    hook = op._get_hook()
    return hook._build_spark_submit_command(op.application)


def flag_value(cmd: list[str], flag: str) -> str:
    return cmd[cmd.index(flag) + 1]


def test_every_spark_submit_parameter_reaches_the_command_line(conns, tmp_path):
    op = SparkClusterTableOperator(
        task_id="c",
        table="/data/events",
        columns=["a", "b"],
        conn_id="spark_yarn",
        py_files="/opt/mine.py",
        extra_args=["--salt-bits", 4],
        **PASS_THROUGH,
    )
    cmd = submit_command(op, tmp_path)
    expected = {
        "--master": "yarn",
        "--files": "/etc/hosts",
        "--jars": "/opt/a.jar",
        "--driver-class-path": "/opt/drv.jar",
        "--packages": "g:a:1",
        "--exclude-packages": "g:b",
        "--repositories": "https://repo.example",
        "--archives": "/opt/env.tgz#env",
        "--total-executor-cores": "5",
        "--executor-cores": "3",
        "--executor-memory": "3g",
        "--driver-memory": "2g",
        "--num-executors": "4",
        "--keytab": "/etc/user.keytab",
        "--principal": "user@REALM",
        "--proxy-user": "etl",
        "--name": "nightly-zorder",
        "--properties-file": "/etc/spark.conf",
        "--queue": "etl-q",
    }
    for flag, value in expected.items():
        assert flag_value(cmd, flag) == value, flag
    assert "--verbose" in cmd
    confs = {cmd[i + 1] for i, a in enumerate(cmd) if a == "--conf"}
    assert {
        "spark.sql.shuffle.partitions=7",
        "spark.executor.memoryOverhead=384m",
        "spark.yarn.appMasterEnv.HADOOP_USER_NAME=etl",
    } <= confs
    assert not any(c.startswith("spark.pyspark.python") for c in confs)  # never guessed for a cluster
    # the job is shipped: its script is the application, the core zip leads --py-files, the user's follows
    zip_path, user_py = flag_value(cmd, "--py-files").split(",")
    assert zip_path == packaging.py_files_zip() and user_py == "/opt/mine.py"
    app = cmd.index(packaging.job_script("cluster_table.py"))
    assert cmd[app + 1 : app + 5] == ["--table", "/data/events", "--columns", "a,b"]
    assert flag_value(cmd, "--result-json").startswith(str(tmp_path))
    assert flag_value(cmd, "--run-id") == op.run_id
    assert cmd[-2:] == ["--salt-bits", "4"]  # extra_args last, verbatim


def test_command_line_equals_the_providers_own(conns, tmp_path):
    """Same parameters through SparkSubmitOperator's own hook give the same command line."""
    ours = SparkCollectFileStatsOperator(task_id="s", table="/data/t", conn_id="spark_yarn", **PASS_THROUGH)
    cmd = submit_command(ours, tmp_path)
    # the only addition: the JIT option for the JVM key code, appended to the user's Java options
    same = {**PASS_THROUGH, "conf": with_jit_conf(PASS_THROUGH.get("conf"))}
    theirs = SparkSubmitOperator(
        task_id="p",
        application=ours.application,
        py_files=ours.py_files,
        application_args=ours.application_args,
        conn_id="spark_yarn",
        **same,
    )
    provider_cmd = theirs._get_hook()._build_spark_submit_command(ours.application)
    assert provider_cmd[1:] == cmd[1:]
    confs = [cmd[i + 1] for i, a in enumerate(cmd) if a == "--conf"]
    for key in ("spark.driver.extraJavaOptions", "spark.executor.extraJavaOptions"):
        assert f"{key}={JIT_OPTION}" in confs
    user = SparkCollectFileStatsOperator(
        task_id="u", table="/data/t", conn_id="spark_yarn", conf={"spark.driver.extraJavaOptions": "-Dmine=1"}
    )
    assert f"spark.driver.extraJavaOptions=-Dmine=1 {JIT_OPTION}" in submit_command(user, tmp_path)
    # the binary is the same spark-submit: from PATH, else pyspark's own copy (this venv's bin may not be on PATH)
    assert os.path.basename(cmd[0]) == provider_cmd[0] == "spark-submit"


def test_deploy_mode_from_the_connection_and_no_local_result_file(conns, tmp_path):
    op = SparkClusterTableOperator(task_id="c", table="/data/events", columns="a", conn_id="spark_yarn_cluster")
    cmd = submit_command(op, tmp_path)
    assert flag_value(cmd, "--deploy-mode") == "cluster"
    # the driver runs on the cluster: not a worker-local path but the table's stats store (core.jobs.job_results)
    assert flag_value(cmd, "--result-json") == f"/data/events/_zorder/stats/results/{op.run_id}.json"
    catalog = SparkClusterTableOperator(task_id="k", table="db.events", columns="a", conn_id="spark_yarn_cluster")
    assert "--result-json" not in submit_command(catalog, tmp_path)  # no stats_location: nowhere to write it
    op2 = SparkClusterTableOperator(
        task_id="c2", table="/data/events", columns="a", conn_id="spark_yarn", deploy_mode="cluster"
    )
    assert flag_value(submit_command(op2, tmp_path), "--deploy-mode") == "cluster"


@pytest.mark.parametrize("conn_id", ["spark_yarn", "spark_yarn_cluster"])
def test_an_iceberg_connection_reaches_the_driver_in_a_file_not_on_the_command_line(
    conn_id, conns, tmp_path, monkeypatch
):
    """iceberg_conn_id: the Iceberg provider builds the catalog (a SQL catalog on SQLite here); its properties,
    a secret among them, travel in an owner-only file with --files: by path in client mode, by name in cluster mode
    (the jobs parse both; the DAG test runs one through spark-submit)."""
    pytest.importorskip("airflow.providers.apache.iceberg", reason="the iceberg extra")
    secret = "s3cr3t-never-on-the-command-line"
    props = {"type": "sql", "uri": f"sqlite:///{tmp_path}/catalog.db", "warehouse": f"file://{tmp_path}/wh"}
    monkeypatch.setenv(
        "AIRFLOW_CONN_LAKE", json.dumps({"conn_type": "iceberg", "extra": {**props, "s3.secret-access-key": secret}})
    )
    op = SparkClusterTableOperator(
        task_id="c", table="ns.events", columns="a", conn_id=conn_id, iceberg_conn_id="lake", stats_location="/s"
    )
    workdir = tmp_path / "work"
    workdir.mkdir()
    cmd = submit_command(op, workdir)
    assert not any(secret in part or "sqlite:" in part for part in cmd)
    shipped = workdir / "iceberg-catalog.json"
    assert (shipped.stat().st_mode & 0o777) == 0o600
    assert json.loads(shipped.read_text())["lake"] == {**props, "s3.secret-access-key": secret}
    assert str(shipped) in flag_value(cmd, "--files").split(",")
    assert flag_value(cmd, "--iceberg-catalog") == "lake"
    given = flag_value(cmd, "--iceberg-catalog-file")
    assert given == ("iceberg-catalog.json" if conn_id == "spark_yarn_cluster" else str(shipped))
    opts = ClusterOptions.from_args(cmd[cmd.index(op.application) + 1 :])
    assert (opts.iceberg_catalog, opts.iceberg_catalog_file) == ("lake", given)
    with pytest.raises(ValueError, match="not both"):
        SparkClusterTableOperator(task_id="x", table="ns.e", columns="a", iceberg_catalog="a", iceberg_conn_id="b")


def test_local_master_runs_spark_python_as_the_workers_interpreter(conns, tmp_path, monkeypatch):
    monkeypatch.delenv("PYSPARK_PYTHON", raising=False)
    op = SparkCollectFileStatsOperator(task_id="s", table="/data/t", conn_id="spark_local")
    confs = [a for a in submit_command(op, tmp_path) if a.startswith("spark.pyspark.python=")]
    assert confs == [f"spark.pyspark.python={sys.executable}"]
    op = SparkCollectFileStatsOperator(
        task_id="s2", table="/data/t", conn_id="spark_local", conf={"spark.pyspark.python": "/opt/py"}
    )
    confs = [a for a in submit_command(op, tmp_path) if a.startswith("spark.pyspark.python=")]
    assert confs == ["spark.pyspark.python=/opt/py"]


def test_missing_connection_fails_clearly_before_any_submit(monkeypatch):
    monkeypatch.delenv("AIRFLOW_CONN_NO_SUCH_SPARK", raising=False)
    op = SparkClusterTableOperator(task_id="c", table="/data/events", columns="a", conn_id="no_such_spark")
    with pytest.raises(AirflowException) as err:
        op.execute({})
    msg = str(err.value)
    assert "'no_such_spark' does not exist" in msg and "yarn" in msg
    assert "airflow connections add no_such_spark --conn-type spark" in msg
    assert "AIRFLOW_CONN_NO_SUCH_SPARK" in msg
    assert op._hook is None  # nothing was submitted anywhere


def test_typed_parameters_become_flags_the_jobs_accept(conns, tmp_path):
    op = SparkClusterTableOperator(
        task_id="c",
        table="s3a://lake/events",
        columns="user_id, product_id",
        curve="hilbert",
        partitions=["day=2026-01-01", {"day": "2026-01-02"}],
        num_files=6,
        num_ranges=512,
        salt_bits=8,
        verify="full",
        compression="zstd",
        retention_hours=2.5,
        lock_ttl=30,
        conn_id="spark_local",
    )
    op.prepare(op.require_connection(), str(tmp_path))
    opts = ClusterOptions.from_args(op.application_args)
    result_path, action = opts.result_json, opts.action
    assert (opts.table, opts.columns, opts.curve, opts.num_files) == (
        "s3a://lake/events",
        ["user_id", "product_id"],
        "hilbert",
        6,
    )
    assert opts.partitions == ["day=2026-01-01", "day=2026-01-02"]
    assert (opts.num_ranges, opts.salt_bits, opts.verify, opts.compression) == (512, 8, "full", "zstd")
    assert (opts.retention_hours, opts.lock_ttl_s, opts.run_id, action) == (2.5, 30, op.run_id, "cluster")
    assert result_path == str(tmp_path / "result.json")

    op = SparkCollectFileStatsOperator(
        task_id="s",
        table="db.events",
        columns=["a", "b"],
        method="scan",
        stats_location="s3://stats/events",
        stats_table="db.events_stats",
        full=True,
        keep_snapshots=3,
        parallelism=16,
        allow_errors=True,
        conn_id="spark_local",
    )
    op.prepare(op.require_connection(), str(tmp_path))
    opts = CollectOptions.from_args(op.application_args)
    result_path, allow_errors = opts.result_json, opts.allow_errors
    assert (opts.table, opts.columns, opts.method, opts.stats_location) == (
        "db.events",
        ["a", "b"],
        "scan",
        "s3://stats/events",
    )
    assert (opts.stats_table, opts.full, opts.keep_snapshots, opts.parallelism, allow_errors) == (
        "db.events_stats",
        True,
        3,
        16,
        True,
    )


@pytest.mark.parametrize("operator", [SparkClusterTableOperator, SparkCollectFileStatsOperator])
def test_the_operators_parameters_are_the_declared_ones(operator):
    """Each operator's typed parameters, defaults and template fields come from its job's option declarations
    (``core.jobs.options``), so Airflow's ``default_args`` reach them like any parameter."""
    import inspect
    from dataclasses import MISSING

    from airflow_zorder.core.jobs.option_spec import operator_params
    from airflow_zorder.core.jobs.options import CLUSTER_OPERATOR_ONLY, STATS_OPERATOR_ONLY

    own = CLUSTER_OPERATOR_ONLY if operator is SparkClusterTableOperator else STATS_OPERATOR_ONLY
    declared = operator_params(operator.options_class, own)
    sig = inspect.signature(operator.__init__).parameters
    assert [n for n in sig if n not in ("self", "kwargs")] == [p.name for p in declared]
    for p in declared:
        assert sig[p.name].default == (inspect.Parameter.empty if p.default is MISSING else p.default), p.name
        assert (p.name in operator.template_fields) == p.spec.templated, p.name
    with DAG("d", schedule=None, default_args={"stats_location": "/st", "conn_id": "spark_local"}):
        op = operator(task_id="t", table="/t", columns="a")
    assert op.stats_location == "/st" and op.job_options().stats_location == "/st"


def test_choices_match_the_jobs_and_bad_values_fail_at_parse_time():
    from airflow_zorder.core.jobs import options
    from airflow_zorder.core.layout import curve_keys, curves, ranges

    assert options.CURVES == curves.CURVES and options.STATS_METHODS == ("auto", "footer", "scan")
    assert (options.DEFAULT_NUM_RANGES, options.DEFAULT_SALT_BITS) == (
        ranges.DEFAULT_NUM_RANGES,
        curve_keys.DEFAULT_SALT_BITS,
    )
    with pytest.raises(ValueError, match="curve='peano' is not one of zorder, hilbert, linear"):
        SparkClusterTableOperator(task_id="c", table="/t", columns="a", curve="peano")
    with pytest.raises(ValueError, match=re.escape("num_files (--num-files) must be at least 1")):
        SparkClusterTableOperator(task_id="c", table="/t", columns="a", num_files=0)
    with pytest.raises(ValueError, match="method='fast' is not one of auto, footer, scan"):
        SparkCollectFileStatsOperator(task_id="s", table="/t", method="fast")
    with pytest.raises(ValueError, match="extra_args"):
        SparkClusterTableOperator(task_id="c", table="/t", columns="a", application_args=["--x"])


@pytest.mark.parametrize("native", [False, True])
def test_partitions_and_columns_render_from_templates(native, conns, tmp_path):
    """The sensor's XCom list, rendered by Jinja as text (repr or tojson) or natively, becomes a JSON list flag."""
    parts = ["day=2026-01-01", "day=2026-01-03"]
    with DAG("render_test", schedule=None, render_template_as_native_obj=native) as dag:
        ops = [
            SparkClusterTableOperator(
                task_id=f"c{i}",
                table="{{ params.root }}/events",
                columns=cols,
                partitions=p,
                curve="{{ params.curve }}",
                num_files="{{ params.n or '' }}",
                conn_id="spark_local",
            )
            for i, (p, cols) in enumerate(
                [
                    ("{{ params.parts }}", "{{ params.cols }}"),
                    ("{{ params.parts | tojson }}", "{{ params.cols | join(',') }}"),
                    ("{{ params.parts | join(',') }}", ["user_id", "{{ params.cols[1] }}"]),
                ]
            )
        ]
    context = {
        "params": {"root": "/lake", "parts": parts, "cols": ["user_id", "product_id"], "curve": "hilbert", "n": None}
    }
    for op in ops:
        op.render_template_fields(context, jinja_env=dag.get_template_env(force_sandboxed=False))
        args = op.job_arguments()
        assert flag_value(args, "--table") == "/lake/events"
        assert json.loads(flag_value(args, "--partitions")) == parts
        assert flag_value(args, "--columns") == "user_id,product_id"
        assert flag_value(args, "--curve") == "hilbert" and "--num-files" not in args


def test_parse_names_forms():
    assert parse_names(None, "x") is None and parse_names(" ", "x") is None
    assert parse_names("a, b,,c", "x") == ["a", "b", "c"]
    assert parse_names('["k=1/j=2"]', "x") == ["k=1/j=2"]
    assert parse_names("['a', 'b']", "x") == ["a", "b"]
    assert parse_names([{"k": 1, "j": "x"}], "x") == ["k=1/j=x"]
    assert parse_names([], "x") == []
    with pytest.raises(ValueError, match="cannot read"):
        parse_names("[not a list", "partitions")


# --------------------------------------------------------------------------- the py-files zip


def test_py_files_zip_holds_the_airflow_free_code_and_is_cached(tmp_path):
    first = packaging.py_files_zip(tmp_path)
    mtime = os.stat(first).st_mtime_ns
    assert packaging.py_files_zip(tmp_path) == first and os.stat(first).st_mtime_ns == mtime  # reused
    names = zipfile.ZipFile(first).namelist()
    assert {
        "airflow_zorder/__init__.py",
        "airflow_zorder/core/stats/footer_stats.py",
        "airflow_zorder/core/layout/curves.py",
        "airflow_zorder/core/storage/commit.py",
        "spark_jobs/cluster_table.py",
        "spark_jobs/collect_stats.py",
        "airflow_zorder/core/policy/incremental.py",  # the driver plans incremental runs
    } <= set(names)
    # only what the jobs run: no Airflow-facing code, no demo or benchmark evaluation
    assert not [
        n
        for n in names
        if n.startswith(
            (
                "airflow_zorder/operators",
                "airflow_zorder/hooks",
                "airflow_zorder/plugins",
                "airflow_zorder/sensors",
                "airflow_zorder/evaluation",
            )
        )
    ]
    zf = zipfile.ZipFile(first)
    shipped = {n[:-3].replace("/", ".").removesuffix(".__init__") for n in names}
    for name in names:  # nothing shipped imports Airflow (executors do not have it) or a module left out of the zip
        tree = ast.parse(zf.read(name))
        for node in ast.walk(tree):
            mods = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom) and not node.level
                else []
            )
            assert not [m for m in mods if m == "airflow" or m.startswith("airflow.")], (name, mods)
            for m in mods:
                if m.startswith(("airflow_zorder", "spark_jobs")):
                    subs = [f"{m}.{a.name}" for a in node.names] if isinstance(node, ast.ImportFrom) else []
                    assert m in shipped or all(s in shipped for s in subs), (name, m)
    members = packaging.zip_members()
    changed = [(n, d + b"\n# changed") if n == "spark_jobs/cli.py" else (n, d) for n, d in members]
    assert packaging.content_hash(changed) != packaging.content_hash(members)


def test_jobs_import_from_the_zip_without_airflow(tmp_path):
    zip_path = packaging.py_files_zip(tmp_path)
    code = (
        "import sys, importlib; sys.path.insert(0, sys.argv[1]); import spark_jobs.cluster_table, "
        "spark_jobs.collect_stats, airflow_zorder; from airflow_zorder.core.tables.registry import FORMATS; "
        "[importlib.import_module(e.module) for e in FORMATS.values()]; "  # every format module the registry loads
        "print(airflow_zorder.__file__); print('airflow' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, zip_path], capture_output=True, text=True, timeout=120, cwd=tmp_path, check=True
    ).stdout.split()
    assert out[0].startswith(zip_path) and out[1] == "False"


# --------------------------------------------------------------------------- results and failures


def test_cluster_mode_result_comes_from_the_stats_store(tmp_path):
    """In deploy mode cluster the result file stays with the driver: the run's event in the store is used."""
    from airflow_zorder.core.stats import stats_store

    table = str(tmp_path / "events")
    os.makedirs(table)
    job_result = {
        "status": "clustered",
        "run_id": "20260101T000000-abcdef01",
        "table": table,
        "curve": "zorder",
        "columns": ["a"],
        "partitions": [{"partition": "day=1"}],
        "before": {"files": 8, "rows": 100, "bytes": 800},
        "after": {"files": 2, "rows": 100, "bytes": 700},
    }
    stats_store.record_event(default_stats_location(table), stats_store.cluster_event(job_result))
    op = SparkClusterTableOperator(task_id="c", table=table, columns="a")
    op.run_id = job_result["run_id"]
    got = op._cluster_mode_result()
    assert got["result_available"] is False and "not available" in got["note"]
    assert (got["status"], got["before"]["files"], got["after"]["files"], got["after"]["rows"]) == (
        "clustered",
        8,
        2,
        100,
    )
    assert got["partitions"] == [{"partition": "day=1"}]
    op.run_id = "20260101T000000-unknown0"
    missing = op._cluster_mode_result()
    assert missing["status"] == "submitted" and missing["result_available"] is False


def test_cluster_operator_passes_its_stats_location_and_reads_the_event_there(conns, tmp_path):
    """Stats kept outside the table: the job is told where to record its event, and cluster mode finds it there."""
    from airflow_zorder.core.stats import stats_store

    table, location = str(tmp_path / "events"), str(tmp_path / "stats_elsewhere")
    os.makedirs(table)
    op = SparkClusterTableOperator(
        task_id="c", table=table, columns="a", stats_location=location, conn_id="spark_local"
    )
    op.prepare(op.require_connection(), str(tmp_path))
    assert ClusterOptions.from_args(op.application_args).stats_location == location
    job_result = {
        "status": "clustered",
        "run_id": op.run_id,
        "table": table,
        "curve": "zorder",
        "columns": ["a"],
        "partitions": [],
        "before": {"files": 8, "rows": 10, "bytes": 80},
        "after": {"files": 2, "rows": 10, "bytes": 70},
    }
    stats_store.record_event(location, stats_store.cluster_event(job_result))
    got = op._cluster_mode_result()
    assert (got["status"], got["after"]["files"]) == ("clustered", 2)
    default = SparkClusterTableOperator(task_id="d", table=table, columns="a", conn_id="spark_local")
    default.prepare(default.require_connection(), str(tmp_path))
    assert "--stats-location" not in default.application_args  # the job applies the one default rule


@pytest.mark.spark
def test_failed_job_raises_its_own_reason(conns, tmp_path):
    """Real spark-submit: a missing table fails with the job's message, not only spark-submit's exit code."""
    missing = str(tmp_path / "no_such_table")
    op = SparkClusterTableOperator(
        task_id="c", table=missing, columns="user_id", conn_id="spark_local", conf={"spark.ui.enabled": "false"}
    )
    with pytest.raises(
        SparkJobFailed, match=f"cluster job failed for table {missing}: table path {missing} does not exist"
    ):
        op.execute({})


@pytest.mark.spark
def test_on_kill_stops_the_running_spark_submit(conns, tmp_path):
    """Real spark-submit, killed through the operator while it runs; its JVM and Python driver go away."""
    import psutil

    from airflow_zorder.evaluation.sample_data import write_table

    table = str(tmp_path / "t")
    write_table(table, rows=200, files_per_partition=2, partitioned=False)
    op = SparkCollectFileStatsOperator(
        task_id="s", table=table, conn_id="spark_local", conf={"spark.ui.enabled": "false"}
    )
    errors: list[BaseException] = []
    thread = threading.Thread(target=lambda: _run(op, errors))
    thread.start()
    deadline = time.time() + 60
    while time.time() < deadline and not (op._hook and op._hook._submit_sp):
        time.sleep(0.1)
    proc = op._hook._submit_sp
    driver = []
    while time.time() < deadline and not driver:  # the JVM started the job's Python driver: it is really running
        descendants = psutil.Process(proc.pid).children(recursive=True)
        driver = [p for p in descendants if "collect_stats.py" in " ".join(p.cmdline())]
        time.sleep(0.2)
    assert driver, "the job's Python driver never started"
    op.on_kill()
    thread.join(60)
    assert not thread.is_alive()
    assert proc.poll() is not None
    assert errors and isinstance(errors[0], AirflowException)
    gone, alive = psutil.wait_procs(descendants, timeout=20)
    assert not alive, f"left running: {[p.cmdline() for p in alive]}"


def _run(op, errors):
    try:
        op.execute({})
    except BaseException as exc:  # noqa: BLE001 - handed to the test thread
        errors.append(exc)


def test_on_kill_before_submit_is_a_no_op():
    op = SparkCollectFileStatsOperator(task_id="s", table="/t")
    op.on_kill()  # nothing submitted: must not build a hook (which would resolve a connection)
    assert op._hook is None


# --------------------------------------------------------------------------- links and registration


def test_table_health_link_is_the_plugins_page(monkeypatch):
    op = SparkClusterTableOperator(task_id="c", table="s3://lake/events?x=1 y", columns="a")
    monkeypatch.delenv("AIRFLOW__API__BASE_URL", raising=False)
    assert TableHealthLink().get_link(op, ti_key=None) == (
        "http://localhost:8080/zorder/table?table=" + quote("s3://lake/events?x=1 y", safe="")
    )
    monkeypatch.setenv("AIRFLOW__API__BASE_URL", "https://airflow.example.com/base/")
    assert TableHealthLink().get_link(op, ti_key=None) == (
        "https://airflow.example.com/base/zorder/table?table=s3%3A%2F%2Flake%2Fevents%3Fx%3D1%20y"
    )


def test_spark_application_link_from_spark_submit_log_lines(conns):
    """Lines as Spark 4 / YARN / standalone print them; the tracking URL wins over the driver UI."""
    hook = SparkJobHook(conn_id="spark_local")
    hook.note_log_line("26/11/22 01:09:16 INFO Utils: Successfully started service 'SparkUI' on port 4040.")
    assert hook.app_url() is None
    hook.note_log_line("26/11/22 01:09:27 INFO SparkUI: Stopped Spark web UI at http://10.1.2.3:4041")
    assert hook.app_url() == "http://10.1.2.3:4041"
    hook.note_log_line(
        "INFO StandaloneSchedulerBackend: Connected to Spark cluster with app ID app-20261122011227-0003"
    )
    assert hook.application_id == "app-20261122011227-0003"
    yarn = SparkJobHook(conn_id="spark_yarn")
    yarn.note_log_line("INFO Client: Submitted application application_1700000000000_0042")
    yarn.note_log_line("\t tracking URL: http://rm.example:8088/proxy/application_1700000000000_0042/")
    yarn.note_log_line("INFO SparkUI: Stopped Spark web UI at http://10.1.2.3:4040")
    assert yarn.application_id == "application_1700000000000_0042"
    assert yarn.app_url() == "http://rm.example:8088/proxy/application_1700000000000_0042/"
    op = SparkCollectFileStatsOperator(task_id="s", table="/t")
    assert SparkApplicationLink().get_link(op, ti_key=None) == ""
    op.spark_app_url = yarn.app_url()
    assert SparkApplicationLink().get_link(op, ti_key=None) == yarn.app_url()


def test_provider_info_is_valid_and_everything_it_lists_imports():
    import importlib

    import airflow
    import jsonschema
    from airflow.sdk import BaseOperatorLink

    from airflow_zorder.provider_info import get_provider_info

    info = get_provider_info()
    schema = json.loads((Path(airflow.__file__).parent / "provider_info.schema.json").read_text())
    jsonschema.validate(info, schema)
    assert info["package-name"] == "airflow-zorder"
    modules = [
        m for key in ("operators", "sensors", "hooks", "triggers") for e in info[key] for m in e["python-modules"]
    ]
    assert {
        "airflow_zorder.operators.cluster_table",
        "airflow_zorder.operators.collect_stats",
        "airflow_zorder.sensors.file_overlap",
        "airflow_zorder.hooks.spark_job",
    } <= set(modules)
    for m in modules:
        importlib.import_module(m)
    for path in info["extra-links"]:
        mod, _, cls = path.rpartition(".")
        assert issubclass(getattr(importlib.import_module(mod), cls), BaseOperatorLink)
    # every [zorder] option the UI plugin reads is declared (so `airflow config list` shows it)
    import re

    plugin_dir = Path(importlib.import_module("airflow_zorder.plugins").__file__).parent
    read = set()
    for f in plugin_dir.glob("*.py"):
        read |= set(re.findall(r'conf\.get\w*\((?:CONFIG_SECTION|"zorder"), "(\w+)"', f.read_text()))
    assert read and read == set(info["config"]["zorder"]["options"])


def test_airflow_providers_list_shows_the_provider():
    out = subprocess.run(
        [str(Path(sys.executable).parent / "airflow"), "providers", "list", "-o", "json"],
        capture_output=True,
        text=True,
        timeout=180,
        check=True,
    ).stdout
    rows = json.loads(out[out.index("[") :])
    ours = [r for r in rows if r["package_name"] == "airflow-zorder"]
    assert ours and ours[0]["version"] == "0.1.0"


# --------------------------------------------------------------------------- incremental runs and the sensor's plan


def sensor_plan(tmp_path, layouts: dict[str, str] | None = None, stats_location: str | None = None) -> tuple[str, dict]:
    """A real table with collected stats and the overlap sensor's plan of it (``FileStatsHook.evaluate``)."""
    from overlap_tables import collect, write_table

    from airflow_zorder.core.policy.incremental import IncrementalParams
    from airflow_zorder.hooks.file_stats import FileStatsHook

    root = write_table(tmp_path / "t", layouts or {"day=1": "scrambled", "day=2": "clustered"})
    collect(root, stats_location)
    payload = FileStatsHook(str(root), stats_location).evaluate(columns="a,b", incremental=IncrementalParams())
    assert payload["decision"] == "recluster" and payload["plan"]["files"] > 0
    return str(root), payload["plan"]


def test_incremental_parameters_become_job_flags(conns, tmp_path):
    op = SparkClusterTableOperator(
        task_id="c",
        table="/data/events",
        columns="a,b",
        incremental=True,
        target_ratio=1.2,
        max_rewrite_bytes="200GB",
        conn_id="spark_local",
    )
    op.prepare(op.require_connection(), str(tmp_path))
    opts = ClusterOptions.from_args(op.application_args)
    assert (opts.incremental, opts.plan, opts.target_ratio, opts.max_rewrite_bytes) == (True, None, 1.2, 200 << 30)
    full = SparkClusterTableOperator(task_id="f", table="/data/events", columns="a", conn_id="spark_local")
    args = full.job_arguments()
    assert "--incremental" not in args and "--plan" not in args  # the default: today's full rewrite
    assert ClusterOptions.from_args(args).incremental is False
    rendered = SparkClusterTableOperator(
        task_id="r", table="/t", columns="a", incremental="False", target_ratio="None", max_rewrite_bytes=""
    )
    assert "--incremental" not in rendered.job_arguments() and "--target-ratio" not in rendered.job_arguments()
    with pytest.raises(ValueError, match="incremental must be True or False, got 'maybe'"):
        SparkClusterTableOperator(task_id="c", table="/t", columns="a", incremental="maybe")
    with pytest.raises(ValueError, match="target_ratio must be a number, got 'high'"):
        SparkClusterTableOperator(task_id="c", table="/t", columns="a", target_ratio="high").job_arguments()


@pytest.mark.parametrize("form", ["dict", "tojson", "native"])
def test_the_sensors_plan_is_written_where_the_job_reads_it(form, conns, tmp_path):
    """The plan, as an XComArg's dict or rendered by Jinja, goes to <stats>/plans/<run id>.json; --plan names it and
    the job's own reader (spark_jobs.incremental_units.read_plan) reads back the same document."""
    from airflow_zorder.core.storage.io.local import LocalFileSystem
    from spark_jobs.incremental_units import read_plan

    table, plan = sensor_plan(tmp_path)
    value = {"dict": plan, "tojson": "{{ params.plan | tojson }}", "native": "{{ params.plan }}"}[form]
    with DAG("plan_test", schedule=None, render_template_as_native_obj=form == "native") as dag:
        op = SparkClusterTableOperator(
            task_id="c", table=table, columns=["a", "b"], incremental=True, plan=value, conn_id="spark_local"
        )
    op.render_template_fields({"params": {"plan": plan}}, jinja_env=dag.get_template_env(force_sandboxed=False))
    op.prepare(op.require_connection(), str(tmp_path))
    opts = ClusterOptions.from_args(op.application_args)
    expected = os.path.join(table, "_zorder", "stats", "plans", f"{op.run_id}.json")
    assert opts.run_id == op.run_id and opts.incremental and opts.plan == expected
    assert json.loads(Path(expected).read_text()) == plan
    assert read_plan(LocalFileSystem(), opts.plan) == plan


def test_plan_goes_to_the_given_stats_location_and_implies_incremental(conns, tmp_path):
    location = str(tmp_path / "stats_elsewhere")
    table, plan = sensor_plan(tmp_path, stats_location=location)
    op = SparkClusterTableOperator(
        task_id="c", table=table, columns="a,b", plan=json.dumps(plan), stats_location=location, conn_id="spark_local"
    )
    op.prepare(op.require_connection(), str(tmp_path))
    opts = ClusterOptions.from_args(op.application_args)
    assert opts.incremental and opts.plan == os.path.join(location, "plans", f"{op.run_id}.json")
    assert json.loads(Path(opts.plan).read_text()) == plan
    assert not (Path(table) / "_zorder").exists()
    # no plan: nothing written, the job plans for itself (incremental) or rewrites everything (full)
    for none in (None, "", "None", "null"):
        op = SparkClusterTableOperator(task_id="n", table=table, columns="a,b", plan=none, incremental=True)
        args = op.job_arguments()
        assert "--plan" not in args and "--incremental" in args


def test_bad_or_foreign_plans_are_refused(conns, tmp_path):
    table, plan = sensor_plan(tmp_path)
    with pytest.raises(ValueError, match="plan: not an incremental plan"):
        SparkClusterTableOperator(task_id="c", table=table, columns="a,b", plan={"decision": "recluster"})
    with pytest.raises(ValueError, match="plan: cannot read '{not json' as JSON"):
        SparkClusterTableOperator(task_id="c", table=table, columns="a,b", plan="{not json")
    with pytest.raises(ValueError, match="incremental plan version 9 is not supported"):
        SparkClusterTableOperator(task_id="c", table=table, columns="a,b", plan={**plan, "version": 9})
    bad_bin = json.loads(json.dumps(plan))
    bad_bin["partitions"][0]["bins"][0]["num_output_files"] = 0
    with pytest.raises(ValueError, match="malformed bin in the plan's partition 'day=1'"):
        SparkClusterTableOperator(task_id="c", table=table, columns="a,b", plan=bad_bin)
    # another table's columns (or order): refused before anything is written or submitted
    other = SparkClusterTableOperator(task_id="c", table=table, columns="b,a", plan=plan, conn_id="spark_local")
    with pytest.raises(ValueError, match=r"made for columns \['a', 'b'\], but this run clusters \['b', 'a'\]"):
        other.prepare(other.require_connection(), str(tmp_path))
    assert not (Path(table) / "_zorder" / "stats" / "plans").exists()
    # a catalog table has no default place for the plan file
    catalog = SparkClusterTableOperator(task_id="c", table="db.events", columns="a,b", plan=plan)
    with pytest.raises(ValueError, match="'db.events' is a catalog table, so the plan file has no default place"):
        catalog.job_arguments()


def test_asset_extra_reports_the_mode_and_what_was_rewritten():
    op = SparkClusterTableOperator(task_id="c", table="/t", columns="a")
    result = {
        "status": "clustered",
        "mode": "incremental",
        "rewritten": {"files": 12, "bytes": 3000, "output_files": 2},
        "before": {"files": 40},
        "after": {"files": 30},
    }
    extra = op.asset_extra(result)
    assert (extra["mode"], extra["files_rewritten"], extra["bytes_rewritten"]) == ("incremental", 12, 3000)
    assert (extra["files_before"], extra["files_after"]) == (40, 30)


# --------------------------------------------------------------------------- parameters whose effect depends on the mode


def a_plan(target_file_size: int = 512 << 20) -> dict:
    """A plan document as the sensor hands it (columns a, b), made for ``target_file_size`` files."""
    from airflow_zorder.core.policy.incremental_stats import PLAN_FORMAT, PLAN_VERSION

    return {
        "format": PLAN_FORMAT,
        "version": PLAN_VERSION,
        "columns": ["a", "b"],
        "params": {"target_ratio": 1.35, "target_file_size": target_file_size, "max_bytes": None},
        "files": 2,
        "bytes": 200,
        "partitions": [
            {"partition": None, "bins": [{"paths": ["/t/x.parquet", "/t/y.parquet"], "num_output_files": 1}]}
        ],
    }


@pytest.mark.parametrize(
    ("given", "said"),
    [
        ({"num_files": 8, "incremental": True}, "drop num_files and set target_file_size, or run a full rewrite"),
        ({"num_files": "8", "plan": a_plan()}, "num_files (--num-files) fixes the number of output files of a full"),
        ({"plan": a_plan(), "incremental": False}, "plan (--plan) runs an incremental plan, but incremental=False"),
        ({"target_ratio": 1.2}, "target_ratio steer the plan an incremental run makes, and this is a full rewrite"),
        ({"max_rewrite_bytes": "1GB", "plan": a_plan()}, "but a plan is given (--plan), made with the sensor's"),
        ({"plan": a_plan(), "target_file_size": "128MB"}, "the given plan sized its files for 536870912 bytes"),
        ({"action": "cleanup", "partitions": ["day=1"]}, "action='cleanup' (--action cleanup) only deletes"),
        ({"action": "recover", "retention_hours": 1}, "so retention_hours would do nothing: drop it"),
    ],
)
def test_a_literal_parameter_the_mode_does_not_use_fails_when_the_dag_is_parsed(given, said):
    with pytest.raises(ValueError) as err:
        SparkClusterTableOperator(task_id="c", table="/t", columns="a,b", **given)
    assert said in str(err.value)


def test_mode_dependent_parameters_are_honoured_where_they_apply(conns, tmp_path):
    full = SparkClusterTableOperator(task_id="f", table="/t", columns="a,b", num_files=8, incremental=False)
    assert flag_value(full.job_arguments(), "--num-files") == "8" and "--incremental" not in full.job_arguments()
    sized = SparkClusterTableOperator(task_id="p", table="/t", columns="a,b", plan=a_plan(), target_file_size="512MB")
    args = sized.job_arguments()
    assert flag_value(args, "--target-file-size") == str(512 << 20) and "--plan" in args
    cleanup = SparkClusterTableOperator(task_id="k", table="/t", columns="a", action="cleanup", retention_hours=0)
    opts = ClusterOptions.from_args(cleanup.job_arguments())
    assert (opts.action, opts.retention_s) == ("cleanup", 0.0)


def test_a_templated_parameter_the_mode_does_not_use_fails_the_task_before_anything_is_submitted(
    conns, tmp_path, monkeypatch
):
    """As the example DAGs pass them: ``num_files`` with the sensor's plan is refused once rendered, at execution,
    with nothing written or submitted; with ``full`` the same task rewrites into ``num_files`` files."""
    monkeypatch.setattr(SparkSubmitOperator, "execute", lambda self, context: pytest.fail("spark-submit ran"))
    table = tmp_path / "t"
    table.mkdir()
    with DAG("modes", schedule=None) as dag:
        op = SparkClusterTableOperator(
            task_id="recluster",
            table=str(table),
            columns="a,b",
            num_files="{{ params.num_files or '' }}",
            incremental="{{ not params.full }}",
            plan="{{ '' if params.full else (params.plan | tojson) }}",
            conn_id="spark_local",
        )

    def rendered(full: bool, num_files: int | None) -> SparkClusterTableOperator:
        task = op.prepare_for_execution()
        context = {"params": {"full": full, "num_files": num_files, "plan": a_plan()}}
        task.render_template_fields(context, jinja_env=dag.get_template_env(force_sandboxed=False))
        return task

    refused = rendered(full=False, num_files=8)
    with pytest.raises(ValueError, match=r"num_files \(--num-files\) fixes the number of output files"):
        refused.execute({})
    assert refused._hook is None and list(table.iterdir()) == []  # no plan written, nothing submitted
    full = ClusterOptions.from_args(rendered(full=True, num_files=8).job_arguments())
    assert (full.num_files, full.incremental, full.plan) == (8, False, None)
    planned = ClusterOptions.from_args(rendered(full=False, num_files=None).job_arguments())
    assert (planned.num_files, planned.incremental, bool(planned.plan)) == (None, True, True)


@pytest.mark.parametrize(
    ("conn", "said"),
    [
        ('{"conn_type": "spark", "host": "spark://127.0.0.1", "port": 1}', "does not run Python applications"),
        ('{"conn_type": "spark", "host": "local[2]", "extra": {"deploy-mode": "cluster"}}', "one local JVM"),
    ],
)
def test_cluster_deploy_mode_where_spark_submit_cannot_run_it_fails_before_submitting(conn, said, monkeypatch):
    monkeypatch.setenv("AIRFLOW_CONN_SPARK_NO_CLUSTER_MODE", conn)
    monkeypatch.setattr(SparkSubmitOperator, "execute", lambda self, context: pytest.fail("spark-submit ran"))
    op = SparkCollectFileStatsOperator(
        task_id="s", table="/t", conn_id="spark_no_cluster_mode", deploy_mode="cluster" if "port" in conn else None
    )
    with pytest.raises(AirflowException, match=f"deploy mode cluster .* cannot work here: .*{said}.*nothing was"):
        op.execute({})  # the standalone master's port is closed: refused before even trying to connect
    assert op._hook is None
