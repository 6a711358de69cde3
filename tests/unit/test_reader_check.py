"""reader_check counts what real readers read: pyarrow (and DuckDB) on Parquet, delta-rs's dataset on Delta.

Two layouts of the same 800 values of ``a`` in 8 files of 2 row groups (60 and 40 rows): *sorted* (file i holds
100i..100i+99) and *strided* (file i holds i, i+8, ..., i+792, so every file spans nearly the whole range).
``a = 150`` (or 400, the median) has one matching row in either; a reader reads 1 file and 1 row group of the
sorted table, and every file (one row group each: the first, [i, i+472]) of the strided one. No Spark.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from airflow_zorder.evaluation import reader_check

FILES, ROWS, ROW_GROUP = 8, 100, 60
DAY = dt.date(2026, 1, 1)


def _chunks(layout: str) -> list[pa.Table]:
    """The 8 files' rows: ``a`` sorted or strided, a date column ``d`` and a string payload."""
    out = []
    for i in range(FILES):
        a = np.arange(i * ROWS, (i + 1) * ROWS) if layout == "sorted" else np.arange(i, FILES * ROWS, FILES)
        days = [DAY + dt.timedelta(days=int(x) % 3) for x in a]
        out.append(
            pa.table({"a": pa.array(a, pa.int64()), "d": pa.array(days, pa.date32()), "s": [f"v{x:04d}" for x in a]})
        )
    return out


def _parquet(root: Path, layout: str) -> str:
    """A hive-partitioned (``k=1/``) Parquet table with a stats folder the reader must ignore, like the jobs'."""
    part = root / "k=1"
    part.mkdir(parents=True, exist_ok=True)
    for i, t in enumerate(_chunks(layout)):
        pq.write_table(t, part / f"part-{i:05d}.parquet", row_group_size=ROW_GROUP)
    (root / "_zorder" / "stats").mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table({"path": ["x"]}), root / "_zorder" / "stats" / "s.parquet")
    return str(root)


def _delta(root: Path, layout: str) -> str:
    """The same files as a Delta table: one append per file, row groups of 60 rows."""
    deltalake = pytest.importorskip("deltalake")
    props = deltalake.WriterProperties(max_row_group_size=ROW_GROUP)
    for t in _chunks(layout):
        deltalake.write_deltalake(str(root), t, mode="append", writer_properties=props)
    return str(root)


@pytest.mark.parametrize(
    ("layout", "files", "row_groups"),
    [("sorted", 1, 1), ("strided", FILES, FILES)],
)
def test_parquet_point_query(tmp_path: Path, layout: str, files: int, row_groups: int) -> None:
    q = reader_check.point_query_read(_parquet(tmp_path, layout), "a", 150, repeat=1)
    assert (q.files_read, q.files_total) == (files, FILES)
    assert (q.row_groups_read, q.row_groups_total) == (row_groups, 2 * FILES)
    assert q.rows == 1 and q.sql == "a = 150" and q.seconds > 0
    if q.check_reader is not None:  # DuckDB installed: it scans the same row groups
        assert (q.check_reader, q.check_read, q.check_total) == ("DuckDB", row_groups, 2 * FILES)


def test_duckdb_cross_check_agrees(tmp_path: Path) -> None:
    pytest.importorskip("duckdb")
    q = reader_check.point_query_read(_parquet(tmp_path, "sorted"), "s", "v0150", repeat=1)
    assert (q.files_read, q.row_groups_read, q.rows) == (1, 1, 1)
    assert (q.check_reader, q.check_unit, q.check_read, q.check_total) == ("DuckDB", "row groups", 1, 2 * FILES)


def test_value_outside_every_file_reads_nothing(tmp_path: Path) -> None:
    q = reader_check.point_query_read(_parquet(tmp_path, "sorted"), "a", 5000, repeat=1, cross_check=False)
    assert (q.files_read, q.row_groups_read, q.rows, q.check_reader) == (0, 0, 0, None)


@pytest.mark.parametrize(("layout", "files", "row_groups"), [("sorted", 1, 1), ("strided", FILES, FILES)])
def test_delta_point_query_prunes_by_the_log(tmp_path: Path, layout: str, files: int, row_groups: int) -> None:
    path = _delta(tmp_path / "t", layout)
    assert reader_check.open_reader_table(path).format == "delta"
    q = reader_check.point_query_read(path, "a", 150, repeat=1)
    assert (q.files_read, q.files_total, q.row_groups_read, q.row_groups_total) == (files, FILES, row_groups, 2 * FILES)
    assert q.rows == 1
    # delta-rs's own pruning by the log's min/max keeps the same files
    assert (q.check_reader, q.check_unit, q.check_read, q.check_total) == ("delta-rs", "files", files, FILES)


def test_delta_dataset_skips_files_by_log_stats_alone(tmp_path: Path) -> None:
    """The fragments delta-rs builds carry the log's min/max: files are pruned before any footer is read."""
    import pyarrow.dataset as ds

    dataset = reader_check.open_dataset(_delta(tmp_path / "t", "sorted"))
    assert len(list(dataset.get_fragments(filter=ds.field("a") == 150))) == 1


def test_median_value_is_a_value_of_the_data(tmp_path: Path) -> None:
    dataset = reader_check.open_dataset(_parquet(tmp_path, "strided"))
    assert reader_check.median_value(dataset, "a") == 400
    assert reader_check.median_value(dataset, "s") in {f"v{x:04d}" for x in range(FILES * ROWS)}


def test_before_after_through_the_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The demo's flow: measure and save, rewrite the files in place (sorted), measure the same values again."""
    table, saved = tmp_path / "t", tmp_path / "before.json"
    _parquet(table, "strided")
    assert reader_check.main([str(table), "--columns", "a,d", "--save", str(saved), "--repeat", "1"]) == 0
    before = reader_check.load_reads(str(saved), reader_check.open_dataset(str(table)).schema)
    assert [q.value for q in before.queries] == [400, DAY + dt.timedelta(days=1)]  # the date survives JSON
    _parquet(table, "sorted")  # same file names: rewritten in place
    capsys.readouterr()
    assert reader_check.main([str(table), "--before", str(saved), "--repeat", "1"]) == 0
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if x.startswith("a = 400"))
    assert "8/8 -> 1/8" in line and "16/16 -> 8/16" not in line and "8/16 -> 1/16" in line
    assert "d = DATE '2026-01-02'" in out and "each column's median value, before -> after" in out
    assert "cross-check, row groups read by DuckDB" not in out or out.rstrip().endswith(": the same")


def test_a_disagreeing_cross_check_is_shown(tmp_path: Path) -> None:
    reads = reader_check.measure_table(_parquet(tmp_path, "sorted"), {"a": 150}, repeat=1, cross_check=False)
    q = dataclasses.replace(
        reads.queries[0], check_reader="DuckDB", check_unit="row groups", check_read=2, check_total=16
    )
    text = reader_check.format_reads(dataclasses.replace(reads, queries=(q,)))
    assert text.endswith("a 2/16: DIFFERENT from the table above")


def test_format_reads_single_measurement(tmp_path: Path) -> None:
    reads = reader_check.measure_table(_parquet(tmp_path, "sorted"), {"a": 150}, repeat=1, cross_check=False)
    text = reader_check.format_reads(reads)
    assert "a = 150" in text and "1/8" in text and "->" not in text and "cross-check" not in text
