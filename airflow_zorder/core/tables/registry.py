"""Which module opens a table: the format is detected once, when the table is opened.

:data:`FORMATS` maps a format's name to the module implementing it (loaded lazily, so a format's library is
imported only for its tables) and the extra that installs that library. Adding a format is one module with an
``open_format`` function returning a :class:`~airflow_zorder.core.tables.protocol.TableFormat`, one entry here,
and (for a format recognised on storage) its probe in :mod:`airflow_zorder.core.storage.table_formats`.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from airflow_zorder.core.errors import ForeignTableFormatError, MissingDependencyError
from airflow_zorder.core.storage.io import FileSystem
from airflow_zorder.core.storage.locations import is_path_table
from airflow_zorder.core.storage.store_options import StoreOptions
from airflow_zorder.core.storage.table_formats import Detection, find_table_format
from airflow_zorder.core.tables.protocol import TableFormat

__all__ = ["FORMATS", "FormatEntry", "detect", "open_table", "probe_names"]


@dataclass(frozen=True)
class FormatEntry:
    """A registered format: its module, and the extra that installs what the module imports."""

    module: str
    extra: str | None = None
    by_path: bool = True  # recognised on storage and opened by its path (else only by name, e.g. in a catalog)


FORMATS: dict[str, FormatEntry] = {
    "parquet": FormatEntry("airflow_zorder.core.tables.parquet_dir"),
    "catalog": FormatEntry("airflow_zorder.core.tables.catalog_table"),
    "delta": FormatEntry("airflow_zorder.core.tables.delta_table", extra="delta"),
    "iceberg": FormatEntry("airflow_zorder.core.tables.iceberg_table", extra="iceberg", by_path=False),
    "hudi": FormatEntry("airflow_zorder.core.tables.hudi_table", extra="hudi"),
}


def _loader(name: str) -> Callable[..., TableFormat]:
    entry = FORMATS[name]
    try:
        module = importlib.import_module(entry.module)
    except ImportError as exc:  # the format's library is missing: name the extra
        hint = f"pip install 'airflow-zorder[{entry.extra}]'" if entry.extra else "reinstall airflow-zorder"
        raise MissingDependencyError(f"{name} tables need {exc.name or exc}: {hint}") from exc
    return module.open_format


def probe_names(fs: FileSystem) -> Callable[[str], Iterable[str]]:
    """What the table-format probes list (``table_formats``): the entries of one directory of ``fs``."""
    return lambda directory: [f.path for f in fs.list_files(directory, recursive=False)]


def detect(root: str, fs: FileSystem) -> Detection | None:
    """The table format at ``root`` or around it (``table_formats.find_table_format``), probed once."""
    return find_table_format(root, fs.exists, probe_names(fs))


def open_table(
    table: str,
    fs: FileSystem,
    *,
    root: str | None = None,
    metastore: Any = None,
    storage_options: StoreOptions | None = None,
    iceberg_catalog: str | None = None,
    catalog_properties: Mapping[str, str] | None = None,
) -> TableFormat:
    """Open ``table`` with its format's module.

    A path (``root``: how this process spells it, default ``table``) is probed once: a registered format's root
    opens with that format's module, a plain directory as Parquet; a format without a module, or a directory
    inside any format's table, is refused with :class:`ForeignTableFormatError` (nothing touched). A catalog name
    (``db.table``) opens through ``metastore``, the engine's side of the catalog; with ``iceberg_catalog`` it is
    ``namespace.table`` of that pyiceberg catalog (``catalog_properties`` over its configuration).
    ``storage_options``: the store's credentials for the format's own reader (e.g. from an Airflow connection).
    """
    if iceberg_catalog:
        return _loader("iceberg")(
            table, table, fs, iceberg_catalog=iceberg_catalog, catalog_properties=catalog_properties
        )
    if not is_path_table(table):
        return _loader("catalog")(table, table, fs, metastore=metastore)
    root = root or table
    found = detect(root, fs) if fs.exists(root) else None
    if found is None:
        return _loader("parquet")(table, root, fs)
    inside = found.root != (root.rstrip("/") or root)
    if found.format in FORMATS and FORMATS[found.format].by_path and not inside:
        return _loader(found.format)(table, root, fs, storage_options=storage_options)
    raise ForeignTableFormatError(found.format, root, found.evidence, found.root if inside else None)
