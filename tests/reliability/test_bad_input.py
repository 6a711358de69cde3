"""Bad input: every case ends in success with identical rows, or a clear error naming the problem with the
table byte for byte untouched (and nothing staged left behind)."""

from __future__ import annotations

import datetime as dt
import math
import os
import subprocess
from collections.abc import Callable, Iterator

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from reliability_kit import COLUMNS, assert_same_rows, assert_untouched, journal_states, record
from table_checks import read_table, row_multiset, visible_files

from airflow_zorder.core.errors import StatsCollectionError
from airflow_zorder.core.jobs.options import ClusterOptions, CollectOptions
from airflow_zorder.core.storage import faults
from spark_jobs.cluster_table import run_cluster
from spark_jobs.stats_collection.run import run_collect

pytestmark = [pytest.mark.reliability, pytest.mark.spark]


def _ok(spark, table: str, columns: list[str], what: str, **kw) -> dict:
    """Cluster; it must succeed and keep exactly the rows (then a stats run must read the result)."""
    before = row_multiset(table)
    result = run_cluster(spark, ClusterOptions(table=table, columns=columns, **kw))
    record(cases=1)
    assert result["status"] in ("clustered", "noop"), what
    assert_same_rows(before, table, what)
    assert journal_states(table) <= {"done", "rolled_back"}
    return result


def _refused(spark, table: str, columns: list[str], match: str, what: str, exc=Exception, **kw) -> str:
    """Cluster; it must fail with a message matching ``match`` and leave the table untouched.

    The run is rolled back; only when even that could not be recorded (a full disk) may its journal stay
    in ``staging`` - the error then says so, and the next run rolls it back.
    """
    files = visible_files(table)
    with pytest.raises(exc, match=match) as err:
        run_cluster(spark, ClusterOptions(table=table, columns=columns, **kw))
    record(cases=1)
    assert_untouched(files, table)
    msg = str(err.value)
    pending_ok = "next run" in msg
    assert journal_states(table) <= ({"rolled_back", "staging"} if pending_ok else {"rolled_back"}), what
    return msg


def _write(path: str, table: pa.Table, **kw) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    pq.write_table(table, path, **kw)


# --------------------------------------------------------------------------- damaged files


@pytest.mark.parametrize(
    "damage,match",
    [
        ("garbage", r"bad\.parquet(\. Could not read footer| is not a Parquet file\. Expected magic number)"),
        ("truncated", r"Encountered error while reading file .*bad\.parquet\. Could not read footer"),
        ("zero_bytes", r"bad\.parquet is not a Parquet file: it holds 0 bytes"),
        ("not_parquet_name", r"bad\.csv is not a Parquet file \(no PAR1 footer\)"),
    ],
)
def test_damaged_file_is_named_and_table_untouched(spark, copy_table, damage, match):
    table = copy_table("partitioned")
    folder = os.path.join(table, "day=2026-01-02")
    good = open(os.path.join(folder, "part-00000.parquet"), "rb").read()
    data = {
        "garbage": os.urandom(4096),
        "truncated": good[: len(good) // 2] + good[-8:],
        "zero_bytes": b"",
        "not_parquet_name": b"a,b\n1,2\n" * 50,
    }[damage]
    with open(os.path.join(folder, "bad.csv" if damage == "not_parquet_name" else "bad.parquet"), "wb") as fh:
        fh.write(data)
    _refused(spark, table, COLUMNS, match, damage)
    # the stats job reads what it can and names the file it could not read (no snapshot of a wrong table)
    if damage in ("garbage", "truncated"):
        result = run_collect(spark, CollectOptions(table=table))
        assert result["status"] == "partial" and result["files_failed"] == 1
        assert result["errors"][0]["path"].endswith("bad.parquet")


def test_conflicting_schema_is_named(spark, copy_table):
    table = copy_table("flat")
    _write(os.path.join(table, "other.parquet"), pa.table({"event_id": ["x", "y"], "user_id": [1, 2]}))
    _refused(spark, table, COLUMNS, r"Failed to merge incompatible data types \"STRING\" and \"BIGINT\"", "conflict")


# --------------------------------------------------------------------------- data that must survive exactly


def test_schema_evolution_new_column(spark, copy_table):
    """Files written before a column existed: their rows get nulls in it; identical to what readers saw."""
    table = copy_table("flat")
    rows = read_table(table).slice(0, 300)
    _write(
        os.path.join(table, "with-new-column.parquet"),
        rows.append_column("discount", pa.array([i * 0.5 for i in range(300)])),
    )
    # clustering on the new column itself (nulls first in the files that lack it)
    _ok(spark, table, ["discount", "user_id"], "cluster on the new column", num_files=3)
    assert all(
        "discount" in pq.read_schema(os.path.join(table, f)).names for f in visible_files(table)
    )  # every rewritten file carries it


def test_all_null_constant_single_file_and_tiny_tables(spark, tmp_path):
    n = 3000
    base = {
        "id": pa.array(range(n), pa.int64()),
        "nothing": pa.nulls(n, pa.int64()),
        "same": pa.array([7] * n, pa.int32()),
        "word": pa.array(["x"] * n),
    }
    t = str(tmp_path / "nulls")
    _write(os.path.join(t, "a.parquet"), pa.table(base).slice(0, 1500))
    _write(os.path.join(t, "b.parquet"), pa.table(base).slice(1500))
    _ok(spark, t, ["nothing", "same", "word"], "all-null and constant columns", num_files=3)
    single = str(tmp_path / "single")
    _write(os.path.join(single, "only.parquet"), pa.table(base))
    _ok(spark, single, ["id", "nothing"], "single-file table into many files", num_files=20)
    one_row = str(tmp_path / "one_row")
    _write(os.path.join(one_row, "r.parquet"), pa.table(base).slice(0, 1))
    _ok(spark, one_row, ["id", "word"], "one-row table")


def test_empty_partitions(spark, copy_table):
    table = copy_table("partitioned")
    os.makedirs(os.path.join(table, "day=2026-01-09"))  # a partition directory without files
    _write(os.path.join(table, "day=2026-01-10", "empty.parquet"), read_table(table).drop(["day"]).slice(0, 0))
    # naming only the partition whose file has no rows: nothing to do, nothing changed
    files = visible_files(table)
    noop = run_cluster(spark, ClusterOptions(table=table, columns=COLUMNS, partitions=["day=2026-01-10"]))
    assert noop["status"] == "noop" and visible_files(table) == files
    record(cases=1)
    result = _ok(spark, table, COLUMNS, "empty partitions", num_files=2)
    assert {s["partition"] for s in result["skipped"]} == {"day=2026-01-10"}
    # (its zero-row file went to the trash with the run's other inputs: no row involved; left as is)


SPECIAL = ["São Paulo", "a/b", "x=y", "100%", "quote'\"#?&", " lead and trail ", "日本語", None]


def _hive_escape(v: str | None) -> str:
    if v is None:
        return "__HIVE_DEFAULT_PARTITION__"
    return "".join(f"%{ord(c):02X}" if c in "\"#%'*/:=?\\\x7f{[]^" or ord(c) < 32 else c for c in v)


def test_partition_values_with_special_characters(spark, tmp_path):
    table = str(tmp_path / "special")
    for i, v in enumerate(SPECIAL):
        rows = pa.table(
            {
                "id": pa.array(range(i * 500, i * 500 + 500), pa.int64()),
                "v": pa.array([float(j % 37) for j in range(500)]),
            }
        )
        for k in range(2):
            _write(os.path.join(table, f"city={_hive_escape(v)}", f"part-{k}.parquet"), rows.slice(k * 250, 250))
    result = _ok(spark, table, ["v", "id"], "special partition values", num_files=1)
    assert len(result["partitions"]) == len(SPECIAL)
    # a partition can be named as on disk (escaped) or by its value
    again = _ok(
        spark,
        table,
        ["id"],
        "select special partitions",
        num_files=2,
        partitions=["city=S%C3%A3o Paulo", "city=São Paulo", "city=a%2Fb", "city=x%3Dy"],
    )
    assert sorted(p["partition"] for p in again["partitions"]) == ["city=São Paulo", "city=a%2Fb", "city=x%3Dy"]


def test_very_long_strings(spark, tmp_path):
    table = str(tmp_path / "long")
    prefix = "p" * 100_000
    n = 600
    rows = pa.table(
        {
            "id": pa.array(range(n), pa.int64()),
            "s": pa.array([prefix + f"{(i * 7919) % n:06d}" if i % 3 else f"{i}" * (i % 50) for i in range(n)]),
        }
    )
    for k in range(3):
        _write(os.path.join(table, f"f{k}.parquet"), rows.slice(k * 200, 200))
    _ok(spark, table, ["s", "id"], "very long strings", num_files=4)


def test_nan_infinities_and_signed_zero(spark, tmp_path):
    table = str(tmp_path / "floats")
    special = [math.nan, math.inf, -math.inf, -0.0, 0.0, None, 1e308, -1e-308, 5e-324]
    vals = [special[i % len(special)] if i % 4 == 0 else (i * 0.37) % 11 - 5 for i in range(4000)]
    rows = pa.table(
        {
            "x": pa.array(vals, pa.float64()),
            "y": pa.array([float(v) if v is not None else None for v in vals], pa.float32()),
            "id": pa.array(range(4000), pa.int64()),
        }
    )
    for k in range(4):
        _write(os.path.join(table, f"f{k}.parquet"), rows.slice(k * 1000, 1000))
    _ok(spark, table, ["x", "y"], "NaN, infinities, -0.0", num_files=4, curve="hilbert")


def test_time_zones(spark, tmp_path):
    """Instants are kept whatever the session's zone; wall-clock (NTZ) timestamps and dates are not shifted."""
    table = str(tmp_path / "tz")
    n = 3000
    start = dt.datetime(2026, 3, 29, 0, 30)  # spans the EU daylight-saving switch (01:00 UTC)
    wall = [start + dt.timedelta(minutes=7 * i) for i in range(n)]
    rows = pa.table(
        {
            "at_ny": pa.array([w.replace(tzinfo=dt.UTC) for w in wall], pa.timestamp("us", tz="America/New_York")),
            "at_berlin": pa.array(
                [w.replace(tzinfo=dt.UTC) for w in reversed(wall)], pa.timestamp("ms", tz="Europe/Berlin")
            ),
            "wall": pa.array(wall, pa.timestamp("us")),
            "day": pa.array([w.date() for w in wall], pa.date32()),
        }
    )
    for k in range(3):
        _write(os.path.join(table, f"f{k}.parquet"), rows.slice(k * 1000, 1000))
    old = spark.conf.get("spark.sql.session.timeZone")
    try:
        spark.conf.set("spark.sql.session.timeZone", "Asia/Kolkata")  # +05:30, not the data's zones
        _ok(spark, table, ["at_ny", "wall"], "time zones (session Asia/Kolkata)", num_files=3)
        spark.conf.set("spark.sql.session.timeZone", "America/Los_Angeles")
        _ok(spark, table, ["day", "at_berlin"], "time zones (session America/Los_Angeles)", num_files=2)
    finally:
        spark.conf.set("spark.sql.session.timeZone", old)


def test_nanosecond_timestamps(spark, tmp_path):
    """pyarrow writes TIMESTAMP(NANOS) by default; Spark cannot read it: refused, naming the type."""
    table = str(tmp_path / "nanos")
    rows = pa.table(
        {"id": pa.array(range(100), pa.int64()), "t": pa.array(range(0, 100_000, 1000), pa.timestamp("ns"))}
    )
    _write(os.path.join(table, "f.parquet"), rows)
    _refused(spark, table, ["id"], r"TIMESTAMP\(NANOS", "nanosecond timestamps")


# --------------------------------------------------------------------------- bad arguments


def test_unknown_partition_and_nested_columns_are_refused(spark, copy_table, tmp_path):
    table = copy_table("partitioned")
    _refused(
        spark,
        table,
        ["user_id", "no_such"],
        r"unknown column 'no_such'; the table's columns are: .*user_id",
        "unknown column",
    )
    _refused(spark, table, ["day"], r"'day' is a partition column", "partition column")
    _refused(spark, table, ["user_id", "USER_ID"], r"clustering columns repeat", "repeated column")
    _refused(
        spark,
        table,
        COLUMNS,
        r"partition 'day=2099-01-01' not found",
        "unknown partition",
        partitions=["day=2099-01-01"],
    )
    nested = str(tmp_path / "nested")
    _write(os.path.join(nested, "f.parquet"), pa.table({"m": [{"a": 1}, {"a": 2}], "id": [1, 2]}))
    _refused(spark, nested, ["m"], r"'m'.*struct", "struct column")
    with pytest.raises(StatsCollectionError, match="unknown column 'nope'"):
        run_collect(spark, CollectOptions(table=table, columns=["nope"]))
    record(cases=1)


@pytest.mark.parametrize(
    "job,args,match",
    [
        ("cluster", ["--num-files", "abc"], "argument --num-files: invalid int value: 'abc'"),
        ("cluster", ["--num-files", "0"], "num_files \\(--num-files\\) must be at least 1 .*, got 0"),
        ("cluster", ["--target-file-size", "banana"], "--target-file-size: cannot read size 'banana'"),
        ("cluster", ["--target-file-size", "0"], "--target-file-size: size must be positive"),
        ("cluster", ["--curve", "spiral"], "argument --curve: invalid choice: 'spiral'"),
        ("cluster", ["--salt-bits", "99"], "salt_bits \\(--salt-bits\\) must be between 0 and 32, got 99"),
        ("cluster", ["--num-ranges", "0"], "num_ranges \\(--num-ranges\\) must be between 1 and 2147483648, got 0"),
        ("cluster", ["--lock-ttl", "0"], "lock_ttl \\(--lock-ttl\\) must be at least 1 \\(seconds\\)"),
        (
            "cluster",
            ["--retention-hours", "-1"],
            "retention_hours \\(--retention-hours\\) must be at least 0 \\(hours\\)",
        ),
        (
            "cluster",
            ["--retention-hours", "nan"],
            "retention_hours \\(--retention-hours\\) must be at least 0 \\(hours\\)",
        ),
        ("cluster", ["--partitions", '["day=1"'], "--partitions: cannot read"),
        ("cluster", ["--columns", " , "], "columns \\(--columns\\) is required"),
        ("cluster", ["--action", "explode"], "argument --action: invalid choice"),
        ("stats", ["--method", "fast"], "argument --method: invalid choice: 'fast'"),
        (
            "stats",
            ["--keep-snapshots", "-1"],
            "keep_snapshots \\(--keep-snapshots\\) must be at least 0 \\(0 keeps every snapshot\\)",
        ),
        ("stats", ["--parallelism", "0"], "parallelism \\(--parallelism\\) must be at least 1"),
    ],
)
def test_wrong_argument_values_fail_before_spark_starts(job, args, match, capsys):
    """Exit code 2 and a message naming the flag, from argument parsing (no SparkSession is started)."""
    argv = ["--table", "/nowhere"] + (["--columns", "a"] if job == "cluster" and "--columns" not in args else []) + args
    parse = ClusterOptions.from_args if job == "cluster" else CollectOptions.from_args
    with pytest.raises(SystemExit) as exit_:
        parse(argv)
    assert exit_.value.code == 2
    import re

    assert re.search(match, capsys.readouterr().err), capsys.readouterr().err
    record(cases=1)


# --------------------------------------------------------------------------- storage that refuses writes


def _mount_tmpfs(path: str, size: str) -> bool:
    os.makedirs(path, exist_ok=True)
    return (
        subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", path], capture_output=True).returncode
        == 0
    )


@pytest.fixture
def mounts() -> Iterator[Callable[[str, str], bool]]:
    done: list[str] = []

    def mount(path: str, size: str) -> bool:
        ok = _mount_tmpfs(path, size)
        if ok:
            done.append(path)
        return ok

    yield mount
    for p in reversed(done):
        subprocess.run(["umount", "-l", p], capture_output=True)


def _table_bytes(root: str) -> int:
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(root) for f in fs)


def test_full_disk_during_the_rewrite(spark, sources, tmp_path, mounts):
    """A real full disk: a tmpfs just larger than the table, so the staged copy cannot fit (needs root)."""
    import shutil

    disk = str(tmp_path / "disk")
    size = _table_bytes(sources["flat"]) * 13 // 10
    if not mounts(disk, str(size)):
        pytest.skip("cannot mount a small tmpfs here (not root); test_enospc_at_the_commit_record injects ENOSPC")
    table = os.path.join(disk, "t")
    shutil.copytree(sources["flat"], table)
    msg = _refused(
        spark,
        table,
        COLUMNS,
        r"rewriting table .* failed: .*No space left on device.*Nothing in the "
        r"table was changed",
        "full disk",
        num_files=2,
    )
    assert "An error occurred while calling" not in msg and len(msg) < 3000, msg
    # the next run, once there is room again, works (the failed run left nothing to recover)
    subprocess.run(["mount", "-o", f"remount,size={size * 3}", disk], check=True)
    _ok(spark, table, COLUMNS, "after the disk was enlarged", num_files=2)


def test_enospc_at_the_commit_record(spark, copy_table, monkeypatch):
    """ENOSPC injected through the fault mechanism where a full disk hits the commit record: refused, rolled back."""
    table = copy_table("flat")
    faults.reset_fault_counters()
    monkeypatch.setenv(faults.FAULT_ENV, "before_commit_record")
    monkeypatch.setenv(faults.FAULT_MODE_ENV, "enospc")
    _refused(
        spark,
        table,
        COLUMNS,
        r"could not record the commit of run .*No space left on device.*Nothing in "
        r"the table was changed",
        "ENOSPC at the commit record",
        num_files=2,
    )
    assert journal_states(table) == {"rolled_back"}
    monkeypatch.delenv(faults.FAULT_ENV)
    _ok(spark, table, COLUMNS, "rerun after ENOSPC at the commit record", num_files=2)


def test_unwritable_table_and_stats_location(spark, sources, tmp_path, mounts):
    """A read-only filesystem (root ignores file modes, so a read-only mount): refused, naming the location."""
    import shutil

    disk = str(tmp_path / "ro")
    if mounts(disk, "8m"):
        table = os.path.join(disk, "t")
        shutil.copytree(sources["flat"], table)
        subprocess.run(["mount", "-o", "remount,ro", disk], check=True)
    else:  # not root: file modes work
        table = str(tmp_path / "t")
        shutil.copytree(sources["flat"], table)
        for d, _, _ in os.walk(table):
            os.chmod(d, 0o555)
    _refused(
        spark,
        table,
        COLUMNS,
        r"(Read-only file system|Permission denied|not writable|cannot write).*"
        + os.path.basename(table)
        + "|"
        + table,
        "read-only table",
    )
    with pytest.raises(Exception, match=r"cannot write|not writable|Read-only|Permission denied"):
        run_collect(spark, CollectOptions(table=table))
    record(cases=1)
    # stats elsewhere (a writable location) still work for a read-only table
    stats = str(tmp_path / "stats")
    result = run_collect(spark, CollectOptions(table=table, stats_location=stats))
    assert result["status"] == "ok" and result["rows_total"] == read_table(table).num_rows
    record(cases=1, rows_checked=result["rows_total"])
