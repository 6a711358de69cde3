"""The advisor's command line: recommend clustering columns for a table from the SQL run against it.

    python -m airflow_zorder.core.advisor TABLE_NAME WORKLOAD [WORKLOAD ...]
        (--stats-location LOC | --table-dir DIR) [--engine trino] [--curve zorder] [--max-columns 4]
        [--current a,b] [--sample-rows 20000] [--json]

``TABLE_NAME``: the table as the queries name it (``lineitem``, ``tpch.sf1.lineitem``, or a path for Spark's
path tables). ``WORKLOAD``: SQL files or directories of them, Spark event logs, Trino ``system.runtime.queries``
or Athena exports (:func:`~airflow_zorder.core.advisor.sources.read_workload`). The statistics come from the
table's stats store (``--stats-location``, what the statistics job writes) or, for a Parquet directory, from its
footers (``--table-dir``); ``--sample-rows`` (default 20,000; 0: none) reads that many of the table's rows (the
store's default credentials) to lay the best sets out on (:mod:`~airflow_zorder.core.advisor.sample_layout`).
Prints the recommendation (``--json``: the dict the operator returns as XCom).
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
from collections.abc import Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from airflow_zorder.core.advisor import recommend, sample_layout, sources
from airflow_zorder.core.errors import InvalidInputError
from airflow_zorder.core.layout import curves
from airflow_zorder.core.names import parse_names
from airflow_zorder.core.policy.formatting import format_percent
from airflow_zorder.core.policy.plan_defaults import DEFAULT_CURVE
from airflow_zorder.core.stats import footer_stats, stats_store

__all__ = ["main", "render"]


def _stats(args: argparse.Namespace) -> pa.Table:
    if args.stats_location:
        return stats_store.load_latest(args.stats_location)
    files = footer_stats.list_parquet_files(args.table_dir)
    if not files:
        raise InvalidInputError(f"no Parquet files under {args.table_dir!r}")
    columns = [f.name for f in pq.read_schema(files[0])]
    return footer_stats.read_footers_parallel(files, columns, 8, None)


def _sample(paths: list[str], rows: int, columns: list[str]) -> pa.Table:
    return sample_layout.read_sample(paths, columns, rows, open_file=sample_layout.open_uri)


def render(advice: dict[str, Any]) -> str:
    """The recommendation as text: the columns, files read before and after, the statements' outcomes."""
    lines = [
        f"table {advice['table']}: {advice['statements']} statements "
        + ", ".join(f"{n} {k}" for k, n in sorted(advice["status"].items())),
        f"scans of the table: {advice['scans']}; filters on: "
        + (", ".join(f"{c} ({n})" for c, n in advice["column_use"].items()) or "nothing"),
    ]
    if advice["partition_use"]:
        lines.append(
            "partition filters (apart): " + ", ".join(f"{c} ({n})" for c, n in advice["partition_use"].items())
        )
    if advice["columns"]:
        lines.append(
            f"recommended: {advice['curve']} on {', '.join(advice['columns'])} (in this order), serving "
            f"{format_percent(advice['served'])} of the scans"
        )
        how = (
            "from the statistics" if advice["estimate"] == "statistics" else f"on {advice['sample_rows']:,} sample rows"
        )
        lines.append(
            f"files read per scan: {advice['files_before']:.1f} now -> {advice['files_after']:.1f} after "
            f"(estimated {how}, {advice['num_files']} files per unit; saving {format_percent(advice['saving'])})"
        )
    else:
        lines.append("no recommendation: no scan filters a column with statistics")
    if advice.get("current_columns"):
        lines.append(
            f"clustered on {', '.join(advice['current_columns'])}: {advice['current_files_after']:.1f} files per scan"
        )
    for c in advice["candidates"]:
        lines.append(f"  best of {len(c['columns'])}: {', '.join(c['columns'])} -> {c['files_after']:.1f} files")
    for f in advice["failures"]:
        lines.append(f"  {f['status']}: {f['error']} in {f['sql'][:80]!r}")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m airflow_zorder.core.advisor", description=__doc__.split("\n")[0])
    p.add_argument("table_name", help="the table as the queries name it")
    p.add_argument("workload", nargs="+", help="SQL files/directories, Spark event logs, Trino or Athena exports")
    where = p.add_mutually_exclusive_group(required=True)
    where.add_argument("--stats-location", help="the table's stats store")
    where.add_argument("--table-dir", help="a Parquet directory: statistics from its footers")
    p.add_argument("--engine", help="SQL dialect of SQL files and exports (spark, trino, athena, ...)")
    p.add_argument("--curve", default=DEFAULT_CURVE, choices=curves.CURVES)
    p.add_argument("--max-columns", type=int, default=recommend.MAX_COLUMNS)
    p.add_argument("--current", help="the columns the table is clustered on now (a,b)")
    p.add_argument(
        "--sample-rows",
        type=int,
        default=sample_layout.DEFAULT_SAMPLE_ROWS,
        help="lay the best sets out on this many rows of the table (whole row groups drawn at random) and judge "
        "them there; 0: from the statistics alone",
    )
    p.add_argument("--json", action="store_true", help="print the recommendation as JSON")
    args = p.parse_args(argv)
    try:
        stats = _stats(args)
        sample = None
        if args.sample_rows > 0:
            paths = [p for p in pc.unique(stats["path"]).to_pylist() if p]
            sample = functools.partial(_sample, paths, args.sample_rows)
        rec = recommend.advise(
            sources.statements_of(args.workload, args.engine),
            stats,
            args.table_name,
            curve=args.curve,
            max_columns=args.max_columns,
            current=parse_names(args.current, "columns"),
            sample=sample,
        )
    except InvalidInputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    advice = rec.to_dict()
    print(json.dumps(advice, indent=1, default=str) if args.json else render(advice))
    return 0
