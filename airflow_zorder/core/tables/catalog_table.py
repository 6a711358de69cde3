"""Catalog (metastore) tables over Parquet: their layout from the catalog, a rewrite committed by location switches.

The engine that owns the catalog (Spark, in the jobs: ``spark_jobs.catalog``) answers the
:class:`~airflow_zorder.core.tables.protocol.Metastore` questions; everything else is here. A unit is the table
(unpartitioned) or one partition, its files listed under the catalog's location for it. A run moves each staged
unit to a fresh directory under the table's state directory, records the commit point in its journal, then
switches each unit's location in the catalog (one update each: readers planning after it see only the new
files). Files appended to an old location around the switch are adopted into the new one, never dropped. The
replaced files are deleted once the retention passed (exactly the snapshot the run read).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from airflow_zorder.core.errors import InvalidInputError
from airflow_zorder.core.storage import commit as commit_mod
from airflow_zorder.core.storage.faults import fault_point
from airflow_zorder.core.storage.io import FileSystem
from airflow_zorder.core.storage.io.paths import join
from airflow_zorder.core.storage.table_formats import refuse_foreign_format
from airflow_zorder.core.tables.model import STATE_DIR, CommitOutcome, RewriteRun, StagedUnit, TableSnapshot, Unit
from airflow_zorder.core.tables.parquet_dir import check_parquet, files_dataset, list_units
from airflow_zorder.core.tables.placed_files import RunJournals
from airflow_zorder.core.tables.protocol import FilesOnly, Metastore
from airflow_zorder.core.tables.registry import probe_names

__all__ = ["FORMAT", "CatalogTable", "open_format"]

FORMAT = "catalog"


class CatalogTable(RunJournals, FilesOnly):
    """A Parquet table in a catalog (:class:`~airflow_zorder.core.tables.protocol.TableFormat`)."""

    format = FORMAT
    kind = "catalog"  # how results and run records name it
    journals_inputs = False  # inputs stay at the old locations until the retention passed
    rewrites_whole_units = True  # a commit switches whole partition locations
    reader = "pyarrow.dataset"

    def __init__(self, table: str, fs: FileSystem, metastore: Metastore) -> None:
        self.table = table
        self._fs = fs
        self._metastore = metastore
        self._snapshot: TableSnapshot | None = None
        self.refresh()

    @property
    def root(self) -> str:
        """The table's current location."""
        return self.snapshot().root

    @property
    def home(self) -> str:
        """The state directory: pinned in a table property, else the first location seen."""
        return self.snapshot().home

    def snapshot(self) -> TableSnapshot:
        """The catalog's locations and the files under them (read once per opened table)."""
        return self._snapshot or self.refresh()

    def refresh(self) -> TableSnapshot:
        """Describe the table again; refuses a location that holds another format's table."""
        info = self._metastore.describe(self.table)
        location = info["location"]
        refuse_foreign_format(location, self._fs.exists, probe_names(self._fs), table=self.table)
        pcols = list(info["partition_columns"])
        units: list[Unit] = []
        if not pcols:
            units.append(Unit("", {}, location, _files_under(self._fs, location)))
        else:
            for rel, spec, ploc in info["partitions"]:
                units.append(Unit(rel, dict(spec), ploc, _files_under(self._fs, ploc)))
        self._snapshot = TableSnapshot(
            self.table,
            FORMAT,
            "catalog",
            location,
            info.get("home") or location,
            pcols,
            units,
            None,
            info.get("data_columns"),
        )
        return self._snapshot

    def check_rewritable(self) -> None:
        """Refuse non-Parquet files under the table's locations."""
        check_parquet(self._fs, self.snapshot().units)

    def prepare(self) -> None:
        """Pin the state directory in a table property, so it survives location switches."""
        snap = self.snapshot()
        if snap.home == snap.root:
            self._metastore.pin_home(self.table, snap.home)

    def reader_dataset(self) -> Any:
        """A Parquet dataset over the files under the catalog's locations (footer statistics prune row groups)."""
        return files_dataset(self._fs, self.snapshot().files)

    def commit(
        self,
        fs: FileSystem,
        journal: commit_mod.Journal,
        staged: Sequence[StagedUnit],
        run: RewriteRun,
        lock: Any = None,
    ) -> CommitOutcome:
        """Record the switches and the commit point, then move the staged units and switch their locations."""
        journal.info["catalog_switches"] = [
            {
                "relpath": s.unit.relpath,
                "spec": s.unit.spec,
                "old": s.unit.location,
                "new": join(self.home, STATE_DIR, "versions", journal.run_id, s.unit.relpath),
                "inputs": [f.path for f in s.unit.files],
            }
            for s in staged
        ]
        journal.info["staging"] = run.staging
        commit_mod.mark_committed(fs, journal)  # ---- COMMIT POINT ----
        fault_point("after_commit_record")
        self._finish(fs, journal)
        return CommitOutcome(FORMAT)

    def _finish(self, fs: FileSystem, journal: commit_mod.Journal) -> None:
        """Idempotently complete a committed run: place files, adopt stragglers, switch, finish."""
        staging = journal.info["staging"]
        for sw in journal.info["catalog_switches"]:
            unit = Unit(sw["relpath"], sw["spec"], sw["old"])
            src = join(staging, sw["relpath"])
            if fs.exists(src) and not fs.exists(sw["new"]):
                fs.mkdirs(sw["new"].rsplit("/", 1)[0])
                fs.rename(src, sw["new"])
            current = self._metastore.current_location(self.table, unit)
            if _same_dir(current, sw["old"]):
                _adopt_stragglers(fs, sw)
                self._metastore.switch_location(self.table, unit, sw["new"])
                fault_point("mid_swap")
            _adopt_stragglers(fs, sw)  # appends that landed in the old location around the switch
        commit_mod.finish(fs, journal)

    def settle_runs(self, fs: FileSystem) -> list[str]:
        """Roll back runs before their commit point; finish (place, switch) those after it."""
        done = []
        for journal in commit_mod.pending_runs(fs, self.home):
            if journal.state == commit_mod.STAGING:
                commit_mod.rollback(fs, journal)
            else:
                self._finish(fs, journal)
            done.append(journal.run_id)
        return done

    def drop_replaced(self, fs: FileSystem, retention_s: float) -> list[str]:
        """The files each finished run replaced (the snapshot it read), past the retention."""
        deleted: list[str] = []
        now = time.time()
        for journal in commit_mod.list_journals(fs, self.home):
            switches = journal.info.get("catalog_switches")
            if journal.state != commit_mod.DONE or not switches or journal.info.get("old_files_deleted"):
                continue
            if now - journal.updated_at <= retention_s:
                continue
            for sw in switches:  # exactly the snapshot this run replaced; stragglers were adopted
                for path in sw["inputs"]:
                    if fs.delete(path):
                        deleted.append(path)
                if "/_zorder/versions/" in sw["old"] and not list_units(fs, sw["old"])[1]:
                    fs.delete(sw["old"], recursive=True)
            journal.info["old_files_deleted"] = True
            fs.write_atomic(commit_mod.journal_path(self.home, journal.run_id), journal.to_json())
        return deleted


def _files_under(fs: FileSystem, location: str) -> list[Any]:
    """Every visible data file under one of the catalog's locations."""
    return [f for u in list_units(fs, location)[1] for f in u.files]


def _adopt_stragglers(fs: FileSystem, sw: dict[str, Any]) -> None:
    """Move files appended to the old location after the snapshot into the new one: they are kept, not dropped."""
    inputs = set(sw["inputs"])
    for f in _files_under(fs, sw["old"]):
        if f.path not in inputs and not any(_same_dir(f.path, i) for i in inputs):
            fs.rename(f.path, join(sw["new"], f.path.rsplit("/", 1)[1]))


def _same_dir(a: str, b: str) -> bool:
    strip = lambda p: p.replace("file:///", "/").replace("file:/", "/").rstrip("/")  # noqa: E731
    return strip(a) == strip(b)


def open_format(table: str, root: str, fs: FileSystem, *, metastore: Metastore | None = None, **_: Any) -> CatalogTable:
    """The registry's loader: a catalog table described by ``metastore`` (the engine's side)."""
    if metastore is None:
        raise InvalidInputError(
            f"{table!r} names a catalog table: opening it needs the engine's catalog (a SparkSession)"
        )
    return CatalogTable(table, fs, metastore)
