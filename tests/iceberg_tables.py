"""Real Iceberg tables for the tests: a pyiceberg SQL catalog on SQLite with a local warehouse (the embedded default)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa

from airflow_zorder.core.iceberg.catalogs import embedded_properties, load_catalog

CATALOG = "zordertests"  # pyiceberg spells "_" in variable names as "-": a name without either


def catalog(home: Path) -> tuple[Any, dict[str, str]]:
    """``(the catalog, its properties)`` under ``home`` (one SQLite file, one warehouse directory)."""
    props = embedded_properties(str(home))
    return load_catalog(CATALOG, props), props


def write_table(
    home: Path,
    identifier: str,
    batches: list[pa.Table],
    partition_by: str | None = None,
    properties: dict[str, str] | None = None,
) -> tuple[Any, dict[str, str]]:
    """Create ``identifier`` (namespace.table) from the first batch's schema and append every batch (one data file
    per batch and partition); ``partition_by``: an identity partition column."""
    cat, props = catalog(home)
    namespace = identifier.rpartition(".")[0]
    cat.create_namespace_if_not_exists(namespace)
    table = cat.create_table(identifier, schema=batches[0].schema, properties=properties or {})
    if partition_by:
        with table.update_spec() as spec:
            spec.add_identity(partition_by)
    for batch in batches:
        table.append(batch)
    return table, props
