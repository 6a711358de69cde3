"""Render the reliability suite's figures (``ZORDER_RELIABILITY_FIGURES=<file>`` of a test run) into
docs/reliability.md: one row for the local-disk modules, one for the S3 modules, and the totals.

    ZORDER_RELIABILITY_FIGURES=figures.json make test      # or: bash scripts/test.sh -m reliability
    .venv/bin/python scripts/reliability_figures.py figures.json   # rewrites the block between the markers
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

DOC = Path(__file__).resolve().parents[1] / "docs" / "reliability.md"
START, END = "<!-- reliability-figures:start -->", "<!-- reliability-figures:end -->"
#: test modules whose tables live on S3 (moto, through s3a://); every other reliability module runs on local disk
S3_MODULES = ("test_s3_commit",)
KEYS = ("cases", "kills", "rows_checked", "rows_lost", "rows_extra")


def render(figures: dict) -> str:
    """The markdown block: where the tables were, then what the suite did there."""
    local, s3 = Counter(), Counter()
    for module, counts in figures["by_module"].items():
        (s3 if module in S3_MODULES else local).update(counts)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    rows = [("local disk", local), ("S3 (moto, `s3a://`)", s3), ("all", local + s3)]
    out = [
        START,
        "",
        "| tables on | " + " | ".join(k.replace("_", " ") for k in KEYS) + " |",
        "| --- | " + " | ".join("---:" for _ in KEYS) + " |",
    ]
    out += [f"| {name} | " + " | ".join(f"{c.get(k, 0):,}" for k in KEYS) + " |" for name, c in rows]
    out += [
        "",
        f"The reliability modules of one `make test` run (the fast part{'; soak' if figures.get('soak') else ''}) "
        f"at git `{commit}`, {datetime.now(UTC):%Y-%m-%d}, on one 2-core machine; rendered by "
        "`scripts/reliability_figures.py`. The S3 rows include 20 lock races and 20 snapshot races.",
        "",
        END,
    ]
    return "\n".join(out)


def main(path: str) -> None:
    figures = json.loads(Path(path).read_text(encoding="utf-8"))
    doc = DOC.read_text(encoding="utf-8")
    head, rest = doc.split(START, 1)
    _, tail = rest.split(END, 1)
    DOC.write_text(head + render(figures) + tail, encoding="utf-8")


if __name__ == "__main__":
    main(sys.argv[1])
