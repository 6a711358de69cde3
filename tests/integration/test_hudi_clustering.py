"""The cluster job on real Apache Hudi tables: Hudi's own clustering driven by our options (spark_jobs/hudi_clustering).

The tables are written by Hudi's Spark bundle (tests/hudi_tables.py); the job runs under ``.venv-hudi``'s
spark-submit (Spark 3.5.8 + hudi-spark3.5-bundle 1.2.0). One driver JVM runs the end-to-end re-cluster, the
refusals and the concurrent upsert (tests/hudi_driver.py); the kill -9 test needs two more (the killed run and its
recovery). Rows are compared as Hudi's own datasource reads them: count, distinct keys, an order-free checksum.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from hudi_tables import ROWS, hudi_tables, missing, submit, submit_cmd, submit_env

from airflow_zorder.core.storage.io import filesystem_for
from airflow_zorder.core.tables import open_table

pytestmark = pytest.mark.skipif(missing() is not None, reason=str(missing()))

REPO = Path(__file__).resolve().parents[2]
DRIVER = REPO / "tests" / "hudi_driver.py"
TARGET = 1 << 20  # 1 MiB output files: the 3.5 MB partition of cow_part becomes 4 files
MOD = 10  # the concurrent upsert changes the keys divisible by this


def _copy(src: Path, dst: Path) -> str:
    shutil.copytree(src, dst)
    return str(dst)


def _files(path: str) -> dict[str, list[Any]]:
    """Partition -> the latest slices' base files, as the read side lists them (hudi-rs)."""
    snap = open_table(path, filesystem_for(path)).snapshot()
    return {u.relpath: u.files for u in snap.units}


def _run_steps(steps: list[list[str]], out: Path) -> list[dict[str, Any]]:
    spec = out.with_suffix(".steps.json")
    spec.write_text(json.dumps(steps), encoding="utf-8")
    submit(DRIVER, str(spec), str(out), timeout=900)
    return json.loads(out.read_text(encoding="utf-8"))


def _argv(path: str, run_id: str, *more: str) -> list[str]:
    return ["--table", path, "--columns", "user_id,price", "--curve", "hilbert", "--run-id", run_id, *more]


@pytest.fixture(scope="module")
def tables(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return hudi_tables(tmp_path_factory.getbasetemp() / "hudi-tables")


@pytest.fixture(scope="module")
def runs(tables: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Every scenario of this module in one driver JVM: name -> its outcome (and the copies' paths)."""
    work = tmp_path_factory.mktemp("hudi-clustering")
    e2e = _copy(tables["cow_part"], work / "e2e")
    occ = _copy(tables["cow_part"], work / "occ")
    inc = _copy(tables["cow_part"], work / "inc")
    refused = {name: _copy(tables[name], work / name) for name in ("mor", "bucket", "pending")}
    before = _files(e2e)
    steps = [
        ["read", e2e],
        ["cluster", *_argv(e2e, "run-e2e", "--partitions", "region=eu", "--target-file-size", str(TARGET))],
        ["read", e2e],
        ["timeline", e2e],
        ["cluster", *_argv(e2e, "run-again", "--columns", "nope")],
        ["cluster", *_argv(e2e, "run-part", "--columns", "region")],
        *[["cluster", *_argv(p, f"run-{name}")] for name, p in refused.items()],
        ["cluster_upsert", occ, str(MOD), *_argv(occ, "run-occ", "--target-file-size", str(TARGET))],
        ["read", occ],
        ["cluster", *_argv(inc, "run-inc", "--incremental", "--target-file-size", str(TARGET))],
    ]
    out = [r["out"] for r in _run_steps(steps, work / "results.json")]
    names = ["before", "e2e", "after", "timeline", "unknown_column", "partition_column", "mor", "bucket", "pending"]
    return {
        **dict(zip(names, out)),
        "occ": out[-3],
        "occ_read": out[-2],
        "incremental": out[-1],
        "path": e2e,
        "files_before": before,
        "files_after": _files(e2e),
    }


def test_recluster_keeps_every_row_and_commits_one_replacecommit(runs: dict[str, Any]) -> None:
    result, before, after = runs["e2e"], runs["before"], runs["after"]
    assert result["status"] == "clustered", result
    assert before["rows"] == before["keys"] == ROWS
    assert (after["rows"], after["keys"], after["checksum"]) == (before["rows"], before["keys"], before["checksum"])
    instant = result["hudi"]["instant"]
    replacecommits = [n for n in runs["timeline"] if n.endswith(".replacecommit")]
    assert replacecommits == [result["hudi"]["completed"]] and replacecommits[0].startswith(instant + "_")
    marker = json.loads((Path(runs["path"]) / "_zorder" / "hudi" / "run-e2e.json").read_text())
    assert (marker["run_id"], marker["instant"], marker["state"]) == ("run-e2e", instant, "completed")
    assert marker["order"] == "user_id,price" and marker["order_strategy"] == "hilbert"
    assert marker["selected_partitions"] == "eu"


def test_files_per_partition_as_planned(runs: dict[str, Any]) -> None:
    before, after, result = runs["files_before"], runs["files_after"], runs["e2e"]
    planned = math.ceil(sum(f.size for f in before["eu"]) / TARGET)
    assert len(before["eu"]) > planned  # the job had something to merge
    assert len(after["eu"]) == planned == result["partitions"][0]["files_after"]
    assert all(f.path.endswith(f"_{result['hudi']['instant']}.parquet") for f in after["eu"])
    assert sorted(f.path for f in after["us"]) == sorted(f.path for f in before["us"])  # not chosen: untouched
    assert result["before"]["files"] == len(before["eu"]) and result["after"]["rows"] == ROWS // 2


def test_the_stats_store_records_the_hudi_run(runs: dict[str, Any]) -> None:
    from airflow_zorder.core.stats import stats_store

    events = stats_store.load_events(runs["e2e"]["stats_location"], kind="cluster").to_pylist()
    mine = [e for e in events if e["run_id"] == "run-e2e"]
    assert len(mine) == 1 and mine[0]["status"] == "clustered"
    assert json.loads(mine[0]["details"])["hudi"]["instant"] == runs["e2e"]["hudi"]["instant"]


@pytest.mark.parametrize(
    ("name", "error_type", "words"),
    [
        ("unknown_column", "ClusteringError", "unknown column 'nope'"),
        ("partition_column", "ClusteringError", "partition column"),
        ("mor", "HudiRewriteRefusedError", "log files"),
        ("bucket", "HudiRewriteRefusedError", "bucket index"),
        ("pending", "HudiRewriteRefusedError", "pending instant"),
    ],
)
def test_refusals_leave_the_table_untouched(runs: dict[str, Any], name: str, error_type: str, words: str) -> None:
    result = runs[name]
    assert result["status"] == "failed" and result["error_type"] == error_type, result
    assert words in result["error"]


def test_concurrent_upsert_is_kept_or_conflicts_never_lost(runs: dict[str, Any]) -> None:
    """An upsert by another Hudi writer (OCC + file-system lock) while Hudi's clustering runs: one of the two
    commits, or both in turn; either way every key once, and the upsert's rows all changed or none. (Hudi 1.2
    refuses the upsert: its rows are in file groups under the pending clustering.)"""
    occ, read = runs["occ"], runs["occ_read"]
    assert occ["upsert_while_running"], "the upsert did not overlap the clustering"
    upserted = occ["upsert"]["status"] == "committed"
    clustered = occ["cluster"]["status"] == "clustered"
    assert upserted or clustered, occ
    if not clustered:
        assert occ["cluster"]["error_type"] in ("ConcurrentChangeError", "ClusteringError"), occ["cluster"]
    if not upserted:  # Hudi refused it: an update of file groups under clustering, or a write conflict
        refusals = ("HoodieClusteringUpdateException", "HoodieWriteConflictException")
        assert any(r in occ["upsert"]["error"] for r in refusals), occ["upsert"]
    assert read["rows"] == read["keys"] == ROWS  # nothing lost, nothing duplicated or resurrected
    assert read["updated"] == (ROWS // MOD if upserted else 0)


def test_an_incremental_run_clusters_the_partitions_its_plan_chose(runs: dict[str, Any]) -> None:
    """The job's own incremental plan (footers of the base files: no stats store yet) picks bins; Hudi clusters
    their whole partitions."""
    result = runs["incremental"]
    assert result["status"] in ("clustered", "noop"), result
    assert result["mode"] == "incremental" and result["plan"]["bins"] >= 1, result
    if result["status"] == "clustered":
        assert {p["partition"] for p in result["partitions"]} <= {"region=eu", "region=us", "eu", "us"}
        assert result["after"]["rows"] == result["before"]["rows"] > 0


def test_kill_9_during_the_clustering_then_recovery(tables: dict[str, Path], tmp_path: Path) -> None:
    """SIGKILL of the driver while Hudi executes the clustering; the next run executes that pending clustering
    again (Hudi rolls back the killed attempt's files first), then its own: every row once."""
    path = _copy(tables["cow_plain"], tmp_path / "killed")
    timeline = Path(path) / ".hoodie" / "timeline"
    cmd = submit_cmd(REPO / "spark_jobs" / "cluster_table.py", *_argv(path, "run-killed", "--lock-ttl", "5"))
    proc = subprocess.Popen(
        cmd, env=submit_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )
    try:
        deadline = time.time() + 300
        while time.time() < deadline and proc.poll() is None and not list(timeline.glob("*.clustering.inflight")):
            time.sleep(0.1)
        time.sleep(2)  # into the execution: some output files may be written
        assert proc.poll() is None, "the run ended before it could be killed"
        os.killpg(proc.pid, signal.SIGKILL)
    finally:
        proc.wait(timeout=60)
    marker = json.loads((Path(path) / "_zorder" / "hudi" / "run-killed.json").read_text())
    assert marker["state"] == "scheduled"
    assert (timeline / f"{marker['instant']}.clustering.inflight").exists()
    assert not list(timeline.glob(f"{marker['instant']}_*.replacecommit"))
    time.sleep(5)  # the killed run's lock expires (--lock-ttl 5)
    steps = [["cluster", *_argv(path, "run-after")], ["read", path], ["read", str(tables["cow_plain"])]]
    after, read, pristine = (r["out"] for r in _run_steps(steps, tmp_path / "results.json"))
    assert after["status"] in ("clustered", "noop"), after  # noop: the recovered plan left one sorted file
    assert "run-killed" in " ".join(after["messages"])
    assert list(timeline.glob(f"{marker['instant']}_*.replacecommit"))  # the killed run's plan, executed again
    assert json.loads((Path(path) / "_zorder" / "hudi" / "run-killed.json").read_text())["recovered"] is True
    assert (read["rows"], read["keys"], read["checksum"]) == (ROWS, ROWS, pristine["checksum"])


def test_a_session_without_hudi_is_refused_naming_the_bundle(spark: Any) -> None:
    """The job submitted without Hudi's bundle (here: the suite's Spark 4.2 session) says what to add."""
    from airflow_zorder.core.errors import MissingDependencyError
    from spark_jobs.hudi_clustering import _call

    with pytest.raises(MissingDependencyError, match="HoodieSparkSessionExtension"):
        _call(spark, "/nowhere", "schedule")
