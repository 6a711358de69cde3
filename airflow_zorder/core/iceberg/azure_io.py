"""pyiceberg's own pyarrow FileIO for Azure, reading ``abfss://container@account.dfs.core.windows.net/path`` right.

pyiceberg 0.12 opens ``abfs[s]://``/``wasb[s]://`` with adlfs by default, whose azure-core client retries an
unreachable endpoint for about 90 s; its ``PyArrowFileIO`` would give up in seconds, but hands pyarrow the path
``container@account.dfs.core.windows.net/path``, which Azure refuses (``InvalidResourceName``). This class hands
pyarrow ``container/path`` (the account comes from ``adls.account-name``). A ``wasb``/``adls`` connection names it
with ``py-io-impl``; every other scheme is pyiceberg's, unchanged.
"""

from __future__ import annotations

from pyiceberg.io.pyarrow import PyArrowFileIO
from pyiceberg.typedef import EMPTY_DICT, Properties

__all__ = ["IO_IMPL", "AzureArrowFileIO"]

#: the ``py-io-impl`` value naming this FileIO
IO_IMPL = "airflow_zorder.core.iceberg.azure_io.AzureArrowFileIO"
_AZURE_SCHEMES = frozenset({"abfs", "abfss", "wasb", "wasbs"})


class AzureArrowFileIO(PyArrowFileIO):
    """``PyArrowFileIO`` whose Azure paths are ``container/path``, as pyarrow's ``AzureFileSystem`` names them."""

    @staticmethod
    def parse_location(location: str, properties: Properties = EMPTY_DICT) -> tuple[str, str, str]:
        """``(scheme, netloc, path)``; for Azure the path drops the ``@account...`` part of the authority."""
        scheme, netloc, path = PyArrowFileIO.parse_location(location, properties)
        if scheme in _AZURE_SCHEMES and "@" in netloc and path.startswith(netloc):
            path = netloc.split("@", 1)[0] + path[len(netloc) :]
        return scheme, netloc, path
