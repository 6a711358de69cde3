"""Spark event logs as workloads: each SQL execution's scans of Parquet tables and the filters pushed into them.

A ``SparkListenerSQLExecutionStart`` event carries the execution's physical plan as text
(``physicalPlanDescription``); each ``Scan parquet`` node in it names its table (a catalog name, or the
``Location`` of a path table), its ``ReadSchema`` and its ``PushedFilters`` (``[EqualTo(a,5), In(b, [1,2]),
StringStartsWith(s,ab), ...]``: Spark's data source filters, the ones that can skip files). Each scan becomes the
statement ``SELECT * FROM <table> WHERE <its filters>`` in Spark SQL, literals typed by the read schema, so that
it is read like any other statement (:mod:`~airflow_zorder.core.advisor.extraction`). When the event's
``description`` is itself SQL (the Thrift server and ``spark-sql`` put the statement there) it is used as is.

Logs are JSON lines, plain or compressed with zstd (Spark 4's default codec; ``.zstd``), one file or a directory
(``spark.eventLog.dir``, rolling ``eventlog_v2_*`` directories included). Other codecs (lz4, snappy: Spark frames
them its own way) are refused with the setting that avoids them.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
from sqlglot import exp

from airflow_zorder.core.advisor.workload import Statement
from airflow_zorder.core.errors import InvalidInputError

__all__ = ["is_event_log", "pushed_filters_sql", "read_event_log", "scan_statements"]

_SQL_START = "org.apache.spark.sql.execution.ui.SparkListenerSQLExecutionStart"
_SCAN = re.compile(r"^\(\d+\) Scan parquet ?(\S*)\s*$")
_COMPARISONS = {
    "EqualTo": "=",
    "EqualNullSafe": "=",
    "GreaterThan": ">",
    "GreaterThanOrEqual": ">=",
    "LessThan": "<",
    "LessThanOrEqual": "<=",
}
_QUOTED_TYPES = ("string", "varchar", "char")


def _log_files(path: Path) -> list[Path]:
    if path.is_file():
        return [path]
    return sorted(
        p for p in path.rglob("*") if p.is_file() and not p.name.startswith(".") and "appstatus" not in p.name
    )


def _lines(path: Path) -> Iterator[str]:
    suffix = path.suffix.lower()
    if suffix in (".zstd", ".zst"):
        with pa.CompressedInputStream(pa.OSFile(str(path)), "zstd") as stream:
            data = stream.read()
    elif suffix in (".lz4", ".snappy", ".lzf"):
        raise InvalidInputError(
            f"{path}: Spark's {suffix[1:]} event logs are framed by Spark itself: set "
            "spark.eventLog.compression.codec=zstd (Spark 4's default) or spark.eventLog.compress=false"
        )
    else:
        data = path.read_bytes()
    yield from data.decode(errors="replace").splitlines()


def is_event_log(path: str | os.PathLike[str]) -> bool:
    """Does ``path`` look like a Spark event log (a file, or a directory holding ``events_*``/``eventlog``
    files, or JSON lines that start with ``SparkListenerLogStart``)?"""
    p = Path(path)
    if p.is_dir():
        return any(f.name.startswith(("events_", "eventlog", "app-", "local-")) for f in p.rglob("*") if f.is_file())
    if p.name.startswith(("events_", "app-", "local-")):
        return True
    if p.suffix.lower() not in ("", ".json", ".jsonl", ".inprogress"):
        return False
    with open(p, "rb") as f:
        return b"SparkListenerLogStart" in f.read(512)


def read_event_log(path: str | os.PathLike[str]) -> Iterator[Statement]:
    """The statements of every SQL execution in a Spark event log (file or directory)."""
    p = Path(path)
    if not p.exists():
        raise InvalidInputError(f"no Spark event log at {str(p)!r}: give spark.eventLog.dir or one of its logs")
    for f in _log_files(p):
        for line in _lines(f):
            if _SQL_START not in line[:120]:
                continue
            try:
                event = json.loads(line)
            except json.JSONDecodeError:
                continue
            source = f"{f}#{event.get('executionId', '')}"
            description = str(event.get("description") or "").strip()
            if re.match(r"(?is)^\s*(select|with)\b", description):
                yield Statement(description, "spark", source)
                continue
            for sql in scan_statements(event.get("physicalPlanDescription") or ""):
                yield Statement(sql, "spark", source)


def scan_statements(plan: str) -> list[str]:
    """``SELECT * FROM <table> WHERE <pushed filters>`` for each Parquet scan of a physical plan's text."""
    out = []
    lines = plan.splitlines()
    for i, line in enumerate(lines):
        m = _SCAN.match(line.strip())
        if not m:
            continue
        block: dict[str, str] = {}
        for detail in lines[i + 1 :]:
            if not detail.strip():
                break
            key, _, value = detail.partition(": ")
            block[key.strip()] = value.strip()
        table = m.group(1) or _location(block.get("Location", ""))
        if not table:
            continue
        types = _read_schema(block.get("ReadSchema", ""))
        where = pushed_filters_sql(block.get("PushedFilters", "[]"), types)
        name = table if m.group(1) else exp.to_identifier(table, quoted=True).sql(dialect="spark")
        out.append(f"SELECT * FROM {name}" + (f" WHERE {where}" if where else ""))
    return out


def _location(text: str) -> str:
    """The table's directory of ``InMemoryFileIndex [file:/data/t]`` (its first path)."""
    m = re.search(r"\[([^\],]+)", text)
    return m.group(1).strip() if m else ""


def _read_schema(text: str) -> dict[str, str]:
    """``struct<a:bigint,d:date>`` -> ``{"a": "bigint", "d": "date"}`` (top-level fields)."""
    inner = text[len("struct<") : -1] if text.startswith("struct<") else ""
    out, depth, field = {}, 0, ""
    for ch in inner + ",":
        if ch == "," and depth == 0:
            name, _, ty = field.partition(":")
            out[name.strip("`")] = ty
            field = ""
            continue
        depth += ch in "<(" and 1 or (ch in ">)" and -1 or 0)
        field += ch
    return out


def pushed_filters_sql(text: str, types: dict[str, str]) -> str:
    """Spark's pushed data source filters (``[EqualTo(a,5), IsNotNull(a)]``) as one SQL condition (their AND),
    literals typed by the scan's read schema; ``IsNotNull``, which every scan pushes, and filters it does not
    know are left out."""
    parts = [_filter_sql(f, types) for f in _split_args(text.strip()[1:-1])]
    return " AND ".join(p for p in parts if p)


def _split_args(text: str) -> list[str]:
    out, depth, cur = [], 0, ""
    for ch in text:
        if ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
            continue
        depth += 1 if ch in "([" else -1 if ch in ")]" else 0
        cur += ch
    if cur.strip():
        out.append(cur.strip())
    return out


def _filter_sql(f: str, types: dict[str, str]) -> str:
    name, _, rest = f.partition("(")
    args = _split_args(rest[:-1]) if rest.endswith(")") else []
    if name in ("And", "Or") and len(args) == 2:
        a, b = (_filter_sql(x, types) for x in args)
        return f"({a} {name.upper()} {b})" if a and b else ("" if name == "Or" else a or b)
    if name == "Not" and len(args) == 1:
        a = _filter_sql(args[0], types)
        return f"NOT ({a})" if a else ""
    if not args:
        return ""
    column = args[0]
    col = exp.to_identifier(column, quoted=True).sql(dialect="spark")
    ty = types.get(column, "string")
    if name in _COMPARISONS and len(args) == 2:
        return f"{col} {_COMPARISONS[name]} {_literal(args[1], ty)}"
    if name == "In" and len(args) == 2 and args[1].startswith("["):
        values = _split_args(args[1][1:-1])
        return f"{col} IN ({', '.join(_literal(v, ty) for v in values)})" if values else ""
    if name == "IsNull":
        return f"{col} IS NULL"
    if name == "StringStartsWith" and len(args) == 2:
        return f"{col} LIKE {_literal(args[1].replace('%', '').replace('_', '') + '%', 'string')}"
    return ""  # IsNotNull, StringContains, StringEndsWith, ...: no file skipping to learn from


def _literal(value: str, type_: str) -> str:
    t = type_.lower()
    if t.startswith(_QUOTED_TYPES) or t == "binary":
        return exp.Literal.string(value).sql(dialect="spark")
    if t == "date":
        return f"DATE '{value}'"
    if t.startswith("timestamp"):
        return f"TIMESTAMP '{value}'"
    return value
