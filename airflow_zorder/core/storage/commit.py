"""Journaled file swap for path tables: replace a run's input files by its staged files, crash-safe.

A re-clustering run rewrites some files of a Parquet table directory. Readers
have no transaction log to consult, so the swap is a sequence of renames made
recoverable by a journal (``<table>/_zorder/journal/<run_id>.json``) whose
state is rewritten atomically at each step::

    staging ──commit()──▶ committed ──moves──▶ swapped ──▶ done
       │                  (COMMIT POINT: full move list recorded)
       └──rollback() / recover()──▶ rolled_back

Before the commit record the table is untouched: recovery rolls back (deletes
the staging dir). From the commit record on, recovery rolls forward: every
move is redone unless already done, and any move whose source and destination
both or neither exist stops recovery with a :class:`RecoveryError` (it never
guesses). Old files go to ``_zorder/trash/<run_id>/`` (kept for ``cleanup``'s
retention, like Delta's VACUUM), new files come in from
``_zorder/staging/<run_id>/``. Everything under ``_zorder`` is invisible to
Spark, pyarrow and DuckDB readers (leading ``_``).

Driver sequence (the row-level verification is the Spark job's)::

    with TableLock(fs, table, run_id) as lock:
        recover(fs, table)                    # finish or undo any crashed run
        inputs = visible_files(fs, table)     # the snapshot the job reads, exactly
        journal = begin(fs, table, run_id, inputs)
        ... write clustered data to staging_dir(table, run_id), verify counts/hashes ...
        commit(fs, journal, staged_files, lock=lock)

Fault points (``faults.FAULT_POINTS``) let tests crash the process at each step.
"""

from __future__ import annotations

import json
import logging
import re
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from airflow_zorder.core.errors import (
    CommitError,
    ConcurrentChangeError,
    InvalidInputError,
    PendingRunsError,
    RecoveryError,
    deprecated_aliases,
)
from airflow_zorder.core.storage.faults import fault_point
from airflow_zorder.core.storage.io import FileSystem
from airflow_zorder.core.storage.io.file_info import FileInfo
from airflow_zorder.core.storage.io.paths import join, relpath

if TYPE_CHECKING:
    from airflow_zorder.core.storage.lock import TableLock

log = logging.getLogger(__name__)

__all__ = [
    "COMMITTED",
    "DONE",
    "FINISHED_STATES",
    "ROLLED_BACK",
    "STAGING",
    "SWAPPED",
    "Journal",
    "Move",
    "begin",
    "cleanup",
    "commit",
    "finish",
    "mark_committed",
    "is_hidden",
    "journal_path",
    "list_journals",
    "pending_runs",
    "read_journal",
    "recover",
    "rollback",
    "staging_dir",
    "trash_dir",
    "visible_files",
]

ZORDER_DIR = "_zorder"
JOURNAL_VERSION = 1
DEFAULT_RETENTION_S = 7 * 24 * 3600

STAGING = "staging"
COMMITTED = "committed"
SWAPPED = "swapped"
DONE = "done"
ROLLED_BACK = "rolled_back"
FINISHED_STATES = frozenset({DONE, ROLLED_BACK})
_ALL_STATES = frozenset({STAGING, COMMITTED, SWAPPED, DONE, ROLLED_BACK})

# Safe as a path segment on every Hadoop store (no ':' - Hadoop rejects it in relative paths).
_RUN_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$")
_MAX_LISTED = 20


# CommitError: the swap was refused or failed. ConcurrentChangeError (with the changed ``files``): input files
# changed or vanished since the run's snapshot, so the run was rolled back. Both live in airflow_zorder.core.errors;
# the old name ConcurrentModificationError still answers, with a DeprecationWarning.
__getattr__ = deprecated_aliases(__name__, {"ConcurrentModificationError": ConcurrentChangeError})


@dataclass(frozen=True)
class Move:
    """One rename of the swap, both paths relative to the table directory."""

    src: str
    dst: str


@dataclass
class Journal:
    """A run's durable record: its snapshot (inputs), its moves and its state."""

    run_id: str
    table: str
    state: str
    created_at: float
    updated_at: float
    inputs: list[FileInfo] = field(default_factory=list)
    moves: list[Move] = field(default_factory=list)
    info: dict[str, Any] = field(default_factory=dict)
    version: int = JOURNAL_VERSION

    def to_json(self) -> str:
        """Serialized form stored in ``_zorder/journal/<run_id>.json``."""
        return json.dumps(
            {
                "version": self.version,
                "run_id": self.run_id,
                "table": self.table,
                "state": self.state,
                "created_at": self.created_at,
                "updated_at": self.updated_at,
                "inputs": [f.to_dict() for f in self.inputs],
                "moves": [{"src": m.src, "dst": m.dst} for m in self.moves],
                "info": self.info,
            },
            indent=1,
            sort_keys=True,
        )

    @classmethod
    def from_json(cls, text: str) -> Journal:
        """Parse a journal; ValueError on anything malformed (never a half-guess)."""
        try:
            d = json.loads(text)
            j = cls(
                run_id=str(d["run_id"]),
                table=str(d["table"]),
                state=str(d["state"]),
                created_at=float(d["created_at"]),
                updated_at=float(d["updated_at"]),
                inputs=[FileInfo.from_dict(x) for x in d["inputs"]],
                moves=[Move(str(m["src"]), str(m["dst"])) for m in d["moves"]],
                info=dict(d.get("info") or {}),
                version=int(d.get("version", JOURNAL_VERSION)),
            )
        except (KeyError, TypeError, ValueError) as e:
            raise ValueError(f"malformed journal: {e!r}") from e
        if j.state not in _ALL_STATES:
            raise ValueError(f"journal of run {j.run_id!r} has unknown state {j.state!r}")
        if j.version > JOURNAL_VERSION:
            raise ValueError(f"journal of run {j.run_id!r} has version {j.version}, newer than {JOURNAL_VERSION}")
        return j


# --------------------------------------------------------------------------- paths


def _norm_table(table: str) -> str:
    return table.rstrip("/") or table


def zorder_dir(table: str) -> str:
    """``<table>/_zorder``: the machinery's hidden directory."""
    return join(_norm_table(table), ZORDER_DIR)


def staging_dir(table: str, run_id: str) -> str:
    """Where a run writes its new files: ``<table>/_zorder/staging/<run_id>/<partition>/<file>``."""
    return join(zorder_dir(table), "staging", run_id)


def trash_dir(table: str, run_id: str) -> str:
    """Where a run's replaced files go: ``<table>/_zorder/trash/<run_id>/<relpath>``."""
    return join(zorder_dir(table), "trash", run_id)


def journal_dir(table: str) -> str:
    """Directory of all runs' journals."""
    return join(zorder_dir(table), "journal")


def journal_path(table: str, run_id: str) -> str:
    """``<table>/_zorder/journal/<run_id>.json``."""
    return join(journal_dir(table), f"{run_id}.json")


def is_hidden(rel: str) -> bool:
    """True if any segment of a table-relative path starts with ``_`` or ``.`` (readers skip it)."""
    return any(part.startswith(("_", ".")) for part in rel.split("/") if part)


def visible_files(fs: FileSystem, table: str) -> list[FileInfo]:
    """The table's files as readers see them (hidden ``_``/``.`` paths, incl. ``_zorder``, left out)."""
    table = _norm_table(table)
    return [f for f in fs.list_files(table) if not is_hidden(relpath(table, f.path))]


def _check_run_id(run_id: str) -> None:
    if not _RUN_ID_RE.match(run_id):
        raise InvalidInputError(
            f"run id {run_id!r} is not a safe path segment: use letters, digits, '.', '_', '-' "
            "(no ':' or '+', e.g. from run_ids.new_run_id())"
        )


def _preview(items: Sequence[str]) -> str:
    shown = ", ".join(items[:_MAX_LISTED])
    more = len(items) - _MAX_LISTED
    return shown + (f" ... and {more} more" if more > 0 else "")


# --------------------------------------------------------------------------- journal I/O


def _save(fs: FileSystem, table: str, journal: Journal, state: str) -> None:
    journal.state = state
    journal.updated_at = time.time()
    fs.write_atomic(journal_path(table, journal.run_id), journal.to_json())
    log.info("run %s of %s: %s", journal.run_id, table, state)


def read_journal(fs: FileSystem, table: str, run_id: str) -> Journal:
    """Load one run's journal (FileNotFoundError if absent, RecoveryError if unreadable)."""
    path = journal_path(_norm_table(table), run_id)
    text = fs.read_text(path)
    try:
        return Journal.from_json(text)
    except ValueError as e:
        raise RecoveryError(f"unreadable journal {path}: {e}; inspect it by hand, nothing was changed") from e


def list_journals(fs: FileSystem, table: str) -> list[Journal]:
    """All runs' journals, oldest first (temp files of interrupted writes are ignored)."""
    table = _norm_table(table)
    out = []
    for f in fs.list_files(journal_dir(table), recursive=False):
        name = f.path.rsplit("/", 1)[-1]
        if name.startswith((".", "_")) or not name.endswith(".json"):
            continue
        out.append(read_journal(fs, table, name[: -len(".json")]))
    out.sort(key=lambda j: (j.created_at, j.run_id))
    return out


def pending_runs(fs: FileSystem, table: str) -> list[Journal]:
    """Runs neither ``done`` nor ``rolled_back``: they need :func:`recover` (oldest first)."""
    return [j for j in list_journals(fs, table) if j.state not in FINISHED_STATES]


# --------------------------------------------------------------------------- begin / commit


def begin(
    fs: FileSystem,
    table: str,
    run_id: str,
    inputs: Iterable[FileInfo],
    info: dict[str, Any] | None = None,
) -> Journal:
    """Record the run's snapshot (state ``staging``) before anything is staged; refuses if runs are pending.

    The staging directory itself is left for the writer to create (Spark's save
    modes dislike a pre-existing output directory).
    """
    _check_run_id(run_id)
    table = _norm_table(table)
    inputs = list(inputs)
    seen: set[str] = set()
    for f in inputs:
        try:
            rel = relpath(table, f.path)
        except ValueError:
            raise ValueError(
                f"input {f.path!r} is not under table {table!r} (spell inputs like the table path, "
                "e.g. from fs.list_files(table))"
            ) from None
        if rel.split("/", 1)[0] == ZORDER_DIR:
            raise ValueError(f"input {f.path!r} is inside the machinery directory {ZORDER_DIR}/")
        if f.path in seen:
            raise ValueError(f"input {f.path!r} listed twice")
        seen.add(f.path)
    others = [j for j in pending_runs(fs, table) if j.run_id != run_id]
    if others:
        raise PendingRunsError(
            f"table {table!r} has unfinished clustering run(s) "
            f"{', '.join(f'{j.run_id} ({j.state})' for j in others)}: run recover() under the table lock "
            "before starting a new run"
        )
    now = time.time()
    journal = Journal(
        run_id=run_id,
        table=table,
        state=STAGING,
        created_at=now,
        updated_at=now,
        inputs=inputs,
        info=dict(info or {}),
    )
    path = journal_path(table, run_id)
    if fs.exists(path):
        raise CommitError(f"run {run_id!r} already has a journal in {journal_dir(table)}: use a new run id")
    fs.mkdirs(journal_dir(table))
    # Atomic write, not create_exclusive: on HDFS a crash mid-create would leave an empty journal that
    # recovery could not classify. Exclusivity comes from the table lock (and the check above).
    fs.write_atomic(path, journal.to_json())
    log.info("run %s of %s: staging (%d input files)", run_id, table, len(inputs))
    fault_point("after_begin")
    return journal


def _changed_inputs(fs: FileSystem, inputs: Sequence[FileInfo]) -> list[str]:
    """Inputs no longer present with the snapshot's size and mtime (one listing per input directory)."""
    by_dir: dict[str, list[FileInfo]] = {}
    for f in inputs:
        by_dir.setdefault(f.path.rsplit("/", 1)[0], []).append(f)
    problems: list[str] = []
    for d, files in sorted(by_dir.items()):
        current = {c.path: c for c in fs.list_files(d, recursive=False)}
        for f in files:
            c = current.get(f.path)
            if c is None:
                problems.append(f"{f.path} (deleted)")
            elif c.size != f.size or c.mtime_ms != f.mtime_ms:
                problems.append(f"{f.path} (size {f.size} -> {c.size}, mtime_ms {f.mtime_ms} -> {c.mtime_ms})")
    return problems


def _plan_moves(fs: FileSystem, journal: Journal, staged_files: Sequence[str | FileInfo]) -> list[Move]:
    """Old files to trash, then staged files into the table; CommitError if any is unsafe."""
    table, run_id = journal.table, journal.run_id
    sdir = staging_dir(table, run_id)
    staged_paths = [s.path if isinstance(s, FileInfo) else s for s in staged_files]
    if len(set(staged_paths)) != len(staged_paths):
        raise CommitError("staged file list contains duplicates")
    staged_rels: list[str] = []
    for p in staged_paths:
        try:
            rel = relpath(sdir, p)
        except ValueError:
            raise CommitError(f"staged file {p!r} is not under the run's staging dir {sdir!r}") from None
        if is_hidden(rel):
            raise CommitError(
                f"staged file {p!r} has a path segment starting with '_' or '.': readers would not see "
                "it in the table, its rows would be lost"
            )
        staged_rels.append(rel)
    on_disk = {relpath(sdir, f.path) for f in fs.list_files(sdir)}
    missing = sorted(set(staged_rels) - on_disk)
    if missing:
        raise CommitError(f"staged file(s) missing from {sdir}: {_preview(missing)}")
    unlisted = sorted(r for r in on_disk - set(staged_rels) if not is_hidden(r))
    if unlisted:
        raise CommitError(
            f"staging dir {sdir} holds data file(s) not in the staged list, which would be discarded: "
            f"{_preview(unlisted)}"
        )
    # Destinations must be free (one listing per destination directory).
    by_dir: dict[str, list[str]] = {}
    for rel in staged_rels:
        dst = join(table, rel)
        by_dir.setdefault(dst.rsplit("/", 1)[0], []).append(dst)
    taken: list[str] = []
    for d, dsts in sorted(by_dir.items()):
        existing = {f.path for f in fs.list_files(d, recursive=False)}
        taken.extend(x for x in dsts if x in existing)
    if taken:
        raise CommitError(
            f"destination(s) already exist in the table, refusing to overwrite: {_preview(sorted(taken))} "
            "(staged file names must be unique per run)"
        )
    trash_rel = relpath(table, trash_dir(table, run_id))
    outs = [Move(rel, f"{trash_rel}/{rel}") for rel in sorted(relpath(table, f.path) for f in journal.inputs)]
    staging_rel = relpath(table, sdir)
    ins = [Move(f"{staging_rel}/{rel}", rel) for rel in sorted(staged_rels)]
    return outs + ins


def commit(
    fs: FileSystem,
    journal: Journal,
    staged_files: Sequence[str | FileInfo],
    *,
    lock: TableLock | None = None,
) -> Journal:
    """Swap the run's inputs for its verified staged files (old out to trash, new in); returns the done journal.

    Refusals before the commit point (inputs changed -> ConcurrentChangeError, unsafe staged files
    or destinations -> CommitError, lock lost) roll the run back and leave the table untouched. After
    the commit point a failure leaves state ``committed``/``swapped`` for :func:`recover` to finish.
    """
    table = journal.table
    current = read_journal(fs, table, journal.run_id)
    if current.state != STAGING:
        raise CommitError(
            f"run {journal.run_id!r} is {current.state!r}, not {STAGING!r}: it cannot be committed "
            "(rolled back by recovery, or committed already)"
        )
    # The snapshot on disk is the one that counts; keep info the caller added since begin().
    current.info.update(journal.info)
    changed = _changed_inputs(fs, current.inputs)
    if changed:
        rollback(fs, current)
        _copy_into(journal, current)
        raise ConcurrentChangeError(
            f"table {table!r} changed since run {journal.run_id!r} read it: {len(changed)} input file(s) "
            f"modified or deleted: {_preview(changed)}. Nothing in the table was changed; the run was "
            "rolled back; re-run the clustering on the new snapshot.",
            [c.split(" (", 1)[0] for c in changed],
        )
    try:
        moves = _plan_moves(fs, current, staged_files)
        if lock is not None:
            lock.verify()
    except Exception:
        rollback(fs, current)
        _copy_into(journal, current)
        raise
    staged_bytes = sum(s.size for s in staged_files if isinstance(s, FileInfo))
    current.info.setdefault("staged_files", len(staged_files))
    if staged_bytes:
        current.info.setdefault("staged_bytes", staged_bytes)
    current.moves = moves
    journal = _copy_into(journal, current)
    try:
        fault_point("before_commit_record")
        _save(fs, table, journal, COMMITTED)  # ---- COMMIT POINT ----
    except Exception as exc:  # the atomic write failed (disk full, permissions): still before the commit point
        _rollback_after_failed_record(fs, journal, exc)
        raise CommitError(
            f"could not record the commit of run {journal.run_id!r} in {journal_path(table, journal.run_id)}: "
            f"{exc}. Nothing in the table was changed; the run was rolled back (or will be by the next run)."
        ) from exc
    fault_point("after_commit_record")
    for m in moves:
        try:
            fs.rename(join(table, m.src), join(table, m.dst))
        except OSError as e:
            raise CommitError(
                f"run {journal.run_id!r} is past its commit point and move {m.src} -> {m.dst} failed: {e}. "
                "The table is mid-swap: run recover() under the table lock to finish it."
            ) from e
        fault_point("mid_swap")
    _finish(fs, table, journal)
    return journal


def _rollback_after_failed_record(fs: FileSystem, journal: Journal, exc: BaseException) -> None:
    """The commit record was not written: roll back if the journal on disk says ``staging`` (it must)."""
    try:
        state = read_journal(fs, journal.table, journal.run_id).state
    except Exception:  # noqa: BLE001 - unreadable now: recover() decides later, never a guess here
        log.exception("run %s: journal unreadable after a failed commit record", journal.run_id)
        return
    if state != STAGING:
        return
    journal.state = STAGING
    try:
        rollback(fs, journal)
    except Exception:  # noqa: BLE001 - e.g. still no space to record rolled_back; recover() finishes it
        log.exception("run %s: rollback after a failed commit record failed (recover() will finish it)", journal.run_id)


def mark_committed(fs: FileSystem, journal: Journal) -> None:
    """Record the commit point for a run whose swap is not file moves (catalog tables: location switches in ``info``)."""
    current = read_journal(fs, journal.table, journal.run_id)
    if current.state != STAGING:
        raise CommitError(f"run {journal.run_id!r} is {current.state!r}, not {STAGING!r}: it cannot be committed")
    fault_point("before_commit_record")
    _save(fs, journal.table, journal, COMMITTED)


def finish(fs: FileSystem, journal: Journal) -> None:
    """Mark a committed run whose changes are all applied as ``swapped`` then ``done`` (drops its staging dir)."""
    _finish(fs, journal.table, journal)


def _copy_into(target: Journal, source: Journal) -> Journal:
    """Make the caller's Journal object reflect the one we operate on (same object afterwards)."""
    target.__dict__.update(source.__dict__)
    return target


def _finish(fs: FileSystem, table: str, journal: Journal) -> None:
    """All moves done: record ``swapped``, drop the staging dir, record ``done``."""
    if journal.state != SWAPPED:
        _save(fs, table, journal, SWAPPED)
    fault_point("after_swap")
    fs.delete(staging_dir(table, journal.run_id), recursive=True)
    fault_point("before_done")
    _save(fs, table, journal, DONE)


# --------------------------------------------------------------------------- rollback / recover


def rollback(fs: FileSystem, journal: Journal, table: str | None = None) -> Journal:
    """Abandon a run still in ``staging``: delete its staging dir, record ``rolled_back`` (idempotent).

    Refuses (RecoveryError) a run past its commit point: that one can only be rolled forward.
    """
    table = _norm_table(table or journal.table)
    current = read_journal(fs, table, journal.run_id)
    if current.state == ROLLED_BACK:
        journal.state, journal.updated_at = current.state, current.updated_at
        return journal
    if current.state != STAGING:
        raise RecoveryError(
            f"run {journal.run_id!r} is {current.state!r}, past its commit point: it cannot be rolled back, "
            "only rolled forward by recover()"
        )
    fs.delete(staging_dir(table, journal.run_id), recursive=True)
    fault_point("mid_rollback")
    _save(fs, table, journal, ROLLED_BACK)
    return journal


def _roll_forward(fs: FileSystem, table: str, journal: Journal) -> int:
    """Redo the moves not yet done (checked all first, then applied); returns how many were redone."""
    if journal.state == COMMITTED:
        todo: list[Move] = []
        problems: list[str] = []
        halfway: list[Move] = []
        for m in journal.moves:
            src, dst = join(table, m.src), join(table, m.dst)
            s, d = fs.exists(src), fs.exists(dst)
            if s and not d:
                todo.append(m)
            elif d and not s:
                continue  # already moved
            elif s and d and _copied_not_deleted(fs, src, dst):
                halfway.append(m)  # an object store's rename stopped between its copy and its delete
            else:
                what = "both exist" if s else "neither exists"
                problems.append(f"{src} -> {dst} ({what})")
        if problems:
            raise RecoveryError(
                f"cannot roll forward run {journal.run_id!r} of table {table!r}: {len(problems)} move(s) in an "
                f"impossible state: {_preview(problems)}. Nothing was changed. Someone else touched these files; "
                f"inspect them and the journal {journal_path(table, journal.run_id)} by hand."
            )
        for m in halfway:
            log.warning("recover %s: %s was copied to %s but not deleted: deleting it", table, m.src, m.dst)
            fs.delete(join(table, m.src))
        for m in todo:
            fs.rename(join(table, m.src), join(table, m.dst))
            fault_point("mid_swap")
        redone = len(todo) + len(halfway)
    else:
        redone = 0
    _finish(fs, table, journal)
    return redone


def _copied_not_deleted(fs: FileSystem, src: str, dst: str) -> bool:
    """Both ends of a move exist: on a store whose rename is a copy then a delete, a crash between the two
    leaves exactly that, with a complete destination (the copy is atomic) of the source's size. Anywhere else,
    or with other sizes, someone else touched the files and recovery must not guess."""
    if not fs.rename_is_copy(src):
        return False
    found = {f.path: f.size for p in (src, dst) for f in fs.list_files(p, recursive=False)}
    return src in found and found.get(src) == found.get(dst)


def recover(fs: FileSystem, table: str) -> list[str]:
    """Finish every unfinished run (roll back before the commit point, forward after); returns their run ids.

    Must run under the table lock (no other run active). Idempotent: if it crashes, run it again.
    """
    table = _norm_table(table)
    recovered: list[str] = []
    for journal in pending_runs(fs, table):
        if journal.state == STAGING:
            log.warning("recover %s: rolling back run %s (crashed before its commit point)", table, journal.run_id)
            rollback(fs, journal, table)
        else:
            log.warning("recover %s: rolling forward run %s from state %s", table, journal.run_id, journal.state)
            n = _roll_forward(fs, table, journal)
            log.warning("recover %s: run %s done (%d move(s) redone)", table, journal.run_id, n)
        recovered.append(journal.run_id)
    return recovered


# --------------------------------------------------------------------------- cleanup


def cleanup(
    fs: FileSystem,
    table: str,
    retention_s: float = DEFAULT_RETENTION_S,
    now: float | None = None,
    *,
    journal_retention_s: float | None = None,
) -> list[str]:
    """Delete finished runs' leftovers; returns the deleted paths. Unfinished runs are never touched.

    Finished runs never become unfinished, so this is safe even without the table lock.

    * trash of ``done`` runs finished more than ``retention_s`` ago (the window to undo a run by hand);
    * staging dirs of ``rolled_back`` (and ``done``) runs, at any age;
    * with ``journal_retention_s``, the journals themselves once older than it and ``retention_s``.
    """
    table = _norm_table(table)
    now = time.time() if now is None else now
    deleted: list[str] = []

    def drop(path: str, recursive: bool) -> None:
        if fs.delete(path, recursive=recursive):
            deleted.append(path)
            log.info("cleanup %s: deleted %s", table, path)
            fault_point("mid_cleanup")

    for j in list_journals(fs, table):
        if j.state not in FINISHED_STATES:
            continue
        age = now - j.updated_at
        drop(staging_dir(table, j.run_id), True)
        if age > retention_s:
            drop(trash_dir(table, j.run_id), True)
            if journal_retention_s is not None and age > max(journal_retention_s, retention_s):
                drop(journal_path(table, j.run_id), False)
    # Temp files of interrupted journal writes.
    for f in fs.list_files(journal_dir(table), recursive=False):
        name = f.path.rsplit("/", 1)[-1]
        if name.startswith(".") and ".tmp-" in name and now - f.mtime_ms / 1000 > retention_s:
            drop(f.path, False)
    return deleted
