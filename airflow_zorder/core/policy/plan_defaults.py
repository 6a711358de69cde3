"""What a plan assumes unless told otherwise, shared by the sensor's plan and the clustering job: its curve and
the ratio to the ideal it stops at (the output file size's default: ``file_sizing.DEFAULT_TARGET_FILE_SIZE``)."""

from __future__ import annotations

__all__ = ["DEFAULT_CURVE", "DEFAULT_TARGET_RATIO"]

DEFAULT_CURVE = "zorder"  # the jobs' and operators' curve unless one is given
DEFAULT_TARGET_RATIO = 1.35  # incremental runs stop once every column is within this of the ideal
