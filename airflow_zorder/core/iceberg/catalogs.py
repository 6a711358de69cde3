"""Iceberg catalogs and tables through pyiceberg, with errors that name the fix.

A catalog is named as pyiceberg names it: ``load_catalog(name, **properties)`` reads ``.pyiceberg.yaml``
(``$PYICEBERG_HOME``, ``~``, the working directory) and ``PYICEBERG_CATALOG__<NAME>__<KEY>`` variables, and the
given properties win (an Airflow ``iceberg`` connection's, on the Airflow side). Tables are ``namespace.table``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from airflow_zorder.core.errors import MissingDependencyError, TableError

__all__ = [
    "catalog_file_properties",
    "embedded_properties",
    "load_catalog",
    "load_table",
    "pyiceberg_module",
    "write_catalog_file",
]


def pyiceberg_module(purpose: str = "reading an Apache Iceberg table") -> Any:
    """``pyiceberg``, or a clear error naming the extra that installs it."""
    try:
        import pyiceberg
        import pyiceberg.catalog  # noqa: F401 - the catalog loaders
    except ImportError as exc:
        raise MissingDependencyError(
            f"{purpose} needs the pyiceberg package: pip install 'airflow-zorder[iceberg]'"
        ) from exc
    return pyiceberg


def embedded_properties(home: str) -> dict[str, str]:
    """A SQL catalog on SQLite with a local warehouse under ``home``: the embedded default of the demo and tests."""
    import os

    home = os.path.abspath(home)
    os.makedirs(os.path.join(home, "warehouse"), exist_ok=True)
    return {"type": "sql", "uri": f"sqlite:///{home}/catalog.db", "warehouse": f"file://{home}/warehouse"}


def write_catalog_file(path: str, name: str, properties: Mapping[str, str]) -> str:
    """Write ``{name: properties}`` to ``path``, readable by its owner only (they may hold secrets); returns ``path``.

    This is how the operators hand an Airflow connection's catalog to the Spark driver: the file goes with
    ``--files``, so no property is on the command line."""
    import json
    import os

    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        json.dump({name: {str(k): str(v) for k, v in properties.items()}}, f)
    return path


def catalog_file_properties(path: str, name: str, search_dirs: Sequence[str] = ()) -> dict[str, str]:
    """The properties of catalog ``name`` in the JSON file ``path`` (:func:`write_catalog_file`); a relative path is
    looked up in ``search_dirs`` too (where spark-submit's ``--files`` land: SparkFiles' root, the working directory)."""
    import json
    import os

    candidates = [path] if os.path.isabs(path) else [*(os.path.join(d, path) for d in search_dirs), path]
    found = next((c for c in candidates if os.path.isfile(c)), None)
    if found is None:
        raise TableError(
            f"the Iceberg catalog file {path!r} is not where the job runs (looked in: {', '.join(candidates)}): "
            "ship it with spark-submit --files, as the operators do with iceberg_conn_id"
        )
    with open(found) as f:
        doc = json.load(f)
    if name not in doc:
        raise TableError(f"the Iceberg catalog file {path!r} has no catalog {name!r} (it has: {', '.join(doc)})")
    return {str(k): str(v) for k, v in doc[name].items()}


def load_catalog(name: str, properties: Mapping[str, str] | None = None) -> Any:
    """The pyiceberg catalog ``name`` (its configuration, ``properties`` over it)."""
    pyiceberg_module()
    from pyiceberg.catalog import load_catalog as _load
    from pyiceberg.utils.config import Config

    # pyiceberg reads its configuration once, when first imported: read it again (variables set since count)
    merged = {**(Config().get_catalog_config(name) or {}), **dict(properties or {})}
    try:
        return _load(name, **merged)
    except ValueError as exc:  # pyiceberg: "URI missing, please provide using --uri, the config or environment ..."
        raise TableError(
            f"Iceberg catalog {name!r} is not configured ({exc}): define it in .pyiceberg.yaml or "
            f"PYICEBERG_CATALOG__{name.upper().replace('-', '_')}__URI (and __WAREHOUSE), or pass an iceberg connection"
        ) from exc


def load_table(catalog: Any, identifier: str) -> Any:
    """The table ``namespace.table`` of ``catalog``; a missing one is a TableError naming what exists."""
    from pyiceberg.exceptions import NoSuchNamespaceError, NoSuchTableError

    try:
        return catalog.load_table(identifier)
    except (NoSuchTableError, NoSuchNamespaceError) as exc:
        namespace = identifier.rpartition(".")[0]
        try:
            known = [".".join(t) for t in catalog.list_tables(namespace)][:5] if namespace else []
        except Exception:  # noqa: BLE001 - only for the message
            known = []
        raise TableError(
            f"Iceberg table {identifier!r} does not exist in catalog {catalog.name!r}"
            + (f" (tables in {namespace}: {', '.join(known)})" if known else "")
            + "; name it as namespace.table"
        ) from exc
