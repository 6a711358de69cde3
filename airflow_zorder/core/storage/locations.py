"""One way from a location to a filesystem: parse it with one decoding rule, open it with pyarrow.

Every reader of the project (the stats store, the hook and through it the sensor, the trigger and
the UI, the stats job's executors) turns a table or stats location into I/O here.  The Spark
driver's commits and locks go through Hadoop instead (:class:`airflow_zorder.core.storage.io.hadoop.HadoopFileSystem`),
but they parse local paths with :func:`parse_location` too.

The decoding rule is Hadoop's, because Spark wrote the tables: the text after ``scheme://authority``
is the path, literally.  Nothing is percent-decoded: ``file:///t/k=a%3Ab`` is the directory named
``k=a%3Ab`` (Spark's escaped partition value), exactly as ``spark.read.parquet`` opens it.

Schemes: a plain path and ``file:`` (local disk), ``s3``/``s3a``/``s3n`` (one store: ``s3a://b/k`` is
``s3://b/k``), ``gs``/``gcs``, ``abfs``/``abfss``/``wasb``/``wasbs`` (``container@account.dfs.core.windows.net``)
and ``az`` (``az://container/path``), ``hdfs``/``viewfs``; anything else through fsspec, when installed.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

from airflow_zorder.core.errors import InvalidInputError, StorageError

__all__ = [
    "Location",
    "StorageError",
    "arrow_filesystem",
    "default_delta_options",
    "describe_error",
    "missing_bucket_message",
    "gcs_emulator_endpoint",
    "is_path_table",
    "parse_location",
    "parse_partition_path",
]

#: the store family of each scheme; a scheme not listed is opened through fsspec
STORE_OF_SCHEME: dict[str, str] = {
    "": "local",
    "file": "local",
    "s3": "s3",
    "s3a": "s3",
    "s3n": "s3",
    "gs": "gcs",
    "gcs": "gcs",
    "abfs": "azure",
    "abfss": "azure",
    "az": "azure",
    "wasb": "azure",
    "wasbs": "azure",
    "hdfs": "hdfs",
    "viewfs": "hdfs",
}


def parse_partition_path(path: str, *, strict: bool = True) -> dict[str, str]:
    """``{key: value}`` of the Hive ``k=v`` segments of a directory path (``dt=2024-01-01/city=New%20York``).

    Keys and values are URL-unquoted (Hive/Spark escape special characters as ``%XX``); Spark's
    ``__HIVE_DEFAULT_PARTITION__`` is returned as is.  ``strict``: the path is a partition directory
    relative to the table, so a segment that is not ``k=v`` makes it no partition (``{}``); otherwise such
    segments (and ``=v`` ones) are skipped, for a full path that merely contains partition directories.
    """
    out: dict[str, str] = {}
    for seg in (path if strict else path.replace("\\", "/")).split("/"):
        if not seg:
            continue
        k, eq, v = seg.partition("=")
        if not eq or (not strict and not k):
            if strict:
                return {}
            continue
        out[unquote(k)] = unquote(v)
    return out


def is_path_table(table: str) -> bool:
    """A table argument with a slash or a URI scheme is a path; anything else a catalog name ``db.table``."""
    return "/" in table or "://" in table or table.startswith(".")


@dataclass(frozen=True)
class Location:
    """A parsed location: scheme, authority (bucket, container@account, namenode) and literal path."""

    raw: str
    scheme: str  # lower case; "" for a plain local path
    authority: str  # "" for local paths
    path: str  # literal (never percent-decoded); absolute for local paths

    @property
    def store(self) -> str:
        """``local``, ``s3``, ``gcs``, ``azure``, ``hdfs``, or ``other`` (fsspec)."""
        return STORE_OF_SCHEME.get(self.scheme, "other")

    @property
    def is_local(self) -> bool:
        """True for plain paths and ``file:`` URIs (this machine's disk)."""
        return self.store == "local"

    @property
    def bucket(self) -> str:
        """The bucket (S3, GCS) or container (Azure) holding the location; "" elsewhere."""
        if self.store in ("s3", "gcs"):
            return self.authority
        if self.store == "azure":
            return self.authority.split("@", 1)[0]
        return ""

    @property
    def account(self) -> str:
        """The storage account an Azure location names (``container@account.dfs.core.windows.net``), else ""."""
        if self.store != "azure" or "@" not in self.authority:
            return ""
        return self.authority.split("@", 1)[1].split(".", 1)[0]

    def local_path(self) -> str:
        """The OS path of a local location; ValueError for any other store."""
        if not self.is_local:
            raise ValueError(f"{self.raw!r} is not on this machine's disk")
        return self.path

    def arrow_path(self) -> str:
        """The path inside the pyarrow filesystem :func:`arrow_filesystem` returns."""
        if self.store == "local":
            return self.path
        if self.store in ("s3", "gcs", "azure"):
            key = self.path.strip("/")
            return f"{self.bucket}/{key}" if key else self.bucket
        if self.store == "hdfs":
            return self.path or "/"
        return self.raw

    def uri(self) -> str:
        """The location as a URI (local paths as ``file://`` URIs, ``s3a``/``s3n`` as ``s3``): OpenLineage, logs."""
        if self.is_local:
            return "file://" + self.path
        scheme = "s3" if self.store == "s3" else self.scheme
        return f"{scheme}://{self.authority}{self.path}"


def parse_location(location: str | os.PathLike[str]) -> Location:
    """Parse ``location`` with the one decoding rule (see the module doc).

    Plain paths are made absolute.  ``file:/p``, ``file:///p`` and ``file://localhost/p`` are the
    local path ``/p``; a ``file:`` URI naming another host is refused.
    """
    raw = os.fspath(location)
    if not isinstance(raw, str) or not raw.strip():
        raise InvalidInputError("a location must be a non-empty path or URI")
    if raw.startswith("file:"):
        rest = raw[len("file:") :]
        if rest.startswith("//"):
            host, sep, tail = rest[2:].partition("/")
            if host not in ("", "localhost"):
                raise InvalidInputError(f"not a local file URI (host {host!r}): {raw!r}")
            rest = sep + tail
        return Location(raw, "file", "", _norm_local(rest or "/"))
    if "://" not in raw:
        return Location(raw, "", "", _norm_local(raw))
    scheme, rest = raw.split("://", 1)
    authority, sep, tail = rest.partition("/")
    if not scheme or not all(c.isalnum() or c in "+-." for c in scheme):
        raise InvalidInputError(f"bad URI scheme in {raw!r}")
    return Location(raw, scheme.lower(), authority, sep + tail)


def _norm_local(path: str) -> str:
    return os.path.abspath(path)


# --------------------------------------------------------------------------- filesystems

_CACHE: dict[tuple[Any, ...], Any] = {}
_CACHE_LOCK = threading.Lock()


def _options_key(options: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    return tuple(sorted((str(k), repr(v)) for k, v in options.items()))


def arrow_filesystem(location: str, options: Mapping[str, Any] | None = None) -> tuple[Any, str]:
    """``(pyarrow filesystem, path in it)`` for ``location``.

    ``options`` are the filesystem's keyword arguments in pyarrow's names (S3: ``access_key``,
    ``secret_key``, ``session_token``, ``region``, ``endpoint_override``, ``scheme``; see
    :mod:`airflow_zorder.hooks.connections` for how an Airflow connection maps to them).  Without
    options the store's default credential chain applies (environment, instance profile, ...).
    Filesystems are cached per store, authority and options, so executors and pollers reuse them.
    """
    from pyarrow import fs as pafs

    loc = parse_location(location)
    opts = dict(options or {})
    if loc.is_local:
        return pafs.LocalFileSystem(), loc.local_path()
    key = (loc.store, loc.scheme if loc.store == "other" else "", loc.authority, _options_key(opts))
    if loc.store == "gcs":
        key += (gcs_emulator_endpoint(),)  # the variable changes what _open builds
    with _CACHE_LOCK:
        fs = _CACHE.get(key)
    if fs is None:
        fs = _open(loc, opts)
        with _CACHE_LOCK:
            _CACHE[key] = fs
    if loc.store == "other":
        return fs, _fsspec_path(fs, loc)
    return fs, loc.arrow_path()


def _open(loc: Location, opts: dict[str, Any]) -> Any:
    from pyarrow import fs as pafs

    if loc.store == "s3":
        if not opts:  # pyarrow's own URI handling also resolves the bucket's region
            return pafs.FileSystem.from_uri(f"s3://{loc.authority}")[0]
        return pafs.S3FileSystem(**opts)
    if loc.store == "gcs":
        return pafs.GcsFileSystem(**_gcs_options(opts))
    if loc.store == "azure":
        if loc.account and "account_name" not in opts:
            opts["account_name"] = loc.account
        if not opts.get("account_name"):
            raise StorageError(
                f"cannot open {loc.raw!r}: no storage account: spell it abfss://container@account.dfs.core.windows.net/"
                "path, or give a wasb / adls connection (conn_id) naming the account"
            )
        return pafs.AzureFileSystem(**opts)
    if loc.store == "hdfs":
        host, _, port = loc.authority.partition(":")
        return pafs.HadoopFileSystem(host or "default", int(port) if port else 8020, **opts)
    try:
        import fsspec
    except ImportError as exc:  # pragma: no cover - fsspec ships with Airflow
        raise StorageError(
            f"cannot open {loc.raw!r}: no pyarrow filesystem for {loc.scheme}:// and fsspec "
            "is not installed (pip install fsspec and the scheme's fsspec package)"
        ) from exc
    try:
        fsspec_fs = fsspec.filesystem(loc.scheme, **opts)
    except (ImportError, ValueError) as exc:
        raise StorageError(f"cannot open {loc.raw!r}: {exc} (install the fsspec package for {loc.scheme}://)") from exc
    return pafs.PyFileSystem(pafs.FSSpecHandler(fsspec_fs))


#: how long pyarrow's GCS client retries one request (google-cloud-cpp's default: 15 minutes, so an unreachable
#: endpoint would hang a poke); a connection's options may set another ``retry_time_limit``
GCS_RETRY_TIME_LIMIT_S = 5.0


def gcs_emulator_endpoint() -> str | None:
    """``STORAGE_EMULATOR_HOST`` (``host:port`` or a URL), the variable Google's clients find an emulator by, as a
    URL; pyarrow ignores it."""
    host = os.environ.get("STORAGE_EMULATOR_HOST", "").strip().rstrip("/")
    if not host:
        return None
    return host if "://" in host else f"http://{host}"


def _gcs_options(opts: dict[str, Any]) -> dict[str, Any]:
    """``GcsFileSystem`` arguments: retries bounded; without an endpoint, ``STORAGE_EMULATOR_HOST``'s (anonymous
    when no credentials were given, as Google's clients reach an emulator)."""
    import datetime as dt
    from urllib.parse import urlsplit

    out = dict(opts)
    out.setdefault("retry_time_limit", dt.timedelta(seconds=GCS_RETRY_TIME_LIMIT_S))
    emulator = gcs_emulator_endpoint()
    if emulator and "endpoint_override" not in out:
        parts = urlsplit(emulator)
        out.update(endpoint_override=parts.netloc, scheme=parts.scheme)
        if "access_token" not in out:
            out.setdefault("anonymous", True)
    return out


#: delta-rs's bounded retries on GCS (object_store's default: 10 retries over up to 3 minutes)
GCS_DELTA_RETRIES = {
    "max_retries": "2",
    "retry_timeout": f"{int(GCS_RETRY_TIME_LIMIT_S)}s",
    "connect_timeout": "5s",
}


def default_delta_options(location: str) -> dict[str, str] | None:
    """delta-rs's storage options for a location read without a connection: None (its default chain), except on GCS,
    where retries are bounded and ``STORAGE_EMULATOR_HOST`` (which delta-rs ignores) is the endpoint, read
    anonymously as Google's clients do."""
    if parse_location(location).store != "gcs":
        return None
    out = dict(GCS_DELTA_RETRIES)
    emulator = gcs_emulator_endpoint()
    if emulator:
        out.update(google_base_url=emulator, google_skip_signature="true")
    return out


def _fsspec_path(fs: Any, loc: Location) -> str:
    handler = getattr(fs, "handler", None)
    inner = getattr(handler, "fs", None)
    if inner is not None and hasattr(inner, "_strip_protocol"):
        return str(inner._strip_protocol(loc.raw))
    return loc.raw


# --------------------------------------------------------------------------- errors

#: per store, the fix for credentials that were refused, a bucket that is missing (a wrong endpoint lists other
#: buckets) and a store that did not answer: the connection's fields, in its own type's words
_FIXES: dict[str, dict[str, str]] = {
    "s3": {
        "denied": "check the connection's credentials (aws: login = access key id, password = secret key, or "
        "role_arn) and that they may read {bucket}",
        "missing": "check the location's bucket name (and the connection's endpoint_url)",
        "unreachable": "check the connection's endpoint_url / region and the network",
    },
    "azure": {
        "denied": "check the connection's credentials (wasb: password = account key, or extra connection_string / "
        "sas_token / tenant_id with login = client id and password = secret; adls: the same with host = account) "
        "and that they may read container {bucket}",
        "missing": "check the location's container name (and the connection's account URL or connection_string)",
        "unreachable": "check the connection's account URL (wasb: host; adls: extra account_url; or the "
        "connection_string's BlobEndpoint) and the network",
    },
    "gcs": {
        "denied": "check the connection's credentials (google_cloud_platform: extra key_path or keyfile_dict, "
        "impersonation_chain, or the worker's default credentials; is_anonymous only for public buckets) and that "
        "they may read gs://{bucket} (roles/storage.objectViewer; objectCreator to record decisions)",
        "missing": "check the location's bucket name (and the connection's extra gcs.endpoint)",
        "unreachable": "check the connection's extra gcs.endpoint (or STORAGE_EMULATOR_HOST) and the network",
    },
}
#: what a store calls the top of a location ("bucket {bucket} does not exist")
_BUCKET_NOUN = {"azure": "container"}
_DEFAULT_FIXES = {
    "denied": "check the connection's credentials and that they may read {bucket}",
    "missing": "check the location's bucket name (and the connection's endpoint)",
    "unreachable": "check the connection's endpoint and the network",
}

#: (needles in the store's error text, kind, message)
_ERROR_HINTS = (
    (
        (
            "ACCESS_DENIED",
            "AccessDenied",
            "InvalidAccessKeyId",
            "SignatureDoesNotMatch",
            "403",
            "Forbidden",
            "PermissionDenied",
            "AuthorizationFailure",
            "PERMISSION_DENIED",  # GCS (pyarrow: google-cloud-cpp's status codes)
            "UNAUTHENTICATED",
            "Could not create a OAuth2 access token",
        ),
        "denied",
        "access denied: {fix}",
    ),
    (
        ("NO_SUCH_BUCKET", "NoSuchBucket", "bucket does not exist", "ContainerNotFound"),
        "missing",
        "{noun} {bucket} does not exist: {fix}",
    ),
    (
        (
            "Could not resolve host",
            "Connection refused",
            "couldn't connect",
            "Failed to connect",
            "NETWORK_CONNECTION",
            "Fail to get a new connection",  # Azure (pyarrow)
            "Could not connect to server",
            "DEADLINE_EXCEEDED",  # GCS (pyarrow): a request timed out on every retry
        ),
        "unreachable",
        "the store did not answer: {fix}",
    ),
)


def _hint(kind: str, loc: Location) -> str:
    """The message of an error ``kind`` (``denied``, ``missing``, ``unreachable``) for ``loc``, in its store's words."""
    bucket = loc.bucket or loc.raw
    fix = _FIXES.get(loc.store, _DEFAULT_FIXES)[kind].format(bucket=bucket)
    template = next(h for _, k, h in _ERROR_HINTS if k == kind)
    return template.format(bucket=bucket, fix=fix, noun=_BUCKET_NOUN.get(loc.store, "bucket"))


def missing_bucket_message(location: str) -> str:
    """``bucket X does not exist: ...`` in the store's words (Azure: a container), for a location whose top is missing."""
    return _hint("missing", parse_location(location))


def _mentions(text: str, needle: str) -> bool:
    """``needle`` in ``text``, case-insensitively; a number only as a whole number (``403``, not ``:33403``)."""
    if needle.isdigit():
        return re.search(rf"(?<![\d.:]){needle}(?!\d)", text) is not None
    return needle.lower() in text.lower()


def describe_error(exc: BaseException, location: str, conn_id: str | None = None) -> StorageError | None:
    """One clear :class:`StorageError` for a store's access-denied / missing-bucket / unreachable error, else None."""
    text = f"{type(exc).__name__}: {exc}"
    try:
        loc = parse_location(location)
    except ValueError:
        return None
    for needles, kind, _ in sorted(_ERROR_HINTS, key=lambda h: h[1] != "unreachable"):
        # a transport failure first: its text may hold anything else (a port like :33403 holds "403")
        if any(_mentions(text, n) for n in needles):
            via = f" with connection {conn_id!r}" if conn_id else " with the default credentials (no connection)"
            return StorageError(f"cannot read {location}{via}: {_hint(kind, loc)} ({text})")
    return None
