"""Tests for the benchmark helpers: the skewed data generator, the query set and the DuckDB cross-check."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pyarrow.compute as pc
import pyarrow.dataset as ds
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import bench_queries as bq  # noqa: E402
import skewed_data  # noqa: E402

from airflow_zorder.evaluation import layout_report, pruning  # noqa: E402

duckdb = pytest.importorskip("duckdb")


@pytest.fixture(scope="module")
def skewed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("skewed")
    skewed_data.generate_skewed(out, rows=30_000, files=12, seed=3)
    return out


def test_skewed_table_shape(skewed: Path) -> None:
    files = layout_report.data_files(str(skewed))
    assert len(files) == 12
    t = ds.dataset(files, format="parquet").to_table()
    assert t.num_rows == 30_000
    assert set(t.column_names) >= {"event_id", *skewed_data.COLUMNS}
    # mostly-one-value column, Zipf column, long common prefix, unique ids in scrambled order
    share0 = pc.mean(pc.equal(t["status"], 0).cast("int8")).as_py()
    assert 0.88 < share0 < 0.92
    counts = pc.value_counts(t["user_id"]).field("counts").to_numpy()
    assert counts.max() > 0.05 * t.num_rows  # the hottest user holds several percent of rows
    assert pc.all(pc.starts_with(t["customer"], skewed_data.PREFIX)).as_py()
    ids = t["event_id"].to_numpy()
    assert len(set(ids)) == t.num_rows and not (ids[1:] > ids[:-1]).all()


def test_skewed_generation_is_idempotent_and_guarded(skewed: Path) -> None:
    again = skewed_data.generate_skewed(skewed, rows=30_000, files=12, seed=3)
    assert again["skipped"] and again["num_files"] == 12
    assert json.loads((skewed / skewed_data.MARKER).read_text())["rows"] == 30_000
    with pytest.raises(FileExistsError):
        skewed_data.generate_skewed(skewed, rows=20_000, files=12, seed=3)


def test_query_set_families(skewed: Path) -> None:
    files = layout_report.data_files(str(skewed))
    qs = bq.build_queries(files, skewed_data.COLUMNS, n_point=5, n_range=3, n_multi=2, seed=2)
    fams = bq.families(qs)
    assert fams[0] == "point:user_id"
    assert "range1%:customer" in fams
    assert "point:user_id&status&customer" in fams and "range20%:user_id&status&customer" in fams
    # every query's SQL reads back through the project's parser
    for q in qs:
        assert pruning.parse(q.sql).to_sql() == q.sql


def test_evaluate_layout_checks_against_duckdb(skewed: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    files = layout_report.data_files(str(skewed))
    qs = bq.build_queries(files, skewed_data.COLUMNS, n_point=5, n_range=3, n_multi=2, seed=2)
    res = bq.evaluate_layout(files, skewed_data.COLUMNS, qs)
    assert res["violations"] == [] and res["rows"] == 30_000 and res["files"] == 12
    point = res["families"]["point:customer"]
    # a drawn value exists: at least one file holds it, and the evaluator keeps at least those files
    assert point["files_with_match"] >= 1 and point["files_read"] >= point["files_with_match"]

    # an evaluator that prunes everything is caught by the cross-check
    class AllPruned:
        def __init__(self, stats, expr):
            self.files = files
            self.keep = [False] * len(files)

    monkeypatch.setattr(bq.pruning, "prune", AllPruned)
    bad = bq.evaluate_layout(files, skewed_data.COLUMNS, qs[:5])
    assert len(bad["violations"]) >= 5
    assert all(v["matching_rows"] > 0 for v in bad["violations"])


def test_time_queries_reports_medians(skewed: Path) -> None:
    files = layout_report.data_files(str(skewed))
    qs = bq.build_queries(files, skewed_data.COLUMNS, n_point=3, n_range=2, n_multi=2, seed=2)
    out = bq.time_queries(files, qs, ["point:status"], "amount", per_family=2, repeat=2)
    assert out["point:status"]["queries"] == 2 and out["point:status"]["median_ms"] > 0
