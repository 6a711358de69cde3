"""The Spark side of catalog tables: describe them, pin their state directory, switch a location.

:class:`SparkMetastore` answers what the catalog table format (:mod:`airflow_zorder.core.tables.catalog_table`)
asks of the engine owning the catalog; the commit protocol itself lives there.
"""

from __future__ import annotations

from typing import Any

from pyspark.sql import SparkSession

from airflow_zorder.core.errors import TableError
from airflow_zorder.core.storage.io.paths import join
from airflow_zorder.core.storage.locations import parse_partition_path
from airflow_zorder.core.storage.table_formats import refuse_foreign_catalog_table
from airflow_zorder.core.tables.model import Unit

HOME_PROPERTY = "airflow_zorder.home"  # the table property pinning the state directory


def _quote(name: str) -> str:
    return ".".join(f"`{p.strip('`')}`" for p in name.split("."))


def _spec_sql(spec: dict[str, str]) -> str:
    def lit(v: str) -> str:
        return "'" + v.replace("\\", "\\\\").replace("'", "\\'") + "'"

    return ", ".join(f"`{k}` = {lit(v)}" for k, v in spec.items())


def _describe(spark: SparkSession, sql: str) -> dict[str, str]:
    """DESCRIBE ... EXTENDED as a dict; for a partition, its own section wins over the table's."""
    out: dict[str, str] = {}
    partition_section = False
    for r in spark.sql(sql).collect():
        key = (r["col_name"] or "").strip()
        if key.startswith("#"):
            partition_section = key == "# Detailed Partition Information"
        if key and (key not in out or partition_section):
            out[key] = (r["data_type"] or "").strip()
    return out


def _partition_columns(spark: SparkSession, name: str) -> list[str]:
    cols: list[str] = []
    seen = False
    for r in spark.sql(f"DESCRIBE TABLE {_quote(name)}").collect():
        col = (r["col_name"] or "").strip()
        if col == "# Partition Information":
            seen = True
        elif seen and col and not col.startswith("#"):
            cols.append(col)
    return cols


class SparkMetastore:
    """The Spark catalog's side of a catalog table (:class:`~airflow_zorder.core.tables.protocol.Metastore`)."""

    def __init__(self, spark: SparkSession) -> None:
        self._spark = spark

    def describe(self, name: str) -> dict[str, Any]:
        """A Parquet table's locations and columns; refuses missing, non-Parquet and Delta/Hudi/Iceberg tables.

        A Delta/Hudi/Iceberg table is recognised by its provider (or, synced into a Hive metastore, by its
        InputFormat, serde or properties) before any of its files is listed (the format module then probes its
        location too: a table registered as plain Parquet over a Delta directory).
        """
        spark = self._spark
        _refuse_foreign_v1_table(spark, name)
        if not spark.catalog.tableExists(name):
            raise TableError(
                f"table {name!r} does not exist in the Spark catalog; check the name (db.table) "
                "or pass a Parquet directory path instead"
            )
        info = _describe(spark, f"DESCRIBE TABLE EXTENDED {_quote(name)}")
        props = info.get("Table Properties", "")
        refuse_foreign_catalog_table(
            name,
            info.get("Provider"),
            input_format=info.get("InputFormat"),
            serde=info.get("Serde Library"),
            properties={k: v for k in ("table_type", "storage_handler") if (v := _property(props, k)) is not None},
        )
        provider = info.get("Provider", "").lower()
        serde = info.get("Serde Library", "").lower()
        if provider not in ("parquet", "hive") or (provider == "hive" and "parquet" not in serde):
            raise TableError(
                f"table {name!r} is stored as {provider or 'unknown'} ({serde or 'no serde'}); "
                "only Parquet tables can be re-clustered"
            )
        location = info.get("Location")
        if not location:
            raise TableError(f"table {name!r} has no location (a view?); only Parquet tables can be re-clustered")
        pcols = _partition_columns(spark, name)
        partitions = []
        for row in spark.sql(f"SHOW PARTITIONS {_quote(name)}").collect() if pcols else []:
            rel = row[0]
            spec = parse_partition_path(rel)
            pinfo = _describe(spark, f"DESCRIBE TABLE EXTENDED {_quote(name)} PARTITION ({_spec_sql(spec)})")
            partitions.append((rel, spec, pinfo.get("Location", join(location, rel))))
        return {
            "location": location,
            "home": _property(props, HOME_PROPERTY),
            "partition_columns": pcols,
            "data_columns": [f.name for f in spark.table(name).schema.fields if f.name not in set(pcols)],
            "partitions": partitions,
        }

    def pin_home(self, name: str, home: str) -> None:
        """Record the state directory in a table property (once), so it survives location switches."""
        props = _describe(self._spark, f"DESCRIBE TABLE EXTENDED {_quote(name)}").get("Table Properties", "")
        if _property(props, HOME_PROPERTY) is None:
            self._spark.sql(f"ALTER TABLE {_quote(name)} SET TBLPROPERTIES ('{HOME_PROPERTY}' = '{home}')")

    def current_location(self, name: str, unit: Unit) -> str:
        """The catalog's location for the table (unpartitioned) or for one partition."""
        if unit.spec:
            sql = f"DESCRIBE TABLE EXTENDED {_quote(name)} PARTITION ({_spec_sql(unit.spec)})"
        else:
            sql = f"DESCRIBE TABLE EXTENDED {_quote(name)}"
        return _describe(self._spark, sql)["Location"]

    def switch_location(self, name: str, unit: Unit, location: str) -> None:
        """One metastore update: readers planning after it see only the new files, before it only the old."""
        target = f"PARTITION ({_spec_sql(unit.spec)}) " if unit.spec else ""
        self._spark.sql(f"ALTER TABLE {_quote(name)} {target}SET LOCATION '{location}'")
        self._spark.sql(f"REFRESH TABLE {_quote(name)}")


def _refuse_foreign_v1_table(spark: SparkSession, name: str) -> None:
    """Refuse a session-catalog table whose ``CatalogTable.provider`` is delta/hudi/iceberg, from its metadata alone.

    ``tableExists`` and ``DESCRIBE`` resolve the table's data source: without the format's jars they
    fail with DATA_SOURCE_NOT_FOUND instead of naming the problem. The raw metadata needs no jars.
    Tables of other catalogs (``cat.db.t``) and Spark Connect sessions are left to the DESCRIBE check.
    """
    try:
        jspark = spark._jsparkSession
        ident = jspark.sessionState().sqlParser().parseTableIdentifier(name)
        session_catalog = jspark.sessionState().catalog()
        if not session_catalog.tableExists(ident):
            return
        meta = session_catalog.getTableMetadata(ident)

        def opt(option):  # a scala.Option's value, or None
            return option.get() if option.isDefined() else None

        provider, storage = opt(meta.provider()), meta.storage()
        input_format, serde = opt(storage.inputFormat()), opt(storage.serde())
        props = {k: v for k in ("table_type", "storage_handler") if (v := opt(meta.properties().get(k))) is not None}
    except Exception:  # noqa: BLE001 - not a v1 table, or no JVM session: the DESCRIBE check below applies
        return
    refuse_foreign_catalog_table(name, provider, input_format=input_format, serde=serde, properties=props)


def _property(props: str, key: str) -> str | None:
    # DESCRIBE shows properties as "[k1=v1, k2=v2]"
    body = props.strip().lstrip("[").rstrip("]")
    for item in body.split(", "):
        if item.startswith(key + "="):
            return item[len(key) + 1 :]
    return None


def iceberg_catalog_properties(catalog: str | None, catalog_file: str | None) -> dict[str, str] | None:
    """The properties of Iceberg catalog ``catalog`` from ``--iceberg-catalog-file`` (shipped by the operators with
    ``--files``: found in SparkFiles' root or the working directory), or None (its own configuration applies)."""
    if not catalog or not catalog_file:
        return None
    import os

    from pyspark import SparkFiles

    from airflow_zorder.core.iceberg.catalogs import catalog_file_properties

    dirs = [os.getcwd()]
    try:
        dirs.insert(0, SparkFiles.getRootDirectory())
    except Exception:  # noqa: BLE001 - no SparkContext yet: the working directory only
        pass
    return catalog_file_properties(catalog_file, catalog, dirs)
