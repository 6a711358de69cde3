"""The stats job on a real Hudi table (written by Hudi's Spark bundle, tests/hudi_tables.py) with real Spark 4.2: it
collects the latest file slices only (hudi-rs's), tied to the latest completed instant; the hook's rows of the same
instant are the job's."""

from __future__ import annotations

from pathlib import Path

import pytest
from hudi_tables import hudi_tables, missing

from airflow_zorder.core.jobs.options import CollectOptions
from airflow_zorder.core.stats import stats_store
from airflow_zorder.hooks.file_stats import FileStatsHook
from spark_jobs.stats_collection.run import run_collect

pytestmark = pytest.mark.spark
hudi = pytest.importorskip("hudi")
if missing():
    pytest.skip(missing(), allow_module_level=True)

VALUE_FIELDS = ("path", "column_name", "min_value", "max_value", "null_count", "value_count", "has_stats", "file_rows")


@pytest.fixture(scope="module")
def tables(tmp_path_factory) -> dict[str, Path]:
    return hudi_tables(tmp_path_factory.getbasetemp() / "hudi-tables")


def test_the_stats_job_collects_the_latest_file_slices_only(spark, tables, tmp_path):
    root = tables["cow_part"]
    rs = hudi.HudiTableBuilder.from_base_uri(str(root)).build()
    latest = int(rs.get_timeline().get_latest_commit_timestamp())
    live = sorted(f"{root}/{s.base_file_relative_path()}" for s in rs.get_file_slices())
    on_disk = sorted(str(p) for p in root.rglob("*.parquet") if ".hoodie" not in p.parts)
    res = run_collect(spark, CollectOptions(table=str(root), stats_location=str(tmp_path / "stats")))
    assert res["status"] == "ok", res.get("errors")
    assert res["files_total"] == len(live) and res["snapshot_id"] >= 1, res
    rows = stats_store.load_latest(str(tmp_path / "stats"))
    assert sorted(set(rows["path"].to_pylist())) == live
    assert set(on_disk) >= set(live)
    hook_rows = FileStatsHook(str(root)).get_snapshot(["user_id"])
    job_rows = rows.filter(rows["column_name"].to_numpy(zero_copy_only=False) == "user_id")

    def key(t):
        return sorted(tuple(r[f] for f in VALUE_FIELDS) for r in t.to_pylist())

    assert key(job_rows) == key(hook_rows)
    assert int(hook_rows["snapshot_id"][0].as_py()) == latest
