"""How the pages are rendered: the Jinja environment over ``templates/`` and its filters (how numbers read).

Light to import (the plugin imports it in every Airflow process): jinja2 and the core's formatter load with the
first page.
"""

from __future__ import annotations

import datetime as dt
import functools
from typing import Any
from urllib.parse import quote

from fastapi.responses import HTMLResponse

TITLE = "Z-order table health"


@functools.cache
def environment() -> Any:
    """The pages' Jinja environment (built once): autoescaped, strict about undefined names, with the filters."""
    import jinja2

    from airflow_zorder.core.policy.formatting import format_percent

    env = jinja2.Environment(
        loader=jinja2.PackageLoader("airflow_zorder.plugins", "templates"),
        autoescape=jinja2.select_autoescape(["html"]),
        undefined=jinja2.StrictUndefined,
    )
    env.filters.update(
        qs=lambda v: quote(str(v), safe=""),
        pct=format_percent,
        ratio=fmt_ratio,
        num=fmt_num,
        size=fmt_bytes,
        age=fmt_age,
        ts=fmt_ts,
    )
    # by name, for macros that take the format as an argument (``cells.html``); no name: the value as is
    env.filters["format_as"] = lambda v, name=None: env.filters[name](v) if name else v
    return env


def fmt_ratio(v: float | None) -> str:
    """2.314 -> '2.31x' (times the ideal)."""
    return "—" if v is None else f"{v:.2f}x"


def fmt_num(v: float | int | None, digits: int = 2) -> str:
    """Integers with thousands separators, floats with ``digits`` decimals."""
    if v is None:
        return "—"
    if isinstance(v, int) or float(v).is_integer() and abs(v) >= 1000:
        return f"{int(v):,}"
    return f"{v:,.{digits}f}"


def fmt_bytes(v: int | None) -> str:
    """1536 -> '1.5 KiB'."""
    if v is None:
        return "—"
    size = float(v)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if size < 1024 or unit == "TiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{v} B"


def fmt_age(seconds: float | None) -> str:
    """Seconds -> '42 s', '5 min', '3.2 h', '4.0 d'."""
    if seconds is None:
        return "—"
    from airflow_zorder.core.policy.formatting import format_duration

    return format_duration(float(seconds))


def fmt_ts(t: dt.datetime | str | None) -> str:
    """A UTC time as 'YYYY-mm-dd HH:MM:SS UTC'."""
    from airflow_zorder.core.stats.stats_store import as_datetime

    t = as_datetime(t)
    return "never" if t is None else t.astimezone(dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def render(name: str, status_code: int = 200, **ctx: Any) -> HTMLResponse:
    """The template ``name`` rendered with the page title and ``ctx``."""
    html = environment().get_template(name).render(title=TITLE, **ctx)
    return HTMLResponse(html, status_code=status_code)
