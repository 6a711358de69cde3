"""Tests of the crash-safe commit machinery: fs, faults, lock and the journaled swap (local files, no Spark
except the one HadoopFileSystem test marked ``spark``)."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import textwrap
import time
from collections import Counter
from pathlib import Path
from typing import ClassVar

import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from airflow_zorder.core.errors import (
    CommitError,
    ConcurrentChangeError,
    LockNotOwnedError,
    PendingRunsError,
    RecoveryError,
    TableLockedError,
)
from airflow_zorder.core.storage import commit as cm
from airflow_zorder.core.storage.faults import (
    FAULT_ENV,
    FAULT_MODE_ENV,
    FAULT_POINTS,
    SimulatedCrash,
    fault_point,
    reset_fault_counters,
)
from airflow_zorder.core.storage.io import filesystem_for
from airflow_zorder.core.storage.io.arrow import ArrowFileSystem
from airflow_zorder.core.storage.io.file_info import FileInfo
from airflow_zorder.core.storage.io.local import LocalFileSystem
from airflow_zorder.core.storage.io.paths import join, relpath
from airflow_zorder.core.storage.lock import LockInfo, TableLock, lock_path

REPO = Path(__file__).resolve().parents[2]
FS = LocalFileSystem()
RUN = "run-0001"


# --------------------------------------------------------------------------- helpers


@pytest.fixture(autouse=True)
def _no_faults(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.delenv(FAULT_ENV, raising=False)
    monkeypatch.delenv(FAULT_MODE_ENV, raising=False)
    reset_fault_counters()
    yield
    reset_fault_counters()


def arm(monkeypatch: pytest.MonkeyPatch, spec: str | None) -> None:
    """Set (or clear) the in-process fault for the next phase, with fresh counters."""
    reset_fault_counters()
    if spec is None:
        monkeypatch.delenv(FAULT_ENV, raising=False)
        monkeypatch.delenv(FAULT_MODE_ENV, raising=False)
    else:
        monkeypatch.setenv(FAULT_ENV, spec)
        monkeypatch.setenv(FAULT_MODE_ENV, "raise")


def write_parquet(path: Path, ids: list[int]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table({"id": pa.array(ids, pa.int64()), "v": pa.array([f"v{i}" for i in ids])}), path)


def visible(table: Path) -> set[str]:
    """Table-relative paths of the files readers see."""
    return {relpath(str(table), f.path) for f in cm.visible_files(FS, str(table))}


def tree_hashes(root: Path, include_hidden: bool = True) -> dict[str, str]:
    out = {}
    for p in sorted(root.rglob("*")):
        if p.is_file():
            rel = p.relative_to(root).as_posix()
            if include_hidden or not cm.is_hidden(rel):
                out[rel] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def partition_hashes(table: Path, part: str) -> dict[str, str]:
    return tree_hashes(table / part)


def table_rows(table: Path) -> list[int]:
    """All ids as pyarrow's dataset reader sees the table (it skips _zorder by itself)."""
    return sorted(
        ds.dataset(str(table), format="parquet", partitioning="hive").to_table(columns=["id"])["id"].to_pylist()
    )


class Scenario:
    """A partitioned table; a run re-clusters dt=1 (2 files -> 1) and dt=2 (2 files -> 3); dt=3 untouched."""

    OLD: ClassVar[dict[str, list[int]]] = {
        "dt=1/part-a.parquet": [1, 5, 3],
        "dt=1/part-b.parquet": [2, 4],
        "dt=2/part-a.parquet": [10, 14, 12],
        "dt=2/part-b.parquet": [11, 13],
        "dt=3/part-a.parquet": [20, 21],
        "dt=3/part-b.parquet": [22],
    }
    TOUCHED = ("dt=1", "dt=2")

    def __init__(self, root: Path, run_id: str = RUN) -> None:
        self.table = root / "tbl"
        self.t = str(self.table)
        self.run_id = run_id
        for rel, ids in self.OLD.items():
            write_parquet(self.table / rel, ids)
        self.all_ids = sorted(i for ids in self.OLD.values() for i in ids)
        self.old_visible = set(self.OLD)
        self.untouched_hashes = partition_hashes(self.table, "dt=3")

    def inputs(self) -> list[FileInfo]:
        return [f for f in cm.visible_files(FS, self.t) if relpath(self.t, f.path).split("/")[0] in self.TOUCHED]

    def begin(self) -> cm.Journal:
        return cm.begin(FS, self.t, self.run_id, self.inputs())

    def stage(self) -> list[str]:
        """Write the 're-clustered' files like Spark would (plus Spark's hidden junk)."""
        sdir = Path(cm.staging_dir(self.t, self.run_id))
        new = {
            f"dt=1/part-00000-{self.run_id}.parquet": [1, 2, 3, 4, 5],
            f"dt=2/part-00000-{self.run_id}.parquet": [10, 11],
            f"dt=2/part-00001-{self.run_id}.parquet": [12, 13],
            f"dt=2/part-00002-{self.run_id}.parquet": [14],
        }
        for rel, ids in new.items():
            write_parquet(sdir / rel, ids)
        (sdir / "_SUCCESS").write_text("")
        (sdir / "dt=1" / f".part-00000-{self.run_id}.parquet.crc").write_text("crc")
        self.new_visible = set(new) | {r for r in self.OLD if r.startswith("dt=3/")}
        self.n_moves = 4 + len(new)
        return [str(sdir / rel) for rel in sorted(new)]

    def run(self) -> cm.Journal:
        j = self.begin()
        return cm.commit(FS, j, self.stage())

    def assert_old(self) -> None:
        assert visible(self.table) == self.old_visible
        assert tree_hashes(self.table, include_hidden=False) == self.old_hashes
        assert table_rows(self.table) == self.all_ids

    def assert_new(self) -> None:
        assert visible(self.table) == self.new_visible
        assert partition_hashes(self.table, "dt=3") == self.untouched_hashes
        assert table_rows(self.table) == self.all_ids
        trash = Path(cm.trash_dir(self.t, self.run_id))
        assert {p.relative_to(trash).as_posix() for p in trash.rglob("*") if p.is_file()} == {
            r for r in self.OLD if r.split("/")[0] in self.TOUCHED
        }

    def snapshot_old(self) -> None:
        self.old_hashes = tree_hashes(self.table, include_hidden=False)


@pytest.fixture
def sc(tmp_path: Path) -> Scenario:
    s = Scenario(tmp_path)
    s.snapshot_old()
    return s


# --------------------------------------------------------------------------- fs


def test_local_fs_basics(tmp_path: Path) -> None:
    fs = LocalFileSystem()
    base = str(tmp_path)
    assert fs.list_files(join(base, "missing")) == []
    fs.mkdirs(join(base, "a/b"))
    fs.write_atomic(join(base, "a/b/x.json"), "one")
    fs.write_atomic(join(base, "a/b/x.json"), "two")
    assert fs.read_text(join(base, "a/b/x.json")) == "two"
    assert [p.name for p in (tmp_path / "a/b").iterdir()] == ["x.json"]  # no temp file left behind
    assert fs.create_exclusive(join(base, "a/lock"), "mine") is True
    assert fs.create_exclusive(join(base, "a/lock"), "theirs") is False
    assert fs.read_text(join(base, "a/lock")) == "mine"
    # rename: creates parents, never overwrites
    fs.rename(join(base, "a/lock"), join(base, "c/d/lock"))
    assert not fs.exists(join(base, "a/lock")) and fs.read_text(join(base, "c/d/lock")) == "mine"
    (tmp_path / "a" / "other").write_text("keep")
    with pytest.raises(FileExistsError):
        fs.rename(join(base, "c/d/lock"), join(base, "a/other"))
    assert (tmp_path / "a" / "other").read_text() == "keep" and fs.exists(join(base, "c/d/lock"))
    with pytest.raises(OSError):
        fs.rename(join(base, "nope"), join(base, "nope2"))
    files = fs.list_files(base)
    assert [relpath(base, f.path) for f in files] == ["a/b/x.json", "a/other", "c/d/lock"]
    assert [relpath(base, f.path) for f in fs.list_files(join(base, "a"), recursive=False)] == ["a/other"]
    info = next(f for f in files if f.path.endswith("other"))
    assert info.size == 4 and info.mtime_ms == fs.modified_ms(info.path)
    with pytest.raises(OSError):
        fs.delete(join(base, "a"))  # not empty, not recursive
    assert fs.delete(join(base, "a"), recursive=True) is True
    assert fs.delete(join(base, "a"), recursive=True) is False
    assert not fs.exists(join(base, "a"))


def test_local_fs_file_uri_spelled_back(tmp_path: Path) -> None:
    (tmp_path / "k=1").mkdir()
    (tmp_path / "k=1" / "f.parquet").write_text("x")
    uri = f"file://{tmp_path}"
    assert [f.path for f in FS.list_files(uri)] == [f"{uri}/k=1/f.parquet"]
    assert FS.exists(f"{uri}/k=1/f.parquet")
    assert isinstance(filesystem_for(uri), LocalFileSystem)
    store = filesystem_for("s3a://bucket/t", options={"region": "us-east-1", "anonymous": True})
    assert isinstance(store, ArrowFileSystem)  # without a SparkSession: the store through pyarrow (the one seam)
    assert store.arrow("s3a://bucket/t/k=1/f.parquet")[1] == "bucket/t/k=1/f.parquet"


# --------------------------------------------------------------------------- faults


def test_fault_point_counts_and_raises(monkeypatch: pytest.MonkeyPatch) -> None:
    arm(monkeypatch, "mid_swap:3")
    fault_point("after_swap")  # other points never fire
    fault_point("mid_swap")
    fault_point("mid_swap")
    with pytest.raises(SimulatedCrash, match="mid_swap"):
        fault_point("mid_swap")
    fault_point("mid_swap")  # only the k-th visit
    assert not issubclass(SimulatedCrash, Exception)
    arm(monkeypatch, "mid_swap:0")
    with pytest.raises(ValueError):
        fault_point("mid_swap")


def test_fault_point_sigkill_is_a_real_kill(tmp_path: Path) -> None:
    code = "from airflow_zorder.core.storage.faults import fault_point\nfault_point('after_swap')\nprint('survived')\n"
    env = {**os.environ, "PYTHONPATH": str(REPO), FAULT_ENV: "after_swap"}
    env.pop(FAULT_MODE_ENV, None)
    p = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60, check=False)
    assert p.returncode == -signal.SIGKILL
    assert "survived" not in p.stdout


# --------------------------------------------------------------------------- commit: happy path


def test_happy_path_swaps_exactly_the_touched_files(sc: Scenario) -> None:
    j = sc.run()
    assert j.state == cm.DONE
    sc.assert_new()
    assert not Path(cm.staging_dir(sc.t, RUN)).exists()
    on_disk = cm.read_journal(FS, sc.t, RUN)
    assert on_disk.state == cm.DONE and len(on_disk.moves) == sc.n_moves
    assert {relpath(sc.t, f.path) for f in on_disk.inputs} == {r for r in Scenario.OLD if not r.startswith("dt=3")}
    # old out first, then new in
    kinds = ["out" if m.dst.startswith("_zorder/trash/") else "in" for m in on_disk.moves]
    assert kinds == sorted(kinds, key=lambda k: k != "out")
    assert cm.pending_runs(FS, sc.t) == []
    assert cm.recover(FS, sc.t) == []


def test_begin_validates(sc: Scenario, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="safe path segment"):
        cm.begin(FS, sc.t, "scheduled__2024-01-01T00:00:00+00:00", [])
    with pytest.raises(ValueError, match="not under table"):
        cm.begin(FS, sc.t, RUN, [FileInfo(str(tmp_path / "elsewhere.parquet"), 1, 1)])
    sc.begin()
    with pytest.raises(CommitError, match="already has a journal"):
        cm.begin(FS, sc.t, RUN, [])
    with pytest.raises(PendingRunsError, match=RUN):
        cm.begin(FS, sc.t, "run-0002", [])


# --------------------------------------------------------------------------- commit: crash at every point


def _crash_points() -> list[tuple[str, bool]]:
    """(fault spec, committed?) for every fault point a commit passes, mid_swap at every move."""
    n_moves = 8
    pts = [("after_begin", False), ("before_commit_record", False), ("after_commit_record", True)]
    pts += [(f"mid_swap:{k}", True) for k in range(1, n_moves + 1)]
    pts += [("after_swap", True), ("before_done", True)]
    return pts


def test_crash_points_cover_every_commit_fault_point() -> None:
    covered = {spec.split(":")[0] for spec, _ in _crash_points()}
    assert covered == set(FAULT_POINTS) - {"mid_rollback"}  # mid_rollback: tested via recover below


@pytest.mark.parametrize(("spec", "committed"), _crash_points())
def test_crash_then_recover_gives_old_or_new_never_a_mix(
    sc: Scenario, monkeypatch: pytest.MonkeyPatch, spec: str, committed: bool
) -> None:
    arm(monkeypatch, spec)
    with pytest.raises(SimulatedCrash):
        sc.run()
    arm(monkeypatch, None)
    if spec.startswith("mid_swap:") and int(spec.split(":")[1]) < sc.n_moves:
        # The crash really left the table half-swapped (neither old nor new).
        assert visible(sc.table) not in (sc.old_visible, sc.new_visible)

    assert cm.recover(FS, sc.t) == [RUN]
    if committed:
        sc.assert_new()
        assert cm.read_journal(FS, sc.t, RUN).state == cm.DONE
    else:
        sc.assert_old()
        assert cm.read_journal(FS, sc.t, RUN).state == cm.ROLLED_BACK
    assert not Path(cm.staging_dir(sc.t, RUN)).exists()

    before = tree_hashes(sc.table)
    assert cm.recover(FS, sc.t) == []  # second recover: a no-op
    assert tree_hashes(sc.table) == before


RECOVER_CRASHES = [
    # (commit crash, crash during recover, committed?)
    ("after_begin", "mid_rollback", False),
    ("before_commit_record", "mid_rollback", False),
    ("after_commit_record", "mid_swap:1", True),
    ("after_commit_record", "mid_swap:4", True),
    ("after_commit_record", "mid_swap:8", True),
    ("mid_swap:3", "mid_swap:2", True),
    ("mid_swap:5", "after_swap", True),
    ("mid_swap:8", "before_done", True),
    ("after_swap", "before_done", True),
]


@pytest.mark.parametrize(("commit_fault", "recover_fault", "committed"), RECOVER_CRASHES)
def test_crash_during_recover_then_recover_again(
    sc: Scenario, monkeypatch: pytest.MonkeyPatch, commit_fault: str, recover_fault: str, committed: bool
) -> None:
    arm(monkeypatch, commit_fault)
    with pytest.raises(SimulatedCrash):
        sc.run()
    arm(monkeypatch, recover_fault)
    with pytest.raises(SimulatedCrash):
        cm.recover(FS, sc.t)
    arm(monkeypatch, None)
    assert cm.recover(FS, sc.t) == [RUN]
    sc.assert_new() if committed else sc.assert_old()
    before = tree_hashes(sc.table)
    assert cm.recover(FS, sc.t) == []
    assert tree_hashes(sc.table) == before


def test_repeated_crashes_during_recover_each_make_progress(sc: Scenario, monkeypatch: pytest.MonkeyPatch) -> None:
    arm(monkeypatch, "after_commit_record")
    with pytest.raises(SimulatedCrash):
        sc.run()
    crashes = 0
    while True:
        arm(monkeypatch, "mid_swap:1")  # crash right after the first move redone, every time
        try:
            cm.recover(FS, sc.t)
            break
        except SimulatedCrash:
            crashes += 1
            assert crashes <= sc.n_moves
    assert crashes == sc.n_moves
    sc.assert_new()


def test_real_sigkill_mid_swap_then_recover(sc: Scenario) -> None:
    j = sc.begin()
    staged = sc.stage()
    script = textwrap.dedent(
        """
        import json, sys
        from airflow_zorder.core.storage.io.local import LocalFileSystem
        from airflow_zorder.core.storage import commit as cm
        table, run_id, staged = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
        fs = LocalFileSystem()
        cm.commit(fs, cm.read_journal(fs, table, run_id), staged)
        print("commit finished")
        """
    )
    env = {**os.environ, "PYTHONPATH": str(REPO), FAULT_ENV: "mid_swap:2"}
    env.pop(FAULT_MODE_ENV, None)
    p = subprocess.run(
        [sys.executable, "-c", script, sc.t, j.run_id, json.dumps(staged)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert p.returncode == -signal.SIGKILL, (p.returncode, p.stdout, p.stderr)
    assert "commit finished" not in p.stdout
    assert cm.read_journal(FS, sc.t, RUN).state == cm.COMMITTED
    assert len(visible(sc.table) & sc.old_visible) == len(sc.old_visible) - 2  # two old files moved out
    assert cm.recover(FS, sc.t) == [RUN]
    sc.assert_new()


# --------------------------------------------------------------------------- concurrent writers


def test_concurrent_append_is_kept_and_not_moved(sc: Scenario) -> None:
    j = sc.begin()
    staged = sc.stage()
    write_parquet(sc.table / "dt=1" / "appended-after-begin.parquet", [100, 101])
    write_parquet(sc.table / "dt=9" / "new-partition.parquet", [900])
    appended = {r: h for r, h in tree_hashes(sc.table, include_hidden=False).items() if r not in sc.old_visible}
    cm.commit(FS, j, staged)
    assert visible(sc.table) == sc.new_visible | set(appended)
    assert {r: h for r, h in tree_hashes(sc.table, include_hidden=False).items() if r in appended} == appended
    assert not any("appended" in m.src or "new-partition" in m.src for m in j.moves)
    assert table_rows(sc.table) == sorted(sc.all_ids + [100, 101, 900])


def _assert_rolled_back_untouched(sc: Scenario, table_before: dict[str, str]) -> None:
    assert tree_hashes(sc.table, include_hidden=False) == table_before
    assert cm.read_journal(FS, sc.t, RUN).state == cm.ROLLED_BACK
    assert not Path(cm.staging_dir(sc.t, RUN)).exists()
    assert not Path(cm.trash_dir(sc.t, RUN)).exists()
    assert cm.pending_runs(FS, sc.t) == []


@pytest.mark.parametrize("change", ["rewritten", "touched", "deleted"])
def test_modified_or_deleted_input_aborts_without_touching_the_table(sc: Scenario, change: str) -> None:
    j = sc.begin()
    staged = sc.stage()
    victim = sc.table / "dt=2" / "part-b.parquet"
    if change == "rewritten":
        write_parquet(victim, [11, 13, 999])
    elif change == "touched":  # same bytes, newer mtime (e.g. rewritten with identical size)
        st_ = victim.stat()
        os.utime(victim, ns=(st_.st_atime_ns, st_.st_mtime_ns + 5_000_000_000))
    else:
        victim.unlink()
    before = tree_hashes(sc.table, include_hidden=False)
    with pytest.raises(ConcurrentChangeError, match="part-b.parquet") as ei:
        cm.commit(FS, j, staged)
    assert ei.value.files == [str(victim)]
    assert j.state == cm.ROLLED_BACK
    _assert_rolled_back_untouched(sc, before)


def test_commit_refuses_existing_destination(sc: Scenario) -> None:
    j = sc.begin()
    staged = sc.stage()
    clash = sc.table / relpath(cm.staging_dir(sc.t, RUN), staged[0])
    write_parquet(clash, [7777])
    before = tree_hashes(sc.table, include_hidden=False)
    with pytest.raises(CommitError, match="already exist"):
        cm.commit(FS, j, staged)
    _assert_rolled_back_untouched(sc, before)


def test_commit_refuses_hidden_or_unlisted_staged_files(sc: Scenario, tmp_path: Path) -> None:
    j = sc.begin()
    staged = sc.stage()
    hidden = Path(cm.staging_dir(sc.t, RUN)) / "dt=1" / "_hidden.parquet"
    hidden.write_text("x")
    with pytest.raises(CommitError, match="would not see"):
        cm.commit(FS, j, staged + [str(hidden)])
    sc.assert_old()

    s2 = Scenario(tmp_path / "second", run_id="run-0002")
    s2.snapshot_old()
    j2 = s2.begin()
    staged2 = s2.stage()
    with pytest.raises(CommitError, match="not in the staged list"):
        cm.commit(FS, j2, staged2[:-1])  # one verified file forgotten: its rows would be lost
    s2.assert_old()
    with pytest.raises(CommitError, match="not 'staging'"):
        cm.commit(FS, j2, staged2)  # a rolled-back run cannot be committed later


def test_recover_refuses_to_guess(sc: Scenario, monkeypatch: pytest.MonkeyPatch) -> None:
    arm(monkeypatch, "mid_swap:2")
    with pytest.raises(SimulatedCrash):
        sc.run()
    arm(monkeypatch, None)
    j = cm.read_journal(FS, sc.t, RUN)
    lost = j.moves[-1]  # a staged file not yet moved in: remove it (neither src nor dst)
    Path(join(sc.t, lost.src)).unlink()
    before = tree_hashes(sc.table)
    with pytest.raises(RecoveryError, match="neither exists") as ei:
        cm.recover(FS, sc.t)
    assert lost.src in str(ei.value)
    assert tree_hashes(sc.table) == before  # nothing half-done
    assert cm.read_journal(FS, sc.t, RUN).state == cm.COMMITTED


def test_recover_refuses_both_src_and_dst(sc: Scenario, monkeypatch: pytest.MonkeyPatch) -> None:
    arm(monkeypatch, "after_commit_record")
    with pytest.raises(SimulatedCrash):
        sc.run()
    arm(monkeypatch, None)
    m = cm.read_journal(FS, sc.t, RUN).moves[0]
    Path(join(sc.t, m.dst)).parent.mkdir(parents=True, exist_ok=True)
    Path(join(sc.t, m.dst)).write_bytes(Path(join(sc.t, m.src)).read_bytes())
    with pytest.raises(RecoveryError, match="both exist"):
        cm.recover(FS, sc.t)
    sc.assert_old()


def test_rollback_refused_past_commit_point(sc: Scenario, monkeypatch: pytest.MonkeyPatch) -> None:
    arm(monkeypatch, "mid_swap:1")
    with pytest.raises(SimulatedCrash):
        sc.run()
    arm(monkeypatch, None)
    with pytest.raises(RecoveryError, match="rolled forward"):
        cm.rollback(FS, cm.read_journal(FS, sc.t, RUN))


# --------------------------------------------------------------------------- property: any layout, any crash


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    layout=st.lists(st.lists(st.integers(1, 4), min_size=1, max_size=3), min_size=1, max_size=4),
    n_new=st.integers(1, 3),
    crash=st.sampled_from(
        ["after_begin", "before_commit_record", "after_commit_record", "mid_swap", "after_swap", "before_done", None]
    ),
    k=st.integers(1, 20),
    recover_crash=st.sampled_from([None, "mid_swap:1", "after_swap", "mid_rollback"]),
)
def test_property_rows_never_lost_or_duplicated(layout, n_new, crash, k, recover_crash) -> None:
    """Random partitions/files ('rows' = lines), random crash in commit and in recover: rows are preserved."""
    mp = pytest.MonkeyPatch()
    try:
        with tempfile.TemporaryDirectory() as d:
            table = Path(d) / "t"
            row = 0
            for p, files in enumerate(layout):
                for f, n_rows in enumerate(files):
                    (table / f"p={p}").mkdir(parents=True, exist_ok=True)
                    (table / f"p={p}" / f"f{f}.txt").write_text("".join(f"r{row + i}\n" for i in range(n_rows)))
                    row += n_rows
            t = str(table)

            def rows() -> Counter[str]:
                return Counter(line for f in cm.visible_files(FS, t) for line in FS.read_text(f.path).splitlines())

            original = rows()
            old_set = visible(table)
            inputs = [f for f in cm.visible_files(FS, t) if not f.path.endswith("/p=0/f0.txt")]  # p=0/f0 untouched
            arm(mp, None if crash is None else f"{crash}:{k}" if crash == "mid_swap" else crash)
            staged: list[str] = []
            new_set = {r for r in old_set if r == "p=0/f0.txt"}
            try:
                j = cm.begin(FS, t, RUN, inputs)
                by_part: dict[str, list[str]] = {}
                for f in inputs:
                    by_part.setdefault(relpath(t, f.path).split("/")[0], []).extend(FS.read_text(f.path).splitlines())
                for part, lines in by_part.items():
                    for i in range(n_new):
                        chunk = sorted(lines)[i::n_new]
                        if chunk:
                            dst = Path(cm.staging_dir(t, RUN)) / part / f"new-{i}-{RUN}.txt"
                            dst.parent.mkdir(parents=True, exist_ok=True)
                            dst.write_text("".join(x + "\n" for x in chunk))
                            staged.append(str(dst))
                            new_set.add(f"{part}/{dst.name}")
                cm.commit(FS, j, staged)
            except SimulatedCrash:
                arm(mp, recover_crash)
                try:
                    cm.recover(FS, t)
                except SimulatedCrash:
                    pass
                arm(mp, None)
                cm.recover(FS, t)
            assert cm.pending_runs(FS, t) == []
            assert rows() == original
            assert visible(table) in (old_set, new_set)
            state = cm.read_journal(FS, t, RUN).state
            assert visible(table) == (new_set if state == cm.DONE else old_set)
    finally:
        mp.undo()
        reset_fault_counters()


# --------------------------------------------------------------------------- lock


def _lock_json(table: str) -> dict:
    return json.loads(FS.read_text(lock_path(table)))


def test_second_acquire_is_refused_naming_the_owner(tmp_path: Path) -> None:
    t = str(tmp_path)
    a = TableLock(FS, t, "run-a", ttl_s=600).acquire()
    content = FS.read_text(lock_path(t))
    with pytest.raises(TableLockedError) as ei:
        TableLock(FS, t, "run-b", ttl_s=600).acquire()
    msg = str(ei.value)
    for needle in ("run-a", socket.gethostname(), f"pid {os.getpid()}", t, "expires at", "since", "delete"):
        assert needle in msg
    assert FS.read_text(lock_path(t)) == content  # untouched
    d = _lock_json(t)
    assert {"run_id", "host", "pid", "acquired_at", "heartbeat_at", "ttl_s"} <= set(d)
    a.release()
    assert not FS.exists(lock_path(t))
    TableLock(FS, t, "run-b").acquire().release()


def test_expired_lock_is_broken(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    t = str(tmp_path)
    a = TableLock(FS, t, "run-a", ttl_s=60).acquire()
    b = TableLock(FS, t, "run-b", ttl_s=60, clock=lambda: time.time() + 61)
    with caplog.at_level("WARNING"):
        b.acquire()
    assert "expired" in caplog.text
    assert _lock_json(t)["run_id"] == "run-b"
    with pytest.raises(LockNotOwnedError, match="run-b"):
        a.release()  # a's lock was broken: it must not delete b's
    assert _lock_json(t)["run_id"] == "run-b"
    with pytest.raises(LockNotOwnedError):
        a.verify()
    b.release()


def test_lock_not_expired_within_ttl(tmp_path: Path) -> None:
    t = str(tmp_path)
    TableLock(FS, t, "run-a", ttl_s=60).acquire()
    with pytest.raises(TableLockedError):
        TableLock(FS, t, "run-b", ttl_s=60, clock=lambda: time.time() + 50).acquire()


def _hold_lock_in_subprocess(table: str, then: str) -> subprocess.Popen:
    code = textwrap.dedent(
        f"""
        import os, sys, time
        from airflow_zorder.core.storage.io.local import LocalFileSystem
        from airflow_zorder.core.storage.lock import TableLock
        TableLock(LocalFileSystem(), {table!r}, "run-child", ttl_s=600).acquire()
        print("locked", flush=True)
        {then}
        """
    )
    p = subprocess.Popen(
        [sys.executable, "-c", code], env={**os.environ, "PYTHONPATH": str(REPO)}, stdout=subprocess.PIPE, text=True
    )
    assert p.stdout is not None and p.stdout.readline().strip() == "locked"
    return p


def test_lock_of_dead_pid_on_this_host_is_broken(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    t = str(tmp_path)
    p = _hold_lock_in_subprocess(t, "os._exit(0)")  # dies holding the lock, no cleanup
    p.wait(timeout=60)
    assert _lock_json(t)["pid"] == p.pid
    with caplog.at_level("WARNING"):
        lock = TableLock(FS, t, "run-b", ttl_s=600).acquire()
    assert "dead" in caplog.text and str(p.pid) in caplog.text
    assert _lock_json(t)["run_id"] == "run-b"
    lock.release()


def test_lock_of_live_pid_on_this_host_is_kept(tmp_path: Path) -> None:
    t = str(tmp_path)
    p = _hold_lock_in_subprocess(t, "time.sleep(60)")
    try:
        with pytest.raises(TableLockedError, match="run-child"):
            TableLock(FS, t, "run-b", ttl_s=600).acquire()
    finally:
        p.kill()
        p.wait()


def test_release_of_a_lock_we_do_not_own_is_refused(tmp_path: Path) -> None:
    t = str(tmp_path)
    a = TableLock(FS, t, "run-a").acquire()
    with pytest.raises(LockNotOwnedError, match="run-a"):
        TableLock(FS, t, "run-b").release()
    with pytest.raises(LockNotOwnedError):
        TableLock(FS, t, "run-a").release()  # same run id, other holder (token differs)
    assert _lock_json(t)["run_id"] == "run-a"
    a.release()


def test_heartbeat_moves_heartbeat_at_and_fences_itself(tmp_path: Path) -> None:
    t = str(tmp_path)
    now = [1_000_000.0]
    a = TableLock(FS, t, "run-a", ttl_s=60, clock=lambda: now[0]).acquire()
    assert _lock_json(t)["heartbeat_at"] == 1_000_000.0
    now[0] += 30
    a.heartbeat()
    d = _lock_json(t)
    assert d["heartbeat_at"] == 1_000_030.0 and d["acquired_at"] == 1_000_000.0
    now[0] += 61  # our own lease lapsed: someone may have broken it; do not write
    with pytest.raises(LockNotOwnedError, match="no heartbeat"):
        a.heartbeat()
    assert _lock_json(t)["heartbeat_at"] == 1_000_030.0


def test_background_heartbeat_thread(tmp_path: Path) -> None:
    t = str(tmp_path)
    with TableLock(FS, t, "run-a", ttl_s=0.6) as lock:
        first = _lock_json(t)["heartbeat_at"]
        time.sleep(0.75)
        assert _lock_json(t)["heartbeat_at"] > first
        lock.verify()
    assert not FS.exists(lock_path(t))


def test_unreadable_lock_is_kept_while_fresh_and_broken_when_old(tmp_path: Path) -> None:
    t = str(tmp_path)
    Path(lock_path(t)).parent.mkdir(parents=True)
    Path(lock_path(t)).write_text("")  # e.g. creator mid-write on HDFS
    with pytest.raises(TableLockedError, match="unreadable"):
        TableLock(FS, t, "run-b", ttl_s=60).acquire()
    old = time.time() - 120
    os.utime(lock_path(t), (old, old))
    TableLock(FS, t, "run-b", ttl_s=60).acquire()
    assert LockInfo.from_json(FS.read_text(lock_path(t))).run_id == "run-b"


def test_commit_with_lost_lock_rolls_back(sc: Scenario) -> None:
    now = [time.time()]
    lock = TableLock(FS, sc.t, RUN, ttl_s=60, clock=lambda: now[0]).acquire()
    j = sc.begin()
    staged = sc.stage()
    now[0] += 120  # e.g. a long GC pause: the lease lapsed
    with pytest.raises(LockNotOwnedError):
        cm.commit(FS, j, staged, lock=lock)
    sc.assert_old()
    assert cm.read_journal(FS, sc.t, RUN).state == cm.ROLLED_BACK


# --------------------------------------------------------------------------- cleanup


def test_cleanup_respects_retention_and_unfinished_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    s = Scenario(tmp_path)
    done = s.run()
    trash1 = Path(cm.trash_dir(s.t, RUN))
    # a rolled-back run whose zombie writer left files in staging after the rollback
    j2 = cm.begin(FS, s.t, "run-0002", [])
    cm.rollback(FS, j2)
    zombie = Path(cm.staging_dir(s.t, "run-0002")) / "dt=1" / "late.parquet"
    zombie.parent.mkdir(parents=True)
    zombie.write_text("late")
    # an unfinished run (crashed before its commit point) with staged files
    arm(monkeypatch, "before_commit_record")
    s3 = Scenario.__new__(Scenario)
    s3.__dict__.update(s.__dict__, run_id="run-0003")
    with pytest.raises(SimulatedCrash):
        s3.run()
    arm(monkeypatch, None)
    staging3 = Path(cm.staging_dir(s.t, "run-0003"))
    assert staging3.exists()

    retention = 3600.0
    t_done = done.updated_at
    deleted = cm.cleanup(FS, s.t, retention_s=retention, now=t_done + retention - 10)
    assert deleted == [cm.staging_dir(s.t, "run-0002")]
    assert trash1.exists() and staging3.exists()

    far = t_done + 10 * retention
    deleted = cm.cleanup(FS, s.t, retention_s=retention, now=far)
    assert deleted == [cm.trash_dir(s.t, RUN)]
    assert not trash1.exists()
    assert staging3.exists() and len(list(staging3.rglob("*.parquet"))) == 4  # unfinished: untouched
    assert Path(cm.journal_path(s.t, RUN)).exists()  # journals kept by default
    assert {j.run_id for j in cm.pending_runs(FS, s.t)} == {"run-0003"}

    deleted = cm.cleanup(FS, s.t, retention_s=retention, now=far, journal_retention_s=2 * retention)
    assert set(deleted) == {cm.journal_path(s.t, RUN), cm.journal_path(s.t, "run-0002")}
    assert Path(cm.journal_path(s.t, "run-0003")).exists()
    # the table itself is never touched by cleanup
    assert visible(s.table) == s.new_visible and table_rows(s.table) == s.all_ids


# --------------------------------------------------------------------------- HadoopFileSystem (real Spark)


# ``spark``: the session-wide SparkSession of tests/conftest.py (one JVM, started with the suite's options)


@pytest.mark.spark
@pytest.mark.parametrize("through", ["os", "hadoop"])
def test_hadoop_filesystem_methods(spark, tmp_path: Path, through: str) -> None:
    """Local paths go to the OS; ``hadoop`` makes them take the py4j path that remote stores take."""
    from airflow_zorder.core.storage.io.hadoop import HadoopFileSystem

    fs = filesystem_for(str(tmp_path), spark)
    assert isinstance(fs, HadoopFileSystem)
    if through == "hadoop":
        fs._local_path = lambda path: None
    for base in (f"file://{tmp_path}/u", str(tmp_path / "p")):
        assert fs.list_files(join(base, "missing")) == []
        assert not fs.exists(base)
        fs.mkdirs(join(base, "k=a%3Ab c"))
        assert fs.exists(join(base, "k=a%3Ab c"))
        fs.write_atomic(join(base, "j/x.json"), "one")
        fs.write_atomic(join(base, "j/x.json"), "two ✓")
        assert fs.read_text(join(base, "j/x.json")) == "two ✓"
        assert fs.list_files(join(base, "j")) == [
            FileInfo(join(base, "j/x.json"), len("two ✓".encode()), fs.modified_ms(join(base, "j/x.json")))
        ]
        assert fs.create_exclusive(join(base, "lock.json"), "mine") is True
        assert fs.create_exclusive(join(base, "lock.json"), "theirs") is False
        assert fs.read_text(join(base, "lock.json")) == "mine"
        fs.write_atomic(join(base, "k=a%3Ab c/f.parquet"), "data")
        fs.rename(join(base, "k=a%3Ab c/f.parquet"), join(base, "new/dir/f.parquet"))  # parents created
        assert not fs.exists(join(base, "k=a%3Ab c/f.parquet"))
        with pytest.raises(FileExistsError):
            fs.rename(join(base, "lock.json"), join(base, "j/x.json"))
        assert fs.read_text(join(base, "j/x.json")) == "two ✓"
        with pytest.raises(OSError):
            fs.rename(join(base, "nope"), join(base, "nope2"))
        fs.rename(join(base, "new/dir/f.parquet"), join(base, "k=a%3Ab c/g.parquet"))
        rels = [relpath(base, f.path) for f in fs.list_files(base)]
        assert rels == ["j/x.json", "k=a%3Ab c/g.parquet", "lock.json"]
        assert [relpath(base, f.path) for f in fs.list_files(base, recursive=False)] == ["lock.json"]
        with pytest.raises(FileNotFoundError):
            fs.read_text(join(base, "nope"))
        with pytest.raises(OSError):
            fs.delete(join(base, "j"))  # non-empty dir, not recursive
        assert fs.delete(join(base, "lock.json")) is True
        side = tmp_path / ("u" if base.startswith("file:") else "p") / "k=a%3Ab c" / ".g.parquet.crc"
        side.write_bytes(b"crc")  # Hadoop's checksum side file goes with its file
        assert fs.delete(join(base, "k=a%3Ab c/g.parquet")) is True and not side.exists()
        assert fs.delete(join(base, "j"), recursive=True) is True
        assert fs.delete(join(base, "j"), recursive=True) is False
        assert not fs.exists(join(base, "j"))
    # The HDFS replace path (FileContext rename OVERWRITE) at least drives py4j correctly on file:.
    jvm = spark._jvm
    src, dst = (
        jvm.org.apache.hadoop.fs.Path(f"file://{tmp_path}/o/a"),
        jvm.org.apache.hadoop.fs.Path(f"file://{tmp_path}/o/b"),
    )
    (tmp_path / "o").mkdir()
    (tmp_path / "o" / "a").write_text("new")
    (tmp_path / "o" / "b").write_text("old")
    fs._rename_overwrite(src.getFileSystem(spark._jsc.hadoopConfiguration()), src, dst)
    assert (tmp_path / "o" / "b").read_text() == "new" and not (tmp_path / "o" / "a").exists()


@pytest.mark.spark
def test_commit_and_lock_through_hadoop_filesystem(spark, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fs = filesystem_for(str(tmp_path), spark)
    s = Scenario(tmp_path)
    s.snapshot_old()
    t = f"file://{s.t}"
    with TableLock(fs, t, RUN, ttl_s=60) as lock:
        inputs = [f for f in cm.visible_files(fs, t) if "/dt=3/" not in f.path]
        j = cm.begin(fs, t, RUN, inputs)
        staged = [f"file://{p}" for p in s.stage()]
        arm(monkeypatch, "mid_swap:3")
        with pytest.raises(SimulatedCrash):
            cm.commit(fs, j, staged, lock=lock)
        arm(monkeypatch, None)
        assert cm.recover(fs, t) == [RUN]
    s.assert_new()
    assert not Path(lock_path(s.t)).exists()
