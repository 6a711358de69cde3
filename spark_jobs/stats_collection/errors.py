"""The statistics job's user-facing error."""

from __future__ import annotations


class StatsCollectionError(RuntimeError):
    """A clear, user-facing reason the collection refused or failed; nothing was committed."""
