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

from airflow_zorder.core.skipping import predicate_sql  # noqa: E402
from airflow_zorder.evaluation import layout_report  # noqa: E402

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
        assert predicate_sql.parse(q.sql).to_sql() == q.sql


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


# --------------------------------------------------------------------------- Delta strategies (run_all, bench_report)


def _parquet_dir(path: Path, files: int = 3, rows: int = 50) -> Path:
    import pyarrow as pa
    import pyarrow.parquet as pq

    path.mkdir(parents=True)
    for i in range(files):
        ids = list(range(i * rows, (i + 1) * rows))
        pq.write_table(
            pa.table({"id": ids, "v": [x * 0.5 for x in ids], "s": [f"s{x % 7}" for x in ids]}),
            path / f"part-{i:03d}.parquet",
        )
    return path


@pytest.fixture
def bc():
    pytest.importorskip("deltalake")
    import bench_cluster

    return bench_cluster


def test_write_delta_input_and_copies_start_identical(bc, tmp_path: Path) -> None:
    import deltalake

    src = _parquet_dir(tmp_path / "src")
    mon = bc.MemoryMonitor()
    info = bc.write_delta_input(src, tmp_path / "delta", mon)
    assert info["version"] == 2 and info["input_files"] == 3 and info["written_files"] == 3  # one append per file
    assert info["write"]["wall_s"] >= 0 and "peak_python_rss_mb" in info["write"]
    assert bc.write_delta_input(src, tmp_path / "warm", mon, first=1)["input_files"] == 1
    assert deltalake.DeltaTable(str(tmp_path / "warm")).to_pyarrow_table().num_rows == 50
    a, b = bc.copy_table(tmp_path / "delta", tmp_path / "a"), bc.copy_table(tmp_path / "delta", tmp_path / "b")
    rel = lambda t: sorted(Path(f).relative_to(t).as_posix() for f in bc.delta_live_files(t))  # noqa: E731
    assert rel(a) == rel(b) == rel(tmp_path / "delta")
    assert (a / "_delta_log" / "00000000000000000000.json").read_bytes() == (
        b / "_delta_log" / "00000000000000000000.json"
    ).read_bytes()


def test_delta_live_files_come_from_the_log_not_the_directory(bc, tmp_path: Path) -> None:
    import deltalake

    src = _parquet_dir(tmp_path / "src")
    t = tmp_path / "t"
    bc.write_delta_input(src, t, bc.MemoryMonitor())
    v0 = bc.delta_live_files(t)
    deltalake.write_deltalake(str(t), deltalake.DeltaTable(str(t)).to_pyarrow_table(), mode="overwrite")
    now = bc.delta_live_files(t)
    assert all(Path(f).is_file() for f in v0 + now)  # the replaced files stay on disk (no VACUUM) ...
    assert not set(v0) & set(now)  # ... and are not live
    assert sorted(bc.delta_live_files(t, version=2)) == sorted(v0)  # the input: one append per file, versions 0-2
    assert set(layout_report.data_files(str(t))) == set(v0) | set(now)  # what a directory listing would say


def test_delta_rows_checksum_ignores_order_and_files_but_not_rows(bc, tmp_path: Path) -> None:
    import deltalake

    src = _parquet_dir(tmp_path / "src")
    t = tmp_path / "t"
    bc.write_delta_input(src, t, bc.MemoryMonitor())
    before = bc.delta_rows_checksum(t)
    assert before["rows"] == 150 and before["version"] == 2
    rows = deltalake.DeltaTable(str(t)).to_pyarrow_table()
    # the same rows reversed, in other files: an overwrite with half of them, then an append of the rest
    backwards = rows.take(list(range(149, -1, -1)))
    deltalake.write_deltalake(str(t), backwards.slice(0, 70), mode="overwrite")
    deltalake.write_deltalake(str(t), backwards.slice(70), mode="append")
    after = bc.delta_rows_checksum(t)
    assert (after["rows"], after["checksum"]) == (before["rows"], before["checksum"]) and after["version"] == 4
    assert bc.delta_rows_checksum(t, version=2) == before
    check = bc.delta_rows_check(t, 2)
    assert check["equal"] and check["before"] == before and check["after"] == after

    def variant(name: str, table) -> Path:
        deltalake.write_deltalake(str(tmp_path / name), table)
        return tmp_path / name

    lost = variant("lost", rows.slice(1))
    dup = variant("dup", rows.take([0, 0, *range(2, 150)]))  # row 1 -> a copy of row 0
    changed = variant("changed", rows.set_column(1, "v", pc.add(rows["v"], 1e-9)))
    for other in (lost, dup, changed):
        c = bc.delta_rows_check(t, 0, {"other": other})
        assert not c["equal"] and c["other"]["checksum"] != before["checksum"]
    assert bc.delta_rows_check(t, 0, {"missing": tmp_path / "nothing here"}).keys() == {"before", "after", "equal"}


def _clustering_result(ours_delta: bool = True, equal: bool = True) -> dict:
    def run(wall: float, **kw) -> dict:
        return {
            "wall_s": wall,
            "cpu_s": wall * 2,
            "peak_jvm_rss_mb": 1000.0,
            "peak_jvm_heap_mb": 500.0,
            "peak_python_rss_mb": 300.0,
            "load1_end": 1.0,
            **kw,
        }

    curves = {"hilbert": run(12.0, wall_ratio=1.2, cpu_ratio=1.1, heap_ratio=1.0, files=8, phases={"commit_s": 0.1})}
    baselines = [run(10.0), run(10.0)]
    if ours_delta:
        baselines.append(run(10.0))
        chk = {"rows": 1000, "checksum": "42", "version": 0}
        curves["hilbert delta"] = run(
            13.0,
            wall_ratio=1.3,
            cpu_ratio=1.2,
            heap_ratio=1.0,
            files=8,
            phases={"stage_and_verify_s": 10.0, "commit_s": 0.4},
            delta={"read_version": 0, "version": 1},
            python_rss_increase_mb=25.0,
            rows_check={
                "before": chk,
                "after": {**chk, "version": 1},
                "delta-rs z_order": {**chk, "version": 3, "checksum": "42" if equal else "7"},
                "equal": equal,
            },
        )
    return {
        "title": "T",
        "input": {"files": 3},
        "delta_input": {"table": "/w/t_delta_input", "written_files": 2, "version": 0, "write": run(1.0)},
        "clustering": {"curves": curves, "baselines": baselines, "baseline_mean_s": 10.0, "baseline_mean_cpu_s": 20.0},
        "delta_rs": {
            "z_order": run(9.0),
            "write": run(1.0),
            "started_from": "/w/t_delta_input",
            "read_version": 0,
            "timed_run_table_version": 1,
            "match_target_size": 1234,
            "timed_run_files": 9,
            "live_files": ["a"] * 8,
        },
        "layouts": {k: {} for k in ("delta-rs z_order", "hilbert delta", "as generated", "hilbert")},
    }


def test_report_puts_ours_on_delta_next_to_delta_rs() -> None:
    import bench_report as br

    ds = _clustering_result()
    assert br._layouts(ds) == ["as generated", "hilbert", "hilbert delta", "delta-rs z_order"]
    assert br.LABEL["hilbert delta"] == "hilbert (ours, Delta)"
    rows = [(r["strategy"], r["kind"]) for r in br.cost_rows(ds)]
    assert rows == [
        ("reference rewrite (mean of 3 runs)", "reference"),
        ("hilbert", "spark"),
        ("hilbert delta", "spark"),
        ("delta-rs z_order", "delta"),
    ]
    same, rows_line, memory = br.delta_notes(ds)
    assert "started from copies of the same Delta table" in same
    assert "ours version 0 -> 1, one transaction;" in same
    assert "delta-rs's timed `z_order` version 0 -> 1, one transaction; its untimed re-cuts" in same
    assert (
        "(one `write_deltalake` append per input file, untimed: 2 files, version 0; the Parquet strategies read the 3 input"
        in same
    )
    assert "1,000 rows before our commit (version 0, by time travel) and after it (version 1)" in rows_line
    assert "and in the delta-rs z_order table at its last version (3): equal." in rows_line
    assert "rose by 25 MB" in memory and "0.4 s" in memory


def test_report_shows_each_ratio_as_median_with_the_range_of_its_rounds() -> None:
    import bench_report as br

    ds = _clustering_result()
    rounds = [
        {"wall_s": w, "cpu_s": w * 2, "wall_ratio": w / 10, "cpu_ratio": w / 10 * 0.9} for w in (11.0, 12.0, 15.0)
    ]
    ds["clustering"]["curves"]["hilbert"]["rounds"] = rounds
    ds["delta_rs"]["z_order"]["rounds"] = [{"wall_s": w, "cpu_s": w} for w in (8.0, 9.0, 12.0)]
    rows = {r["strategy"]: r for r in br.cost_rows(ds)}
    assert rows["hilbert"]["ratio_range"] == [1.1, 1.5] and rows["hilbert"]["rounds"] == 3
    assert rows["delta-rs z_order"]["ratio_range"] == [0.8, 1.2]  # each round's wall over the references' mean
    assert rows["hilbert delta"]["ratio_range"] is None  # one round: no range
    assert br.ratio_cell(1.2, [1.1, 1.5]) == "1.20x (1.10–1.50)" and br.ratio_cell(1.3, None) == "1.30x"
    res = {
        "datasets": {"t": {**ds, "columns": ["a"], "families": ["point:a"], "layouts": {}}},
        "machine": {"git_head": "abc1234", "cpus": 2},
        "started_utc": "2026-11-26T20:00:00Z",
        "load": {"start": [1.0]},
    }
    assert br.rounds_of(res) == 1  # the Delta run had one round: the README must not claim three
    ds["clustering"]["curves"]["hilbert delta"]["rounds"] = rounds
    assert br.rounds_of(res) == 3


def test_run_all_refuses_to_document_an_uncommitted_tree(monkeypatch, capsys) -> None:
    import run_all

    monkeypatch.setattr(run_all, "uncommitted", lambda: ["spark_jobs/rewrite.py"])
    assert run_all.main(["--no-incremental"]) == 2  # the default --out: docs and README would name no commit
    err = capsys.readouterr().err
    assert "spark_jobs/rewrite.py" in err and "commit them first" in err


def test_report_delta_notes_say_when_rows_differ_or_nothing_ran() -> None:
    import bench_report as br

    notes = br.delta_notes(_clustering_result(equal=False))
    assert any(n.startswith("**Rows differ**") and "checksum 7" in n for n in notes)
    assert br.delta_notes(_clustering_result(ours_delta=False)) == []
    ds = _clustering_result()
    ds["delta_rs"]["started_from"] = "/elsewhere"  # not the same table: no claim that it was
    assert not any("same Delta table" in n for n in br.delta_notes(ds))
    ds["clustering"]["curves"]["hilbert delta"]["delta"] = {"read_version": 0, "version": 3}
    assert br._versions(0, 3) == "version 0 -> 3"
    assert br._n(1, "file") == "1 file" and br._n(2, "file") == "2 files"


# --------------------------------------------------------------------------- bench_incremental (no Spark)


@pytest.fixture(scope="module")
def bi():
    import bench_incremental

    return bench_incremental


def test_liquid_bins_cluster_new_files_with_open_cubes_once_enough_accumulate(bi) -> None:
    f = bi.UnitFile
    T = 100
    files = [
        f("new-1", 150, None),
        f("new-2", 200, None),
        f("base-1", 100, "base"),  # the base's run: not a cube of this policy
        f("open-1", 150, "liq-1"),
        f("open-2", 150, "liq-1"),  # liq-1: 3 target files, open
        *[f(f"sealed-{i}", 100, "liq-2") for i in range(8)],  # 8 target files: sealed
        f("other-new", 50, None, "p=2"),  # another unit, below the minimum
    ]
    own = {"liq-1", "liq-2"}
    assert bi.liquid_bins(files, own, T, min_target_files=4, seal_target_files=8) == {}  # 3.5 target files of new
    files.append(f("new-3", 50, None))
    bins = bi.liquid_bins(files, own, T, min_target_files=4, seal_target_files=8)
    assert list(bins) == [None]
    assert sorted(x.path for x in bins[None][0]) == ["new-1", "new-2", "new-3", "open-1", "open-2"]
    # the same files in a partition are their own unit
    part = [x._replace(unit="p=1") for x in files if x.unit is None]
    assert list(bi.liquid_bins(part, own, T)) == ["p=1"]


def test_hudi_bins_small_files_up_to_the_group_size_and_at_least_two(bi) -> None:
    f = bi.UnitFile
    T = 1000
    files = [f(f"s{i}", 100 + 10 * i, None) for i in range(6)]  # 100..150: all small (< 300)
    files += [f("big", 900, "r"), f("alone", 200, None, "p=1")]
    bins = bi.hudi_bins(files, T, small=0.3, group=0.5)
    assert list(bins) == [None]  # p=1 holds one small file: no bin
    assert [[x.path for x in b] for b in bins[None]] == [["s0", "s1", "s2", "s3"], ["s4", "s5"]]
    assert bi.hudi_bins([f("x", 100, None), f("y", 950, None)], T) == {}  # one small file only


def test_anchor_plan_is_a_plan_document_the_job_accepts(bi) -> None:
    from airflow_zorder.core.jobs.plan_file import plan_file_size
    from airflow_zorder.core.policy import incremental_stats

    f = bi.UnitFile
    bins = {
        "ingest_day=002": [[f("/t/ingest_day=002/a", 130, None, "ingest_day=002"), f("/t/ingest_day=002/b", 20, "r")]],
        None: [[f("/t/x", 40, None), f("/t/y", 30, None)]],
    }
    doc = incremental_stats.check_plan(bi.anchor_plan(bins, bi.COLUMNS, 100))
    assert incremental_stats.made_for(doc, bi.COLUMNS) and plan_file_size(doc) == 100
    assert [e["partition"] for e in doc["partitions"]] == [None, "ingest_day=002"]
    assert [b["num_output_files"] for e in doc["partitions"] for b in e["bins"]] == [1, 2]  # round(70/100) >= 1
    assert doc["files"] == 4 and doc["bytes"] == 220 and doc["num_output_files"] == 3
    assert all("columns" not in b for e in doc["partitions"] for b in e["bins"])  # every column


def test_replay_bins_pick_the_schedules_groups_and_orient_the_bin(bi) -> None:
    from airflow_zorder.core.policy import incremental_stats

    f = bi.UnitFile
    files = [f("b1", 100, "base-run"), f("b2", 100, "base-run"), f("m1", 90, "run-2"), f("n1", 120, None)]
    files += [f("n2", 110, None), f("m2", 90, "run-3")]
    base, g2, g3 = [4, 2, 0, 0, "r0"], [2, 1, 0, 0, "r1"], [2, 1, 0, 0, "r1"]
    groups = {"base-run": base, "run-2": g2, "run-3": g3}
    orders = {"r0": [0, 1, 2], "r1": [1, 2, 0], "r2": [2, 0, 1]}
    new = [8, 3, 0, 0, "r2"]
    # two model groups equal as tuples: each is one run, taken once
    bins, made = bi.replay_bins(files, groups, [[[g2, [2, 2, 0, 0, "raw"], g3], "r2", new]], orders)
    assert made == new and len(bins) == 1
    assert sorted(x.path for x in bins[0].files) == ["m1", "m2", "n1", "n2"]
    assert bins[0].num_output_files == 3 and bins[0].columns == ["l_shipdate", "l_partkey", "l_suppkey"]
    doc = incremental_stats.check_plan(bi.anchor_plan({None: bins}, bi.COLUMNS, 100))
    (b,) = doc["partitions"][0]["bins"]
    assert b["num_output_files"] == 3 and b["columns"] == ["l_shipdate", "l_partkey", "l_suppkey"]
    with pytest.raises(ValueError, match="no run holds model group"):
        bi.replay_bins(files, groups, [[[[9, 9, 0, 0, "r0"]], "r0", new]], orders)
    with pytest.raises(ValueError, match="2 merges in one day"):
        bi.replay_bins(files, groups, [[[g2], "r0", new]] * 2, orders)


def test_date_shift_puts_each_day_in_a_fresh_slab_after_the_base(bi) -> None:
    import numpy as np

    d0, d1, days = 8000, 10524, 30
    w = bi.slab_width(d0, d1, days)
    assert w == 84
    base = np.arange(d0, d1 + 1)
    prev_hi = d1
    for t in (1, 2, 30):
        out = bi.shift_dates(base, d0, d1, days, t)
        assert out.min() == d1 + 1 + (t - 1) * w and out.max() == d1 + t * w
        assert out.min() > prev_hi or t > 2
        prev_hi = out.max()
    assert bi.slab_width(0, 3, 30) == 1  # a span shorter than the days: one day a slab


def test_extra_days_repeat_the_appends_with_fresh_order_keys_and_count_against_full(
    bi, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    src = tmp_path / "src"
    src.mkdir()
    ship = pa.array(list(range(9000, 9008)), pa.int32()).cast(pa.date32())
    rows = pa.table({"l_orderkey": list(range(1, 9)), "l_partkey": list(range(8)), "l_shipdate": ship})
    pq.write_table(rows, src / "part-0.parquet")
    info = bi.make_appends(src, tmp_path / "appends", 2, extra=3)  # 2 days of the 8 rows, then 3 more days
    assert len(info["files"]) == 5 and all(len(day) == 2 for day in info["files"])
    read = [pq.read_table(tmp_path / "appends" / n).to_pydict() for day in info["files"] for n in day]
    keys = [k for t in read for k in t["l_orderkey"]]
    assert len(keys) == 20 and len(set(keys)) == 20  # every appended row has its own order key
    assert read[4]["l_partkey"] == read[0]["l_partkey"] and read[8]["l_partkey"] == read[0]["l_partkey"]
    with pytest.raises(ValueError, match="uniform scenario only"):
        bi.make_appends(src, tmp_path / "dated", 2, date_slabs=True, extra=1)

    def days(*rewritten: int) -> dict:
        return {"days": [{"bytes_rewritten": b} for b in rewritten]}

    ratios = bi.by_day({"full": days(0, 10, 0, 10), "incremental": days(0, 2, 3, 0)})
    assert ratios == {"full": [None, 1.0, 1.0, 1.0], "incremental": [None, 0.2, 0.5, 0.25]}
    for bad, why in (
        (["--extra-days", "-1"], "--extra-days must be 0 or more"),
        (["--extra-days", "5", "--scenario", "date"], "--extra-days: --scenario uniform with the full policy"),
    ):
        with pytest.raises(SystemExit):
            bi.parse_args(bad)
        assert why in capsys.readouterr().err


def test_late_files_land_in_older_partitions(bi) -> None:
    lands = bi.late_partitions(days=30, late_files=2, late_days=7, seed=7)
    assert len(lands) == 30 and all(len(x) == 2 for x in lands)
    for t, ps in enumerate(lands, start=1):
        assert all(max(1, 30 + t - 7) <= p <= 30 + t - 1 for p in ps)
    assert lands == bi.late_partitions(days=30, late_files=2, late_days=7, seed=7)


def _inc_day(day: int, worst: float, rewritten: int = 0) -> dict:
    return {
        "day": day,
        "decision": "recluster" if rewritten else "healthy",
        "action": "clustered" if rewritten else "none",
        "appended_bytes": 100,
        "bytes_rewritten": rewritten,
        "files_rewritten": 2 if rewritten else 0,
        "files": 10,
        "bytes": 1000,
        "mean_file_over_target": 1.0,
        "ratios": {"l_partkey": worst, "l_suppkey": 1.1, "l_shipdate": 1.0},
        "worst": worst,
        "worst_bytes": worst + 0.1,
        "job_s": 1.0 if rewritten else 0.0,
        "stats_s": 0.5,
    }


def _inc_result(bi) -> dict:
    scenarios = {}
    for name in ("uniform", "date", "partitioned"):
        pols = {
            "never": {"days": [_inc_day(1, 1.6), _inc_day(2, 1.9)]},
            "full": {"days": [_inc_day(1, 1.2, 1000), _inc_day(2, 1.2, 1000)]},
            "incremental": {"days": [_inc_day(1, 1.3, 200), _inc_day(2, 1.4)]},
            "liquid": {"days": [_inc_day(1, 1.5), _inc_day(2, 1.45, 300)]},
        }
        for p in pols.values():
            p["totals"] = bi.totals(p["days"], 100)
        bi.vs_full(pols)
        sc = {
            "scenario": name,
            "base": {
                "rows": 1000,
                "files": 8,
                "bytes": 800,
                "mean_file_bytes": 100,
                "partitions": 2,
                "files_per_partition": 4,
            },
            "appends": {
                "rows_per_day": 50,
                "files_per_day": 2,
                "orderkey_shift": 7,
                "part_files": 4,
                "late_files": 2,
                "late_rows": 5,
                "late_days": 7,
                "date_slabs": {"d0": 1, "d1": 60, "width_days": 30},
            },
            "target_file_size": 100,
            "incremental_params": {"target_ratio": 1.2, "min_new_files": 2},
            "anchor_params": {
                "liquid_min_target_files": 4,
                "liquid_seal_target_files": 8,
                "hudi_every_days": 4,
                "hudi_small_target": 0.3,
                "hudi_group_target": 2,
            },
            "policies": pols,
            "rows_check": {"expected": {"rows": 1100}, "ok": True, **{p: {"equal": True} for p in pols}},
            "simulator": {"optimum_vs_full": 0.398, "optimum_wa": 3.07, "exact": True, "full_wa_over_optimum": 24.0},
            "wall_s": 60.0,
        }
        sc["comparison"] = bi.compare(pols, name, 1.5)
        scenarios[name] = sc
    return {
        "started_utc": "2026-11-27T05:00:00Z",
        "finished_utc": "2026-11-27T05:10:00Z",
        "wall_s": 600.0,
        "load_start": 1.0,
        "load_end": 2.0,
        "machine": {"cpus": 2, "deltalake": "1.0"},
        "spark_version": "4.0",
        "command": "python benchmarks/bench_incremental.py --sf 0.01",
        "sf": 0.01,
        "days": 2,
        "columns": ["l_partkey", "l_suppkey", "l_shipdate"],
        "curve": "hilbert",
        "health_policy": {"max_ratio_to_ideal": 1.5},
        "scenarios": scenarios,
    }


def test_incremental_goals_per_scenario(bi) -> None:
    res = _inc_result(bi)
    cmp_u = res["scenarios"]["uniform"]["comparison"]
    assert cmp_u["bytes_ratio"] == 0.1
    goals = {g["goal"]: g["pass"] for g in cmp_u["goals"]}
    assert goals["bytes rewritten <= 0.40 of full's"] and goals["moonshot: bytes rewritten <= 0.33 of full's"]
    assert goals["worst ratio <= 1.5 after every day"]
    part = {g["goal"]: g["pass"] for g in res["scenarios"]["partitioned"]["comparison"]["goals"]}
    assert part["write amplification at least 10x lower than full's"]  # 10 / 1
    inc = res["scenarios"]["date"]["policies"]["incremental"]["totals"]
    assert inc["mean_worst_bytes_ratio"] == 1.45 and inc["vs_full"] == 0.1


def test_render_incremental_writes_one_table_per_scenario_and_only_its_section(bi, tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    import bench_report as br

    res = _inc_result(bi)
    doc = tmp_path / "benchmarks.md"
    doc.write_text(f"# Benchmarks\n\nbefore\n\n{br.INC_START}\nold section\n{br.INC_END}\n\nafter\n")
    br.render_incremental(res, tmp_path / "figs", doc)
    text = doc.read_text()
    assert text.startswith("# Benchmarks\n\nbefore\n\n") and text.endswith("\n\nafter\n")
    assert "old section" not in text and text.count(br.INC_START) == 1
    assert "## Incremental re-clustering: 2 daily appends" in text
    for title in br.INC_SCENARIO_TITLE.values():
        assert f"### {title.capitalize()}" in text
    assert text.count("simulator's optimum (`sim_incremental.py`") == 3
    assert "PASS: bytes rewritten <= 0.40 of full's" in text and "liquid (Delta Liquid-like)" in text
    assert (tmp_path / "figs" / br.INC_FIGURE).stat().st_size > 0
    # a result of the one-scenario benchmark (before issue #37) still renders, as uniform
    old = {k: v for k, v in res.items() if k != "scenarios"} | res["scenarios"]["uniform"]
    assert br._has_incremental({"incremental": old})
    assert "### Uniform appends" in "\n".join(br.incremental_section(old, "x"))


# --------------------------------------------------------------------------- the jobs on S3 and local disk (bench_s3, bench_report)

MOTO_LOG = [
    '127.0.0.1 - - [28/Nov/2026 10:04:04] "GET /lake?list-type=2&delimiter=/&max-keys=2&prefix=bench/r0/ HTTP/1.1" 200 -',
    '127.0.0.1 - - [28/Nov/2026 10:04:04] "\x1b[33mHEAD /lake/bench/r0/_zorder/lock HTTP/1.1\x1b[0m" 404 -',
    '127.0.0.1 - - [28/Nov/2026 10:04:04] "PUT /lake/bench/r0/_zorder/staging/x/_batch0/_temporary/0/a.parquet HTTP/1.1" 200 -',
    '127.0.0.1 - - [28/Nov/2026 10:04:04] "\x1b[35m\x1b[1mGET /lake/bench/r0/part-0.parquet HTTP/1.1\x1b[0m" 206 -',
    '127.0.0.1 - - [28/Nov/2026 10:04:04] "\x1b[35m\x1b[1mDELETE /lake/bench/r0/_zorder/trash/x/a HTTP/1.1\x1b[0m" 204 -',
    '127.0.0.1 - - [28/Nov/2026 10:04:04] "POST /lake?delete HTTP/1.1" 200 -',
    '127.0.0.1 - - [28/Nov/2026 10:04:04] "PUT /lake/bench/r0/_zorder/stats/snapshots/1.json HTTP/1.1" 200 -',
    " * Running on http://127.0.0.1:5000",
]


def test_bench_s3_counts_moto_requests_by_kind_and_area() -> None:
    import bench_s3

    got = bench_s3.count_requests(MOTO_LOG, "bench/")
    assert got["total"] == 7 and got["not_found"] == 1
    assert got["kinds"] == {"LIST": 1, "HEAD": 1, "PUT": 2, "GET": 1, "DELETE": 2}
    assert got["areas"] == {
        "table files": 2,
        "lock": 1,
        "spark task commit (_temporary)": 1,
        "trash": 1,
        "other": 1,  # a bulk delete names no key
        "stats store": 1,
    }


def test_bench_s3_breakdown_sums_to_the_jobs_duration() -> None:
    import bench_s3

    stats = {"phases": {"list_s": 0.5, "read_previous_s": 0.0, "footer_s": 1.0, "write_s": 0.25}, "duration_s": 2.0}
    assert bench_s3.breakdown("stats", stats) == {
        "list": 0.5,
        "read_previous": 0.0,
        "footer": 1.0,
        "scan": 0.0,
        "write": 0.25,
        "other": 0.25,
    }
    ph = {"count_s": 1, "sample_and_plan_s": 1, "write_s": 3, "verify_s": 1, "stage_and_verify_s": 7, "commit_s": 2}
    b = bench_s3.breakdown("cluster", {"phases": ph, "duration_s": 10.0})
    assert b["stage (other)"] == 1 and b["commit"] == 2 and b["other"] == 1
    assert sum(b.values()) == pytest.approx(10.0)


def _s3_run(wall: float, rnd: int, requests: bool) -> dict:
    d = {"round": rnd, "wall_s": wall, "rows_ok": True, "breakdown": {"write": wall / 2, "other": wall / 2}}
    if requests:
        d["requests"] = {"total": 10 + rnd, "not_found": 2, "kinds": {"HEAD": 4, "LIST": 6 + rnd}, "areas": {"x": 10}}
    return d


def _s3_result(bench_s3) -> dict:
    jobs = {}
    for name in bench_s3.JOBS:
        loc = bench_s3.summarize([_s3_run(w, i, False) for i, w in enumerate((2.0, 1.0, 4.0))])
        rem = bench_s3.summarize([_s3_run(w, i, True) for i, w in enumerate((3.0, 3.0, 4.0))])
        jobs[name] = {"local": loc, "s3": rem, **bench_s3.compare(loc, rem)}
    return {
        "started_utc": "2026-11-28T10:00:00Z",
        "wall_s": 240.0,
        "load_start": 2.0,
        "load_end": 2.5,
        "rounds": 3,
        "spark_version": "4.2.0",
        "machine": {"cpus": 2, "git_head": "abc1234", "git_modified": [], "versions": {"moto": "5.2.5"}},
        "connector": {"artifacts": ["org.apache.hadoop:hadoop-aws:3.5.0"]},
        "table": {"title": "TPC-H lineitem SF0.05", "rows": 300_000, "files": 16, "bytes": 2**23, "columns": ["a"]}
        | {"curve": "zorder"},
        "jobs": jobs,
        "rows_ok": True,
    }


def test_bench_s3_summary_and_ratios() -> None:
    import bench_s3

    res = _s3_result(bench_s3)
    j = res["jobs"]["cluster"]
    assert (j["local"]["median_s"], j["local"]["min_s"], j["local"]["max_s"]) == (2.0, 1.0, 4.0)
    assert j["ratios"] == [1.5, 3.0, 1.0] and j["ratio"] == 1.5 and j["range"] == [1.0, 3.0]
    assert j["s3"]["requests"]["total"] == 11 and j["s3"]["requests"]["kinds"] == {"HEAD": 4, "LIST": 7}
    assert "requests" not in j["local"]


def test_render_s3_writes_only_its_section_where_render_doc_puts_it(tmp_path: Path) -> None:
    import bench_report as br
    import bench_s3

    res = _s3_result(bench_s3)
    text = "\n".join(br.s3_section(res))
    assert (
        "| stats run | 2.00 (1.00–4.00) | 3.00 (3.00–4.00) | 1.50x (1.00–3.00) | 300,000, equal after each of 6 runs |"
        in text
    )
    assert "moto 5.2.5 server on loopback" in text and "`org.apache.hadoop:hadoop-aws:3.5.0`" in text
    assert "| re-cluster: write | 1.00 | 1.50 | +0.50 |" in text
    assert "- stats run: 11 (LIST 7, HEAD 4; 2 of them answered 404); by area: x 10." in text
    doc = tmp_path / "benchmarks.md"
    doc.write_text(f"# B\n\nbefore\n\n{br.INC_START}\ninc\n{br.INC_END}\n")
    br.render_s3(res, doc)
    first = doc.read_text()
    assert first.startswith("# B\n\nbefore\n\n" + br.S3_START) and first.endswith(
        f"{br.S3_END}\n\n{br.INC_START}\ninc\n{br.INC_END}\n"
    )
    res["jobs"]["stats"]["ratio"] = 9.0
    br.render_s3(res, doc)  # replaced in place
    again = doc.read_text()
    assert again.count(br.S3_START) == 1 and "| 9.00x (" in again and again.replace("9.00x", "1.50x") == first
