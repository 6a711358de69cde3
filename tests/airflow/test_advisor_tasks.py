"""The workload advisor in Airflow: FileStatsHook.recommend_columns / auto_columns, the operator's XCom, the
sensor's ``columns="auto"`` with its margin, and Athena's history read from a real moto server through an
``aws`` connection; on real Parquet tables whose stats were collected from their footers."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from overlap_tables import collect, write_table

from airflow_zorder.core.advisor import advice_events
from airflow_zorder.core.advisor.hysteresis import choose_columns
from airflow_zorder.core.advisor.recommend import Recommendation
from airflow_zorder.core.stats.stats_location import default_stats_location


def _workload(path: Path, column: str, n: int = 20) -> Path:
    path.write_text(";\n".join(f"SELECT * FROM events WHERE {column} = {i * 5}" for i in range(n)))
    return path


@pytest.fixture
def table(tmp_path: Path) -> Path:
    root = write_table(tmp_path / "t", {"": "scrambled"})  # 16 files, each spanning a and b: nothing is skipped
    collect(root)
    return root


def test_hook_and_operator_recommend_and_record(airflow_db, table: Path, tmp_path: Path) -> None:
    from airflow_zorder.hooks.file_stats import FileStatsHook
    from airflow_zorder.operators.recommend_columns import RecommendClusteringColumnsOperator

    wl = _workload(tmp_path / "b.sql", "b")
    advice = FileStatsHook(str(table)).recommend_columns(str(wl), table_name="events")
    assert advice["columns"] == ["b"] and advice["scans"] == 20 and advice["served"] == 1.0
    assert advice["files_before"] == 16 and advice["files_after"] < 2
    assert advice_events.last_advice(default_stats_location(str(table))) is None  # record=False by default
    sampled = FileStatsHook(str(table)).recommend_columns(str(wl), table_name="events", sample_rows=300)
    assert sampled["estimate"] == "sample" and sampled["sample_rows"] == 300 and sampled["columns"] == ["b"]

    op = RecommendClusteringColumnsOperator(task_id="advise", table=str(table), workload=[str(wl)], table_name="events")
    xcom = op.execute({})
    json.dumps(xcom)
    assert xcom["columns"] == ["b"] and xcom["estimate"] == "sample"  # the operator samples by default
    last = advice_events.last_advice(default_stats_location(str(table)))
    assert last["chosen"] == ["b"] and last["files_after"] == pytest.approx(xcom["files_after"])


def test_sensor_auto_columns_change_only_past_the_margin(airflow_db, table: Path, tmp_path: Path) -> None:
    from airflow_zorder.core.errors import InvalidInputError
    from airflow_zorder.sensors import FileOverlapSensor

    with pytest.raises(InvalidInputError, match="workload"):
        FileOverlapSensor(task_id="w", table=str(table), columns="auto")

    def evaluate(workload: Path) -> dict:
        s = FileOverlapSensor(
            task_id="w", table=str(table), columns="auto", workload=str(workload), workload_table="events"
        )
        return s.execute_complete({}, {"status": "changed", "end_at": time.time() + 600})

    a = _workload(tmp_path / "a.sql", "a")
    first = evaluate(a)
    assert first["advice"]["chosen"] == ["a"] and first["advice"]["changed"]
    assert list(first["columns"]) == ["a"] and first["decision"] == "recluster"  # judged on the workload's column
    again = evaluate(a)
    assert again["advice"]["chosen"] == ["a"] and not again["advice"]["changed"]
    b = _workload(tmp_path / "b.sql", "b")
    moved = evaluate(b)  # a now serves no query: b reads a fraction of a's files, far past the margin
    assert moved["advice"]["chosen"] == ["b"] and moved["advice"]["changed"]
    assert [e["columns"] for e in _advice_events(table)] == [["a"], ["b"]]  # recorded when the choice changed


def _advice_events(table: Path) -> list[dict]:
    from airflow_zorder.core.stats import stats_store

    return stats_store.load_events(default_stats_location(str(table)), kind="advice").to_pylist()


def _rec(columns: list[str], after: float, current_after: float | None) -> Recommendation:
    return Recommendation(
        table="t", columns=columns, curve="zorder", num_files=16, statements=1, status={"ok": 1}, scans=1,
        served=1.0, files_before=16.0, files_after=after, total_files=16, current_columns=["a"],
        current_files_after=current_after,
    )  # fmt: skip


def test_the_margin_keeps_near_ties_and_takes_clear_gains() -> None:
    assert choose_columns(_rec(["b"], 9.5, 10.0), ["a"], 0.1).columns == ["a"]  # 5% better: within the margin
    assert choose_columns(_rec(["b"], 8.0, 10.0), ["a"], 0.1).columns == ["b"]  # 20% better: switch
    assert choose_columns(_rec(["b"], 9.5, 10.0), ["a"], 0.0).columns == ["b"]
    assert choose_columns(_rec([], 16.0, 16.0), ["a"]).columns == ["a"]  # no filters: keep what is in use
    assert choose_columns(_rec(["b"], 8.0, None).to_dict(), None).changed  # the first choice


@pytest.fixture(scope="module")
def athena_endpoint(tmp_path_factory: pytest.TempPathFactory):
    from loopback import free_port

    port = free_port()
    log = open(tmp_path_factory.mktemp("moto") / "moto.log", "wb")  # noqa: SIM115
    proc = subprocess.Popen([sys.executable, "-m", "moto.server", "-p", str(port)], stdout=log, stderr=log)
    endpoint = f"http://127.0.0.1:{port}"
    for _ in range(100):
        try:
            import urllib.request

            urllib.request.urlopen(endpoint + "/moto-api/", timeout=1)
            break
        except OSError:
            time.sleep(0.1)
    yield endpoint
    proc.terminate()
    proc.wait(10)
    log.close()


def test_athena_history_through_an_aws_connection(airflow_db, athena_endpoint: str, monkeypatch, table: Path) -> None:
    import boto3

    from airflow_zorder.hooks.athena_history import AthenaQueryHistoryHook
    from airflow_zorder.operators.recommend_columns import RecommendClusteringColumnsOperator

    conn = {
        "conn_type": "aws",
        "login": "k",
        "password": "s",
        "extra": {"endpoint_url": athena_endpoint, "region_name": "us-east-1"},
    }
    monkeypatch.setenv("AIRFLOW_CONN_ATHENA_TEST", json.dumps(conn))
    client = boto3.client(
        "athena",
        endpoint_url=athena_endpoint,
        region_name="us-east-1",
        aws_access_key_id="k",
        aws_secret_access_key="s",
    )
    queries = [f'SELECT * FROM "db"."events" WHERE b IN ({i}, {i + 50})' for i in range(60)] + ["SELECT 1"]
    for q in queries:
        client.start_query_execution(
            QueryString=q, WorkGroup="primary", ResultConfiguration={"OutputLocation": "s3://results/"}
        )
    got = AthenaQueryHistoryHook("athena_test").statements()
    assert sorted(s.sql for s in got) == sorted(queries)  # every page, and the fall-back past the batch call
    assert {s.engine for s in got} == {"athena"}
    op = RecommendClusteringColumnsOperator(
        task_id="advise", table=str(table), table_name="db.events", athena_conn_id="athena_test", record=False
    )
    advice = op.execute({})
    assert advice["columns"] == ["b"] and advice["scans"] == 60 and advice["status"] == {"ok": 60, "other_table": 1}
