"""A job run's id: made by whoever launches the run (so the task knows it before the run), and read back for the
time the run started (``job_results.prune_run_files`` ages a run's files by it)."""

from __future__ import annotations

import re
import time
import uuid

__all__ = ["new_run_id", "run_started"]

_RUN_FILE = re.compile(r"^(\d{8}T\d{6})-[0-9a-f]+\.json$")  # <new_run_id()>.json


def new_run_id() -> str:
    """A run id: ``YYYYmmddTHHMMSS-<8 hex>``, the local time the run was launched and a random part."""
    return time.strftime("%Y%m%dT%H%M%S") + "-" + uuid.uuid4().hex[:8]


def run_started(file_name: str) -> float | None:
    """When the run of a ``<run id>.json`` file started (epoch seconds); None for a run id in another form."""
    m = _RUN_FILE.match(file_name)
    return time.mktime(time.strptime(m.group(1), "%Y%m%dT%H%M%S")) if m else None
