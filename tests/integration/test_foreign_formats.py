"""Both Spark jobs refuse Hudi and Iceberg tables and any directory inside a Delta Lake table, and leave them byte for byte untouched (issue 22).

Each job runs through its command-line entry (``main([...])``, in process on the shared SparkSession,
plus one real ``spark-submit`` of the clustering job) against real table directories (see
tests/unit/test_table_formats.py for how each is made), and against real catalog tables: a Parquet
table registered over a Delta directory, and a metastore table whose provider is ``delta``.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
from pathlib import Path

import pytest
from table_checks import spark_submit

from spark_jobs import cli, cluster_table, collect_stats

pytestmark = pytest.mark.spark

_spec = importlib.util.spec_from_file_location(
    "table_format_builders", Path(__file__).resolve().parents[1] / "unit" / "test_table_formats.py"
)
builders = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(builders)

FORMAT_NAMES = {"delta": "Delta Lake", "hudi": "Apache Hudi", "iceberg": "Apache Iceberg"}
JOBS = {
    "cluster": (cluster_table.main, ["--columns", "id,v", "--num-files", "1"]),
    "stats": (collect_stats.main, ["--columns", "id,v"]),
}


def snapshot(root: str) -> dict[str, tuple]:
    """Every file and directory under ``root``, hidden ones included: (size, mtime_ns, sha256) / directory mtime.

    A directory's mtime changes when anything is created, renamed or deleted in it.
    """
    out: dict[str, tuple] = {".": ("dir", os.stat(root).st_mtime_ns)}
    for d, dirs, files in os.walk(root):
        for name in dirs:
            p = os.path.join(d, name)
            out[os.path.relpath(p, root)] = ("dir", os.stat(p).st_mtime_ns)
        for name in files:
            p = os.path.join(d, name)
            st = os.stat(p)
            with open(p, "rb") as fh:
                out[os.path.relpath(p, root)] = (st.st_size, st.st_mtime_ns, hashlib.sha256(fh.read()).hexdigest())
    return out


def no_state_dir(base: str) -> None:
    for d, dirs, _ in os.walk(base):
        assert "_zorder" not in dirs, f"a _zorder/ state directory was created in {d}"


@pytest.fixture
def in_process(spark, monkeypatch):
    """``main`` runs on the shared session and must not stop it."""
    monkeypatch.setattr(cli, "build_session", lambda app_name: spark)
    monkeypatch.setattr(spark, "stop", lambda: None)
    return spark


def build(case: str, base: Path) -> tuple[str, str, str, object]:
    """(table argument, foreign table root, format, check of the format's own readers) for a case."""
    if case.startswith("delta"):
        from deltalake import DeltaTable

        root = str(base / "delta")
        live = builders.write_delta(root, partitioned=case != "delta")
        target = root + "/region=us" if case == "delta-partition-dir" else root

        def readers_ok():  # the Delta log still resolves and reads exactly the same rows
            assert DeltaTable(root).to_pyarrow_table().sort_by("id").equals(live.sort_by("id"))

        return target, root, "delta", readers_ok
    if case.startswith("hudi"):
        root = str(base / "hudi")
        builders.write_hudi(root)
        return (root + "/region=us" if case == "hudi-partition-dir" else root), root, "hudi", None
    if case == "iceberg-handwritten":
        root = str(base / "ice")
        builders.write_iceberg_handwritten(root)
        return root, root, "iceberg", None
    root, live = builders.write_iceberg(str(base / "warehouse"))

    def readers_ok():  # the catalog's metadata still resolves and reads exactly the same rows
        assert builders.load_iceberg_rows(str(base / "warehouse")).sort_by("id").equals(live.sort_by("id"))

    return (root + "/data" if case == "iceberg-data-dir" else root), root, "iceberg", readers_ok


# A Delta table's root is clustered and collected through its log (test_cluster_delta,
# test_collect_stats_delta), a Hudi table's base path through its timeline (tests/integration/test_hudi_tables.py);
# a directory inside either stays refused.
CASES = [
    "delta-partition-dir",
    "hudi-partition-dir",
    "iceberg",
    "iceberg-data-dir",
    "iceberg-handwritten",
]


def assert_refused(result: dict, code: int, fmt: str, table: str) -> None:
    assert code == 1, result
    assert result["status"] == "failed" and result["error_type"] == "ForeignTableFormatError", result
    assert result["error_category"] == "invalid_input", result  # the category's, from airflow_zorder.core.errors
    msg = result["error"]
    assert f"table {table} " in msg and FORMAT_NAMES[fmt] in msg, msg
    assert "The table was left untouched" in msg and "What to do:" in msg, msg


@pytest.mark.parametrize("job", sorted(JOBS))
@pytest.mark.parametrize("case", CASES)
def test_job_refuses_the_table_and_leaves_it_untouched(in_process, tmp_path, capsys, case, job):
    target, root, fmt, readers_ok = build(case, tmp_path / "t")
    before = snapshot(root)
    main, args = JOBS[job]
    out = tmp_path / "result.json"
    code = main(["--table", target, *args, "--result-json", str(out)])
    assert_refused(json.loads(out.read_text()), code, fmt, target)
    assert "Traceback" not in capsys.readouterr().err  # reported as an expected refusal, not as a crash
    assert snapshot(root) == before
    no_state_dir(str(tmp_path / "t"))
    if readers_ok:
        readers_ok()


def test_spark_submit_exits_1_with_the_reason_in_its_result(tmp_path):
    """The real command line (one job; ~30 s): a separate driver process, its exit code and --result-json."""
    root = str(tmp_path / "delta")
    builders.write_delta(root, partitioned=True)
    target = root + "/region=us"
    before = snapshot(root)
    out = tmp_path / "result.json"
    proc = spark_submit("cluster_table", "--table", target, "--columns", "id,v", "--result-json", str(out))
    assert proc.returncode == 1, proc.stderr[-3000:]
    result = json.loads(out.read_text())
    assert_refused(result, proc.returncode, "delta", target)
    assert "Traceback" not in proc.stderr  # an expected refusal, not a crash
    assert snapshot(root) == before
    no_state_dir(root)


# --------------------------------------------------------------------------- catalog tables


def _register_provider_delta(spark, name: str, location: str) -> None:
    """A metastore table whose ``CatalogTable.provider`` is ``delta``, made without Delta's jars.

    ``CREATE TABLE ... USING delta`` needs Delta's data source class, so the table is created the
    way Spark itself stores any data source table (``SessionCatalog.createTable``), from a Parquet
    table's metadata with the provider switched: the metastore entry Delta's catalog would write.
    """
    template = f"{name}_template"
    spark.sql(f"CREATE TABLE {template} (id BIGINT, region STRING, v DOUBLE) USING parquet LOCATION '{location}'")
    jvm = spark._jvm
    catalog = spark._jsparkSession.sessionState().catalog()
    ident = jvm.org.apache.spark.sql.catalyst.TableIdentifier.apply
    meta = catalog.getTableMetadata(ident(template, jvm.scala.Some("default")))
    n = next(m.getParameterCount() for m in meta.getClass().getMethods() if m.getName() == "copy")
    args = [getattr(meta, f"copy$default${i}")() for i in range(1, n + 1)]
    provider_at = next(i for i, a in enumerate(args) if hasattr(a, "equals") and a.equals(meta.provider()))
    args[0] = ident(name, jvm.scala.Some("default"))
    args[provider_at] = jvm.scala.Some("delta")
    catalog.dropTable(ident(template, jvm.scala.Some("default")), False, False)  # external: files stay
    catalog.createTable(meta.copy(*args), False, False)


def _drop(spark, name: str) -> None:
    jvm = spark._jvm
    spark._jsparkSession.sessionState().catalog().dropTable(
        jvm.org.apache.spark.sql.catalyst.TableIdentifier.apply(name, jvm.scala.Some("default")), True, False
    )


@pytest.mark.parametrize("job", sorted(JOBS))
@pytest.mark.parametrize("how", ["parquet-over-delta", "provider-delta"])
def test_catalog_tables_over_delta_are_refused(in_process, tmp_path, how, job):
    spark = in_process
    root = str(tmp_path / "delta")
    builders.write_delta(root, partitioned=True)
    name = f"fmt_{how.replace('-', '_')}_{job}"
    _drop(spark, name)
    if how == "parquet-over-delta":  # e.g. registered by hand or by a crawler that read the Parquet files
        spark.sql(
            f"CREATE TABLE {name} (id BIGINT, v DOUBLE, region STRING) USING parquet "
            f"PARTITIONED BY (region) LOCATION '{root}'"
        )
    else:
        _register_provider_delta(spark, name, root)
    props_before = _table_properties(spark, name)
    before = snapshot(root)
    main, args = JOBS[job]
    out = tmp_path / "result.json"
    try:
        code = main(["--table", name, *args, "--result-json", str(out)])
        result = json.loads(out.read_text())
        assert code == 1 and result["error_type"] == "ForeignTableFormatError", result
        msg = result["error"]
        assert "Delta Lake" in msg and "The table was left untouched" in msg, msg
        if how == "parquet-over-delta":
            assert f"table {name} (location file:{root}) is a Delta Lake table (found: _delta_log/)" in msg, msg
        else:
            assert f"table {name} (a catalog table) is a Delta Lake table (found: catalog provider delta)" in msg, msg
        assert snapshot(root) == before
        no_state_dir(root)
        assert _table_properties(spark, name) == props_before  # no home property pinned: refused before that
    finally:
        _drop(spark, name)


def _table_properties(spark, name: str) -> dict[str, str]:
    jvm = spark._jvm
    meta = (
        spark._jsparkSession.sessionState()
        .catalog()
        .getTableMetadata(jvm.org.apache.spark.sql.catalyst.TableIdentifier.apply(name, jvm.scala.Some("default")))
    )
    it = meta.properties().iterator()
    out = {}
    while it.hasNext():
        kv = it.next()
        out[kv._1()] = kv._2()
    return out
