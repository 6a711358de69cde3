"""An incremental run's units: the bins of an incremental plan, given (``--plan``) or made from the stats store.

Each bin becomes a :class:`~airflow_zorder.core.tables.model.Unit` holding only the bin's files and its planned number of output
files; the job rewrites and commits these exactly as whole partitions (same staging, verification, journal and
commit), so every file outside the plan is left as it is.  A bin is run only if every one of its files is still
in the table as the run lists it; otherwise it is skipped (another writer replaced a file since the plan).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import pyarrow as pa

from airflow_zorder.core.errors import IncrementalError
from airflow_zorder.core.jobs import plan_file
from airflow_zorder.core.jobs.options import ClusterOptions, stats_location_for
from airflow_zorder.core.policy import incremental_stats
from airflow_zorder.core.policy.incremental import IncrementalParams
from airflow_zorder.core.stats import footer_stats, stats_store
from airflow_zorder.core.storage import locations
from airflow_zorder.core.storage.io import FileSystem
from airflow_zorder.core.storage.io.file_info import FileInfo
from airflow_zorder.core.tables.model import Unit
from airflow_zorder.core.tables.protocol import TableFormat

__all__ = ["incremental_units", "params_of", "plan_summary"]

SUMMARY_REASONS = 8  # reasons kept in the result's plan summary


def _key(path: str) -> str:
    """One spelling per file (``file:/p``, ``/p`` and ``s3a://`` agree) to match plan and stats paths to the listing."""
    return locations.parse_location(path).uri()


def params_of(opts: ClusterOptions) -> IncrementalParams:
    """The rule's knobs from the job's options (the output file size and the curve are the job's; unset ones: the
    rule's defaults)."""
    given = {
        "target_file_size": opts.target_file_size,
        "target_ratio": opts.target_ratio,
        "max_bytes": opts.max_rewrite_bytes,
    }
    return IncrementalParams(curve=opts.curve, **{k: v for k, v in given.items() if v is not None})


def read_plan(fs: FileSystem, location: str) -> dict[str, Any]:
    """The plan document at ``location`` (the operator writes the sensor's plan there), checked
    (``plan_file.read_plan``)."""
    try:
        text = fs.read_text(location)
    except Exception as exc:  # noqa: BLE001 - one clear message for a missing or unreadable plan
        raise IncrementalError(f"cannot read the incremental plan at {location}: {exc}") from exc
    try:
        doc = plan_file.read_plan(text, f"the incremental plan at {location}")
    except ValueError as exc:
        raise IncrementalError(str(exc)) from exc
    if doc is None:
        raise IncrementalError(f"the incremental plan at {location} is empty")
    return doc


def _stats_rows(fs: FileSystem, location: str | None, units: Sequence[Unit], columns: list[str]) -> pa.Table:
    """Stats rows of exactly the units' files: the store's latest snapshot where it has the file at its current
    size, footers (read here, on the driver) for the rest; ``partition`` is each unit's relative path."""
    where: dict[str, tuple[Unit, FileInfo]] = {_key(f.path): (u, f) for u in units for f in u.files}
    parts = []
    have: set[str] = set()
    if location:
        try:
            snap = stats_store.load_latest(location, fs, columns=columns)
        except stats_store.StatsNotFoundError:
            snap = None
        if snap is not None and snap.num_rows:
            keys = [_key(p) for p in snap["path"].to_pylist()]
            keep = [
                i
                for i, (k, size) in enumerate(zip(keys, snap["file_size"].to_pylist()))
                if k in where and size == where[k][1].size
            ]
            if keep:
                rows = snap.take(pa.array(keep, pa.int64()))
                parts.append(
                    rows.set_column(rows.schema.get_field_index("path"), "path", pa.array([keys[i] for i in keep]))
                )
                have = {keys[i] for i in keep}
    missing = [k for k in where if k not in have]
    if missing:
        parts.append(_footer_rows(fs, {k: where[k][1].path for k in missing}, columns))
    t = pa.concat_tables([p.select(parts[0].column_names) for p in parts])
    labels = [where[k][0].relpath or None for k in t["path"].to_pylist()]
    sizes = [where[k][1].size for k in t["path"].to_pylist()]
    return t.set_column(t.schema.get_field_index("partition"), "partition", pa.array(labels, pa.string())).set_column(
        t.schema.get_field_index("file_size"), "file_size", pa.array(sizes, pa.int64())
    )


def _footer_rows(fs: FileSystem, files: dict[str, str], columns: list[str]) -> pa.Table:
    """Footer stats rows of ``files`` (:func:`_key` URI -> the path as the table lists it), read on the driver
    (``FileSystem.arrow``; a table lives on one store). ``fs`` opens the listed path, not the key: the key spells
    ``s3a://`` as ``s3://``, a scheme Hadoop may have no filesystem for."""
    arrow_fs = fs.arrow(next(iter(files.values())))[0]
    back = {fs.arrow(path)[1]: key for key, path in files.items()}
    t = footer_stats.read_footers_parallel(list(back), columns, filesystem=arrow_fs, on_error="missing")
    return t.set_column(t.schema.get_field_index("path"), "path", pa.array([back[p] for p in t["path"].to_pylist()]))


def _plan(fs: FileSystem, table: TableFormat, opts: ClusterOptions, units: list[Unit], columns: list[str]) -> dict:
    """The plan to run: the one given (``--plan``), else one made now from the stats store and footers."""
    if opts.plan:
        doc = read_plan(fs, opts.plan)
        try:
            plan_file.check_plan_for(doc, columns, opts.target_file_size)
        except ValueError as exc:
            raise IncrementalError(f"{exc} (the plan at {opts.plan})") from None
        if opts.target_file_size is None:  # the plan's file size also sizes what it rewrites whole (catalog tables)
            opts.target_file_size = plan_file.plan_file_size(doc)
        return doc
    location = stats_location_for(opts.table, opts.stats_location, home=table.home)
    rows = _stats_rows(fs, location, [u for u in units if u.files], columns)
    return incremental_stats.plan_table(rows, columns, params=params_of(opts), num_clustering_columns=len(columns))


def plan_summary(doc: dict[str, Any], source: str, bins: int, skipped: int) -> dict[str, Any]:
    """The plan as the result reports it: its totals and first reasons, without the file lists."""
    reasons = [f"{e['partition'] or '<whole table>'}: {r}" for e in doc["partitions"] for r in e["reasons"]]
    return {
        "source": source,
        "files": doc["files"],
        "bytes": doc["bytes"],
        "num_output_files": doc["num_output_files"],
        "ratio_before": doc["ratio_before"],
        "ratio_after": doc["ratio_after"],
        "partitions": len(doc["partitions"]),
        "bins": bins,
        "bins_skipped": skipped,
        "reasons": reasons[:SUMMARY_REASONS],
    }


def incremental_units(
    fs: FileSystem, table: TableFormat, opts: ClusterOptions, units: list[Unit], columns: list[str]
) -> tuple[list[Unit], dict[str, Any], list[str]]:
    """``(bin units to rewrite, plan summary, messages)`` for an incremental run over the selected ``units``.

    A format whose commit replaces whole units (a catalog's location switch) rewrites a partition the plan
    touches whole.
    """
    doc = _plan(fs, table, opts, units, columns)
    by_label = {(u.relpath or None): u for u in units}
    out: list[Unit] = []
    messages: list[str] = []
    skipped = 0
    for entry in doc["partitions"]:
        unit = by_label.get(entry["partition"])
        if unit is None:
            skipped += len(entry["bins"])
            messages.append(f"plan: partition {entry['partition']!r} is not among the partitions selected or listed")
            continue
        if table.rewrites_whole_units:
            out.append(unit)
            messages.append(
                f"plan: {unit.label} is a {table.kind} partition, rewritten whole (its location is switched)"
            )
            continue
        files = {_key(f.path): f for f in unit.files}
        for k, b in enumerate(entry["bins"]):
            got = [files.get(_key(p)) for p in b["paths"]]
            if any(f is None for f in got):
                skipped += 1
                gone = sum(f is None for f in got)
                messages.append(
                    f"plan: {unit.label} bin {k} skipped: {gone} of its {len(got)} files are no longer in the table"
                )
                continue
            on = tuple(b["columns"]) if b.get("columns") else None
            out.append(
                replace(unit, files=[f for f in got if f is not None], num_files=b["num_output_files"], bin=k, on=on)
            )
    return out, plan_summary(doc, "given" if opts.plan else "job", len(out), skipped), messages
