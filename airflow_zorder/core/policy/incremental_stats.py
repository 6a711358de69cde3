"""The incremental rule over stats rows: one unit's files from FILE_STATS_SCHEMA rows, and the plan of a table.

:func:`plan_table` runs :func:`incremental.plan` on every partition (or the unpartitioned table) of a stats
snapshot and returns the *plan document*: the JSON the sensor puts in its XCom, the operator hands to the
clustering job (``--plan``) and the job reports.  One format, :data:`PLAN_FORMAT` version :data:`PLAN_VERSION`::

    {"format", "version", "columns", "num_clustering_columns", "params", "snapshot_id",
     "files", "bytes", "num_output_files", "ratio_before", "ratio_after", "partitions_evaluated",
     "partitions": [{"partition", "num_files", "bytes_total", "files", "bytes", "num_output_files",
                     "ratio_before", "ratio_after", "columns": [ColumnEstimate...], "reasons",
                     "bins": [{"paths", "bytes", "num_output_files", "columns"?}]}]}

``files``/``bytes`` are what the plan rewrites; a bin's optional ``columns`` (a subset of the plan's, in its
order) are the ones it is clustered on, the others collapsed (absent: all of them); ``partition`` is ``"k=v/..."`` or None (unpartitioned);
only partitions with something to rewrite are listed.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from airflow_zorder.core.errors import InvalidInputError
from airflow_zorder.core.layout import curve_keys
from airflow_zorder.core.policy.file_names import membership_of
from airflow_zorder.core.policy.incremental import IncrementalParams, IncrementalPlan, PlanBin, UnitFiles, plan
from airflow_zorder.core.stats import stats_schema

__all__ = [
    "PLAN_FORMAT",
    "PLAN_VERSION",
    "check_plan",
    "made_for",
    "plan_from_stats",
    "plan_table",
    "unit_files",
]

PLAN_FORMAT = "airflow-zorder-incremental-plan"
PLAN_VERSION = 1


def unit_files(
    rows: pa.Table, membership: Mapping[str, str | None] | str | None = None, columns: Sequence[str] | None = None
) -> UnitFiles:
    """:class:`UnitFiles` from one unit's FILE_STATS_SCHEMA rows; ``membership``: path -> run id, a column of
    ``rows``, or None: the run (and plan bin) each file's name carries (``core.policy.file_names.membership_of``)."""
    enc = pc.dictionary_encode(rows["path"]).combine_chunks()
    paths = enc.dictionary.to_pylist()
    _, first = np.unique(enc.indices.to_numpy(zero_copy_only=False), return_index=True)
    take = pa.array(first)
    sizes = pc.fill_null(rows["file_size"].take(take), 0).to_numpy(zero_copy_only=False)
    counts = pc.fill_null(rows["file_rows"].take(take), 0).to_numpy(zero_copy_only=False)
    if isinstance(membership, str):
        if membership not in rows.column_names:
            raise InvalidInputError(
                f"no membership column {membership!r} in the stats rows; pass a path -> run id mapping"
            )
        runs = rows[membership].take(take).to_pylist()
    elif membership is None:
        runs = [membership_of(x) for x in paths]
    else:
        runs = [membership.get(x) for x in paths]
    split = stats_schema.split_by_column(rows)
    missing = [c for c in columns or () if c not in split]
    if missing:
        raise InvalidInputError(f"no stats rows for columns {missing}; columns with stats: {sorted(split)}")
    pos = {x: i for i, x in enumerate(paths)}
    bounds = {}
    for c in columns or sorted(split):
        mins, maxs, has = stats_schema.typed_bounds(split[c])
        at = np.array([pos[x] for x in split[c]["path"].to_pylist()], dtype=np.int64)
        slot = np.full(len(paths), -1, dtype=np.int64)
        slot[at] = np.arange(at.size)
        ix = pa.array(slot, mask=slot < 0)  # files without a row for c: unknown bounds
        full_has = np.zeros(len(paths), dtype=bool)
        full_has[at] = has
        bounds[c] = (mins.take(ix), maxs.take(ix), full_has)
    return UnitFiles(paths, [int(s) for s in sizes], runs, bounds, rows=[int(n) for n in counts])


def plan_from_stats(
    rows: pa.Table,
    membership: Mapping[str, str | None] | str | None = None,
    *,
    columns: Sequence[str] | None = None,
    params: IncrementalParams | None = None,
    num_clustering_columns: int | None = None,
) -> IncrementalPlan:
    """:func:`incremental.plan` over one unit's stats rows (a partition's, or an unpartitioned table's)."""
    return plan(unit_files(rows, membership, columns), params, num_clustering_columns=num_clustering_columns)


def _partition_entry(label: str | None, p: IncrementalPlan, total_bytes: int) -> dict[str, Any]:
    return {
        "partition": label,
        "num_files": p.num_files_before,
        "bytes_total": total_bytes,
        "files": len(p.paths),
        "bytes": p.bytes,
        "num_output_files": p.num_output_files,
        "ratio_before": round(p.worst_ratio_before, 4),
        "ratio_after": round(p.worst_ratio_after, 4),
        "columns": [dataclasses.asdict(c) for c in p.columns],
        "reasons": list(p.reasons),
        "bins": [_bin(b) for b in p.bins],
    }


def _bin(b: PlanBin) -> dict[str, Any]:
    """A bin as the plan document holds it (``columns`` only when a subset)."""
    out: dict[str, Any] = {"paths": list(b.paths), "bytes": b.bytes, "num_output_files": b.num_output_files}
    return out if b.columns is None else {**out, "columns": list(b.columns)}


def plan_table(
    snapshot: pa.Table,
    columns: Sequence[str],
    *,
    partitions: Sequence[str | None] | None = None,
    params: IncrementalParams | None = None,
    num_clustering_columns: int | None = None,
    membership: Mapping[str, str | None] | None = None,
) -> dict[str, Any]:
    """The plan document (module doc) of a stats snapshot: :func:`plan_from_stats` per partition.

    ``partitions``: only these (``None`` in the list: the unpartitioned table); default every partition.
    ``membership``: path -> run id; default the run each file's name carries.
    """
    params = params or IncrementalParams()
    cols = list(columns)
    if not cols:
        raise InvalidInputError("an incremental plan needs the clustering columns")
    d = num_clustering_columns or len(cols)
    rows = snapshot.filter(pc.is_in(snapshot["column_name"], pa.array(cols, pa.string())))
    labels = rows["partition"].to_pylist()
    wanted = None if partitions is None else set(partitions)
    entries, evaluated, worst_before, worst_after = [], 0, 0.0, 0.0
    order: dict[str | None, list[int]] = {}
    for i, lab in enumerate(labels):
        order.setdefault(lab, []).append(i)
    for lab in sorted(order, key=lambda x: (x is not None, x or "")):
        if wanted is not None and lab not in wanted:
            continue
        part = rows.take(pa.array(order[lab], pa.int64()))
        p = plan_from_stats(part, membership, columns=cols, params=params, num_clustering_columns=d)
        evaluated += 1
        worst_before = max(worst_before, p.worst_ratio_before)
        worst_after = max(worst_after, p.worst_ratio_after)
        if not p.empty:
            sizes = dict(zip(part["path"].to_pylist(), pc.fill_null(part["file_size"], 0).to_pylist()))
            entries.append(_partition_entry(lab, p, int(sum(sizes.values()))))
    snap_ids = pc.unique(snapshot["snapshot_id"]).to_pylist() if snapshot.num_rows else []
    return {
        "format": PLAN_FORMAT,
        "version": PLAN_VERSION,
        "columns": cols,
        "num_clustering_columns": d,
        "params": dataclasses.asdict(params),
        "snapshot_id": snap_ids[0] if len(snap_ids) == 1 else None,
        "files": sum(e["files"] for e in entries),
        "bytes": sum(e["bytes"] for e in entries),
        "num_output_files": sum(e["num_output_files"] for e in entries),
        "ratio_before": round(worst_before, 4),
        "ratio_after": round(worst_after, 4),
        "partitions_evaluated": evaluated,
        "partitions": entries,
    }


def made_for(doc: Mapping[str, Any], columns: Sequence[str]) -> bool:
    """Whether plan ``doc`` was made for ``columns``: the same names in the same order, case aside (as Spark
    resolves them); the operator and the job both refuse a plan for other columns."""
    return [c.lower() for c in doc.get("columns") or []] == [c.lower() for c in columns]


def check_plan(doc: Any) -> dict[str, Any]:
    """``doc`` if it is a plan document this version reads, else ValueError saying what is wrong."""
    if not isinstance(doc, Mapping) or doc.get("format") != PLAN_FORMAT:
        raise ValueError(
            f"not an incremental plan (format {PLAN_FORMAT!r} expected); pass the sensor's XCom 'plan' or let the job "
            "plan itself with --incremental"
        )
    if doc.get("version") != PLAN_VERSION:
        raise ValueError(f"incremental plan version {doc.get('version')!r} is not supported (this is {PLAN_VERSION})")
    known = [c.lower() for c in doc.get("columns") or []]
    for e in doc.get("partitions") or []:
        for b in e.get("bins") or []:
            if not b.get("paths") or not isinstance(b.get("num_output_files"), int) or b["num_output_files"] < 1:
                raise ValueError(f"malformed bin in the plan's partition {e.get('partition')!r}: {b!r:.200}")
            on = b.get("columns")
            if on is not None and (not isinstance(on, list) or not on or not _names_columns(known, on)):
                raise ValueError(
                    f"a bin of the plan's partition {e.get('partition')!r} is clustered on {on!r}, not a non-empty "
                    f"list of distinct columns of the plan's {doc.get('columns')!r} (in the curve's order)"
                )
    return dict(doc)


def _names_columns(columns: Sequence[str], order: Sequence[Any]) -> bool:
    """Whether ``order`` names distinct ``columns`` (case-insensitive), as the job's :func:`curve_keys.curve_slots`
    takes a bin's curve order."""
    if not all(isinstance(c, str) for c in order):
        return False
    try:
        curve_keys.curve_slots(columns, order)
    except ValueError:
        return False
    return True
