"""The FastAPI app mounted at ``/zorder`` in the Airflow API server: HTML pages and their JSON twins.

Routes (all behind :func:`~airflow_zorder.plugins.auth.authenticated_user`):
``/`` all tables, ``/table?table=...`` one table, ``/api/tables`` and ``/api/table?table=...`` the same data as JSON;
``/fleet?name=...`` and ``/api/fleet?name=...`` a fleet DAG's runs (:mod:`~airflow_zorder.plugins.fleet_page`).
Every Airflow process loads plugins (schedulers, workers), so the data modules (pyarrow, numpy) and the
templates are imported on the first request, not with the plugin.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from fastapi import Depends, FastAPI, HTTPException, Query, Request, status
from fastapi.encoders import jsonable_encoder
from fastapi.responses import HTMLResponse, JSONResponse

from airflow_zorder.plugins import auth
from airflow_zorder.plugins.rendering import TITLE, render

if TYPE_CHECKING:
    from airflow_zorder.plugins.discovery import TableRef

__all__ = ["TITLE", "create_app"]


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


def create_app() -> FastAPI:
    """The plugin's FastAPI app (mounted by Airflow at :data:`~airflow_zorder.table_access.URL_PREFIX`)."""
    app = FastAPI(
        title=TITLE,
        description="Clustering health of the tables kept by airflow-zorder.",
        docs_url=None,
        redoc_url=None,
        openapi_url=None,
    )
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
        return render(
            "error.html", status_code=exc.status_code, code=exc.status_code, detail=str(exc.detail), login_url=login
        )

    @app.get("/", response_class=HTMLResponse)
    def index(user: Any = user_dep) -> HTMLResponse:
        from airflow_zorder.plugins import page_data

        rows = [page_data.summary(r) for r in _tables_for(user)]
        return render("index.html", rows=rows)

    @app.get("/table", response_class=HTMLResponse)
    def table_page(table: str = Query(..., min_length=1), user: Any = user_dep) -> HTMLResponse:
        from airflow_zorder.plugins import page_charts, page_data

        ref = _table_or_404(table, user)
        try:
            d = page_data.detail(ref)
        except Exception as exc:  # noqa: BLE001 - show why (no stats yet, unreadable location, ...)
            return render("table.html", ref=ref, d=None, error=f"{type(exc).__name__}: {exc}")
        return render(
            "table.html",
            ref=ref,
            d=d,
            error=None,
            history_chart=page_charts.history_chart(d),
            runs_chart=page_charts.runs_chart(d),
            histogram_charts=page_charts.histogram_charts(d),
        )

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

    @app.get("/fleet", response_class=HTMLResponse)
    def fleet(name: str | None = Query(None), user: Any = user_dep) -> HTMLResponse:
        from airflow_zorder.plugins import fleet_page

        names = fleet_page.fleets(auth.readable_dag_ids(user))
        name = name or (names[0] if names else None)
        if name is None:
            return render("fleet.html", names=names, d=None, error=None)
        if name not in names:
            raise HTTPException(status.HTTP_404_NOT_FOUND, f"no fleet {name!r} you can read has recorded a run")
        try:
            d = fleet_page.fleet_detail(name)
        except Exception as exc:  # noqa: BLE001 - show why (unreadable records, ...)
            return render("fleet.html", names=names, d=None, error=f"{type(exc).__name__}: {exc}")
        shown = fleet_page.fleet_charts(d)
        return render(
            "fleet.html", names=names, d=d, error=None, spent_chart=shown["spent"], savings_chart=shown["savings"]
        )

    @app.get("/api/fleet")
    def api_fleet(name: str = Query(..., min_length=1), user: Any = user_dep) -> JSONResponse:
        from airflow_zorder.plugins import fleet_page

        if name not in fleet_page.fleets(auth.readable_dag_ids(user)):
            raise HTTPException(status.HTTP_404_NOT_FOUND, f"no fleet {name!r} you can read has recorded a run")
        return JSONResponse(jsonable_encoder(fleet_page.fleet_detail(name)))

    return app
