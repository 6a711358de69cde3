"""Refuse Delta Lake, Apache Hudi and Apache Iceberg tables: their truth is a log, not the directory.

The jobs re-cluster *plain* Parquet directories by moving files around. A table-format table
looks like one (Parquet files, ``k=v/`` partitions) but is not:

* Delta Lake's truth is ``_delta_log/``: files removed by a delete or an overwrite stay in the
  directory until VACUUM. Reading the directory brings deleted rows back; moving a file the log
  points to breaks every Delta reader.
* Apache Hudi's truth is the ``.hoodie/`` timeline: older file slices stay until the cleaner runs,
  and file names carry file-group ids and commit times.
* Apache Iceberg's truth is ``metadata/*.metadata.json`` and its manifests, which point at data
  files (usually under ``data/``) by path; files of older snapshots stay until they are expired.

So every entry point (the Spark jobs, the hook, the sensor, the UI) checks the table first and
raises :class:`ForeignTableFormatError` before it locks, stages, lists or writes anything.  The one
exception: a Delta table's root, given by its path, is read through its log
(:mod:`airflow_zorder.core.delta.delta_log`) by the hook (the sensor, the UI) and the stats job, and
re-clustered through it by the clustering job (``spark_jobs.delta_table``); a part of a Delta table, and a
catalog table over one, stay refused.

The checks are cheap and storage-neutral: callers pass ``exists(path) -> bool`` and
``list_names(dir) -> names`` callables (local ``os``, a Hadoop or pyarrow filesystem, fsspec,
...). :func:`detect_table_format` probes a directory with three existence checks and lists
``metadata/`` only when it exists; :func:`refuse_foreign_format` adds two (Hudi's partition
marker) and probes parents only for a ``k=v`` or ``data`` directory. Paths are strings joined
with ``/`` (plain paths and URIs alike).

Airflow-free and Spark-free: the Spark jobs import it on the driver.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from airflow_zorder.core.errors import ForeignTableFormatError
from airflow_zorder.core.storage.io.paths import join

__all__ = [
    "DELTA",
    "FORMATS",
    "HUDI",
    "ICEBERG",
    "Detection",
    "catalog_table_format",
    "detect_table_format",
    "find_table_format",
    "refuse_foreign_catalog_table",
    "refuse_foreign_format",
]

DELTA = "delta"
HUDI = "hudi"
ICEBERG = "iceberg"
FORMATS = (DELTA, HUDI, ICEBERG)

DELTA_LOG_DIR = "_delta_log"
HUDI_META_DIR = ".hoodie"
ICEBERG_METADATA_DIR = "metadata"
ICEBERG_VERSION_HINT = "version-hint.text"
# Iceberg names table metadata "<version>-<uuid>.metadata.json" (catalogs) or "v<N>.metadata.json"
# (Hadoop tables); gzip-compressed ones are "....gz.metadata.json" (older writers: ".metadata.json.gz").
ICEBERG_METADATA_SUFFIXES = (".metadata.json", ".metadata.json.gz")
# Hudi writes this marker into every partition directory (".parquet" when it uses the base file format).
HUDI_PARTITION_MARKERS = (".hoodie_partition_metadata", ".hoodie_partition_metadata.parquet")

Exists = Callable[[str], bool]
ListNames = Callable[[str], Iterable[str]]


@dataclass(frozen=True)
class Detection:
    """What :func:`find_table_format` found: the format, the table's root, and what gave it away."""

    format: str  # "delta" | "hudi" | "iceberg"
    root: str  # the foreign table's directory (the path itself, or the table it lies inside)
    evidence: str  # what was found, e.g. "_delta_log/", for the error message


def _basename(name: str) -> str:
    return name.rstrip("/").rsplit("/", 1)[-1]


def _iceberg_metadata_name(names: Iterable[str]) -> str | None:
    """The (last, by name) Iceberg metadata file among ``names``, or the version hint; None if neither."""
    bases = [_basename(n) for n in names]
    found = sorted(b for b in bases if b.endswith(ICEBERG_METADATA_SUFFIXES))
    if found:
        return found[-1]
    return ICEBERG_VERSION_HINT if ICEBERG_VERSION_HINT in bases else None


def _detect(root: str, exists: Exists, list_names: ListNames) -> tuple[str, str] | None:
    if exists(join(root, DELTA_LOG_DIR)):
        return DELTA, f"{DELTA_LOG_DIR}/"
    if exists(join(root, HUDI_META_DIR)):
        return HUDI, f"{HUDI_META_DIR}/"
    meta = join(root, ICEBERG_METADATA_DIR)
    if exists(meta):
        found = _iceberg_metadata_name(list_names(meta))
        if found:
            return ICEBERG, f"{ICEBERG_METADATA_DIR}/{found}"
    return None


def detect_table_format(root: str, exists: Exists, list_names: ListNames) -> str | None:
    """``"delta"``, ``"hudi"``, ``"iceberg"``, or None for anything else (e.g. plain Parquet).

    Delta: ``<root>/_delta_log`` exists. Hudi: ``<root>/.hoodie`` exists. Iceberg: ``<root>/metadata``
    holds a ``*.metadata.json`` (or ``version-hint.text``). ``exists(path)`` is True for a file or a
    directory; ``list_names(dir)`` gives the entries of a directory (base names or full paths; files
    suffice), and is called only when ``<root>/metadata`` exists. A ``metadata=x/`` partition is not
    ``metadata/``, and Spark's ``_metadata`` summary files are not either.
    """
    found = _detect(root, exists, list_names)
    return found[0] if found else None


def _is_partition_dir(name: str) -> bool:
    return "=" in name and not name.startswith("=")


def _enclosing_roots(path: str) -> list[str]:
    """Directories a table at ``path`` may lie inside: up through ``k=v`` partition dirs and an Iceberg ``data/``."""
    out: list[str] = []
    current = path.rstrip("/")
    while "/" in current:
        parent, name = current.rsplit("/", 1)
        if not parent or parent.endswith((":", ":/")):  # "/" or a URI's scheme: no table above
            break
        if _is_partition_dir(name):
            out.append(parent)
            current = parent
            continue
        if name == "data":  # Iceberg keeps data files under <table>/data/
            out.append(parent)
        break
    return out


def find_table_format(path: str, exists: Exists, list_names: ListNames) -> Detection | None:
    """The foreign table at ``path``, or the one ``path`` lies inside; None when there is none.

    Beyond :func:`detect_table_format` on ``path`` itself, this catches a job pointed at part of a
    foreign table, which would otherwise look like a plain Parquet directory: a Hudi partition
    (its ``.hoodie_partition_metadata`` marker), a ``k=v/`` partition of a Delta/Hudi/Iceberg table,
    or an Iceberg table's ``data/``. Parents are probed only when ``path`` ends in such a directory.
    """
    found = _detect(path, exists, list_names)
    if found:
        return Detection(found[0], path.rstrip("/") or path, found[1])
    for parent in _enclosing_roots(path):
        found = _detect(parent, exists, list_names)
        if found:
            return Detection(found[0], parent, found[1])
    for marker in HUDI_PARTITION_MARKERS:  # e.g. a non-hive-style partition (2024/01/05): no k=v to walk up
        if exists(join(path, marker)):
            return Detection(HUDI, path.rstrip("/") or path, f"{marker}, the marker of a Hudi table's partition")
    return None


def refuse_foreign_format(root: str, exists: Exists, list_names: ListNames, *, table: str | None = None) -> None:
    """Raise :class:`ForeignTableFormatError` when ``root`` is (or lies inside) a Delta, Hudi or Iceberg table.

    ``table`` names the table in the message when it is not the path (e.g. a catalog table's name).
    Call it before touching the table; it only probes (see :func:`find_table_format`).
    """
    found = find_table_format(root, exists, list_names)
    if found is None:
        return
    name = f"{table} (location {root})" if table and table != root else root
    inside = found.root != root.rstrip("/")
    raise ForeignTableFormatError(found.format, name, found.evidence, found.root if inside else None)


def _provider_format(provider: str) -> str | None:
    p = provider.strip().lower()
    if not p:
        return None
    if p == DELTA or p.startswith(("io.delta.", "org.apache.spark.sql.delta.")):
        return DELTA
    if p == HUDI or "hudi" in p:
        return HUDI
    if p == ICEBERG or "iceberg" in p:
        return ICEBERG
    return None


def catalog_table_format(
    provider: str | None,
    *,
    input_format: str | None = None,
    serde: str | None = None,
    properties: Mapping[str, str] | None = None,
) -> tuple[str, str] | None:
    """(format, evidence) of a catalog table from its metadata; None for anything else.

    ``provider`` is Spark's (the ``Provider`` row of ``DESCRIBE TABLE EXTENDED``, ``CatalogTable.provider``):
    ``delta``, ``hudi``, ``iceberg`` or their data source class names. Tables synced into a Hive
    metastore show ``provider = hive`` instead and give their format away elsewhere: Hudi's hive sync
    uses ``org.apache.hudi.hadoop.HoodieParquetInputFormat`` (with the Parquet serde!), Iceberg's
    HiveCatalog sets ``table_type=ICEBERG``, and the storage handlers name Delta/Iceberg classes.
    """
    fmt = _provider_format(provider or "")
    if fmt:
        return fmt, f"catalog provider {provider}"
    props = {str(k).lower(): str(v) for k, v in (properties or {}).items()}
    for key in ("table_type", "spark.sql.sources.provider"):
        fmt = _provider_format(props.get(key, ""))
        if fmt:
            return fmt, f"table property {key}={props[key]}"
    for label, value in (
        ("InputFormat", input_format),
        ("SerDe", serde),
        ("storage handler", props.get("storage_handler")),
    ):
        v = (value or "").lower()
        if "hudi" in v or "hoodie" in v:
            return HUDI, f"{label} {value}"
        if "iceberg" in v:
            return ICEBERG, f"{label} {value}"
        if "io.delta." in v:
            return DELTA, f"{label} {value}"
    return None


def refuse_foreign_catalog_table(
    table: str,
    provider: str | None,
    *,
    input_format: str | None = None,
    serde: str | None = None,
    properties: Mapping[str, str] | None = None,
) -> None:
    """Raise :class:`ForeignTableFormatError` when the catalog table is a Delta, Hudi or Iceberg table.

    Check the table's location with :func:`refuse_foreign_format` too: a table registered as plain
    Parquet (by hand, or by a crawler) over a Delta directory has provider ``parquet``.
    """
    found = catalog_table_format(provider, input_format=input_format, serde=serde, properties=properties)
    if found is not None:
        raise ForeignTableFormatError(found[0], f"{table} (a catalog table)", found[1])
