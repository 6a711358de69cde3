"""A run's files after the rewrite: placed, committed, recovered, cleaned up.

A Delta log and an Iceberg snapshot both name their data files, so a run places its verified files where the
table keeps its data (invisible to readers until the commit names them), after its journal lists every one of
them; the format's own commit is the commit point. Recovery asks the format whether a run's commit landed (by
the run id it recorded): if so the run is done, else its placed files are deleted, never one the table lists.
The format modules (:mod:`.delta_table`, :mod:`.iceberg_table`) commit; the placing and settling are here.

Every format module answers ``recover`` and ``cleanup`` (:class:`~airflow_zorder.core.tables.protocol.TableFormat`)
through :class:`RunJournals`: each says only how it settles its interrupted runs; the rest is the same for all.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from airflow_zorder.core.errors import RecoveryError
from airflow_zorder.core.storage import commit as commit_mod
from airflow_zorder.core.storage.faults import fault_point
from airflow_zorder.core.storage.io import FileSystem
from airflow_zorder.core.storage.io.file_info import FileInfo
from airflow_zorder.core.storage.io.paths import join
from airflow_zorder.core.tables.model import StagedUnit, TableSnapshot, Unit

__all__ = ["RunJournals", "committed", "drop_placed", "place", "settle_placed"]


class RunJournals:
    """``recover`` and ``cleanup`` of a format module, once: the format says how it settles an interrupted run
    (:meth:`settle_runs`) and what its finished runs replaced beyond their journals (:meth:`drop_replaced`)."""

    home: str  # where the table's journals live
    _snapshot: TableSnapshot | None  # the format's cached snapshot

    def settle_runs(self, fs: FileSystem) -> list[str]:
        """Finish (after its commit point) or roll back (before it) every interrupted run; their run ids."""
        raise NotImplementedError

    def drop_replaced(self, fs: FileSystem, retention_s: float) -> list[str]:
        """Delete what finished runs replaced, past the retention, besides their journals' leftovers (default:
        nothing, the format's own history keeps them); the paths deleted."""
        return []

    def recover(self, fs: FileSystem) -> list[str]:
        """:meth:`settle_runs`, then forget the cached snapshot when a run was settled (the layout may have changed)."""
        done = self.settle_runs(fs)
        if done:
            self._snapshot = None
        return done

    def cleanup(self, fs: FileSystem, retention_s: float) -> list[str]:
        """Finished runs' leftovers past the retention (staging, trash, old journals), then :meth:`drop_replaced`."""
        return commit_mod.cleanup(fs, self.home, retention_s) + self.drop_replaced(fs, retention_s)


def place(
    fs: FileSystem,
    home: str,
    journal: commit_mod.Journal,
    staged: Sequence[StagedUnit],
    spell: Callable[[str], str],
    fault_prefix: str,
    **info: object,
) -> list[tuple[FileInfo, str, Unit]]:
    """Record the files to place in the journal (``spell``: how the journal names a destination; ``info``: what
    else recovery needs), then move each staged file beside its unit's files; ``[(staged, destination, unit)]``."""
    moves = [
        (f, join(s.unit.location, f.path.rstrip("/").rsplit("/", 1)[-1]), s.unit) for s in staged for f in s.staged
    ]
    journal.info.update(info, placed=[spell(dst) for _, dst, _ in moves])
    fs.write_atomic(commit_mod.journal_path(home, journal.run_id), journal.to_json())
    fault_point(f"{fault_prefix}_before_place")
    for f, dst, _ in moves:
        fs.mkdirs(dst.rsplit("/", 1)[0])
        fs.rename(f.path, dst)
        fault_point(f"{fault_prefix}_mid_place")
    return moves


def committed(fs: FileSystem, journal: commit_mod.Journal, version: int) -> None:
    """The format's commit landed (``version``): the journal records it and the run is done."""
    journal.info["committed_version"] = version
    commit_mod.mark_committed(fs, journal)
    commit_mod.finish(fs, journal)


def drop_placed(
    fs: FileSystem, journal: commit_mod.Journal, resolve: Callable[[str], str], live: set[str] | None = None
) -> int:
    """Delete the run's placed files (``resolve``: the journal's name -> a path) that the table does not list
    (``live``, in the journal's spelling; None: the commit did not happen); returns how many."""
    dropped = 0
    for name in journal.info.get("placed", []):
        if live is not None and name in live:
            continue
        if fs.delete(resolve(name)):
            dropped += 1
    return dropped


def settle_placed(
    fs: FileSystem,
    home: str,
    committed: Callable[[commit_mod.Journal], int | None],
    live: Callable[[], set[str]],
    resolve: Callable[[str], str],
    what: str,
) -> list[str]:
    """Finish every interrupted run of the table at ``home``: done when ``committed(journal)`` finds its commit
    (its version), else its placed files not ``live`` deleted and the run rolled back; the run ids."""
    done = []
    for journal in commit_mod.pending_runs(fs, home):
        version = committed(journal)
        if version is not None:
            journal.info["committed_version"] = version
            if journal.state == commit_mod.STAGING:
                commit_mod.mark_committed(fs, journal)
            commit_mod.finish(fs, journal)
        else:
            if journal.state != commit_mod.STAGING:
                raise RecoveryError(
                    f"run {journal.run_id} of {what} is {journal.state!r} but its commit is not in the table's "
                    "history; inspect the journal and the table's metadata by hand, nothing was changed"
                )
            drop_placed(fs, journal, resolve, live())
            commit_mod.rollback(fs, journal)
        done.append(journal.run_id)
    return done
