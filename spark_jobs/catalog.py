"""Catalog (metastore) tables: read their layout, and switch a table's or partition's location atomically."""

from __future__ import annotations

from pyspark.sql import SparkSession

from airflow_zorder.core.storage.filesystems import join
from airflow_zorder.core.storage.locations import parse_partition_path
from airflow_zorder.core.storage.table_formats import refuse_foreign_catalog_table
from spark_jobs.table import HOME_PROPERTY, STATE_DIR, ResolvedTable, TableError, Unit, list_units, refuse_foreign_table


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


def resolve_catalog_table(spark: SparkSession, fs, name: str) -> ResolvedTable:
    """Describe a catalog table; refuse missing, non-Parquet and Delta/Hudi/Iceberg tables with a clear message.

    A Delta/Hudi/Iceberg table is recognised by its provider (or, synced into a Hive metastore, by its
    InputFormat, serde or properties) and also by its location's directory (a table registered as
    plain Parquet over a Delta directory), before any of its files is listed.
    """
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
    refuse_foreign_table(fs, location, table=name)
    home = _property(props, HOME_PROPERTY) or location
    pcols = _partition_columns(spark, name)
    units: list[Unit] = []
    if not pcols:
        _, found = list_units(fs, location)
        files = [f for u in found for f in u.files]
        units.append(Unit("", {}, location, files))
    else:
        for row in spark.sql(f"SHOW PARTITIONS {_quote(name)}").collect():
            rel = row[0]
            spec = parse_partition_path(rel)
            pinfo = _describe(spark, f"DESCRIBE TABLE EXTENDED {_quote(name)} PARTITION ({_spec_sql(spec)})")
            ploc = pinfo.get("Location", join(location, rel))
            _, found = list_units(fs, ploc)
            units.append(Unit(rel, spec, ploc, [f for u in found for f in u.files]))
    return ResolvedTable(name, "catalog", location, home, pcols, units)


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


def ensure_home(spark: SparkSession, ref: ResolvedTable) -> None:
    """Pin the table's state directory in a table property, so it survives location switches."""
    if (
        ref.home == ref.root
        and _property(
            _describe(spark, f"DESCRIBE TABLE EXTENDED {_quote(ref.name)}").get("Table Properties", ""), HOME_PROPERTY
        )
        is None
    ):
        spark.sql(f"ALTER TABLE {_quote(ref.name)} SET TBLPROPERTIES ('{HOME_PROPERTY}' = '{ref.home}')")


def new_location(ref: ResolvedTable, run_id: str, unit: Unit) -> str:
    """Where a run writes a unit's new files: a fresh directory under the table's state dir."""
    return join(ref.home, STATE_DIR, "versions", run_id, unit.relpath)


def current_location(spark: SparkSession, name: str, unit: Unit) -> str:
    """The metastore's location for the table (unpartitioned) or for one partition."""
    if unit.spec:
        sql = f"DESCRIBE TABLE EXTENDED {_quote(name)} PARTITION ({_spec_sql(unit.spec)})"
    else:
        sql = f"DESCRIBE TABLE EXTENDED {_quote(name)}"
    return _describe(spark, sql)["Location"]


def switch_location(spark: SparkSession, name: str, unit: Unit, location: str) -> None:
    """One metastore update: readers planning after it see only the new files, before it only the old."""
    target = f"PARTITION ({_spec_sql(unit.spec)}) " if unit.spec else ""
    spark.sql(f"ALTER TABLE {_quote(name)} {target}SET LOCATION '{location}'")
    spark.sql(f"REFRESH TABLE {_quote(name)}")
