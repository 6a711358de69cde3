"""Airflow's own authentication for the plugin's routes (Airflow does not authenticate plugin FastAPI apps).

The user comes from the same place as for Airflow's core API and UI: ``core_api.security.get_user``
(a ``Authorization: Bearer <JWT>`` header, else the UI's ``_token`` session cookie).  The pages then need
the auth manager's permission to view the Airflow website; tables found in XComs are further limited to
the DAGs the user may read.  Airflow modules are imported on first use: the plugin is also loaded by
schedulers and workers, which never serve these routes.
"""

from __future__ import annotations

from typing import Annotated, Any
from urllib.parse import parse_qs, urlencode, urlsplit

from fastapi import Depends, HTTPException, Request, status
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

_bearer = HTTPBearer(
    auto_error=False, description="An Airflow JWT (POST /auth/token); the UI's session cookie works too."
)


async def authenticated_user(
    request: Request,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
) -> Any:
    """The signed-in Airflow user, allowed to view the website; 401 when not signed in, 403 when not allowed."""
    from airflow.api_fastapi.app import get_auth_manager
    from airflow.api_fastapi.auth.managers.models.resource_details import AccessView
    from airflow.api_fastapi.core_api.security import get_user

    user = await get_user(request, None, credentials)
    if not get_auth_manager().is_authorized_view(access_view=AccessView.WEBSITE, user=user):
        raise HTTPException(status.HTTP_403_FORBIDDEN, "Forbidden")
    return user


def readable_dag_ids(user: Any) -> set[str]:
    """DAG ids the user may read (XCom-discovered tables are shown only for these)."""
    from airflow.api_fastapi.app import get_auth_manager

    return set(get_auth_manager().get_authorized_dag_ids(user=user, method="GET"))


def login_url(next_url: str) -> str:
    """The auth manager's login page, coming back to ``next_url`` after signing in.

    Airflow 3.2's SimpleAuthManager ignores ``next_url`` (3.3 adds it) while its login page reads
    ``?next=``: the parameter is added when the auth manager's URL lacks it.
    """
    from airflow.api_fastapi.app import get_auth_manager

    url = get_auth_manager().get_url_login(next_url=next_url)
    query = urlsplit(url).query
    if "next" not in parse_qs(query):
        url += ("&" if query else "?") + urlencode({"next": next_url})
    return url
