"""Kill the clustering job and the stats job at every phase, then recover: rows exact, stats consistent.

Most kills are in-process: ``ZORDER_FAULT=<point>[:k]`` with ``ZORDER_FAULT_MODE=raise`` raises
:class:`SimulatedCrash` (a BaseException: no ``except Exception`` cleanup runs, the journal and staged files
stay as a SIGKILL would leave them; only the ``with TableLock`` block still releases the lock, so the
dead-owner case is covered by the real kills below). In-process, on the shared SparkSession:

* the clustering job at every phase: after_begin, after_stage, before_commit_record, after_commit_record,
  mid_swap (a random move), after_swap, before_done; recovered by the next run (after_begin, mid_swap) or by
  ``--action recover``; a second crash during the recovery (mid_rollback, mid_swap); mid_cleanup;
* the stats job at every point of ``faults.STATS_FAULT_POINTS``;
* a catalog table's location switch.

Real spark-submit SIGKILLs (the JVM and its Python driver die at once) are kept where a real process matters: here,
the job's whole process group after its first staged partition (the dead owner's lock is broken by recover);
tests/integration/test_crash_recovery.py mid-swap (rolled forward by the next run); test_cluster_delta.py while
placing a Delta table's files. The soak (``ZORDER_SOAK=1``) adds kills at random moments and real stats-job kills.
"""

from __future__ import annotations

import json
import os
import signal
import time

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from reliability_kit import COLUMNS, SEEDS, SOAK, assert_same_rows, journal_states, record, rng_for
from table_checks import read_table, row_multiset, spark_submit, stats_consistent, visible_files

from airflow_zorder.core.jobs.options import ClusterOptions, CollectOptions
from airflow_zorder.core.stats import stats_store
from airflow_zorder.core.stats.stats_location import default_stats_location
from airflow_zorder.core.storage import faults
from airflow_zorder.core.storage.faults import SimulatedCrash
from spark_jobs.cluster_table import run_action, run_cluster
from spark_jobs.stats_collection.run import run_collect

pytestmark = [pytest.mark.reliability, pytest.mark.spark]

NUM_FILES = 2
#: files moved by one run: inputs out to the trash, then staged files in
MOVES = {"partitioned": 12 + 4 * NUM_FILES, "flat": 6 + NUM_FILES}


def _cluster(spark, table: str, **kw):
    return run_cluster(spark, ClusterOptions(table=table, columns=COLUMNS, num_files=NUM_FILES, **kw))


def _collect(spark, table: str, **kw):
    return run_collect(spark, CollectOptions(table=table, **kw))


def _check_finished(spark, table: str, before, what: str) -> None:
    """Rows exact, every run finished, nothing staged, and a stats run agrees with the table."""
    assert_same_rows(before, table, what)
    assert journal_states(table) <= {"done", "rolled_back"}, (what, journal_states(table))
    staging = os.path.join(table, "_zorder", "staging")
    assert not os.path.isdir(staging) or not [f for _, _, fs in os.walk(staging) for f in fs], what
    _collect(spark, table)
    problems = stats_consistent(table, sum(before.values()))
    assert not problems, (what, problems)


def _cases(seed: int) -> list[tuple[str, str, str | None, str]]:
    """(layout, fault, second fault during recovery or None, recovery) for one seed: every phase once."""
    r = rng_for("cluster-kills", seed)
    layout = lambda: r.choice(["partitioned", "flat"])  # noqa: E731
    # the fast part recovers with --action recover (cheap); a rerun re-clusters after recovering (soak: random)
    how = lambda: r.choice(["rerun", "recover"]) if SOAK else "recover"  # noqa: E731
    out = []
    for point in (
        "after_begin",
        "after_stage",
        "before_commit_record",
        "after_commit_record",
        "mid_swap",
        "after_swap",
        "before_done",
    ):
        lay = layout()
        spec = f"mid_swap:{r.randint(1, MOVES[lay])}" if point == "mid_swap" else point
        out.append((lay, spec, None, how()))
    # a second crash during the recovery itself: rolling back, and rolling forward
    lay = layout()
    out.append((lay, "after_stage", "mid_rollback", "recover"))
    lay = layout()
    out.append((lay, f"mid_swap:{r.randint(1, MOVES[lay] - 2)}", f"mid_swap:{r.randint(1, 2)}", how()))
    # the purge of expired trash, after the commit (retention 0): one deletion, the run's trash directory
    out.append((layout(), "mid_cleanup:1", None, "cleanup"))
    if not SOAK:  # two phases recovered by the next clustering run instead
        out[0] = (*out[0][:3], "rerun")
        out[4] = (*out[4][:3], "rerun")
    return out


@pytest.mark.parametrize("seed", SEEDS)
def test_cluster_killed_at_every_phase_then_recovered(spark, copy_table, raise_faults, seed):
    for i, (layout, fault, second, how) in enumerate(_cases(seed)):
        what = f"seed {seed}: {layout} table killed at {fault}" + (f", recovery killed at {second}" if second else "")
        table = copy_table(layout)
        before = row_multiset(table)
        if SOAK or i % 3 == 0:
            _collect(spark, table)  # stats exist before the run, as in production (the next run is incremental)
        raise_faults(fault)
        with pytest.raises(SimulatedCrash):
            _cluster(spark, table, retention_hours=0 if how == "cleanup" else 168)
        record(cases=1, kills=1)
        if second:
            raise_faults(second)
            with pytest.raises(SimulatedCrash):
                run_action(spark, ClusterOptions(table=table, columns=[], action="recover"))
            record(kills=1)
        raise_faults(None)
        if how == "rerun":
            result = _cluster(spark, table)
            assert result["status"] == "clustered", what
        elif how == "recover":
            result = run_action(spark, ClusterOptions(table=table, columns=[], action="recover"))
            assert result["status"] == "recovered", what
        else:
            result = run_action(spark, ClusterOptions(table=table, columns=[], retention_hours=0, action="cleanup"))
            assert result["status"] == "cleaned", what
            assert not os.path.exists(os.path.join(table, "_zorder", "trash")) or not os.listdir(
                os.path.join(table, "_zorder", "trash")
            ), what
        _check_finished(spark, table, before, what)


def _snapshot_paths(table: str) -> set[str]:
    t = stats_store.load_latest(default_stats_location(table))
    return {os.path.normpath(p.split(":", 1)[-1]) for p in t["path"].to_pylist()}


def _append(table: str, name: str, n: int = 100) -> pa.Table:
    rows = read_table(table).slice(0, n)
    if "day" in rows.column_names:
        rows = rows.drop(["day"])
        path = os.path.join(table, "day=2026-01-02", name)
    else:
        path = os.path.join(table, name)
    pq.write_table(rows, path)
    return rows


@pytest.mark.parametrize("seed", SEEDS)
def test_stats_killed_at_every_phase_then_rerun(spark, copy_table, raise_faults, seed):
    r = rng_for("stats-kills", seed)
    for point in faults.STATS_FAULT_POINTS:
        table = copy_table(r.choice(["partitioned", "flat"]))
        what = f"seed {seed}: stats job killed at {point}"
        _collect(spark, table, keep_snapshots=1)
        old_files = {os.path.normpath(os.path.join(table, p)) for p in visible_files(table)}
        _append(table, "appended.parquet")  # something new to collect
        new_files = {os.path.normpath(os.path.join(table, p)) for p in visible_files(table)}
        raise_faults(point)
        with pytest.raises(SimulatedCrash):
            _collect(spark, table, keep_snapshots=1)
        record(cases=1, kills=1)
        # readers see one complete snapshot: the old one (before the commit point) or the new one
        seen = _snapshot_paths(table)
        committed = point not in ("stats_after_read", "stats_before_publish")
        assert seen == (new_files if committed else old_files), what
        raise_faults(None)
        _collect(spark, table, keep_snapshots=1)
        assert not stats_consistent(table, read_table(table).num_rows), what
        runs = stats_store.load_runs(default_stats_location(table))
        ids = stats_store.list_snapshots(default_stats_location(table))
        assert ids[-1] in set(runs["snapshot_id"].to_pylist()), f"{what}: no run record for the newest snapshot"
        record(rows_checked=read_table(table).num_rows)


@pytest.mark.parametrize("seed", SEEDS)
def test_catalog_table_killed_mid_switch_then_recovered(spark, sources, tmp_path, raise_faults, seed):
    import shutil

    r = rng_for("catalog-kills", seed)
    points = ["after_stage", "after_commit_record", "mid_swap:1", "mid_swap:3"]
    for i, fault in enumerate(points if SOAK else [r.choice(points[1:])]):
        loc = str(tmp_path / f"cat-{i}")
        shutil.copytree(sources["partitioned"], loc)
        name = f"rel_events_{seed}_{i}"
        spark.sql(f"DROP TABLE IF EXISTS {name}")
        spark.sql(
            f"CREATE TABLE {name} (event_id BIGINT, user_id BIGINT, product_id INT, event_time TIMESTAMP_NTZ, "
            f"country STRING, amount DECIMAL(12,2), score DOUBLE, day STRING) USING parquet "
            f"PARTITIONED BY (day) LOCATION '{loc}'"
        )
        spark.sql(f"MSCK REPAIR TABLE {name}")
        before = row_multiset(spark.table(name).toArrow())
        raise_faults(fault)
        with pytest.raises(SimulatedCrash):
            _cluster(spark, name)
        record(cases=1, kills=1)
        raise_faults(None)
        spark.sql(f"REFRESH TABLE {name}")
        # readers in between see whole partitions: old or new location, never a mix
        mid = row_multiset(spark.table(name).toArrow())
        assert mid == before, f"catalog table killed at {fault}: readers saw a changed table before recovery"
        run_action(spark, ClusterOptions(table=name, columns=[], action="recover"))
        spark.sql(f"REFRESH TABLE {name}")
        after = row_multiset(spark.table(name).toArrow())
        lost = sum((before - after).values())
        record(rows_checked=2 * sum(before.values()), rows_lost=lost)
        assert after == before, f"catalog table killed at {fault}: rows changed after recovery"
        spark.sql(f"DROP TABLE {name}")


# --------------------------------------------------------------------------- real spark-submit + SIGKILL


def _kill_group(proc) -> None:
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=60)


def _kill_after(proc, started: float, delay: float) -> None:
    """SIGKILL the job's process group ``delay`` seconds after ``started``, unless it ended by then."""
    while proc.poll() is None and time.time() - started < delay:
        time.sleep(0.2)
    if proc.poll() is None:
        _kill_group(proc)


def _lock_owner_dead(table: str) -> int | None:
    """The pid of the lock's owner if the lock file is there and that process is gone (zombies count as gone)."""
    from airflow_zorder.core.storage.lock import _pid_alive

    path = os.path.join(table, "_zorder", "lock.json")
    if not os.path.exists(path):
        return None
    info = json.load(open(path))
    return None if _pid_alive(info["pid"], info.get("proc_start")) else info["pid"]


def _real_kills(seed: int) -> list[tuple[str, str | None, float | None]]:
    """(layout, fault point or None, delay in s or None): what the spark-submit kills of one seed do."""
    r = rng_for("real-kills", seed)
    if not SOAK:  # fast: one kill on the log line of the first staged partition (test_crash_recovery: mid-swap)
        return [("partitioned", None, None)]
    return [(r.choice(["partitioned", "flat"]), None, r.uniform(10.0, 30.0)) for _ in range(3)] + [
        ("flat", f"mid_swap:{r.randint(1, MOVES['flat'])}", None)
    ]


@pytest.mark.parametrize("seed", SEEDS)
def test_spark_submit_sigkilled_then_recovered(spark, copy_table, seed):
    for layout, fault, delay in _real_kills(seed):
        table = copy_table(layout)
        before = row_multiset(table)
        what = f"seed {seed}: spark-submit on {layout} killed " + (
            f"at {fault}" if fault else f"after {delay:.1f}s" if delay else "after its first staged partition"
        )
        env = {faults.FAULT_ENV: fault} if fault else None
        proc = spark_submit(
            "cluster_table",
            "--table",
            table,
            "--columns",
            ",".join(COLUMNS),
            "--num-files",
            str(NUM_FILES),
            env=env,
            popen=True,
        )
        started, out = time.time(), []
        if fault:
            out.append(proc.communicate(timeout=600)[0])
            assert proc.returncode != 0 and "fault injected" in out[-1], f"{what}: {out[-1][-2000:]}"
        elif delay is None:
            for line in proc.stdout:  # the first partition staged: others still moving, nothing committed
                out.append(line)
                if "[cluster_table] staged " in line:
                    _kill_group(proc)
                    break
            else:
                pytest.fail(f"{what}: the job ended before staging anything: {''.join(out)[-2000:]}")
        else:
            _kill_after(proc, started, delay)
        record(cases=1, kills=1, real_kills=1)
        state = journal_states(table)
        record(**{f"real_kill_state_{'+'.join(sorted(state)) or 'no_journal'}": 1})
        # a SIGKILLed owner leaves its lock behind: the next run breaks it (its process is gone)
        dead = _lock_owner_dead(table)
        if state - {"done", "rolled_back"}:
            assert dead is not None, f"{what}: a killed run in state {state} left no lock of a dead owner"
        result = run_action(spark, ClusterOptions(table=table, columns=[], action="recover"))
        assert result["status"] == "recovered"
        _check_finished(spark, table, before, what)


@pytest.mark.skipif(not SOAK, reason="soak only (spark-submits: ~40 s); the stats job's phases are killed in-process")
@pytest.mark.parametrize("seed", SEEDS)
def test_stats_spark_submit_sigkilled_then_rerun(spark, copy_table, seed):
    """Real stats jobs: one SIGKILLed at a random fault point, one at a random moment; then a rerun."""
    r = rng_for("stats-real-kills", seed)
    table = copy_table(r.choice(["partitioned", "flat"]))
    _collect(spark, table)
    old_files = {os.path.normpath(os.path.join(table, p)) for p in visible_files(table)}
    _append(table, "appended.parquet")
    new_files = {os.path.normpath(os.path.join(table, p)) for p in visible_files(table)}
    point = r.choice(faults.STATS_FAULT_POINTS)
    proc = spark_submit("collect_stats", "--table", table, "--keep-snapshots", "1", env={faults.FAULT_ENV: point})
    assert proc.returncode != 0 and f"fault injected at '{point}'" in proc.stdout + proc.stderr, proc.stderr[-2000:]
    assert _snapshot_paths(table) in (old_files, new_files), f"seed {seed}: a partial snapshot after a kill at {point}"
    _append(table, "appended-2.parquet")
    newest_files = {os.path.normpath(os.path.join(table, p)) for p in visible_files(table)}
    proc = spark_submit("collect_stats", "--table", table, "--keep-snapshots", "1", popen=True)
    delay = r.uniform(4.0, 20.0)
    _kill_after(proc, time.time(), delay)
    record(cases=2, kills=2, real_kills=2)
    seen = _snapshot_paths(table)
    # the old snapshot (both runs killed before their commit points), the first run's, or the second run's
    assert seen in (old_files, new_files, newest_files), f"seed {seed}: a partial snapshot after a kill at {delay:.1f}s"
    _collect(spark, table)
    rows = read_table(table).num_rows
    assert not stats_consistent(table, rows)
    runs = stats_store.load_runs(default_stats_location(table))
    assert stats_store.list_snapshots(default_stats_location(table))[-1] in set(runs["snapshot_id"].to_pylist())
    record(rows_checked=rows)
