"""Other writers and runs at the same time: appends during clustering, two clustering runs, a stats run during
a clustering run, and locks whose owner died or went silent."""

from __future__ import annotations

import os
import socket
import time

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from reliability_kit import COLUMNS, SEEDS, SOAK, assert_same_rows, assert_untouched, journal_states, record, rng_for
from table_checks import read_table, row_multiset, spark_submit, stats_consistent, visible_files

from airflow_zorder.core.errors import ConcurrentChangeError, TableLockedError
from airflow_zorder.core.jobs.options import ClusterOptions, CollectOptions
from airflow_zorder.core.storage import commit as commit_mod
from airflow_zorder.core.storage import lock as lock_mod
from airflow_zorder.core.storage.io.local import LocalFileSystem
from airflow_zorder.core.storage.lock import LockInfo, TableLock, lock_path
from spark_jobs import cluster_table
from spark_jobs.cluster_table import run_cluster
from spark_jobs.stats_collection.run import run_collect

pytestmark = [pytest.mark.reliability, pytest.mark.spark]

NUM_FILES = 2


def _cluster(spark, table: str, **kw):
    return run_cluster(spark, ClusterOptions(table=table, columns=COLUMNS, num_files=NUM_FILES, **kw))


@pytest.fixture
def at_point(monkeypatch):
    """at_point(spec, action): run ``action()`` when the job reaches fault point ``spec`` ("name" or "name:k")."""

    def arm(spec: str, action) -> list:
        name, _, k = spec.partition(":")
        k = int(k or 1)
        seen, fired = [0], []
        real_job, real_commit = cluster_table.fault_point, commit_mod.fault_point

        def hook(point: str, real) -> None:
            if point == name:
                seen[0] += 1
                if seen[0] == k:
                    fired.append(action())
            real(point)

        monkeypatch.setattr(cluster_table, "fault_point", lambda p: hook(p, real_job))
        monkeypatch.setattr(commit_mod, "fault_point", lambda p: hook(p, real_commit))
        return fired

    return arm


def _points(seed: int) -> list[str]:
    r = rng_for("append-points", seed)
    # after_stage is also tests/integration's; mid_swap in a partitioned table: 20 moves
    fast = ["after_begin", "after_commit_record", f"mid_swap:{r.randint(1, 20)}"]
    return fast + (["after_stage", f"mid_swap:{r.randint(1, 20)}", "after_swap"] if SOAK else [])


@pytest.mark.parametrize("seed", SEEDS)
def test_appends_during_clustering_are_kept(spark, copy_table, at_point, seed):
    """Another writer adds a file at each phase of a run: the file is kept byte for byte, no row lost or doubled."""
    for point in _points(seed):
        layout = "partitioned" if point.startswith("mid_swap") else rng_for(point, seed).choice(["partitioned", "flat"])
        table = copy_table(layout)
        before = row_multiset(table)
        full = read_table(table)
        if "day" in full.column_names:  # rows like those of day=2026-01-03, appended to that partition
            extra = full.filter(pc.equal(full["day"].cast(pa.string()), "2026-01-03")).slice(0, 50)
            target = os.path.join(table, "day=2026-01-03", "appended-by-another-writer.parquet")
            at_point(point, lambda extra=extra, target=target: pq.write_table(extra.drop(["day"]), target))
        else:
            extra = full.slice(0, 50)
            target = os.path.join(table, "appended-by-another-writer.parquet")
            at_point(point, lambda extra=extra, target=target: pq.write_table(extra, target))
        result = _cluster(spark, table)
        assert result["status"] == "clustered", point
        record(cases=1)
        assert os.path.relpath(target, table) in visible_files(table), f"append at {point} was lost"
        expected = before + row_multiset(extra)
        assert_same_rows(expected, table, f"append at {point}")
        assert journal_states(table) == {"done"}


def test_input_rewritten_by_another_writer_aborts_the_commit(spark, copy_table, at_point):
    """An input file replaced (or deleted) during the run: the commit is refused, our run changes nothing."""
    for how in ("rewritten", "deleted"):
        table = copy_table("flat")
        victim = os.path.join(table, "part-00002.parquet")

        def other_writer(how=how, victim=victim, table=table):
            if how == "deleted":
                os.remove(victim)
            else:
                pq.write_table(pq.read_table(victim).slice(0, 10), victim)
            return visible_files(table)

        fired = at_point("after_stage", other_writer)
        detail = "deleted" if how == "deleted" else "size"
        with pytest.raises(
            ConcurrentChangeError,
            match=rf"changed since run .* modified or deleted: \S*part-00002\.parquet \({detail}",
        ):
            _cluster(spark, table)
        record(cases=1)
        assert_untouched(fired[0], table)  # exactly what the other writer left
        assert journal_states(table) == {"rolled_back"}


def test_two_clustering_runs_at_once_in_process(spark, copy_table, at_point):
    """A second run while the first holds the lock is refused, naming the holder; the first completes."""
    table = copy_table("partitioned")
    before = row_multiset(table)
    first = ClusterOptions(table=table, columns=COLUMNS, num_files=NUM_FILES, run_id="first-run")

    def second_run():
        try:
            _cluster(spark, table, run_id="second-run")
        except TableLockedError as exc:
            return str(exc)
        return "second run was not refused"

    fired = at_point("after_stage", second_run)
    assert run_cluster(spark, first)["status"] == "clustered"
    assert "is locked by clustering run 'first-run'" in fired[0], fired[0]
    record(cases=1)
    assert_same_rows(before, table, "two runs at once")
    assert journal_states(table) == {"done"}


@pytest.mark.skipif(not SOAK, reason="soak only (two JVMs at once: ~45 s); the lock itself is tested in-process")
def test_two_spark_submits_at_once(spark, copy_table):
    """Two real clustering jobs started together: one clusters, the other is refused (or runs after it)."""
    table = copy_table("partitioned")
    before = row_multiset(table)
    procs = [
        spark_submit("cluster_table", "--table", table, "--columns", ",".join(COLUMNS), "--num-files", "2", popen=True)
        for _ in range(2)
    ]
    outs = [p.communicate(timeout=600)[0] for p in procs]
    codes = [p.returncode for p in procs]
    record(cases=1)
    assert 0 in codes, outs
    for code, out in zip(codes, outs):
        assert code == 0 or "is locked by clustering run" in out, out[-3000:]
    record(**{"concurrent_submits_refused": codes.count(1)})
    assert_same_rows(before, table, "two spark-submits at once")
    assert journal_states(table) == {"done"}


def test_stats_run_during_clustering(spark, copy_table, at_point):
    """A stats run at each phase of a clustering run never fails; the next stats run matches the table exactly.

    During a path table's swap a reader listing the directory can see some old files already in the trash
    and some new ones not yet in: the stats run in the middle of the swap records what it saw (documented
    in docs/reliability.md); the next one, after the run, is consistent.
    """
    seen = {}
    for point in ("after_stage", "mid_swap:5", "after_swap") if SOAK else ("mid_swap:5", "after_swap"):
        table = copy_table("partitioned")
        before = row_multiset(table)
        fired = at_point(point, lambda t=table: run_collect(spark, CollectOptions(table=t)))
        assert _cluster(spark, table)["status"] == "clustered"
        record(cases=1)
        assert fired and fired[0]["status"] == "ok", point
        seen[point] = fired[0]["rows_total"]
        assert_same_rows(before, table, f"stats run at {point}")
        run_collect(spark, CollectOptions(table=table))
        assert not stats_consistent(table, sum(before.values())), point
    total = sum(before.values())
    assert seen.get("after_stage", total) == total and seen["after_swap"] == total, seen  # before/after the swap


def _write_lock(table: str, **kw) -> str:
    now = time.time()
    info = dict(
        run_id="someone-else",
        host="other-host",
        pid=4242,
        acquired_at=now,
        heartbeat_at=now,
        ttl_s=600.0,
        token="t",
        host_id="other",
        proc_start=None,
    )
    info.update(kw)
    os.makedirs(os.path.join(table, "_zorder"), exist_ok=True)
    path = lock_path(table)
    with open(path, "w") as fh:
        fh.write(LockInfo(**info).to_json())
    return path


def test_lock_of_a_dead_or_silent_owner_expires(spark, copy_table):
    table = copy_table("flat")
    before, files = row_multiset(table), visible_files(table)
    # a live owner on another host: refused, naming it and when its lock expires
    path = _write_lock(table, ttl_s=3.0)
    with pytest.raises(TableLockedError, match=r"locked by clustering run 'someone-else' \(host other-host.*expires"):
        _cluster(spark, table)
    assert_untouched(files, table)
    # ... that stops heartbeating: once its ttl has passed, the next run breaks the lock and clusters
    time.sleep(3.5)
    assert _cluster(spark, table)["status"] == "clustered"
    assert not os.path.exists(path)
    # a dead process on this host: broken at once, whatever its ttl
    proc_pid = os.fork()
    if proc_pid == 0:
        os._exit(0)
    os.waitpid(proc_pid, 0)
    _write_lock(table, host=socket.gethostname(), host_id=lock_mod._host_id(), pid=proc_pid, ttl_s=3600.0)
    assert _cluster(spark, table)["status"] == "clustered"
    # a garbage lock file: refused while fresh (it may be being written), broken once older than the ttl
    with open(path, "w") as fh:
        fh.write("{not json")
    with pytest.raises(TableLockedError, match="unreadable"):
        _cluster(spark, table, lock_ttl_s=2)
    old = time.time() - 10
    os.utime(path, (old, old))
    assert _cluster(spark, table, lock_ttl_s=2)["status"] == "clustered"
    record(cases=4)
    assert_same_rows(before, table, "broken locks")


def test_heartbeat_keeps_a_long_run_locked(spark, copy_table, at_point):
    """A run longer than its lock ttl keeps the lock (heartbeats): a competitor is still refused after the ttl."""
    table = copy_table("flat")
    before = row_multiset(table)

    def competitor():
        time.sleep(2.5)  # past the 2 s ttl of the run: only heartbeats keep its lock alive
        try:
            with TableLock(LocalFileSystem(), table, "competitor", ttl_s=2):
                return "competitor got the lock"
        except TableLockedError as exc:
            return str(exc)

    fired = at_point("after_stage", competitor)
    assert _cluster(spark, table, lock_ttl_s=2, run_id="long-run")["status"] == "clustered"
    assert "locked by clustering run 'long-run'" in fired[0], fired[0]
    record(cases=1)
    assert_same_rows(before, table, "heartbeat")
    assert journal_states(table) == {"done"}
