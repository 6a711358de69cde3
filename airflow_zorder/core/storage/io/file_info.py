"""One file as a listing gives it: what every filesystem's ``list_files`` returns and the commit journal keeps."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class FileInfo:
    """One file as listed: its path, size in bytes and modification time (ms since epoch)."""

    path: str
    size: int
    mtime_ms: int

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (used by the journal)."""
        return {"path": self.path, "size": self.size, "mtime_ms": self.mtime_ms}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> FileInfo:
        """Inverse of :meth:`to_dict`."""
        return cls(path=str(d["path"]), size=int(d["size"]), mtime_ms=int(d["mtime_ms"]))
