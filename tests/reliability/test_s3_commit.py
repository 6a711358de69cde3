"""The commit protocol where a rename is a copy: the table lock, the stats snapshot and a path table's swap on S3,
through Spark's ``s3a://`` (hadoop-aws from ``make jars``) against a real moto server (one per module).

* the lock is a conditional PUT (``If-None-Match: *``): two runs started together, 20 times, one refused each time;
  a store that cannot make one refuses with the fix;
* a stats snapshot is one conditional PUT: two collectors racing for one id, 20 times, one commits, the other is
  refused and the committed object is never overwritten; readers always find a whole snapshot;
* the swap killed at every phase (in-process crash at each fault point, as tests/reliability/test_kills.py does
  locally; one real SIGKILL of spark-submit mid-swap), and between an S3A rename's copy and its delete: recovered
  with no row lost or duplicated;
* a reader during the swap: what it sees, measured (docs/reliability.md quotes the figures).
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pyarrow.fs as pafs
import pytest
from moto_s3 import BUCKET
from reliability_kit import COLUMNS, SOAK, record
from table_checks import diff_rows, read_table, row_multiset, spark_submit

from airflow_zorder.core.errors import ConcurrentChangeError, ExclusiveCreateUnavailable, TableLockedError
from airflow_zorder.core.jobs.options import ClusterOptions, CollectOptions
from airflow_zorder.core.stats import stats_store
from airflow_zorder.core.stats.stats_location import default_stats_location
from airflow_zorder.core.storage import commit, faults
from airflow_zorder.core.storage.faults import SimulatedCrash
from airflow_zorder.core.storage.io import filesystem_for
from airflow_zorder.core.storage.io.hadoop import HadoopFileSystem, s3a_arrow_options
from airflow_zorder.core.storage.lock import TableLock
from airflow_zorder.spark_jars import apply_hadoop_conf, jars_for
from spark_jobs.cluster_table import run_action, run_cluster
from spark_jobs.stats_collection.run import run_collect

pytestmark = [pytest.mark.reliability, pytest.mark.spark]

NUM_FILES = 2
ROUNDS = 20


@pytest.fixture(scope="module")
def arrow_s3(s3a):
    """pyarrow's S3 filesystem with the same settings the Spark driver has (``s3a_arrow_options``)."""
    return pafs.S3FileSystem(**s3a_arrow_options(s3a.hadoop_conf().get, BUCKET))


@pytest.fixture
def upload(s3a, sources):
    """upload(layout) -> a fresh copy of a source table at ``s3a://lake/<unique>``."""
    n = [0]

    def make(layout: str = "partitioned") -> str:
        n[0] += 1
        prefix = f"rel-{os.getpid()}-{time.monotonic_ns()}-{n[0]}"
        s3a.upload_dir(Path(sources[layout]), prefix)
        return f"s3a://{BUCKET}/{prefix}"

    return make


def _rows(arrow_s3, table: str):
    return row_multiset(table.split("://", 1)[1], filesystem=arrow_s3)


def _keys(s3a, table: str, under: str) -> list[str]:
    prefix = table.split(f"{BUCKET}/", 1)[1] + "/" + under
    return [k for k in s3a.keys() if k.startswith(prefix) and not k.endswith("/")]  # not S3A's directory markers


def _assert_same_rows(arrow_s3, before, table: str, what: str) -> None:
    lost, extra = diff_rows(before, _rows(arrow_s3, table))
    record(rows_checked=sum(before.values()), rows_lost=lost, rows_extra=extra)
    assert (lost, extra) == (0, 0), f"{what}: {lost} row(s) lost, {extra} added or duplicated"


def _cluster(spark, table: str, **kw):
    return run_cluster(spark, ClusterOptions(table=table, columns=COLUMNS, num_files=NUM_FILES, **kw))


def _together(start, refusal: type[BaseException]) -> dict[str, object]:
    """Run ``start("a")`` and ``start("b")`` in two threads released at once; name -> result or refusal."""
    barrier = threading.Barrier(2)
    out: dict[str, object] = {}

    def run(name: str) -> None:
        barrier.wait()
        try:
            out[name] = start(name)
        except refusal as exc:
            out[name] = exc

    threads = [threading.Thread(target=run, args=(n,)) for n in ("a", "b")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    return out


# --------------------------------------------------------------------------- the lock


def test_lock_taken_together_twenty_times_one_refused_each_time(spark, s3a, upload):
    table = upload("flat")
    fs = filesystem_for(table, spark)
    assert isinstance(fs, HadoopFileSystem) and fs.rename_is_copy(table)
    for i in range(ROUNDS):
        got = _together(
            lambda name, i=i: TableLock(fs, table, f"run-{i}-{name}", ttl_s=600).acquire(), TableLockedError
        )
        winners = [v for v in got.values() if isinstance(v, TableLock)]
        losers = [v for v in got.values() if isinstance(v, TableLockedError)]
        assert len(winners) == 1 and len(losers) == 1, f"round {i}: {got}"
        assert winners[0].run_id in str(losers[0]), "the refusal names the run holding the lock"
        winners[0].verify()  # the lock file on S3 is the winner's
        winners[0].release()
        record(cases=1)


def test_store_without_conditional_writes_refuses_the_lock_with_the_fix(spark, s3a):
    s3a.client().create_bucket(Bucket="nocond")
    apply_hadoop_conf(spark, {"fs.s3a.bucket.nocond.create.conditional.enabled": "false"})
    try:
        fs = filesystem_for("s3a://nocond/t", spark)
        with pytest.raises(ExclusiveCreateUnavailable, match=r"hadoop-aws 3\.4\.2 or later.*conditional.enabled=true"):
            TableLock(fs, "s3a://nocond/t", "run-x").acquire()
        assert not [k for k in s3a.keys("nocond") if k.endswith("lock.json")], "no lock file was written"
    finally:
        apply_hadoop_conf(spark, {"fs.s3a.bucket.nocond.create.conditional.enabled": "true"})


# --------------------------------------------------------------------------- the stats snapshot


def test_snapshot_published_once_never_overwritten_readers_see_whole_ones(spark, s3a, upload, arrow_s3):
    table = upload("flat")
    assert run_collect(spark, CollectOptions(table=table))["status"] == "ok"
    location = default_stats_location(table)
    fs = filesystem_for(location, spark)
    rows = stats_store.load_latest(location, fs)
    stop = threading.Event()
    reads: list[int] = []
    errors: list[str] = []

    def reader() -> None:  # the sensor's way in: pyarrow, no Spark
        while not stop.is_set():
            try:
                reads.append(stats_store.load_latest(location.replace("s3a://", "s3://"), arrow_s3).num_rows)
            except Exception as exc:  # noqa: BLE001 - any failure is a finding
                errors.append(repr(exc))

    watcher = threading.Thread(target=reader)
    watcher.start()
    try:
        for i in range(ROUNDS):
            outcome = _together(
                lambda name, i=i: stats_store.write_snapshot(location, rows, {"run_id": f"r{i}{name}"}, fs),
                ConcurrentChangeError,
            )
            ids = [v for v in outcome.values() if isinstance(v, int)]
            refused = [v for v in outcome.values() if isinstance(v, ConcurrentChangeError)]
            # both may commit (one after the other), never both the same id
            assert len(ids) + len(refused) == 2 and len(set(ids)) == len(ids), f"round {i}: {outcome}"
            if refused:
                winner = next(n for n, v in outcome.items() if isinstance(v, int))
                runs = stats_store.load_runs(location, fs).to_pylist()
                by_id = {r["snapshot_id"]: r["run_id"] for r in runs}
                assert by_id[ids[0]] == f"r{i}{winner}", "the committed snapshot is the winner's, not overwritten"
            record(cases=1)
    finally:
        stop.set()
        watcher.join(60)
    assert not errors, errors[:3]
    assert reads and set(reads) == {rows.num_rows}, "every read found one whole snapshot"


def test_stats_job_killed_at_every_phase_on_s3(spark, s3a, upload, arrow_s3, raise_faults):
    for point in faults.STATS_FAULT_POINTS:
        table = upload("flat")
        assert run_collect(spark, CollectOptions(table=table, keep_snapshots=1))["status"] == "ok"
        s3a.client().copy_object(
            Bucket=BUCKET,
            Key=_keys(s3a, table, "part-")[0].rsplit("/", 1)[0] + "/appended.parquet",
            CopySource={"Bucket": BUCKET, "Key": _keys(s3a, table, "part-")[0]},
        )
        raise_faults(point)
        with pytest.raises(SimulatedCrash):
            run_collect(spark, CollectOptions(table=table, keep_snapshots=1))
        record(cases=1, kills=1)
        location = default_stats_location(table).replace("s3a://", "s3://")
        seen = {p.rsplit("/", 1)[-1] for p in stats_store.load_latest(location, arrow_s3)["path"].to_pylist()}
        committed = point not in ("stats_after_read", "stats_before_publish")
        assert ("appended.parquet" in seen) == committed, f"killed at {point}: readers see one whole snapshot"
        raise_faults(None)
        assert run_collect(spark, CollectOptions(table=table, keep_snapshots=1))["status"] == "ok"
        latest = stats_store.load_latest(location, arrow_s3)
        files = read_table(table.split("://", 1)[1], arrow_s3).num_rows
        assert sum(dict(zip(latest["path"].to_pylist(), latest["file_rows"].to_pylist())).values()) == files, point
        record(rows_checked=files)


# --------------------------------------------------------------------------- the swap


def _cases() -> list[tuple[str, str, str]]:
    """(layout, fault, recovery): every phase of the swap once, a second crash while recovering, and S3A's rename
    stopped between its copy and its delete (``halfway``). The fast part runs the phases past the commit point,
    where S3's copies matter (a run on S3 takes ~10 s here); the soak (``ZORDER_SOAK=1``) runs them all."""
    moves = {"partitioned": 12 + 4 * NUM_FILES, "flat": 6 + NUM_FILES}
    cases = [
        ("flat", "after_begin", "rerun"),
        ("partitioned", "after_stage", "recover"),
        ("flat", "before_commit_record", "recover"),
        ("partitioned", "after_commit_record", "recover"),
        ("partitioned", f"mid_swap:{moves['partitioned'] // 2}", "rerun"),
        ("flat", "after_swap", "recover"),
        ("flat", "before_done", "recover"),
        ("flat", f"mid_swap:{moves['flat'] - 3}", "recover-killed"),
        ("partitioned", "mid_swap:3", "halfway"),  # out-move 4 copied to the trash, its source not deleted
        ("flat", f"mid_swap:{moves['flat'] - 1}", "halfway"),  # the last in-move copied, its staged file kept
    ]
    fast = {"after_commit_record", "recover-killed", "halfway"}
    return [c for c in cases if SOAK or fast & {c[1], c[2]}]


@pytest.mark.parametrize("layout,fault,how", _cases(), ids=lambda v: str(v))
def test_swap_killed_then_recovered_no_row_lost(spark, s3a, upload, arrow_s3, raise_faults, layout, fault, how):
    table = upload(layout)
    before = _rows(arrow_s3, table)
    raise_faults(fault)
    with pytest.raises(SimulatedCrash):
        _cluster(spark, table)
    record(cases=1, kills=1)
    raise_faults(None)
    fs = filesystem_for(table, spark)
    if how == "halfway":  # what S3A's rename leaves when killed after its copy: both objects, whole
        (journal,) = commit.pending_runs(fs, table)
        done = int(fault.split(":")[1])
        nxt = journal.moves[done]
        prefix = table.split(f"{BUCKET}/", 1)[1]
        s3a.client().copy_object(
            Bucket=BUCKET, Key=f"{prefix}/{nxt.dst}", CopySource={"Bucket": BUCKET, "Key": f"{prefix}/{nxt.src}"}
        )
    if how == "recover-killed":  # recovery itself crashes one move later, then runs again
        raise_faults("mid_swap:1")
        with pytest.raises(SimulatedCrash):
            run_action(spark, ClusterOptions(table=table, columns=[], action="recover"))
        record(kills=1)
        raise_faults(None)
    if how == "rerun":
        assert _cluster(spark, table)["status"] == "clustered"
    else:
        assert run_action(spark, ClusterOptions(table=table, columns=[], action="recover"))["status"] == "recovered"
    _assert_same_rows(arrow_s3, before, table, f"{layout} table on S3 killed at {fault} ({how})")
    assert {j.state for j in commit.list_journals(fs, table)} <= commit.FINISHED_STATES
    assert not _keys(s3a, table, "_zorder/staging/"), "staged objects left behind"


def test_spark_submit_sigkilled_mid_swap_on_s3_then_rerun(spark, s3a, upload, arrow_s3, tmp_path):
    """A real kill -9: the job's driver dies mid-swap (ZORDER_FAULT's default mode SIGKILLs its own process)."""
    table = upload("partitioned")
    before = _rows(arrow_s3, table)
    conf = {
        "spark.jars": ",".join(jars_for(["s3a"])),
        **{f"spark.hadoop.{k}": v for k, v in s3a.hadoop_conf().items()},
    }
    args = ("--table", table, "--columns", ",".join(COLUMNS), "--num-files", str(NUM_FILES))
    done = spark_submit("cluster_table", *args, env={"ZORDER_FAULT": "mid_swap:5"}, conf=conf)
    assert done.returncode != 0 and "SIGKILL" in done.stdout + done.stderr, (done.stdout + done.stderr)[-3000:]
    record(cases=1, kills=1)
    fs = filesystem_for(table, spark)
    assert [j.state for j in commit.pending_runs(fs, table)] == ["committed"], "killed past its commit point"
    assert _cluster(spark, table)["status"] == "clustered"  # the next run (in-process: one JVM start less)
    _assert_same_rows(arrow_s3, before, table, "S3 table, spark-submit SIGKILLed mid-swap, then rerun")


# --------------------------------------------------------------------------- a reader during the swap


def test_reader_during_the_swap_never_sees_a_row_twice(spark, s3a, upload, arrow_s3, monkeypatch, capsys):
    """The swap moves the old files out, then the new ones in: a reader listing the table in between sees fewer
    rows (or a file vanishing under it), never a row twice. How long that lasts on S3 is measured and printed."""
    table = upload("partitioned")
    before = _rows(arrow_s3, table)
    total = sum(before.values())
    marks: dict[str, float] = {}
    real_save = commit._save

    def timed_save(fs, tbl, journal, state):
        real_save(fs, tbl, journal, state)
        marks.setdefault(state, time.monotonic())

    monkeypatch.setattr(commit, "_save", timed_save)
    seen: list[tuple[float, int | str]] = []
    stop = threading.Event()

    def reader() -> None:
        path = table.split("://", 1)[1]
        while not stop.is_set():
            t = time.monotonic()
            try:
                seen.append((t, sum(row_multiset(path, filesystem=arrow_s3).values())))
            except (FileNotFoundError, OSError) as exc:
                seen.append((t, type(exc).__name__))

    watcher = threading.Thread(target=reader)
    watcher.start()
    try:
        assert _cluster(spark, table)["status"] == "clustered"
    finally:
        time.sleep(0.3)
        stop.set()
        watcher.join(60)
    _assert_same_rows(arrow_s3, before, table, "clustered while read")
    counts = [c for _, c in seen if isinstance(c, int)]
    assert max(counts) == total, "no read ever sees a row twice (or an extra row)"
    swap_s = marks["swapped"] - marks["committed"]
    partial = [t for t, c in seen if c != total]
    window = (max(partial) - min(partial)) if partial else 0.0
    moves = len(commit.list_journals(filesystem_for(table, spark), table)[-1].moves)
    record(cases=1, reads_during_swap=len(seen), reads_partial=len(partial))
    with capsys.disabled():
        print(
            f"\n[s3 swap] {moves} moves in {swap_s:.2f} s ({1000 * swap_s / moves:.0f} ms per copy+delete); "
            f"{len(seen)} reads, {len(partial)} saw fewer rows or a vanished file, over {window:.2f} s"
        )
    assert partial == [] or window <= swap_s + 2.0, "partial reads only while the swap runs"
