"""One clustering run per table at a time: a lease file ``<table>/_zorder/lock.json``.

The lock is taken with an atomic create-if-absent, kept alive by heartbeats (a
daemon thread renews it every ``ttl/3``) and broken by the next run only when
its owner has provably gone away: no heartbeat for longer than its ttl, or its
process is dead on this very host. A holder whose own heartbeat lapsed past the
ttl considers the lock lost (someone may have broken it) and says so in
:meth:`TableLock.verify`, which the commit calls before its commit point.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from types import TracebackType
from typing import Self

from airflow_zorder.core.errors import InvalidInputError, LockNotOwnedError, TableLockedError
from airflow_zorder.core.storage.io import FileSystem
from airflow_zorder.core.storage.io.paths import join

log = logging.getLogger(__name__)

__all__ = [
    "LockInfo",
    "TableLock",
    "lock_path",
    "read_lock",
]

ZORDER_DIR = "_zorder"
LOCK_FILE = "lock.json"


@dataclass
class LockInfo:
    """Content of ``lock.json``: who holds the lock and until when it counts as alive."""

    run_id: str
    host: str
    pid: int
    acquired_at: float
    heartbeat_at: float
    ttl_s: float
    token: str = ""
    host_id: str | None = None
    proc_start: str | None = None

    def to_json(self) -> str:
        """Serialized form written to ``lock.json``."""
        return json.dumps(asdict(self), indent=2, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> LockInfo:
        """Parse ``lock.json``; ValueError/KeyError/TypeError on garbage."""
        d = json.loads(text)
        return cls(
            run_id=str(d["run_id"]),
            host=str(d["host"]),
            pid=int(d["pid"]),
            acquired_at=float(d["acquired_at"]),
            heartbeat_at=float(d["heartbeat_at"]),
            ttl_s=float(d["ttl_s"]),
            token=str(d.get("token", "")),
            host_id=d.get("host_id"),
            proc_start=d.get("proc_start"),
        )

    def expires_at(self) -> float:
        """When the lease runs out unless renewed."""
        return self.heartbeat_at + self.ttl_s


def lock_path(table_path: str) -> str:
    """Where a table's lock file lives."""
    return join(table_path, ZORDER_DIR, LOCK_FILE)


def read_lock(fs: FileSystem, table_path: str) -> LockInfo | None:
    """The current lock of a table, or None if unlocked (ValueError if the file is unreadable)."""
    try:
        text = fs.read_text(lock_path(table_path))
    except FileNotFoundError:
        return None
    try:
        return LockInfo.from_json(text)
    except (ValueError, KeyError, TypeError) as e:
        raise ValueError(f"unreadable lock file {lock_path(table_path)!r}: {e}") from e


# --------------------------------------------------------------------------- process identity


def _read_first_line(path: str) -> str | None:
    try:
        with open(path, encoding="ascii") as f:
            return f.readline().strip() or None
    except OSError:
        return None


def _host_id() -> str | None:
    """Boot id + pid namespace: two processes with the same hostname but different pid spaces differ."""
    boot = _read_first_line("/proc/sys/kernel/random/boot_id")
    try:
        pidns = str(os.stat("/proc/self/ns/pid").st_ino)
    except OSError:
        pidns = None
    if boot is None or pidns is None:
        return None
    return f"{boot}/{pidns}"


def _proc_stat(pid: int) -> tuple[str, str] | None:
    """(state, start time in clock ticks) of a process from /proc, or None if unavailable."""
    line = _read_first_line(f"/proc/{pid}/stat")
    if line is None:
        return None
    fields = line[line.rfind(")") + 2 :].split()  # after "pid (comm) "
    if len(fields) < 20:
        return None
    return fields[0], fields[19]


def _pid_alive(pid: int, proc_start: str | None) -> bool:
    """Is the process (with that start time, if known) still running on this host?"""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # exists, owned by someone else
    stat = _proc_stat(pid)
    if stat is None:
        return True
    state, start = stat
    if state in ("Z", "X"):  # zombie / dead: gone, just not reaped
        return False
    # A different start time means the pid was reused by another process.
    return proc_start is None or start == proc_start


def _iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, tz=UTC).isoformat(timespec="seconds")


# --------------------------------------------------------------------------- the lock


class TableLock:
    """Exclusive lease on a table for one clustering run (``with TableLock(...):`` or acquire/release)."""

    def __init__(
        self,
        fs: FileSystem,
        table_path: str,
        run_id: str,
        ttl_s: float = 600,
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if ttl_s <= 0:
            raise InvalidInputError("ttl_s must be positive")
        self.fs = fs
        self.table_path = table_path
        self.run_id = run_id
        self.ttl_s = float(ttl_s)
        self.path = lock_path(table_path)
        self._clock = clock
        self._token = uuid.uuid4().hex
        self._info: LockInfo | None = None
        self._last_beat: float | None = None
        self._lost: str | None = None
        self._mutex = threading.RLock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # -- state
    @property
    def held(self) -> bool:
        """True between a successful acquire and release, unless the lock was found lost."""
        return self._info is not None and self._lost is None

    @property
    def info(self) -> LockInfo | None:
        """What we last wrote to ``lock.json`` (None if not held)."""
        return self._info

    # -- acquire
    def acquire(self) -> Self:
        """Take the lock, breaking it if its owner is provably gone; TableLockedError otherwise."""
        with self._mutex:
            if self._info is not None:
                raise RuntimeError(f"lock on {self.table_path!r} already acquired by this object")
            for _attempt in range(5):
                now = self._clock()
                stat = _proc_stat(os.getpid())
                info = LockInfo(
                    run_id=self.run_id,
                    host=socket.gethostname(),
                    pid=os.getpid(),
                    acquired_at=now,
                    heartbeat_at=now,
                    ttl_s=self.ttl_s,
                    token=self._token,
                    host_id=_host_id(),
                    proc_start=stat[1] if stat else None,
                )
                self.fs.mkdirs(join(self.table_path, ZORDER_DIR))
                if self.fs.create_exclusive(self.path, info.to_json()):
                    self._info, self._last_beat, self._lost = info, now, None
                    log.info("acquired lock %s for run %s (ttl %ss)", self.path, self.run_id, self.ttl_s)
                    return self
                try:
                    text = self.fs.read_text(self.path)
                    mtime_ms = self.fs.modified_ms(self.path)
                except FileNotFoundError:
                    continue  # released in between: try again
                reason = self._stale_reason(text, mtime_ms, now)
                if reason is None:
                    raise TableLockedError(self._locked_message(text, mtime_ms))
                log.warning("breaking lock %s: %s; its content was: %s", self.path, reason, text)
                self._break(text)
            raise TableLockedError(
                f"could not acquire the lock on table {self.table_path!r} ({self.path}): it kept changing "
                "hands while we tried; another run is competing for this table, retry later"
            )

    def _stale_reason(self, text: str, mtime_ms: int, now: float) -> str | None:
        """Why the existing lock may be broken, or None if its owner may still be alive."""
        last_touch = mtime_ms / 1000.0
        try:
            other = LockInfo.from_json(text)
        except (ValueError, KeyError, TypeError):
            if now - last_touch > self.ttl_s:
                return f"lock file unreadable and untouched for {now - last_touch:.0f}s (> ttl {self.ttl_s:.0f}s)"
            return None
        # The later of the holder's own clock and the filesystem's: skew never makes a live lock look older.
        last_alive = max(other.heartbeat_at, last_touch)
        if now - last_alive > other.ttl_s:
            return (
                f"expired: run {other.run_id!r} (host {other.host}, pid {other.pid}) last heartbeat "
                f"{_iso(last_alive)}, {now - last_alive:.0f}s ago > ttl {other.ttl_s:.0f}s"
            )
        same_host = other.host == socket.gethostname() and other.host_id == _host_id()
        if same_host and other.pid > 0 and not _pid_alive(other.pid, other.proc_start):
            return f"owner run {other.run_id!r} process {other.pid} on this host ({other.host}) is dead"
        return None

    def _locked_message(self, text: str, mtime_ms: int) -> str:
        try:
            o = LockInfo.from_json(text)
        except (ValueError, KeyError, TypeError):
            return (
                f"table {self.table_path!r} is locked: lock file {self.path} exists but is unreadable "
                f"(being written, or corrupt), last modified {_iso(mtime_ms / 1000)}; it is treated as "
                f"expired after {self.ttl_s:.0f}s. If no clustering run is active, delete it."
            )
        return (
            f"table {self.table_path!r} is locked by clustering run {o.run_id!r} (host {o.host}, pid {o.pid}) "
            f"since {_iso(o.acquired_at)}; last heartbeat {_iso(o.heartbeat_at)}, so the lock expires at "
            f"{_iso(o.expires_at())} unless renewed (ttl {o.ttl_s:.0f}s). Another clustering run of this "
            f"table is in progress: wait for it to finish and retry. If that run is dead, its lock is broken "
            f"automatically once it expires (or at once from host {o.host} if its process is gone); to force "
            f"it, make sure no run is active and delete {self.path}."
        )

    def _break(self, expected_text: str) -> bool:
        """Move the stale lock aside; if what we moved is not the stale lock we judged, put it back."""
        aside = join(self.table_path, ZORDER_DIR, f"lock.broken-{uuid.uuid4().hex}.json")
        try:
            self.fs.rename(self.path, aside)
        except OSError:
            return False  # someone else broke or released it first
        try:
            moved = self.fs.read_text(aside)
        except OSError:
            moved = None
        if moved != expected_text:
            # A competitor replaced the stale lock with a fresh one in between: give it back.
            try:
                self.fs.rename(aside, self.path)
            except OSError:
                log.error("moved a fresh lock of another run aside to %s and could not restore it", aside)
            return False
        self.fs.delete(aside)
        return True

    # -- keep alive
    def _check_owned(self) -> LockInfo:
        if self._info is None:
            raise LockNotOwnedError(f"lock on {self.table_path!r} is not held by run {self.run_id!r}")
        if self._lost is not None:
            raise LockNotOwnedError(f"lock on {self.table_path!r} was lost by run {self.run_id!r}: {self._lost}")
        now = self._clock()
        assert self._last_beat is not None
        if now - self._last_beat > self.ttl_s:
            self._lost = (
                f"no heartbeat for {now - self._last_beat:.0f}s (> ttl {self.ttl_s:.0f}s); "
                "another run may have broken the lock"
            )
            raise LockNotOwnedError(f"lock on {self.table_path!r} lost by run {self.run_id!r}: {self._lost}")
        try:
            current = LockInfo.from_json(self.fs.read_text(self.path))
        except FileNotFoundError:
            current = None
        except (ValueError, KeyError, TypeError):
            current = None
        if current is None or current.token != self._token:
            owner = f"run {current.run_id!r} (host {current.host}, pid {current.pid})" if current else "nobody"
            self._lost = f"lock file now belongs to {owner}"
            raise LockNotOwnedError(f"lock on {self.table_path!r} lost by run {self.run_id!r}: {self._lost}")
        return current

    def verify(self) -> None:
        """Raise LockNotOwnedError unless we still hold the lock and our lease has not lapsed."""
        with self._mutex:
            self._check_owned()

    def heartbeat(self) -> None:
        """Renew the lease (heartbeat_at = now) after checking we still own the lock."""
        with self._mutex:
            current = self._check_owned()
            now = self._clock()
            current.heartbeat_at = now
            self.fs.write_atomic(self.path, current.to_json())
            self._info, self._last_beat = current, now

    def start_heartbeat(self) -> None:
        """Renew the lease every ttl/3 from a daemon thread until release (or the lock is lost)."""
        with self._mutex:
            self._check_owned()
            if self._thread is not None and self._thread.is_alive():
                return
            self._stop.clear()
            self._thread = threading.Thread(
                target=self._heartbeat_loop, name=f"zorder-lock-heartbeat-{self.run_id}", daemon=True
            )
            self._thread.start()

    def _heartbeat_loop(self) -> None:
        interval = self.ttl_s / 3.0
        while not self._stop.wait(interval):
            try:
                self.heartbeat()
            except LockNotOwnedError as e:
                log.error("stopping heartbeat: %s", e)
                return
            except Exception:  # transient filesystem trouble: retry next tick; verify() catches a lapse
                log.exception("lock heartbeat failed for %s", self.path)

    def stop_heartbeat(self) -> None:
        """Stop the background heartbeat thread (if any) and wait for it."""
        self._stop.set()
        t = self._thread
        if t is not None and t is not threading.current_thread():
            t.join(timeout=max(5.0, self.ttl_s))
        self._thread = None

    # -- release
    def release(self) -> None:
        """Delete the lock file, only if it is still ours (LockNotOwnedError otherwise, file untouched)."""
        self.stop_heartbeat()
        with self._mutex:
            try:
                current: LockInfo | None = LockInfo.from_json(self.fs.read_text(self.path))
            except FileNotFoundError:
                current = None
            except (ValueError, KeyError, TypeError):
                current = None
            if self._info is None or current is None or current.token != self._token:
                owner = f"run {current.run_id!r} (host {current.host}, pid {current.pid})" if current else "nobody"
                self._info = None
                raise LockNotOwnedError(
                    f"refusing to release the lock on {self.table_path!r} for run {self.run_id!r}: "
                    f"it is held by {owner}, not by us"
                )
            self.fs.delete(self.path)
            self._info = None
            log.info("released lock %s of run %s", self.path, self.run_id)

    # -- context manager
    def __enter__(self) -> Self:
        self.acquire()
        try:
            self.start_heartbeat()
        except BaseException:
            self.release()
            raise
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        try:
            self.release()
        except LockNotOwnedError:
            if exc_type is None:
                raise
            log.exception("could not release lock while handling another error")

    def __repr__(self) -> str:
        return f"TableLock(table={self.table_path!r}, run_id={self.run_id!r}, held={self.held})"
