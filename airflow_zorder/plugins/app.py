"""The FastAPI app mounted at ``/zorder`` in the Airflow API server: HTML pages and their JSON twins.

Routes (all behind :func:`~airflow_zorder.plugins.auth.authenticated_user`):
``/`` all tables, ``/table?table=...`` one table, ``/api/tables`` and ``/api/table?table=...`` the same data as JSON.
Every Airflow process loads plugins (schedulers, workers), so the data modules (pyarrow, numpy) and the
templates are imported on the first request, not with the plugin.
"""

from __future__ import annotations

import datetime as dt
import functools
import math
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from fastapi import Depends, FastAPI, HTTPException, Query, Request, status
from fastapi.encoders import jsonable_encoder
from fastapi.responses import HTMLResponse, JSONResponse

from airflow_zorder.plugins import auth, charts

if TYPE_CHECKING:
    from airflow_zorder.plugins.discovery import TableRef

TITLE = "Z-order table health"


@functools.cache
def _templates() -> Any:
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.PackageLoader("airflow_zorder.plugins", "templates"),
        autoescape=jinja2.select_autoescape(["html"]),
        undefined=jinja2.StrictUndefined,
    )
    env.filters.update(qs=lambda v: quote(str(v), safe=""), pct=fmt_pct, ratio=fmt_ratio, num=fmt_num,
                       size=fmt_bytes, age=fmt_age, ts=fmt_ts)
    return env


def fmt_pct(v: float | None) -> str:
    """0.4349 -> '43.5%'."""
    return "—" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{100 * v:.1f}%"


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
    from airflow_zorder.core.policy.recluster_policy import format_duration

    return format_duration(float(seconds))


def fmt_ts(t: dt.datetime | str | None) -> str:
    """A UTC time as 'YYYY-mm-dd HH:MM:SS UTC'."""
    from airflow_zorder.core.stats.stats_store import as_datetime

    t = as_datetime(t)
    return "never" if t is None else t.astimezone(dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


def _render(name: str, status_code: int = 200, **ctx: Any) -> HTMLResponse:
    html = _templates().get_template(name).render(title=TITLE, **ctx)
    return HTMLResponse(html, status_code=status_code)


def _tables_for(user: Any) -> list[TableRef]:
    from airflow_zorder.plugins import discovery

    return discovery.discover_tables(auth.readable_dag_ids(user))


def _table_or_404(table: str, user: Any) -> TableRef:
    from airflow_zorder.plugins import discovery

    ref = discovery.find_table(table, auth.readable_dag_ids(user))
    if ref is None:
        raise HTTPException(
            status.HTTP_404_NOT_FOUND,
            f"table {table!r} is not known here: list it in [zorder] tables (AIRFLOW__ZORDER__TABLES), or run one of "
            "this provider's tasks on it in a DAG you can read",
        )
    return ref


def _history_chart(d: dict[str, Any]) -> str:
    from airflow_zorder.core.stats.stats_store import as_datetime

    hist = d["history"]
    cols = [c["column"] for c in d["columns"]]
    series = [
        charts.Series(
            name=c,
            points=[(h["at"], ((h["evaluation"].get("columns") or {}).get(c) or {}).get("partition_ratio"))
                    for h in hist if h["at"] is not None],
            ids=[str(h["snapshot_id"]) for h in hist if h["at"] is not None],
        )
        for c in cols
    ]
    markers = []
    for e in d["cluster_events"]:
        at = as_datetime(e.get("at"))
        if at is None:
            continue
        parts = e.get("partitions") or []
        files = f"files {e.get('files_before')} -> {e.get('files_after')}" if e.get("files_before") is not None else ""
        markers.append(charts.Marker(
            at=at, kind="cluster", label=f"re-clustered ({e.get('curve') or '?'})",
            title=f"re-clustered {fmt_ts(at)}: {e.get('status') or ''}, curve {e.get('curve')}, "
                  f"columns {', '.join(e.get('columns') or [])}, {len(parts)} partition(s) {files}",
        ))
    refs = [charts.RefLine(1.0, "ideal = 1", kind="ideal")]
    threshold = (d["evaluation"].get("policy") or {}).get("max_ratio_to_ideal")
    if threshold and not d["evaluation"].get("num_partitions"):
        # the sensor compares each partition with the threshold: a line is exact only without partitions
        refs.append(charts.RefLine(float(threshold), f"re-cluster above {threshold:g}x", kind="threshold"))
    return charts.line_chart(series, markers=markers, refs=refs, title="Files a point query reads, times the ideal",
                             y_label="files read / ideal")


def _histogram_charts(d: dict[str, Any]) -> dict[str, str]:
    out = {}
    for c, hist in d["histograms"].items():
        keys = sorted(hist, key=int)
        # bucket 0 is always empty (every ranged file has depth >= 1); trailing empty buckets add nothing
        while keys and hist[keys[-1]] == 0 and int(keys[-1]) > 1:
            keys.pop()
        bars = [charts.Bar(label=str(int(k)), value=float(hist[k]), attrs={"bucket": k},
                           title=f"{hist[k]} file(s) of depth {'<= ' if int(k) > 16 else ''}{int(k)}")
                for k in keys if int(k) >= 1]
        out[c] = charts.bar_chart(bars, title=f"Depth histogram of {c}", x_label="depth (files stacked at a value)",
                                  y_label="files")
    return out


def create_app() -> FastAPI:
    """The plugin's FastAPI app (mounted by Airflow at :data:`~airflow_zorder.plugins.urls.URL_PREFIX`)."""
    app = FastAPI(title=TITLE, description="Clustering health of the tables kept by airflow-zorder.",
                  docs_url=None, redoc_url=None, openapi_url=None)
    user_dep = Depends(auth.authenticated_user)

    @app.exception_handler(HTTPException)
    async def _errors(request: Request, exc: HTTPException) -> Any:
        wants_html = "text/html" in request.headers.get("accept", "") and "/api/" not in request.url.path
        if not wants_html:
            return JSONResponse({"detail": exc.detail}, status_code=exc.status_code, headers=exc.headers)
        login = None
        if exc.status_code == status.HTTP_401_UNAUTHORIZED:
            try:
                login = auth.login_url(str(request.url))
            except Exception:  # noqa: BLE001 - no auth manager (should not happen in the API server)
                login = None
        return _render("error.html", status_code=exc.status_code, code=exc.status_code, detail=str(exc.detail),
                       login_url=login)

    @app.get("/", response_class=HTMLResponse)
    def index(user: Any = user_dep) -> HTMLResponse:
        from airflow_zorder.plugins import page_data

        rows = [page_data.summary(r) for r in _tables_for(user)]
        return _render("index.html", rows=rows)

    @app.get("/table", response_class=HTMLResponse)
    def table_page(table: str = Query(..., min_length=1), user: Any = user_dep) -> HTMLResponse:
        from airflow_zorder.plugins import page_data

        ref = _table_or_404(table, user)
        try:
            d = page_data.detail(ref)
        except Exception as exc:  # noqa: BLE001 - show why (no stats yet, unreadable location, ...)
            return _render("table.html", ref=ref, d=None, error=f"{type(exc).__name__}: {exc}")
        return _render("table.html", ref=ref, d=d, error=None, history_chart=_history_chart(d),
                       histogram_charts=_histogram_charts(d))

    @app.get("/api/tables")
    def api_tables(user: Any = user_dep) -> JSONResponse:
        from airflow_zorder.plugins import page_data

        return JSONResponse(jsonable_encoder([page_data.summary(r) for r in _tables_for(user)]))

    @app.get("/api/table")
    def api_table(table: str = Query(..., min_length=1), user: Any = user_dep) -> JSONResponse:
        from airflow_zorder.plugins import page_data

        ref = _table_or_404(table, user)
        try:
            d = page_data.detail(ref)
        except (LookupError, OSError, ValueError) as exc:  # no stats, storage, connection, foreign table format
            raise HTTPException(status.HTTP_409_CONFLICT, f"{type(exc).__name__}: {exc}") from exc
        return JSONResponse(jsonable_encoder(d))

    return app
