"""Drive headless Chromium over the DevTools protocol (a websocket; no browser driver package, works offline)."""

from __future__ import annotations

import base64
import itertools
import json
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

CHROMIUM = "/usr/bin/chromium"
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--hide-scrollbars",
    "--mute-audio",
]


class Chromium:
    """A headless Chromium with a fresh profile, and one page (tab) to drive."""

    def __init__(self, width: int = 1280, height: int = 900, timeout: float = 30.0) -> None:
        from websockets.sync.client import connect

        self.profile = tempfile.mkdtemp(prefix="zorder-chromium-")
        self.proc = subprocess.Popen(
            [
                CHROMIUM,
                *FLAGS,
                f"--user-data-dir={self.profile}",
                "--remote-debugging-port=0",
                f"--window-size={width},{height}",
                "about:blank",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        port_file = Path(self.profile) / "DevToolsActivePort"
        deadline = time.monotonic() + timeout
        while not (port_file.exists() and len(port_file.read_text().splitlines()) >= 2):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.close()
                raise RuntimeError("chromium did not start its DevTools endpoint")
            time.sleep(0.05)
        port, path = port_file.read_text().splitlines()[:2]
        self.ws = connect(f"ws://127.0.0.1:{port}{path}", max_size=None, open_timeout=timeout)
        self.timeout = timeout
        self.ids = itertools.count(1)
        self.events: list[dict[str, Any]] = []
        target = self.call("Target.createTarget", url="about:blank")["targetId"]
        self.session = self.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        for domain in ("Page", "Network", "Runtime"):
            self.call(f"{domain}.enable", session=True)
        self.call(
            "Emulation.setDeviceMetricsOverride",
            session=True,
            width=width,
            height=height,
            deviceScaleFactor=1,
            mobile=False,
        )
        self.width = width

    def call(self, method: str, session: bool = False, **params: Any) -> dict[str, Any]:
        """Send one command and wait for its result (events that arrive meanwhile are kept)."""
        msg_id = next(self.ids)
        msg: dict[str, Any] = {"id": msg_id, "method": method, "params": params}
        if session:
            msg["sessionId"] = self.session
        self.ws.send(json.dumps(msg))
        deadline = time.monotonic() + self.timeout
        while True:
            reply = json.loads(self.ws.recv(timeout=max(deadline - time.monotonic(), 0.01)))
            if reply.get("id") == msg_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self.events.append(reply)

    def wait_event(self, method: str, timeout: float | None = None) -> dict[str, Any]:
        """The next event ``method`` of the page (already received ones first)."""
        deadline = time.monotonic() + (timeout or self.timeout)
        while True:
            for i, e in enumerate(self.events):
                if e.get("method") == method and e.get("sessionId") == self.session:
                    return self.events.pop(i)
            self.events.append(json.loads(self.ws.recv(timeout=max(deadline - time.monotonic(), 0.01))))

    def set_cookie(self, name: str, value: str, url: str) -> None:
        """A cookie as the site would have set it (e.g. Airflow's ``_token`` session cookie after signing in)."""
        ok = self.call("Network.setCookie", session=True, name=name, value=value, url=url, httpOnly=True)
        assert ok.get("success", True), ok

    def open(self, url: str) -> int:
        """Navigate and wait for the load event; returns the HTTP status of the document."""
        self.events.clear()
        frame = self.call("Page.navigate", session=True, url=url)
        if frame.get("errorText"):
            raise RuntimeError(f"navigation to {url} failed: {frame['errorText']}")
        status = None
        deadline = time.monotonic() + self.timeout
        while status is None and time.monotonic() < deadline:
            e = self.wait_event("Network.responseReceived")
            if e["params"].get("type") == "Document":
                status = int(e["params"]["response"]["status"])
        self.wait_event("Page.loadEventFired")
        return int(status or 0)

    def evaluate(self, expression: str) -> Any:
        """A JavaScript expression's value in the page (JSON-able results only)."""
        res = self.call("Runtime.evaluate", session=True, expression=expression, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in res:
            raise RuntimeError(f"{expression}: {res['exceptionDetails']}")
        return res["result"].get("value")

    def dom(self) -> str:
        """The rendered document (``outerHTML``)."""
        return self.evaluate("document.documentElement.outerHTML")

    def screenshot(self, path: Path, full_page: bool = True) -> Path:
        """Save a PNG of the page (the whole scroll height when ``full_page``)."""
        params: dict[str, Any] = {"format": "png"}
        if full_page:
            h = int(self.evaluate("Math.ceil(document.documentElement.scrollHeight)") or 900)
            params.update(
                captureBeyondViewport=True,
                clip={"x": 0, "y": 0, "width": self.width, "height": max(h, 100), "scale": 1},
            )
        data = self.call("Page.captureScreenshot", session=True, **params)["data"]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(data))
        return path

    def close(self) -> None:
        try:
            if getattr(self, "ws", None) is not None:
                self.ws.close()
        finally:
            if self.proc.poll() is None:
                self.proc.terminate()
                try:
                    self.proc.wait(10)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait(5)
            shutil.rmtree(self.profile, ignore_errors=True)

    def __enter__(self) -> Chromium:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
