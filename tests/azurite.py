"""A real Azure Blob endpoint for the tests: Azurite (``azurite-blob``, installed by npm into ``.venv/azurite``)
on a free loopback port, in memory, started in its own process group and stopped with it.

Azurite checks the shared-key signature, so a wrong account key really fails. It serves the well-known
development account ``devstoreaccount1`` path-style (``http://127.0.0.1:P/devstoreaccount1/container/blob``).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from loopback import free_port

ACCOUNT = "devstoreaccount1"
#: Azurite's published development key (not a secret: the same in every Azurite)
KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
WRONG_KEY = "d3Jvbmcta2V5LXdyb25nLWtleS13cm9uZy1rZXktd3Jvbmcta2V5LXdyb25nLWtleQ=="  # valid base64, not the key
CONTAINER = "lake"
REPO = Path(__file__).resolve().parents[1]


def azurite_binary() -> str | None:
    """``azurite-blob`` from ``.venv/azurite`` (scripts/azurite installs it), else from PATH; None if absent."""
    local = REPO / ".venv" / "azurite" / "node_modules" / ".bin" / "azurite-blob"
    if local.exists():
        return str(local)
    return shutil.which("azurite-blob")


@dataclass
class Azurite:
    """A running Azurite blob service and how Azure's own clients reach it."""

    process: subprocess.Popen
    port: int

    @property
    def endpoint(self) -> str:
        """The account's blob endpoint, path-style."""
        return f"http://127.0.0.1:{self.port}/{ACCOUNT}"

    def connection_string(self, key: str = KEY) -> str:
        return f"DefaultEndpointsProtocol=http;AccountName={ACCOUNT};AccountKey={key};BlobEndpoint={self.endpoint};"

    def wasb_connection(self, **fields: object) -> str:
        """A ``wasb`` connection as JSON: the connection string by default, or the given fields."""
        body = fields or {"extra": {"connection_string": self.connection_string()}}
        return json.dumps({"conn_type": "wasb", **body})

    def hadoop_conf(self) -> dict[str, str]:
        """hadoop-azure's (ABFS) settings for this server: the account key, the emulator's ``host:port`` (path-style,
        plain http) and few retries. Its Apache HTTP client cannot open plain http (``SSL socket factory may not be
        null``), so the JDK's client is named."""
        return {
            f"fs.azure.account.key.{ACCOUNT}.dfs.core.windows.net": KEY,
            "fs.azure.abfs.endpoint": f"127.0.0.1:{self.port}",
            "fs.azure.always.use.https": "false",
            "fs.azure.networking.library": "JDK_HTTP_URL_CONNECTION",
            "fs.azure.io.retry.max.retries": "2",
        }

    def service(self):
        from azure.storage.blob import BlobServiceClient

        return BlobServiceClient.from_connection_string(self.connection_string())

    def blobs(self, container: str = CONTAINER) -> dict[str, str]:
        """Every blob in ``container`` with its ETag: what a test compares to prove nothing was written."""
        return {b.name: b.etag for b in self.service().get_container_client(container).list_blobs()}

    def containers(self) -> list[str]:
        return sorted(c.name for c in self.service().list_containers())

    def upload_dir(self, local: Path, prefix: str, container: str = CONTAINER) -> int:
        """Upload every file under ``local`` to ``container/prefix/<relative path>``; returns the count."""
        client = self.service().get_container_client(container)
        n = 0
        for path in sorted(local.rglob("*")):
            if path.is_file():
                with open(path, "rb") as fh:
                    client.upload_blob(f"{prefix}/{path.relative_to(local).as_posix()}", fh, overwrite=True)
                n += 1
        return n

    def delete_prefix(self, prefix: str, container: str = CONTAINER) -> None:
        client = self.service().get_container_client(container)
        for b in list(client.list_blobs(name_starts_with=prefix)):
            client.delete_blob(b.name)

    def stop(self) -> None:
        try:
            os.killpg(self.process.pid, signal.SIGTERM)
        except ProcessLookupError:
            return
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(5)


def start_azurite(log_dir: Path, binary: str) -> Azurite:
    """Start ``azurite-blob`` in memory on a free port (its own session: stopped with its node children), wait
    until it answers, create the container ``lake``."""
    port = free_port()
    log = open(log_dir / "azurite.log", "wb")  # noqa: SIM115 - kept open for the server's life
    proc = subprocess.Popen(
        [binary, "--blobHost", "127.0.0.1", "--blobPort", str(port), "--inMemoryPersistence"]
        + ["--skipApiVersionCheck", "--loose", "--silent", "--disableTelemetry"],
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    server = Azurite(proc, port)
    deadline = time.monotonic() + 30
    while True:
        try:
            urllib.request.urlopen(f"{server.endpoint}?comp=list", timeout=1).close()  # noqa: S310 - loopback
            break
        except urllib.error.HTTPError:  # any HTTP answer (403 unauthenticated): up
            break
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                server.stop()
                raise RuntimeError(f"azurite did not start: {(log_dir / 'azurite.log').read_text()[-2000:]}") from None
            time.sleep(0.1)
    server.service().create_container(CONTAINER)
    return server
