"""The connectors' jars per Spark line (airflow_zorder/spark_jars.py), and how S3A settings reach pyarrow and
spark-submit. ``make test`` fetches the jars first (``make jars``), so the cache is real here."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from airflow_zorder import spark_jars
from airflow_zorder.core.errors import JarsNotFetchedError
from airflow_zorder.core.storage.io.hadoop import s3a_arrow_options


def test_line_of_a_spark_version_and_the_lines_we_pin():
    assert spark_jars.line_of("4.2.0") == "4.2" and spark_jars.line_of("4.1.2") == "4.1"
    with pytest.raises(ValueError, match=r"Spark 3\.5\.1 is on line 3\.5.*pinned lines: 4\.1, 4\.2"):
        spark_jars.line_of("3.5.1")
    # hadoop-aws matches the Hadoop client each line bundles, with the SDK bundle its pom names
    assert [a.coordinate for a in spark_jars.SPARK_LINES["4.2"].stores["s3a"]] == [
        "org.apache.hadoop:hadoop-aws:3.5.0",
        "software.amazon.awssdk:bundle:2.35.4",
    ]
    assert spark_jars.SPARK_LINES["4.1"].stores["s3a"][0].version == spark_jars.SPARK_LINES["4.1"].hadoop == "3.4.2"
    assert spark_jars.store_of("abfss") == "abfs" and spark_jars.store_of("s3") is None


def test_the_fetched_cache_holds_the_pinned_jars():
    jars = [Path(p).name for p in spark_jars.jars_for(["s3a"], "4.2")]
    assert "hadoop-aws-3.5.0.jar" in jars and "bundle-2.35.4.jar" in jars
    assert [Path(p).name for p in spark_jars.jars_for(["gs"], "4.2")] == ["gcs-connector-3.1.18-shaded.jar"]
    # what pyspark ships already (httpclient, which hadoop-azure names too) is not put on its classpath twice
    assert not [j for j in spark_jars.jars_for(["abfs"], "4.2") if "httpclient" in j]


def test_an_empty_cache_names_the_command_that_fills_it(tmp_path, monkeypatch):
    monkeypatch.setenv(spark_jars.CACHE_ENV, str(tmp_path))
    with pytest.raises(JarsNotFetchedError, match=r"run `make jars`.*--line 4\.2 --store s3a"):
        spark_jars.jars_for(["s3a"], "4.2")
    assert spark_jars.fetched_jars(line="4.2") == []
    assert spark_jars.main(["jars", "s3a", "--line", "4.2"]) == 1


def test_a_shaded_jar_is_fetched_without_its_dependencies():
    pom = spark_jars._pom(spark_jars.SPARK_LINES["4.2"].stores["gs"])
    assert "<classifier>shaded</classifier>" in pom and "<exclusion><groupId>*</groupId>" in pom


def test_s3a_settings_become_pyarrow_options_a_buckets_own_first():
    conf = {
        "fs.s3a.access.key": "AK",
        "fs.s3a.secret.key": "SK",
        "fs.s3a.endpoint": "http://127.0.0.1:9000",
        "fs.s3a.bucket.other.endpoint": "minio.example:9443",
        "fs.s3a.endpoint.region": "eu-west-1",
    }
    assert s3a_arrow_options(conf.get, "lake") == {
        "access_key": "AK",
        "secret_key": "SK",
        "region": "eu-west-1",
        "endpoint_override": "127.0.0.1:9000",
        "scheme": "http",
    }
    assert s3a_arrow_options(conf.get, "other")["endpoint_override"] == "minio.example:9443"
    assert s3a_arrow_options(conf.get, "other")["scheme"] == "https"
    assert s3a_arrow_options({}.get, "lake") == {}  # the default credential chain, as on an instance profile


def test_operators_hand_a_storage_connection_and_local_jars_to_spark_submit(monkeypatch):
    pytest.importorskip("airflow.providers.amazon")
    from airflow_zorder.operators.spark_job import local_connector, store_conf

    conn = {
        "conn_type": "aws",
        "login": "AK",
        "password": "SK",
        "extra": {"endpoint_url": "http://127.0.0.1:9000", "region_name": "us-east-1"},
    }
    monkeypatch.setenv("AIRFLOW_CONN_LAKE_S3", json.dumps(conn))
    conf = store_conf({"spark.hadoop.fs.s3a.endpoint.region": "mine"}, "s3a://lake/t", "lake_s3")
    assert conf["spark.hadoop.fs.s3a.access.key"] == "AK" and conf["spark.hadoop.fs.s3a.secret.key"] == "SK"
    assert conf["spark.hadoop.fs.s3a.endpoint"] == "http://127.0.0.1:9000"
    assert conf["spark.hadoop.fs.s3a.path.style.access"] == "true"
    assert conf["spark.hadoop.fs.s3a.endpoint.region"] == "mine", "the operator's own conf wins"
    assert store_conf({"a": 1}, "s3a://lake/t", None) == {"a": 1}
    jars, conf = local_connector("local[2]", "s3a://lake/t", "/x/mine.jar", {"a": 1})
    assert jars.split(",")[0] == "/x/mine.jar" and any(j.endswith("hadoop-aws-3.5.0.jar") for j in jars.split(","))
    assert conf == {"a": 1}, "S3A needs no extra setting on this line"
    jars, conf = local_connector("local[2]", "gs://lake/t", None, {"spark.hadoop.fs.gs.block.size": "1"})
    assert jars.endswith("gcs-connector-3.1.18-shaded.jar")
    assert conf["spark.hadoop.fs.gs.impl"] == "com.google.cloud.hadoop.fs.gcs.GoogleHadoopFileSystem"
    assert conf["spark.hadoop.fs.gs.block.size"] == "1", "the operator's own conf wins"
    assert local_connector("yarn", "s3a://lake/t", None, {}) == (None, {}), "a cluster brings its own connectors"
    assert local_connector("local[2]", "/data/t", None, {}) == (None, {})


def test_each_lines_connector_settings_for_gs():
    """gcs-connector on Hadoop 3.5 (Spark 4.2) needs its own class and a numeric block size; both lines need Parquet's
    vectored reads off (tests/integration/test_gcs_connector.py shows each failure)."""
    on_42 = spark_jars.connector_settings(["s3a", "gs"], "4.2")
    assert on_42["fs.gs.impl"] == "com.google.cloud.hadoop.fs.gcs.GoogleHadoopFileSystem"
    assert on_42["fs.gs.block.size"] == "67108864" and on_42["parquet.hadoop.vectored.io.enabled"] == "false"
    assert spark_jars.connector_settings(["gs"], "4.1") == {"parquet.hadoop.vectored.io.enabled": "false"}
    assert spark_jars.connector_settings(["s3a", "abfs"], "4.2") == {}
