"""Where every benchmark publishes: its key of the results JSON and its section of a markdown, nothing else.

Each benchmark owns one key of ``docs/benchmarks/results.json`` and one section of ``docs/benchmarks.md`` between its
own ``<!-- bench:<name>:start -->`` / ``:end -->`` markers, so that any one of them can run alone and leave the
others' figures as they were.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def merge_into(path: Path, key: str, value: Any) -> dict[str, Any]:
    """Store ``value`` under ``key`` of the JSON at ``path`` (created if absent; other keys kept); the whole JSON."""
    doc = json.loads(path.read_text()) if path.exists() else {}
    doc[key] = value
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=1, default=str) + "\n")
    return doc


def splice_section(doc: Path, start: str, end: str, body: str, *, before: str | None = None) -> None:
    """Replace ``doc``'s text between ``start`` and ``end`` (markers included in ``body``) with ``body``; the first
    time, put it just before the marker ``before`` when the doc has it, else at the end."""
    text = doc.read_text(encoding="utf-8") if doc.exists() else ""
    if start in text and end in text:
        head, rest = text.split(start, 1)
        text = head + body + rest.split(end, 1)[1]
    elif before and before in text:
        head, tail = text.split(before, 1)
        text = head + body + "\n\n" + before + tail
    else:
        text = text.rstrip("\n") + ("\n\n" if text else "") + body + "\n"
    doc.parent.mkdir(parents=True, exist_ok=True)
    doc.write_text(text, encoding="utf-8")
