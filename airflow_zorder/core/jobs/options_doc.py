"""The operators' parameter tables of docs/operators.md, rendered from the options' declarations.

``python -m airflow_zorder.core.jobs.options_doc table --write docs/operators.md`` rewrites each table between its
markers; tests/unit/test_docs.py fails while the doc is stale.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import MISSING
from pathlib import Path
from typing import Any

from airflow_zorder.core.jobs.option_spec import job_options, operator_params
from airflow_zorder.core.jobs.options import (
    CLUSTER_OPERATOR_ONLY,
    STATS_OPERATOR_ONLY,
    ClusterOptions,
    CollectOptions,
)

__all__ = ["TABLES", "doc_markers", "docs_table", "main", "update_doc"]

#: operator -> (its job's options, its own parameters)
TABLES = {
    "SparkClusterTableOperator": (ClusterOptions, CLUSTER_OPERATOR_ONLY),
    "SparkCollectFileStatsOperator": (CollectOptions, STATS_OPERATOR_ONLY),
}


def doc_markers(operator: str) -> tuple[str, str]:
    """The markers around ``operator``'s table in the doc."""
    return f"<!-- options:{operator}:start -->", f"<!-- options:{operator}:end -->"


def _default(value: Any, doc_default: str) -> str:
    """The docs' default column: what the declaration says, else the job's default as written."""
    if doc_default:
        return doc_default
    if value is MISSING:
        return "required"
    if value is None:
        return "—"
    if isinstance(value, (bool, str)):
        return f"`{value}`"
    return str(value)


def docs_table(operator: str) -> str:
    """The markdown table of ``operator``'s parameters (name, default, job flag, meaning), between its markers."""
    options_class, own = TABLES[operator]
    start, end = doc_markers(operator)
    defaults = {f: d for f, _, d in job_options(options_class)}  # the docs give the default the job applies
    out = [start, "", "| parameter | default | job flag | meaning |", "| --- | --- | --- | --- |"]
    for p in operator_params(options_class, own):
        default = defaults.get(p.field, p.default) if p.field else p.default
        flag = f"`{p.spec.flag}`" if p.spec.flag else "—"
        meaning = p.spec.help + (" (templated)" if p.spec.templated else "")
        out.append(f"| `{p.name}` | {_default(default, p.spec.doc_default)} | {flag} | {meaning} |")
    out += ["", end]
    return "\n".join(out)


def update_doc(path: Path) -> bool:
    """Rewrite every operator's table between its markers in ``path``; False if a marker is missing."""
    text = path.read_text(encoding="utf-8")
    for operator in TABLES:
        start, end = doc_markers(operator)
        if start not in text or end not in text:
            return False
        head, rest = text.split(start, 1)
        text = head + docs_table(operator) + rest.split(end, 1)[1]
    path.write_text(text, encoding="utf-8")
    return True


def main(argv: Sequence[str] | None = None) -> int:
    """``table``: print the operators' parameter tables, or ``--write`` them into a doc with their markers."""
    parser = argparse.ArgumentParser(prog="python -m airflow_zorder.core.jobs.options_doc", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    t = sub.add_parser("table", help="print the operators' parameter tables (or --write them into a doc)")
    t.add_argument("--write", type=Path, help="a markdown file with the options markers, e.g. docs/operators.md")
    args = parser.parse_args(argv)
    if args.write is None:
        print("\n\n".join(docs_table(op) for op in TABLES))
    elif not update_doc(args.write):
        print(f"{args.write} lacks an operator's options markers", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
