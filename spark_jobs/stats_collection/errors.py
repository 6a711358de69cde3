"""The statistics job's user-facing error."""

from __future__ import annotations

from airflow_zorder.core.errors import JobError


class StatsCollectionError(JobError):
    """A clear, user-facing reason the collection refused or failed; nothing was committed."""
