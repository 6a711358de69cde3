"""Which tables the health pages show: the ``[zorder] tables`` option plus tables seen in this provider's XComs.

1. ``[zorder] tables`` (env ``AIRFLOW__ZORDER__TABLES``): entries separated by newlines or commas,
   each ``<table>``, ``<table>|<stats location>`` or ``<table>|<stats location>|<conn id>`` (a Parquet
   directory path/URI, whose stats live in ``<table>/_zorder/stats`` by default, or a catalog name
   ``db.table``, which needs its stats location; the connection's credentials open the store,
   as for ``FileStatsHook``). An Iceberg table adds a fourth field, ``iceberg_catalog=<name>`` (a pyiceberg
   catalog) or ``iceberg_conn_id=<conn id>`` (an Airflow ``iceberg`` connection): ``ns.events|||iceberg_catalog=lake``
   (its stats location then defaults to the table's location).
2. The return values (XCom ``return_value``) of this provider's tasks in the Airflow metadata DB: the
   stats job, the clustering job and the sensor all return a dict with ``table`` and ``stats_location``
   (and ``conn_id`` when they used one).
   Only the newest ``[zorder] xcom_scan_limit`` (default 1000) such XComs are read, and only from DAGs
   the signed-in user may read.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from airflow_zorder.core.errors import InvalidInputError
from airflow_zorder.core.jobs.options import stats_location_for
from airflow_zorder.table_access import CATALOG_KEYS

log = logging.getLogger(__name__)

CONFIG_SECTION = "zorder"
DEFAULT_XCOM_SCAN_LIMIT = 1000


@dataclass(frozen=True)
class TableRef:
    """A table to show: its name as given to the jobs, where its stats live, and where it was found."""

    table: str
    stats_location: str | None
    conn_id: str | None = None  # the connection FileStatsHook reads the stats with
    iceberg_catalog: str | None = None  # an Iceberg table's pyiceberg catalog
    iceberg_conn_id: str | None = None  # or the Airflow iceberg connection naming it
    sources: tuple[str, ...] = ()  # "config" and/or "dag:<dag_id>/<task_id>"
    dag_ids: frozenset[str] = field(default_factory=frozenset)
    seen_at: dt.datetime | None = None  # newest XCom mentioning it
    error: str | None = None  # why its stats cannot be located


def _ref(table: str, stats_location: str | None, source: str, conn_id: str | None = None, **kw: Any) -> TableRef:
    table = table.strip()
    iceberg = bool(kw.get("iceberg_catalog") or kw.get("iceberg_conn_id"))
    loc = stats_location_for(table, stats_location)
    error = None
    if loc is None and not iceberg:  # an Iceberg table's stats location defaults to its location (the hook's)
        error = (
            f"{table!r} is a catalog table: give its stats location in [zorder] tables as '{table}|<stats location>'"
        )
    return TableRef(
        table=table, stats_location=loc, conn_id=(conn_id or "").strip() or None, sources=(source,), error=error, **kw
    )


def parse_tables_option(text: str) -> list[TableRef]:
    """Parse the ``[zorder] tables`` value (see the module doc); raises ValueError naming a bad entry."""
    out: list[TableRef] = []
    for raw in text.replace("\n", ",").split(","):
        entry = raw.strip()
        if not entry or entry.startswith("#"):
            continue
        parts = [p.strip() for p in entry.split("|")]
        key, _, value = parts[3].partition("=") if len(parts) == 4 else ("", "", "")
        if len(parts) > 4 or not parts[0] or (len(parts) == 4 and (key not in CATALOG_KEYS or not value.strip())):
            raise InvalidInputError(
                f"bad [zorder] tables entry {entry!r}: expected '<table>', '<table>|<stats location>', "
                "'<table>|<stats location>|<conn id>', or for an Iceberg table a fourth field "
                "'iceberg_catalog=<name>' or 'iceberg_conn_id=<conn id>'"
            )
        parts += [""] * (3 - len(parts))
        catalog = {key: value.strip()} if key else {}
        out.append(_ref(parts[0], parts[1], "config", conn_id=parts[2], **catalog))
    return out


def configured_tables() -> list[TableRef]:
    """Tables listed in ``[zorder] tables`` (empty when the option is not set)."""
    from airflow.configuration import conf

    return parse_tables_option(conf.get(CONFIG_SECTION, "tables", fallback="") or "")


def _payload(value: Any) -> dict[str, Any] | None:
    for _ in range(2):  # values may be stored JSON-encoded twice (serialize_value + JSON column)
        if isinstance(value, str):
            try:
                value = json.loads(value)
            except ValueError:
                return None
    if isinstance(value, dict) and isinstance(value.get("table"), str) and isinstance(value.get("stats_location"), str):
        return value
    return None


def xcom_tables(dag_ids: set[str] | None = None, limit: int | None = None) -> list[TableRef]:
    """Tables named in the newest return values carrying ``table`` and ``stats_location`` (newest first).

    ``dag_ids``: only XComs of these DAGs (``None``: all).
    """
    from airflow.configuration import conf
    from airflow.models.xcom import XCOM_RETURN_KEY, XComModel
    from airflow.utils.session import create_session
    from sqlalchemy import String, cast, select

    if limit is None:
        limit = conf.getint(CONFIG_SECTION, "xcom_scan_limit", fallback=DEFAULT_XCOM_SCAN_LIMIT)
    if dag_ids is not None and not dag_ids:
        return []
    stmt = (
        select(XComModel.dag_id, XComModel.task_id, XComModel.timestamp, XComModel.value)
        .where(XComModel.key == XCOM_RETURN_KEY, cast(XComModel.value, String).like("%stats_location%"))
        .order_by(XComModel.timestamp.desc())
        .limit(limit)
    )
    if dag_ids is not None:
        stmt = stmt.where(XComModel.dag_id.in_(sorted(dag_ids)))
    with create_session() as session:
        rows = session.execute(stmt).all()
    refs: list[TableRef] = []
    for dag_id, task_id, ts, value in rows:
        p = _payload(value)
        if p is None:
            continue
        conn = p.get("conn_id") if isinstance(p.get("conn_id"), str) else None
        catalog = {k: p[k] for k in CATALOG_KEYS if isinstance(p.get(k), str) and p[k]}
        refs.append(
            _ref(
                p["table"],
                p["stats_location"],
                f"dag:{dag_id}/{task_id}",
                conn_id=conn,
                dag_ids=frozenset([dag_id]),
                seen_at=ts,
                **catalog,
            )
        )
    return refs


def merge(refs: Iterable[TableRef]) -> list[TableRef]:
    """One entry per table name: the first stats location given wins (config before XCom, newest XCom first)."""
    by_name: dict[str, TableRef] = {}
    for r in refs:
        old = by_name.get(r.table)
        if old is None:
            by_name[r.table] = r
            continue
        seen = max((t for t in (old.seen_at, r.seen_at) if t is not None), default=None)
        first = old if old.stats_location else r
        by_name[r.table] = TableRef(
            table=old.table,
            stats_location=first.stats_location,
            conn_id=first.conn_id,
            iceberg_catalog=first.iceberg_catalog or old.iceberg_catalog or r.iceberg_catalog,
            iceberg_conn_id=first.iceberg_conn_id or old.iceberg_conn_id or r.iceberg_conn_id,
            error=first.error,
            seen_at=seen,
            sources=old.sources + tuple(s for s in r.sources if s not in old.sources),
            dag_ids=old.dag_ids | r.dag_ids,
        )
    return sorted(by_name.values(), key=lambda r: r.table)


def discover_tables(readable_dag_ids: set[str] | None = None) -> list[TableRef]:
    """All tables to show: configured ones, then those in XComs of ``readable_dag_ids`` (``None``: any DAG)."""
    refs = list(configured_tables())
    try:
        refs += xcom_tables(readable_dag_ids)
    except Exception:  # noqa: BLE001 - a metadata DB hiccup must not hide the configured tables
        log.exception("zorder: could not read tables from XComs")
    return merge(refs)


def find_table(table: str, readable_dag_ids: set[str] | None = None) -> TableRef | None:
    """The discovered table with this name (a trailing ``/`` aside), or ``None``: the pages read known tables only."""
    want = table.strip().rstrip("/")
    return next((r for r in discover_tables(readable_dag_ids) if r.table.rstrip("/") == want), None)
