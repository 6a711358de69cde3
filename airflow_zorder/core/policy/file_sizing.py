"""File sizing: parse human sizes and derive the output file count from a target file size."""

from __future__ import annotations

import math
import re

from airflow_zorder.core.errors import InvalidInputError

_UNITS = {
    "": 1,
    "b": 1,
    "k": 1 << 10,
    "kb": 1 << 10,
    "kib": 1 << 10,
    "m": 1 << 20,
    "mb": 1 << 20,
    "mib": 1 << 20,
    "g": 1 << 30,
    "gb": 1 << 30,
    "gib": 1 << 30,
    "t": 1 << 40,
    "tb": 1 << 40,
    "tib": 1 << 40,
}

DEFAULT_TARGET_FILE_SIZE = 512 << 20  # Iceberg's default target; Delta's OPTIMIZE uses 1 GiB


def parse_size(text: str | int) -> int:
    """Bytes from ``512MB``, ``1g``, ``64m``, ``1048576`` (binary units); clear error otherwise."""
    if isinstance(text, int):
        value = text
    else:
        m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*", str(text))
        if not m or m.group(2).lower() not in _UNITS:
            raise InvalidInputError(f"cannot read size {text!r}: write it like 512MB, 64m, 1g or a number of bytes")
        value = int(float(m.group(1)) * _UNITS[m.group(2).lower()])
    if value <= 0:
        raise InvalidInputError(f"size must be positive, got {text!r}")
    return value


def num_output_files(total_bytes: int, target_file_size: int | None, rows: int) -> int:
    """Files to write: ceil(total / target_file_size) like Delta's bin-packing, at least 1, never more than rows;
    ``target_file_size`` None: :data:`DEFAULT_TARGET_FILE_SIZE`."""
    if rows <= 0:
        return 0
    return max(1, min(rows, math.ceil(total_bytes / (target_file_size or DEFAULT_TARGET_FILE_SIZE))))
