"""The local disk as a :class:`~airflow_zorder.core.storage.io.FileSystem`: plain paths and ``file:`` URIs.

Renames never replace (Linux ``renameat2(RENAME_NOREPLACE)``), whole-file writes are a fsynced temp file moved into
place, and an exclusive create is a hard link of a complete temp file, so no reader ever sees a partial file.
"""

from __future__ import annotations

import ctypes
import errno
import os
import shutil
import uuid
from typing import Any

from airflow_zorder.core.storage.io.file_info import FileInfo
from airflow_zorder.core.storage.io.paths import join
from airflow_zorder.core.storage.locations import parse_location

_AT_FDCWD = -100
_RENAME_NOREPLACE = 1


def _load_renameat2() -> Any:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        fn = libc.renameat2
    except (OSError, AttributeError):
        return None
    fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    fn.restype = ctypes.c_int
    return fn


_renameat2 = _load_renameat2()


def _rename_noreplace(src: str, dst: str) -> None:
    """Atomic rename that fails with FileExistsError instead of replacing ``dst`` (Linux renameat2)."""
    if _renameat2 is not None:
        rc = _renameat2(_AT_FDCWD, os.fsencode(src), _AT_FDCWD, os.fsencode(dst), _RENAME_NOREPLACE)
        if rc == 0:
            return
        err = ctypes.get_errno()
        if err not in (errno.EINVAL, errno.ENOSYS, errno.ENOTSUP):
            raise OSError(err, f"rename {src!r} -> {dst!r}: {os.strerror(err)}")
        # Filesystem without RENAME_NOREPLACE support: fall through to check-then-rename.
    if os.path.lexists(dst):
        raise FileExistsError(errno.EEXIST, f"rename destination exists: {dst!r}")
    os.rename(src, dst)


def _fsync_dir(path: str) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _is_crc_side_file(name: str) -> bool:
    """Hadoop's checksum side file ``.<name>.crc``, which Hadoop's local file system never lists."""
    return name.startswith(".") and name.endswith(".crc")


def list_os_files(root: str, spelled: str, recursive: bool = True, skip_crc: bool = False) -> list[FileInfo]:
    """Files under the OS path ``root``, their paths spelled under ``spelled``, sorted; missing root -> []."""
    try:
        st = os.stat(root)
    except FileNotFoundError:
        return []
    if not os.path.isdir(root):
        return [FileInfo(spelled, st.st_size, st.st_mtime_ns // 1_000_000)]
    out: list[FileInfo] = []
    if recursive:
        for dirpath, _dirnames, filenames in os.walk(root):
            for name in filenames:
                if skip_crc and _is_crc_side_file(name):
                    continue
                full = os.path.join(dirpath, name)
                try:
                    fst = os.stat(full)
                except FileNotFoundError:  # vanished while listing
                    continue
                rel = os.path.relpath(full, root).replace(os.sep, "/")
                out.append(FileInfo(join(spelled, rel), fst.st_size, fst.st_mtime_ns // 1_000_000))
    else:
        with os.scandir(root) as it:
            for entry in it:
                try:
                    if not entry.is_file() or (skip_crc and _is_crc_side_file(entry.name)):
                        continue
                    fst = entry.stat()
                except FileNotFoundError:
                    continue
                out.append(FileInfo(join(spelled, entry.name), fst.st_size, fst.st_mtime_ns // 1_000_000))
    out.sort(key=lambda f: f.path)
    return out


class LocalFileSystem:
    """:class:`~airflow_zorder.core.storage.io.FileSystem` on the local disk; accepts plain paths and ``file:`` URIs."""

    @staticmethod
    def local_path(path: str) -> str:
        """The OS path of a plain path or ``file:`` URI; ValueError for any other store's URI."""
        if "://" in path and not path.startswith("file:"):
            raise ValueError(
                f"{path!r} is not a local path; use HadoopFileSystem (pass a SparkSession to filesystem_for)"
            )
        return parse_location(path).local_path()

    def list_files(self, path: str, recursive: bool = True) -> list[FileInfo]:
        """Files under ``path`` (spelled like ``path``), sorted; missing path -> []."""
        return list_os_files(self.local_path(path), path, recursive)

    def exists(self, path: str) -> bool:
        """True if a file or directory is at ``path``."""
        return os.path.lexists(self.local_path(path))

    def mkdirs(self, path: str) -> None:
        """``mkdir -p``."""
        os.makedirs(self.local_path(path), exist_ok=True)

    def rename(self, src: str, dst: str) -> None:
        """Atomic no-replace rename (renameat2 RENAME_NOREPLACE); creates dst's parent dirs."""
        s, d = self.local_path(src), self.local_path(dst)
        parent = os.path.dirname(d)
        if parent:
            os.makedirs(parent, exist_ok=True)
        _rename_noreplace(s, d)

    def delete(self, path: str, recursive: bool = False) -> bool:
        """Delete a file or (if ``recursive`` or empty) a directory; False if absent."""
        p = self.local_path(path)
        if not os.path.lexists(p):
            return False
        if os.path.isdir(p) and not os.path.islink(p):
            if recursive:
                shutil.rmtree(p)
            else:
                os.rmdir(p)  # raises OSError if not empty
        else:
            os.unlink(p)
        return True

    def read_text(self, path: str) -> str:
        """UTF-8 content of a file."""
        with open(self.local_path(path), encoding="utf-8") as f:
            return f.read()

    def read_bytes(self, path: str) -> bytes:
        """The whole file."""
        with open(self.local_path(path), "rb") as f:
            return f.read()

    def read_tail(self, path: str, n: int) -> bytes:
        """Last ``n`` bytes of a file."""
        with open(self.local_path(path), "rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - n))
            return f.read()

    def _write_temp(self, target: str, data: str | bytes) -> str:
        d = os.path.dirname(target) or "."
        os.makedirs(d, exist_ok=True)
        tmp = os.path.join(d, f".{os.path.basename(target)}.tmp-{uuid.uuid4().hex}")
        with open(tmp, "xb") as f:
            f.write(as_bytes(data))
            f.flush()
            os.fsync(f.fileno())
        return tmp

    def write_atomic(self, path: str, data: str | bytes) -> None:
        """Write a fsynced temp file beside ``path`` then ``os.replace`` it over ``path``."""
        target = self.local_path(path)
        tmp = self._write_temp(target, data)
        try:
            os.replace(tmp, target)
        except BaseException:
            silent_unlink(tmp)
            raise
        _fsync_dir(os.path.dirname(target) or ".")

    def create_exclusive(self, path: str, data: str | bytes) -> bool:
        """Hard-link a complete temp file to ``path`` (fails if it exists): atomic and never partial."""
        target = self.local_path(path)
        tmp = self._write_temp(target, data)
        try:
            try:
                os.link(tmp, target)
            except FileExistsError:
                return False
            except OSError as e:  # filesystem without hard links: O_EXCL create (may be seen empty briefly)
                if e.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP):
                    raise
                try:
                    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
                except FileExistsError:
                    return False
                with os.fdopen(fd, "wb") as f:
                    f.write(as_bytes(data))
            _fsync_dir(os.path.dirname(target) or ".")
            return True
        finally:
            silent_unlink(tmp)

    def modified_ms(self, path: str) -> int:
        """mtime in ms."""
        return os.stat(self.local_path(path)).st_mtime_ns // 1_000_000

    def rename_is_copy(self, path: str) -> bool:
        """A local rename is one atomic step."""
        return False

    def arrow(self, path: str) -> tuple[Any, str]:
        """The local disk: no pyarrow filesystem, the OS path."""
        return None, self.local_path(path)


def as_bytes(data: str | bytes) -> bytes:
    """``data`` as bytes (text as UTF-8): what the writers take."""
    return data.encode("utf-8") if isinstance(data, str) else bytes(data)


def silent_unlink(p: str) -> None:
    """Remove the OS file ``p``; nothing if it is already gone."""
    try:
        os.unlink(p)
    except FileNotFoundError:
        pass
