"""The one parser for lists of names (columns, partitions) given as lists, JSON/Python list text or ``a,b``.

Operators, DAGs, the sensor's column choice and the jobs' command lines all read names with it.
"""

from __future__ import annotations

import ast
import json
from typing import Any

from airflow_zorder.core.errors import InvalidInputError

__all__ = ["parse_names"]


def parse_names(value: Any, what: str = "names") -> list[str] | None:
    """Names from a list/tuple, a JSON or Python list literal (e.g. a rendered XCom), or ``a,b`` / lines.

    ``None`` and ``""`` give ``None``; list items that are dicts (``{"day": "2026-01-01"}``) become
    Hive paths ``day=2026-01-01``. The one parser for columns and partitions, in operators and jobs.
    """
    if value is None:
        return None
    if isinstance(value, str):
        text = value.strip()
        if not text:
            return None
        if not text.startswith("["):
            return [x.strip() for x in text.replace("\n", ",").split(",") if x.strip()]
        try:
            value = json.loads(text)
        except ValueError:
            try:
                value = ast.literal_eval(text)
            except (ValueError, SyntaxError) as exc:
                raise InvalidInputError(
                    f"{what}: cannot read {text[:80]!r} as a list; pass a list, a JSON list or comma-separated names"
                ) from exc
    if isinstance(value, (list, tuple, set)):
        out = []
        for item in value:
            if isinstance(item, dict):
                out.append("/".join(f"{k}={v}" for k, v in item.items()))
            elif item is not None and str(item).strip():
                out.append(str(item).strip())
        return out
    raise InvalidInputError(f"{what}: expected a list or a comma-separated string, got {type(value).__name__}")
