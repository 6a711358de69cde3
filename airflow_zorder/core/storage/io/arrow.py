"""Any store pyarrow opens (S3, GCS, Azure, HDFS, fsspec schemes) as a :class:`~airflow_zorder.core.storage.io.FileSystem`.

The Airflow side: the hook, the sensor and the UI read tables and stats, and write the stats store's small
records, with a connection's options (:func:`~airflow_zorder.core.storage.locations.arrow_filesystem`).
"""

from __future__ import annotations

import errno
from typing import Any

from pyarrow import fs as pafs

from airflow_zorder.core.storage.io.file_info import FileInfo
from airflow_zorder.core.storage.io.local import as_bytes
from airflow_zorder.core.storage.io.paths import join, relpath
from airflow_zorder.core.storage.locations import parse_location


class ArrowFileSystem:
    """:class:`~airflow_zorder.core.storage.io.FileSystem` over a ``pyarrow.fs.FileSystem``.

    Paths may be URIs of the store (``s3://b/k``) or paths in it (``b/k``); listings are spelled like the
    path given. Object stores publish a written object atomically; ``create_exclusive`` is check-then-create
    there (pyarrow has no conditional write), which is why the clustering job's lock runs through Hadoop.
    """

    def __init__(self, filesystem: Any) -> None:
        self.fs = filesystem

    def _path(self, path: str) -> str:
        if "://" in path or path.startswith("file:"):
            loc = parse_location(path)
            return loc.local_path() if loc.is_local else loc.arrow_path()
        return path

    def arrow(self, path: str) -> tuple[Any, str]:
        """This filesystem and the path in it."""
        return self.fs, self._path(path)

    def list_files(self, path: str, recursive: bool = True) -> list[FileInfo]:
        """Files under ``path`` (spelled like ``path``), sorted; missing path -> []."""
        base = self._path(path).rstrip("/")
        info = self.fs.get_file_info(base)
        if info.type == pafs.FileType.NotFound:
            return []
        if info.type == pafs.FileType.File:
            return [FileInfo(path, int(info.size or 0), _mtime_ms(info))]
        sel = pafs.FileSelector(base, allow_not_found=True, recursive=recursive)
        out = [
            FileInfo(join(path, relpath(base, i.path)), int(i.size or 0), _mtime_ms(i))
            for i in self.fs.get_file_info(sel)
            if i.type == pafs.FileType.File
        ]
        out.sort(key=lambda f: f.path)
        return out

    def exists(self, path: str) -> bool:
        """True if a file or directory (or a prefix of objects) is at ``path``."""
        return bool(self.fs.get_file_info(self._path(path)).type != pafs.FileType.NotFound)

    def mkdirs(self, path: str) -> None:
        """``mkdir -p`` (a no-op on object stores)."""
        self.fs.create_dir(self._path(path), recursive=True)

    def rename(self, src: str, dst: str) -> None:
        """Move ``src`` to ``dst``; refuses an existing ``dst`` (object stores: copy then delete)."""
        if self.exists(dst):
            raise FileExistsError(dst)
        self.fs.move(self._path(src), self._path(dst))

    def delete(self, path: str, recursive: bool = False) -> bool:
        """Delete a file, or a directory (its contents with ``recursive``); False if absent."""
        p = self._path(path)
        kind = self.fs.get_file_info(p).type
        if kind == pafs.FileType.NotFound:
            return False
        if kind == pafs.FileType.Directory:
            if not recursive and self.fs.get_file_info(pafs.FileSelector(p, recursive=False)):
                raise OSError(errno.ENOTEMPTY, "directory not empty", path)
            self.fs.delete_dir(p)
        else:
            self.fs.delete_file(p)
        return True

    def read_text(self, path: str) -> str:
        """UTF-8 content of a file."""
        return self.read_bytes(path).decode("utf-8")

    def read_bytes(self, path: str) -> bytes:
        """The whole file."""
        with self.fs.open_input_stream(self._path(path)) as f:
            return bytes(f.read())

    def write_atomic(self, path: str, data: str | bytes) -> None:
        """One PUT (object stores publish the whole object or nothing), its parent directory made first."""
        p = self._path(path)
        parent = p.rsplit("/", 1)[0]
        if parent and parent != p:
            self.fs.create_dir(parent, recursive=True)
        with self.fs.open_output_stream(p) as f:
            f.write(as_bytes(data))

    def read_tail(self, path: str, n: int) -> bytes:
        """Last ``n`` bytes of a file (a ranged read)."""
        with self.fs.open_input_file(self._path(path)) as f:
            size = f.size()
            f.seek(max(0, size - n))
            return bytes(f.read())

    def create_exclusive(self, path: str, data: str | bytes) -> bool:
        """Check-then-create (not atomic on object stores: see the class doc)."""
        if self.exists(path):
            return False
        with self.fs.open_output_stream(self._path(path)) as f:
            f.write(as_bytes(data))
        return True

    def rename_is_copy(self, path: str) -> bool:
        """pyarrow moves objects by copy and delete; a local disk renames."""
        return not isinstance(self.fs, pafs.LocalFileSystem)

    def modified_ms(self, path: str) -> int:
        """mtime in ms (0 when the store keeps none)."""
        return _mtime_ms(self.fs.get_file_info(self._path(path)))


def _mtime_ms(info: Any) -> int:
    mtime = getattr(info, "mtime_ns", None)
    return int(mtime) // 1_000_000 if mtime else 0
