"""Where a table's statistics live unless told otherwise: the one default, shared by the jobs, the hook and the UI."""

from __future__ import annotations

from airflow_zorder.core.storage.io.paths import join

#: the stats location under a table's home (hidden from the table's readers by the leading underscore)
STATS_SUBDIR = ("_zorder", "stats")


def default_stats_location(table_home: str) -> str:
    """``<table home>/_zorder/stats``."""
    return join(table_home, *STATS_SUBDIR)
