"""The Airflow operators against a Spark connection that is missing or points nowhere: a clear, fast failure
naming the connection, nothing submitted, the table untouched."""

from __future__ import annotations

import socket
import time

import pytest
from airflow.sdk.exceptions import AirflowException
from reliability_kit import record
from table_checks import visible_files

from airflow_zorder.operators import SparkClusterTableOperator, SparkCollectFileStatsOperator

pytestmark = [pytest.mark.reliability]


def _closed_port() -> int:
    with socket.socket() as s:  # bound then closed: nothing listens there
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("op_class", [SparkClusterTableOperator, SparkCollectFileStatsOperator])
def test_missing_connection_fails_naming_it(op_class, copy_table, monkeypatch):
    table = copy_table("flat")
    files = visible_files(table)
    monkeypatch.delenv("AIRFLOW_CONN_NO_SUCH_SPARK", raising=False)
    kw = {"columns": "user_id"} if op_class is SparkClusterTableOperator else {}
    op = op_class(task_id="t", table=table, conn_id="no_such_spark", **kw)
    with pytest.raises(AirflowException, match="Spark connection 'no_such_spark' does not exist"):
        op.execute({})
    assert op._hook is None and visible_files(table) == files
    record(cases=1)


@pytest.mark.parametrize(
    "master",
    ["spark://127.0.0.1:{port}", "spark://127.0.0.1:{port},127.0.0.1:{port2}", "spark://no-such-host.invalid:7077"],
)
def test_unreachable_master_fails_fast_naming_it(master, copy_table, monkeypatch):
    """A standalone master that accepts no connection: spark-submit would retry for minutes; we fail at once."""
    table = copy_table("flat")
    files = visible_files(table)
    url = master.format(port=_closed_port(), port2=_closed_port())
    monkeypatch.setenv("AIRFLOW_CONN_SPARK_DEAD", f'{{"conn_type": "spark", "host": "{url}"}}')
    op = SparkClusterTableOperator(task_id="c", table=table, columns="user_id", conn_id="spark_dead")
    started = time.time()
    with pytest.raises(
        AirflowException,
        match=rf"Spark master {url} of connection 'spark_dead' is unreachable "
        r"\(.*(refused|resolve|not known|name resolution).*nothing was submitted",
    ):
        op.execute({})
    assert time.time() - started < 30
    assert op._hook is None and visible_files(table) == files
    record(cases=1)


def test_master_as_host_and_port_fields(monkeypatch, copy_table):
    """The connection's host and port fields (not a URL in host) are checked the same way."""
    table = copy_table("flat")
    port = _closed_port()
    monkeypatch.setenv(
        "AIRFLOW_CONN_SPARK_DEAD2", f'{{"conn_type": "spark", "host": "spark://127.0.0.1", "port": {port}}}'
    )
    op = SparkCollectFileStatsOperator(task_id="s", table=table, conn_id="spark_dead2")
    with pytest.raises(AirflowException, match=f"Spark master spark://127.0.0.1:{port} of connection 'spark_dead2'"):
        op.execute({})
    record(cases=1)
