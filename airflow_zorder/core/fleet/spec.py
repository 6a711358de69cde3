"""The fleet's tables: entries from a JSON/YAML list (a file, an Airflow Variable) or ``[zorder] tables``, and
discovery rules (Delta tables under a prefix, an Iceberg namespace) expanded into tables.

An entry is a table (``table``, optional ``columns``, ``curve``, ``target_file_size``, ``stats_location``,
``conn_id`` (the storage connection its stats and files are read with), ``iceberg_catalog`` or ``iceberg_conn_id``,
``read_weight``) or a discovery rule (``discover: delta`` with ``prefix``, or ``discover:
iceberg`` with ``catalog`` and ``namespace``; its other keys apply to every table found). Without ``columns`` a
table is judged on its last clustering's columns, else every column with statistics (the sensor's rule).
"""

from __future__ import annotations

import json
import posixpath
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from airflow_zorder.core.errors import InvalidInputError
from airflow_zorder.core.names import parse_names
from airflow_zorder.core.storage.io import filesystem_for
from airflow_zorder.core.storage.io.paths import join

__all__ = [
    "TABLE_KEYS",
    "FleetTable",
    "discover_delta",
    "discover_iceberg",
    "expand",
    "parse_entries",
    "parse_spec_text",
    "read_spec",
]

TABLE_KEYS = (
    "table",
    "columns",
    "curve",
    "target_file_size",
    "stats_location",
    "conn_id",
    "iceberg_catalog",
    "iceberg_conn_id",
    "read_weight",
)
_RULE_KEYS = {"discover", "prefix", "catalog", "namespace"}
DEFAULT_CURVE = "zorder"


@dataclass(frozen=True)
class FleetTable:
    """One table of the fleet, as the planner evaluates it and the re-cluster task is given it."""

    table: str
    columns: tuple[str, ...] = ()  # empty: the sensor's default columns
    curve: str = DEFAULT_CURVE
    target_file_size: str = ""  # "": the job's default
    stats_location: str = ""  # "": the table's default
    conn_id: str = ""  # the storage connection opening its store ("": the fleet's)
    iceberg_catalog: str = ""  # a pyiceberg catalog's name: ``table`` is ``namespace.table`` in it
    iceberg_conn_id: str = ""  # or an Airflow ``iceberg`` connection naming the catalog
    read_weight: float | None = None  # how much the table is read (None: unknown, weighted as 1)

    @property
    def weight(self) -> float:
        """The read weight the ranking uses: the given one, else 1 (every table read alike)."""
        return 1.0 if self.read_weight is None else float(self.read_weight)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (the records, the XCom)."""
        out = asdict(self)
        out["columns"] = list(self.columns)
        return out


def _table(entry: Mapping[str, Any], base: str | None = None) -> FleetTable:
    unknown = set(entry) - set(TABLE_KEYS)
    if unknown:
        raise InvalidInputError(f"unknown key(s) {sorted(unknown)} in fleet entry {dict(entry)!r}; known: {TABLE_KEYS}")
    table = str(entry.get("table") or "").strip()
    if not table:
        raise InvalidInputError(f"fleet entry {dict(entry)!r} needs 'table' (a path/URI, db.table or namespace.table)")
    in_catalog = entry.get("iceberg_catalog") or entry.get("iceberg_conn_id")
    if base and not in_catalog and table.startswith(".") and "://" not in table:
        table = join(base, table)
        table = posixpath.normpath(table) if "://" not in base else table
    weight = entry.get("read_weight")
    if weight is not None and (isinstance(weight, bool) or not isinstance(weight, (int, float)) or weight < 0):
        raise InvalidInputError(f"read_weight of {table!r} must be a number >= 0, not {weight!r}")
    cols = entry.get("columns")
    return FleetTable(
        table=table,
        columns=tuple(parse_names(cols, "columns")) if cols else (),
        curve=str(entry.get("curve") or DEFAULT_CURVE),
        target_file_size=str(entry.get("target_file_size") or ""),
        stats_location=str(entry.get("stats_location") or ""),
        conn_id=str(entry.get("conn_id") or "").strip(),
        iceberg_catalog=str(entry.get("iceberg_catalog") or ""),
        iceberg_conn_id=str(entry.get("iceberg_conn_id") or ""),
        read_weight=None if weight is None else float(weight),
    )


def parse_entries(entries: Any, source: str = "fleet spec") -> list[dict[str, Any]]:
    """The entries of a spec (a list of mappings), each checked for its kind; tables and rules as given."""
    if isinstance(entries, Mapping) and "tables" in entries:
        entries = entries["tables"]
    if not isinstance(entries, list):
        raise InvalidInputError(f"{source} must be a list of tables (or a mapping with 'tables'), not {entries!r:.80}")
    out = []
    for e in entries:
        if isinstance(e, str):
            e = {"table": e}
        if not isinstance(e, Mapping):
            raise InvalidInputError(f"{source}: each entry is a mapping with 'table' or 'discover', not {e!r:.80}")
        if "discover" in e and e["discover"] not in ("delta", "iceberg"):
            raise InvalidInputError(f"{source}: discover must be 'delta' or 'iceberg', not {e['discover']!r}")
        out.append(dict(e))
    return out


def parse_spec_text(text: str, source: str = "fleet spec") -> list[dict[str, Any]]:
    """A spec's entries from JSON or YAML text (JSON is YAML; YAML only when PyYAML is installed)."""
    try:
        doc = json.loads(text)
    except ValueError:
        try:
            import yaml
        except ImportError:
            raise InvalidInputError(f"{source} is not JSON (install PyYAML to read YAML)") from None
        try:
            doc = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise InvalidInputError(f"{source} is neither JSON nor YAML: {exc}") from None
    return parse_entries(doc, source)


def read_spec(location: str, filesystem: Any = None) -> list[dict[str, Any]]:
    """A spec file's entries (JSON or YAML, any store), read through the I/O seam."""
    fs = filesystem_for(location, filesystem=filesystem)
    return parse_spec_text(fs.read_text(location), location)


def discover_delta(prefix: str, filesystem: Any = None) -> list[str]:
    """The Delta tables under ``prefix``: every directory holding a ``_delta_log/`` (one listing), sorted."""
    fs = filesystem_for(prefix, filesystem=filesystem)
    roots = set()
    for f in fs.list_files(prefix, recursive=True):
        head, sep, _ = f.path.partition("/_delta_log/")
        if sep and "/_delta_log/" not in head:
            roots.add(head)
    return sorted(roots)


def discover_iceberg(catalog: str, namespace: str, properties: Mapping[str, str] | None = None) -> list[str]:
    """The tables (``namespace.table``) of an Iceberg catalog's namespace, sorted."""
    from airflow_zorder.core.iceberg.catalogs import load_catalog

    cat = load_catalog(catalog, properties)
    return sorted(".".join(t) for t in cat.list_tables(namespace))


def expand(
    entries: Iterable[Mapping[str, Any]],
    *,
    base: str | None = None,
    list_delta: Callable[[str], Sequence[str]] = discover_delta,
    list_iceberg: Callable[[str, str], Sequence[str]] = discover_iceberg,
) -> tuple[list[FleetTable], list[dict[str, Any]]]:
    """``(tables, errors)``: the entries' tables, discovery rules expanded (a table listed twice is kept once, the
    first entry wins); a rule that fails is an error record (``{"rule", "error"}``), never the fleet's end."""
    tables: dict[str, FleetTable] = {}
    errors: list[dict[str, Any]] = []
    for e in entries:
        rule = e.get("discover")
        if rule is None:
            t = _table(e, base)
            tables.setdefault(t.table, t)
            continue
        rest = {k: v for k, v in e.items() if k not in _RULE_KEYS}
        try:
            if rule == "delta":
                if not e.get("prefix"):
                    raise InvalidInputError("discover: delta needs 'prefix' (the directory holding the tables)")
                found = [{**rest, "table": t} for t in list_delta(str(e["prefix"]))]
            else:
                if not e.get("catalog") or not e.get("namespace"):
                    raise InvalidInputError("discover: iceberg needs 'catalog' and 'namespace'")
                names = list_iceberg(str(e["catalog"]), str(e["namespace"]))
                found = [{**rest, "table": t, "iceberg_catalog": str(e["catalog"])} for t in names]
            for f in found:
                t = _table(f, base)
                tables.setdefault(t.table, t)
        except Exception as exc:  # noqa: BLE001 - a rule that fails is recorded; the fleet goes on
            errors.append({"rule": dict(e), "error": f"{type(exc).__name__}: {exc}"})
    return list(tables.values()), errors
