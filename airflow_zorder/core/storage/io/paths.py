"""Paths as strings, the same for plain paths and URIs: their scheme, joining, and one relative to another.

``list_files`` returns paths spelled like the path it was given (``"/t"`` -> ``"/t/k=1/f.parquet"``,
``"file:///t"`` -> ``"file:///t/k=1/f.parquet"``), so callers compute relative paths with :func:`relpath`
without caring how Hadoop qualifies URIs.
"""

from __future__ import annotations

from airflow_zorder.core.storage.locations import parse_location


def scheme_of(path: str) -> str:
    """The URI scheme of ``path`` (``""`` for a plain local path)."""
    return parse_location(path).scheme


def join(base: str, *parts: str) -> str:
    """Join path segments with ``/`` (works for plain paths and URIs alike)."""
    out = base.rstrip("/") if base not in ("/", "") else base
    for part in parts:
        part = part.strip("/")
        if not part:
            continue
        out = part if out == "" else (out + part if out.endswith("/") else out + "/" + part)
    return out


def relpath(base: str, path: str) -> str:
    """``path`` relative to ``base`` (both spelled the same way); ValueError if it is not under it."""
    prefix = base.rstrip("/") + "/"
    if not path.startswith(prefix) or len(path) == len(prefix):
        raise ValueError(f"{path!r} is not under {base!r}")
    return path[len(prefix) :]
