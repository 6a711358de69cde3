"""A ``google_cloud_platform`` connection as GCS options: resolved by the Google provider's ``GoogleBaseHook``.

The hook resolves the connection's credentials the way every Google operator does (extras ``key_path``,
``keyfile_dict``, ``credential_config_file``, ``key_secret_name``, ``is_anonymous``, ``impersonation_chain``,
``project``; none of them: the worker's Application Default Credentials). pyarrow's ``GcsFileSystem`` and pyiceberg
take the access token the hook refreshes; delta-rs has no token option, so it gets the service-account key the token
came from, or its own default chain for ADC, and refuses the kinds it cannot be given (impersonation, external
accounts, Secret Manager keys). An emulator is the extra ``gcs.endpoint`` (the provider's fs convention) or the
``STORAGE_EMULATOR_HOST`` variable. Install with ``pip install 'airflow-zorder[google]'``; docs/connections.md.
"""

from __future__ import annotations

import datetime as dt
import json
from typing import Any
from urllib.parse import urlsplit

from airflow_zorder.core.errors import StorageConnectionError
from airflow_zorder.core.storage.locations import (
    GCS_DELTA_RETRIES,
    GCS_RETRY_TIME_LIMIT_S,
    Location,
    gcs_emulator_endpoint,
)
from airflow_zorder.core.storage.store_options import StoreOptions

__all__ = ["ICEBERG_IO_IMPL", "credential_kind", "delta_options", "gcs_store_options"]

#: the FileIO an Iceberg catalog on GCS gets (``py-io-impl``; a catalog's own setting wins)
ICEBERG_IO_IMPL = "airflow_zorder.core.iceberg.gcs_io.GcsBoundedFileIO"
#: what to do when a connection's credentials cannot reach delta-rs
DELTA_FIX = (
    "Delta logs on GCS are read with a service-account key (key_path or keyfile_dict), anonymously (is_anonymous), "
    "or with the worker's default credentials (no credential extra): give the Delta table such a connection"
)

#: the extras naming a credential, in the order the hook checks them (they are mutually exclusive)
_KINDS = ("is_anonymous", "key_path", "keyfile_dict", "credential_config_file", "key_secret_name", "idp_issuer_url")


def _hook(conn_id: str) -> Any:
    try:
        from airflow.providers.google.common.hooks.base_google import GoogleBaseHook
    except ImportError as exc:
        raise StorageConnectionError(
            f"connection {conn_id!r} is a 'google_cloud_platform' connection, which needs the Google provider: "
            "pip install 'airflow-zorder[google]' (apache-airflow-providers-google)"
        ) from exc
    return GoogleBaseHook(gcp_conn_id=conn_id)


def _field(extras: dict[str, Any], name: str) -> Any:
    """An extra as the hook reads it: its short name, else ``extra__google_cloud_platform__<name>``; "" is unset."""
    value = extras.get(name, extras.get(f"extra__google_cloud_platform__{name}"))
    return None if value == "" else value


def credential_kind(extras: dict[str, Any]) -> str:
    """Which credential the connection's extras name (``adc`` when none); impersonation is reported on its own."""
    for kind in _KINDS:
        value = _field(extras, kind)
        if value:  # truthy, as the hook reads it
            return "anonymous" if kind == "is_anonymous" else kind
    return "adc"


def _endpoint(extras: dict[str, Any]) -> str | None:
    """The store's URL when it is not Google's: the extra ``gcs.endpoint``, else ``STORAGE_EMULATOR_HOST``."""
    endpoint = _field(extras, "gcs.endpoint") or gcs_emulator_endpoint()
    if not endpoint:
        return None
    endpoint = str(endpoint).rstrip("/")
    return endpoint if "://" in endpoint else f"http://{endpoint}"


def _token(conn_id: str, creds: Any, kind: str) -> tuple[str, dt.datetime]:
    """A fresh access token and its expiry (naive UTC, as google-auth keeps it), refreshed through the credentials."""
    import google.auth.transport.requests
    from google.auth.exceptions import GoogleAuthError

    try:
        creds.refresh(google.auth.transport.requests.Request())
    except (GoogleAuthError, OSError, ValueError) as exc:
        raise StorageConnectionError(
            f"connection {conn_id!r} ({kind.replace('_', ' ')}) could not get a Google access token: check its "
            "key (key_path / keyfile_dict: not revoked, of a service account that exists), its "
            "impersonation_chain (the caller needs roles/iam.serviceAccountTokenCreator) or the worker's default "
            f"credentials, and the network to the token endpoint ({type(exc).__name__}: {exc})"
        ) from exc
    expiry = creds.expiry or (dt.datetime.now(dt.UTC).replace(tzinfo=None) + dt.timedelta(hours=1))
    return str(creds.token), expiry


def delta_options(extras: dict[str, Any], endpoint: str | None = None) -> tuple[dict[str, str], str]:
    """delta-rs's storage options for a connection's extras, or ``({}, why not)`` when its credentials cannot be
    handed to delta-rs (it takes a service-account key or its own default chain, never an access token)."""
    kind = credential_kind(extras)
    impersonated = bool(_field(extras, "impersonation_chain"))
    out: dict[str, str] = dict(GCS_DELTA_RETRIES)
    if endpoint:
        out["google_base_url"] = endpoint
    if kind == "anonymous":
        return {**out, "google_skip_signature": "true"}, ""
    if impersonated:
        return {}, "impersonation_chain (delta-rs cannot impersonate a service account)"
    if kind == "key_path":
        return {**out, "google_service_account": str(_field(extras, "key_path"))}, ""
    if kind == "keyfile_dict":
        key = _field(extras, "keyfile_dict")
        return {**out, "google_service_account_key": key if isinstance(key, str) else json.dumps(key)}, ""
    if kind == "adc":  # delta-rs's own chain reads the same sources (GOOGLE_APPLICATION_CREDENTIALS, metadata server)
        return out, ""
    return {}, f"{kind} (delta-rs takes a service-account key, not an access token)"


def gcs_store_options(conn_id: str, location: Location | None = None) -> StoreOptions:
    """The GCS options of the ``google_cloud_platform`` connection ``conn_id`` (any bucket: a token is fetched here,
    once; it lives about an hour)."""
    hook = _hook(conn_id)
    extras = dict(hook.extras or {})
    kind = credential_kind(extras)
    impersonated = bool(_field(extras, "impersonation_chain"))
    try:
        creds, project = hook.get_credentials_and_project_id()
    except Exception as exc:  # AirflowException (exclusive fields, bad JSON), DefaultCredentialsError, a key file
        raise StorageConnectionError(
            f"connection {conn_id!r} has no usable Google credentials: give exactly one of key_path, keyfile_dict, "
            "credential_config_file, key_secret_name or is_anonymous (none: the worker's default credentials, "
            f"e.g. GOOGLE_APPLICATION_CREDENTIALS) ({type(exc).__name__}: {exc})"
        ) from exc
    endpoint = _endpoint(extras)
    arrow: dict[str, Any] = {"retry_time_limit": dt.timedelta(seconds=GCS_RETRY_TIME_LIMIT_S)}
    # pyiceberg's own pyarrow FileIO plus anonymous access and bounded retries (core/iceberg/gcs_io.py)
    iceberg: dict[str, str] = {"py-io-impl": ICEBERG_IO_IMPL, "gcs.retry-time-limit-s": str(GCS_RETRY_TIME_LIMIT_S)}
    from google.auth.credentials import AnonymousCredentials

    if isinstance(creds, AnonymousCredentials):
        arrow["anonymous"] = True
        iceberg["gcs.anonymous"] = "true"
    else:
        token, expiry = _token(conn_id, creds, "impersonated credentials" if impersonated else kind)
        arrow.update(access_token=token, credential_token_expiration=expiry)
        expires_ms = int(expiry.replace(tzinfo=dt.UTC).timestamp() * 1000)
        iceberg.update({"gcs.oauth2.token": token, "gcs.oauth2.token-expires-at": str(expires_ms)})
    if project:
        arrow["project_id"] = project
        iceberg["gcs.project-id"] = str(project)
    if endpoint:
        parts = urlsplit(endpoint)
        arrow.update(endpoint_override=parts.netloc, scheme=parts.scheme or "https")
        iceberg["gcs.service.host"] = endpoint
    delta, why_not = delta_options(extras, endpoint)
    unusable = {"delta": f"connection {conn_id!r} uses {why_not}: {DELTA_FIX}"} if why_not else {}
    expires_at = arrow.get("credential_token_expiration")
    return StoreOptions(arrow=arrow, delta=delta, iceberg=iceberg, unusable=unusable, expires_at=expires_at)
