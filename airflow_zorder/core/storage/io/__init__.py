"""The one I/O seam: the operations every store offers (:class:`FileSystem`) and the one way to get them for a
location (:func:`filesystem_for`), in the shape of pyiceberg's ``io`` package.

The commit protocol (``commit.py``), the table lock (``lock.py``), the table formats
(:mod:`airflow_zorder.core.tables`), the stats store and the listings all ask :func:`filesystem_for` and use
:class:`FileSystem`; one module per implementation: the local disk (:mod:`.local`), anything Hadoop can reach
through the Spark driver's JVM (:mod:`.hadoop`: HDFS, S3A, GCS, ABFS, ...; local paths served by the OS) and any
store pyarrow opens (:mod:`.arrow`: S3, GCS, Azure, HDFS, fsspec schemes; the Airflow side, with a connection's
options). Bulk readers (footers, Parquet) take :meth:`FileSystem.arrow`'s pyarrow pair for a path. Paths are
strings (:mod:`.paths`).
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import Any, Protocol, runtime_checkable

from airflow_zorder.core.storage.io.file_info import FileInfo
from airflow_zorder.core.storage.io.hadoop import HadoopFileSystem
from airflow_zorder.core.storage.io.local import LocalFileSystem
from airflow_zorder.core.storage.locations import is_path_table, parse_location

__all__ = ["FileSystem", "filesystem_for", "os_path", "table_filesystem"]


@runtime_checkable
class FileSystem(Protocol):
    """The operations the commit protocol, the lock and the stats store need, nothing more."""

    def list_files(self, path: str, recursive: bool = True) -> list[FileInfo]:
        """Files (not directories) under ``path``; a missing path gives ``[]``."""
        ...

    def exists(self, path: str) -> bool:
        """True if a file or directory exists at ``path``."""
        ...

    def mkdirs(self, path: str) -> None:
        """Create ``path`` and its parents; no error if it exists."""
        ...

    def rename(self, src: str, dst: str) -> None:
        """Move ``src`` to ``dst``; never overwrites ``dst``; creates dst's parents; raises on failure."""
        ...

    def delete(self, path: str, recursive: bool = False) -> bool:
        """Delete a file or directory; returns False if nothing was there."""
        ...

    def read_text(self, path: str) -> str:
        """The whole file as UTF-8 text; FileNotFoundError if missing."""
        ...

    def read_bytes(self, path: str) -> bytes:
        """The whole file; FileNotFoundError if missing."""
        ...

    def write_atomic(self, path: str, data: str | bytes) -> None:
        """Create or replace ``path`` (text as UTF-8) so that readers see the old or the new content, never a mix."""
        ...

    def read_tail(self, path: str, n: int) -> bytes:
        """The last ``n`` bytes of a file (e.g. the Parquet magic), without reading the rest."""
        ...

    def create_exclusive(self, path: str, data: str | bytes) -> bool:
        """Create ``path`` with ``data`` (text is UTF-8) only if it does not exist, atomically and complete or
        absent; False if it existed."""
        ...

    def rename_is_copy(self, path: str) -> bool:
        """True where a rename under ``path`` is a copy then a delete (object stores), not one atomic step: a
        crash in between leaves both."""
        ...

    def modified_ms(self, path: str) -> int:
        """Modification time of ``path`` in milliseconds since the epoch."""
        ...

    def arrow(self, path: str) -> tuple[Any, str]:
        """``(pyarrow filesystem, or None for this machine's disk; path in it)``: how bulk readers (footers,
        Parquet, the stats store) open ``path``."""
        ...


def filesystem_for(
    location: str, spark: Any = None, options: Mapping[str, Any] | None = None, filesystem: Any = None
) -> FileSystem:
    """The one way from a location to a :class:`FileSystem`, by what the caller holds, then by the location's scheme.

    ``filesystem``: one the caller holds already: a :class:`FileSystem` (as it is), a ``pyarrow.fs.FileSystem``
    (pyarrow's local one is the local disk; paths in it, or URIs of its store) or an fsspec filesystem (through
    pyarrow's ``FSSpecHandler``). Else with a SparkSession: Hadoop's (any store the cluster reaches; local paths
    served by the OS). Without one: the local disk for a local path, else pyarrow's filesystem for the store
    (``options`` in pyarrow's names, e.g. from an Airflow connection: :mod:`airflow_zorder.hooks.connections`;
    none: the store's default credentials).
    """
    if filesystem is not None:
        return _held(filesystem)
    if spark is not None:
        return HadoopFileSystem(spark)
    if parse_location(location).is_local:
        return LocalFileSystem()
    from airflow_zorder.core.storage.io.arrow import ArrowFileSystem
    from airflow_zorder.core.storage.locations import arrow_filesystem

    return ArrowFileSystem(arrow_filesystem(location, options)[0])


def _held(filesystem: Any) -> FileSystem:
    """The :class:`FileSystem` over a filesystem object the caller holds (see :func:`filesystem_for`)."""
    if isinstance(filesystem, FileSystem):
        return filesystem
    from pyarrow import fs as pafs

    from airflow_zorder.core.storage.io.arrow import ArrowFileSystem

    if isinstance(filesystem, pafs.LocalFileSystem):
        return LocalFileSystem()
    if isinstance(filesystem, pafs.FileSystem):
        return ArrowFileSystem(filesystem)
    fsspec = sys.modules.get("fsspec")  # loaded already by whoever made an fsspec filesystem
    if fsspec is not None and isinstance(filesystem, fsspec.AbstractFileSystem):
        return ArrowFileSystem(pafs.PyFileSystem(pafs.FSSpecHandler(filesystem)))
    raise TypeError(f"unsupported filesystem object {type(filesystem).__name__}")


def table_filesystem(table: str, spark: Any) -> FileSystem:
    """The Spark driver's filesystem for a table: its path's, or (a catalog name) the one its locations are on."""
    return filesystem_for(table if is_path_table(table) else "/", spark)


def os_path(fs: FileSystem, path: str) -> str | None:
    """The path on this machine's disk when ``fs`` keeps ``path`` there (read it directly), else None."""
    if isinstance(fs, LocalFileSystem):
        return fs.local_path(path)
    if isinstance(fs, HadoopFileSystem):
        return fs._local_path(path)
    return None
