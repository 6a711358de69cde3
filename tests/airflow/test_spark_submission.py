"""Submitting to YARN: cluster mode with the Spark provider's ``durable`` tracking, retries that reconnect to the
job an earlier try submitted, and the Spark application's link while the job runs and after.

YARN cannot run here, so it is emulated, and only it: ``spark_binary`` is a fake ``spark-submit`` (written by
:func:`fake_spark_submit`) that prints what YARN's client prints ("Submitted application application_..._000N",
"tracking URL: ..."), and a local HTTP server (:class:`FakeResourceManager`) answers the ResourceManager REST
calls the provider makes (``GET /ws/v1/cluster/apps/<id>``, ``PUT .../state``). In deploy mode cluster the fake
runs the real job with the real ``spark-submit`` in ``local[1]``, detached (as YARN runs the driver away from the
worker), and the emulated RM reports it RUNNING until it exits, then FINISHED with its exit status; in
``FAKE_YARN_JOB=instant`` mode it writes the job's result file itself instead (for the tests about which run id
and which link, not about the job). Everything else is real: the provider's operator, hook, durable logic and RM
polling, the project's operators and the job's result in the stats store, and for the link a real ``dag.test()``.

The task state store (Airflow 3.3's ``context["task_state_store"]``) is a small JSON-file store with the same
``get``/``set`` (:class:`FileTaskStateStore`), so that a retry in this process reads what a try in another process,
killed with SIGKILL after submitting (a worker crash), stored.
"""

from __future__ import annotations

import http.server
import inspect
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from airflow.providers.apache.spark.hooks import spark_submit as spark_submit_hook
from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator

from airflow_zorder.core.jobs.job_results import result_location
from airflow_zorder.hooks.spark_job import SparkJobHook
from airflow_zorder.links import SparkApplicationLink, history_server_link
from airflow_zorder.operators import SparkCollectFileStatsOperator
from airflow_zorder.operators.spark_job import RUN_STATE_KEY, yarn_cluster_tracking

HERE = Path(__file__).resolve().parent
# durable (and the task state store) came with Airflow 3.3 and the Spark provider after 6.1 (make test-lowest)
DURABLE = "durable" in inspect.signature(SparkSubmitOperator.__init__).parameters
needs_durable = pytest.mark.skipif(not DURABLE, reason="the Spark provider has no durable (before Airflow 3.3)")
JOB_ID_KEY = "spark_job_id"  # SparkSubmitOperator.external_id_key: where the provider keeps the YARN app id


# --------------------------------------------------------------------------- the emulation


class FileTaskStateStore:
    """``get``/``set`` of Airflow 3.3's task state store, kept in a JSON file (shared by a try's process and its retry)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)

    def _load(self) -> dict:
        return json.loads(self.path.read_text()) if self.path.exists() else {}

    def get(self, key: str, default=None):
        return self._load().get(key, default)

    def set(self, key: str, value, *, retention=None) -> None:
        data = {**self._load(), key: value}
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(data))
        tmp.replace(self.path)


FAKE_SUBMIT = r'''#!{python}
"""Fake spark-submit for YARN (tests/airflow/test_spark_submission.py); see that module's docstring."""
import json, os, shlex, subprocess, sys, time
from pathlib import Path

state, rm = Path(os.environ["FAKE_YARN_STATE"]), os.environ["FAKE_YARN_RM"]
args = sys.argv[1:]
value = lambda flag: args[args.index(flag) + 1] if flag in args else None
n = len(list(state.glob("*.submitted"))) + 1
app = f"application_1700000000000_{{n:04d}}"
(state / f"{{app}}.submitted").write_text(json.dumps(args))
print(f"INFO Client: Submitting application {{app}} to ResourceManager", flush=True)
print(f"INFO YarnClientImpl: Submitted application {{app}}", flush=True)
print(f"INFO Client: Application report for {{app}} (state: ACCEPTED)", flush=True)
print(f"\t tracking URL: {{rm}}/proxy/{{app}}/", flush=True)
done = state / f"{{app}}.exit"


def write_result():
    Path(value("--result-json")).parent.mkdir(parents=True, exist_ok=True)
    doc = {{"status": "ok", "table": value("--table"), "run_id": value("--run-id"), "files_total": 0, "fake": True}}
    Path(value("--result-json")).write_text(json.dumps(doc))


if (value("--deploy-mode") or "client") == "cluster":
    if os.environ.get("FAKE_YARN_JOB") == "instant":
        write_result()
        done.write_text("0")
        sys.exit(0)
    real = list(args)
    real[real.index("--master") + 1] = "local[1]"
    real[real.index("--deploy-mode") + 1] = "client"
    cmd = " ".join(map(shlex.quote, [os.environ["FAKE_YARN_SPARK_SUBMIT"], *real]))
    log = open(state / f"{{app}}.log", "w")
    job = subprocess.Popen(["sh", "-c", f"{{cmd}}; echo $? > {{shlex.quote(str(done))}}.tmp && mv {{shlex.quote(str(done))}}.tmp {{shlex.quote(str(done))}}"],
                           stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    (state / f"{{app}}.pid").write_text(str(job.pid))
    sys.exit(0)
# deploy mode client: the driver runs here; it waits for the test's go, then "finishes"
print("INFO Utils: Successfully started service 'SparkUI' on port 4040.", flush=True)
print("INFO BlockManagerMaster: Registering BlockManager BlockManagerId(driver, 10.1.2.3, 40123, None)", flush=True)
release = Path(os.environ["FAKE_YARN_RELEASE"])
deadline = time.time() + 120
while not release.exists() and time.time() < deadline:
    time.sleep(0.1)
write_result()
print("INFO SparkUI: Stopped Spark web UI at http://10.1.2.3:4040", flush=True)
done.write_text("0")
'''


def fake_spark_submit(folder: Path) -> str:
    path = folder / "fake-yarn-spark-submit"
    path.write_text(FAKE_SUBMIT.format(python=sys.executable))
    path.chmod(0o755)
    return str(path)


class FakeResourceManager(http.server.ThreadingHTTPServer):
    """The two ResourceManager REST endpoints the Spark provider calls, answering from the fake's state files."""

    def __init__(self, state: Path) -> None:
        self.state, self.requests = state, []
        super().__init__(("127.0.0.1", 0), _RMHandler)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def app(self, app_id: str) -> dict | None:
        if not (self.state / f"{app_id}.submitted").exists():
            return None
        done = self.state / f"{app_id}.exit"
        code = done.read_text().strip() if done.exists() else ""
        if not code:
            return {"id": app_id, "state": "RUNNING", "finalStatus": "UNDEFINED", "diagnostics": ""}
        final = "SUCCEEDED" if code == "0" else "FAILED"
        return {"id": app_id, "state": "FINISHED", "finalStatus": final, "diagnostics": f"exit code {code}"}


class _RMHandler(http.server.BaseHTTPRequestHandler):
    server: FakeResourceManager

    def _reply(self, status: int, body: dict) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        self.server.requests.append(("GET", self.path))
        app = self.server.app(self.path.rstrip("/").rsplit("/", 1)[-1])
        self._reply(200, {"app": app}) if app else self._reply(404, {"RemoteException": {"message": "not found"}})

    def do_PUT(self) -> None:  # noqa: N802
        self.server.requests.append(("PUT", self.path))
        self._reply(200, {"state": "KILLED"})

    def log_message(self, *args) -> None:
        pass


class _ShortSleeps:
    """The ``time`` module with ``sleep`` capped at 0.5 s (for the Spark provider's hook module only)."""

    def __getattr__(self, name: str):
        return getattr(time, name)

    @staticmethod
    def sleep(seconds: float) -> None:
        time.sleep(min(seconds, 0.5))


@pytest.fixture
def yarn(tmp_path, monkeypatch):
    """The fake spark-submit, the emulated RM and Spark connections for YARN cluster/client mode."""
    from airflow_zorder.hooks.spark_job import resolve_spark_binary

    state = tmp_path / "yarn"
    state.mkdir()
    rm = FakeResourceManager(state)
    threading.Thread(target=rm.serve_forever, daemon=True).start()
    monkeypatch.setenv("FAKE_YARN_STATE", str(state))
    monkeypatch.setenv("FAKE_YARN_RM", rm.url)
    monkeypatch.setenv("FAKE_YARN_SPARK_SUBMIT", resolve_spark_binary("spark-submit"))
    monkeypatch.setenv("FAKE_YARN_RELEASE", str(tmp_path / "release"))
    # The provider polls the RM at most every 10 s (max(status_poll_interval, 10)); the emulated RM answers at once,
    # so its sleeps between polls are cut to 0.5 s here: the same polls, in a test that waits for a real job.
    monkeypatch.setattr(spark_submit_hook, "time", _ShortSleeps(), raising=False)
    cluster = {"deploy-mode": "cluster", "yarn_resourcemanager_webapp_address": rm.url}
    for name, extra in {
        "SPARK_FAKE_YARN": cluster,
        "SPARK_FAKE_YARN_NO_RM": {"deploy-mode": "cluster"},
        "SPARK_FAKE_YARN_CLIENT": {"history_server_url": "http://shs.example:18080"},
    }.items():
        monkeypatch.setenv(f"AIRFLOW_CONN_{name}", json.dumps({"conn_type": "spark", "host": "yarn", "extra": extra}))
    try:
        yield {"state": state, "rm": rm, "spark_binary": fake_spark_submit(tmp_path), "release": tmp_path / "release"}
    finally:
        rm.shutdown()
        for pid in state.glob("*.pid"):  # a detached job still running when the test ended
            if not (state / f"{pid.stem}.exit").exists():
                try:
                    os.killpg(int(pid.read_text()), signal.SIGKILL)
                except ProcessLookupError:
                    pass


def submitted(state: Path) -> list[str]:
    return sorted(p.stem for p in state.glob("*.submitted"))


def stats_operator(table: str, spark_binary: str, **kwargs) -> SparkCollectFileStatsOperator:
    return SparkCollectFileStatsOperator(
        task_id="stats",
        table=table,
        conn_id=kwargs.pop("conn_id", "spark_fake_yarn"),
        spark_binary=spark_binary,
        conf={"spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "2"},
        **kwargs,
    )


def run_try(table: str, spark_binary: str, store: str) -> None:
    """One try of the task, in its own process (killed by the test once the job is submitted)."""
    stats_operator(table, spark_binary).execute({"task_state_store": FileTaskStateStore(store)})


# --------------------------------------------------------------------------- YARN cluster mode


@needs_durable
def test_yarn_cluster_mode_without_the_rm_address_fails_before_submitting_and_names_both_fixes(yarn, tmp_path):
    op = stats_operator(str(tmp_path / "t"), yarn["spark_binary"], conn_id="spark_fake_yarn_no_rm")
    assert op.durable is True  # the Spark provider's default (Airflow >= 3.3)
    with pytest.raises(Exception) as err:
        op.execute({"task_state_store": FileTaskStateStore(tmp_path / "store.json")})
    msg = str(err.value)
    assert "'spark_fake_yarn_no_rm'" in msg and "yarn_resourcemanager_webapp_address" in msg
    assert "durable=False" in msg and "nothing was submitted" in msg
    assert submitted(yarn["state"]) == []


def test_yarn_cluster_tracking_rule():
    from airflow.sdk import Connection

    rm = Connection(
        conn_id="y",
        conn_type="spark",
        host="yarn",
        extra=json.dumps({"yarn_resourcemanager_webapp_address": "rm:8088"}),
    )
    plain = Connection(conn_id="p", conn_type="spark", host="yarn")
    local = Connection(conn_id="l", conn_type="spark", host="local[2]")
    assert yarn_cluster_tracking(rm, "cluster", True, False, "y") is True
    assert yarn_cluster_tracking(rm, "client", True, False, "y") is False  # spark-submit is the driver: no tracking
    assert yarn_cluster_tracking(plain, "cluster", False, False, "p") is False  # durable=False: spark-submit waits
    assert yarn_cluster_tracking(plain, "cluster", True, True, "p") is False  # already on: the provider checks it
    assert yarn_cluster_tracking(local, "cluster", True, False, "l") is False


@needs_durable
def test_yarn_cluster_mode_tracks_through_the_rm_and_reads_the_result_from_the_stats_store(yarn, tmp_path, monkeypatch):
    """durable: the operator turns on yarn_track_via_rm_api, spark-submit returns at once, the RM is polled, and the
    driver's result is read from <stats>/results/<run id>.json; the run id is stored with the application id."""
    monkeypatch.setenv("FAKE_YARN_JOB", "instant")
    table = str(tmp_path / "events")
    store = FileTaskStateStore(tmp_path / "store.json")
    op = stats_operator(table, yarn["spark_binary"])
    result = op.execute({"task_state_store": store})
    (app,) = submitted(yarn["state"])
    args = json.loads((yarn["state"] / f"{app}.submitted").read_text())
    assert "spark.yarn.submit.waitAppCompletion=false" in args  # the provider's durable submit
    assert args[args.index("--result-json") + 1] == result_location(f"{table}/_zorder/stats", op.run_id)
    assert ("GET", f"/ws/v1/cluster/apps/{app}") in yarn["rm"].requests
    assert op._yarn_track_via_rm_api is True
    assert (result["status"], result["run_id"], result["fake"]) == ("ok", op.run_id, True)
    assert result["spark"]["application_id"] == app
    assert op.job_result is result
    assert store.get(JOB_ID_KEY) == app
    assert store.get(RUN_STATE_KEY) == {"external_id": app, "run_id": op.run_id}

    # an earlier try's job failed: a retry submits again, under a fresh run id
    old_run = op.run_id
    retry = stats_operator(table, yarn["spark_binary"])
    (yarn["state"] / f"{app}.exit").write_text("1")
    again = retry.execute({"task_state_store": store})
    assert len(submitted(yarn["state"])) == 2 and retry.run_id != old_run
    assert again["run_id"] == retry.run_id
    assert store.get(RUN_STATE_KEY) == {"external_id": store.get(JOB_ID_KEY), "run_id": retry.run_id}


def test_yarn_cluster_mode_without_durable_waits_for_the_application(yarn, tmp_path, monkeypatch):
    """durable=False (or a provider without it): spark-submit waits for the application, no RM tracking, no
    task state; the driver's result is still read from the stats store."""
    monkeypatch.setenv("FAKE_YARN_JOB", "instant")
    no_durable = {"durable": False} if DURABLE else {}
    op = stats_operator(str(tmp_path / "events"), yarn["spark_binary"], conn_id="spark_fake_yarn_no_rm", **no_durable)
    got = op.execute({})
    (app,) = submitted(yarn["state"])
    args = json.loads((yarn["state"] / f"{app}.submitted").read_text())
    assert "spark.yarn.submit.waitAppCompletion=false" not in args and yarn["rm"].requests == []
    assert op._yarn_track_via_rm_api is False
    assert (got["status"], got["run_id"], got["fake"]) == ("ok", op.run_id, True)


@needs_durable
@pytest.mark.spark
def test_a_retry_that_reconnects_reports_the_original_runs_result(yarn, tmp_path):
    """Try 1 submits the real stats job and its worker dies (SIGKILL); try 2 reconnects to the running application
    and returns the result that run wrote; try 3 finds it succeeded and returns it again. One submission."""
    from airflow_zorder.evaluation.sample_data import write_table

    table = str(tmp_path / "events")
    write_table(table, rows=300, files_per_partition=3, partitioned=False)
    store_path = tmp_path / "store.json"
    store = FileTaskStateStore(store_path)
    code = (
        f"import sys; sys.path[:0] = [{str(HERE)!r}, {str(HERE.parent)!r}]; "
        f"from test_spark_submission import run_try; run_try({table!r}, {yarn['spark_binary']!r}, {str(store_path)!r})"
    )
    log = open(tmp_path / "try1.log", "w")
    try1 = subprocess.Popen([sys.executable, "-c", code], stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.time() + 120
    while time.time() < deadline and store.get(JOB_ID_KEY) is None and try1.poll() is None:
        time.sleep(0.2)
    os.killpg(try1.pid, signal.SIGKILL)  # the worker dies while the application runs on "YARN"
    try1.wait(30)
    app, first = store.get(JOB_ID_KEY), store.get(RUN_STATE_KEY)
    assert app and first == {"external_id": app, "run_id": first["run_id"]}, (tmp_path / "try1.log").read_text()[-3000:]

    assert not (yarn["state"] / f"{app}.exit").exists()  # the application still runs: try 2 reconnects to it
    try2 = stats_operator(table, yarn["spark_binary"])
    result = try2.execute({"task_state_store": store})
    assert submitted(yarn["state"]) == [app]  # reconnected, nothing submitted again
    assert try2.run_id == first["run_id"] and result["run_id"] == first["run_id"]
    assert (result["status"], result["files_total"], result["rows_total"]) == ("ok", 3, 300)
    assert "fake" not in result  # written by the real job's run
    assert result["spark"]["application_id"] == app
    written = json.loads(Path(result_location(f"{table}/_zorder/stats", first["run_id"])).read_text())
    assert written["snapshot_id"] == result["snapshot_id"]

    try3 = stats_operator(table, yarn["spark_binary"])
    again = try3.execute({"task_state_store": store})  # the application finished: found succeeded
    assert submitted(yarn["state"]) == [app]
    assert (again["run_id"], again["snapshot_id"]) == (first["run_id"], result["snapshot_id"])


# --------------------------------------------------------------------------- the Spark application's link


def test_the_live_ui_url_is_noted_from_spark_4s_log_and_reported_as_it_changes():
    seen: list[str] = []
    hook = SparkJobHook(conn_id="spark_fake_yarn_client")
    hook.on_app_url = seen.append
    hook.note_log_line("26/11/25 INFO Utils: Successfully started service 'SparkUI' on port 4041.")
    assert hook.app_url() is None  # the port alone is no URL
    hook.note_log_line(
        "INFO BlockManagerMaster: Registering BlockManager BlockManagerId(driver, 10.0.0.7, 35001, None)"
    )
    assert hook.app_url() == "http://10.0.0.7:4041"
    hook.note_log_line("\t tracking URL: http://rm:8088/proxy/application_1_0001/")
    hook.note_log_line("INFO SparkUI: Stopped Spark web UI at http://10.0.0.7:4041")
    assert seen == ["http://10.0.0.7:4041", "http://rm:8088/proxy/application_1_0001/"]

    def broken(url: str) -> None:
        raise RuntimeError("no XCom today")

    quiet = SparkJobHook(conn_id="spark_fake_yarn_client")
    quiet.on_app_url = broken
    quiet.note_log_line("\t tracking URL: http://rm:8088/proxy/application_1_0002/")  # logged, not raised
    assert quiet.app_url() == "http://rm:8088/proxy/application_1_0002/"


def test_history_server_link_and_where_its_address_comes_from(yarn):
    from airflow.sdk import BaseHook

    assert history_server_link("shs:18080", "application_1_0001") == "http://shs:18080/history/application_1_0001/"
    assert history_server_link("https://shs/x/", "app-1") == "https://shs/x/history/app-1/"
    assert history_server_link(None, "app-1") is None and history_server_link("shs", None) is None
    conn = BaseHook.get_connection("spark_fake_yarn_client")
    op = SparkCollectFileStatsOperator(task_id="s", table="/t", conf={"spark.yarn.historyServer.address": "conf:1"})
    assert op._history_server(conn) == "http://shs.example:18080"  # the connection's extra beats Spark's conf
    assert op._history_server(BaseHook.get_connection("spark_fake_yarn")) == "conf:1"
    op.history_server_url = "http://param:2"
    assert op._history_server(conn) == "http://param:2"


DAG_TEXT = """
import datetime as dt
from airflow.sdk import DAG
from airflow_zorder.operators import SparkCollectFileStatsOperator

with DAG("zorder_live_spark_link", schedule=None, start_date=dt.datetime(2026, 1, 1), catchup=False) as dag:
    SparkCollectFileStatsOperator(task_id="stats", table={table!r}, conn_id="spark_fake_yarn_client",
                                  spark_binary={binary!r})
"""


def link_values(dag_id: str) -> list[str]:
    from airflow.models.xcom import XComModel
    from airflow.utils.session import create_session

    with create_session() as s:
        rows = s.query(XComModel).filter(XComModel.dag_id == dag_id, XComModel.key == SparkApplicationLink().xcom_key)
        return [XComModel.deserialize_value(r) for r in rows.all()]


def test_the_link_is_live_while_the_job_runs_and_the_history_servers_after(yarn, tmp_path, airflow_db):
    """Real dag.test(): YARN client mode; while the (fake) driver runs, the link's XCom already holds YARN's tracking
    URL; when the task ends it holds the History Server's page (the connection's extra ``history_server_url``)."""
    from dag_bundles import dag_module

    dag_file = tmp_path / "dags" / "zorder_live_link_dag.py"
    dag_file.parent.mkdir()
    dag_file.write_text(DAG_TEXT.format(table=str(tmp_path / "events"), binary=yarn["spark_binary"]))
    seen: list[list[str]] = []

    def watch() -> None:
        deadline = time.time() + 120
        while time.time() < deadline and not seen:
            try:
                if values := link_values("zorder_live_spark_link"):
                    seen.append(values)
            except Exception:  # noqa: BLE001 - SQLite busy while the run writes: look again
                pass
            time.sleep(0.2)
        yarn["release"].touch()  # only now may the fake driver finish

    watcher = threading.Thread(target=watch, daemon=True)
    with dag_module(dag_file, "zorder-live-link-tests") as module:
        watcher.start()
        run = module.dag.test()
    watcher.join(10)
    (app,) = submitted(yarn["state"])
    assert seen and seen[0] == [f"{yarn['rm'].url}/proxy/{app}/"], seen  # pushed while the driver was running
    assert str(run.state) == "success"
    assert link_values("zorder_live_spark_link") == [f"http://shs.example:18080/history/{app}/"]
