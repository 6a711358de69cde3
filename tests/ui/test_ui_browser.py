"""The pages in a real browser: ``airflow api-server`` (plugin from the entry point, SimpleAuthManager on) on a
free localhost port, opened in Debian's headless Chromium over the DevTools protocol.

Checks what a person would see: refused before signing in, then the table names, the numbers (as
``core.policy.recluster_policy.evaluate`` computes them on the same stats) and the SVG charts, inside Airflow's own UI too.
Screenshots go to ``.artifacts/screenshots/`` (git-ignored), or to ``$ZORDER_SCREENSHOTS`` when set.
"""

from __future__ import annotations

import os
import secrets
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urljoin

import httpx
import pytest
from cdp import CHROMIUM, Chromium
from htmlq import num, parse
from ui_stores import PASSWORD, USER, Store, tables_option

from airflow_zorder.hooks.file_stats import FileStatsHook
from airflow_zorder.table_access import table_health_url

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not Path(CHROMIUM).exists(),
        reason=f"{CHROMIUM} is missing: install Debian's chromium (apt-get install -y chromium); "
        ".ci/run does that in CI",
    ),
]

REPO = Path(__file__).resolve().parents[2]
SHOTS = Path(os.environ.get("ZORDER_SCREENSHOTS") or REPO / ".artifacts" / "screenshots")
START_TIMEOUT_S = 60


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server(airflow_db, stores, auth_env, tmp_path_factory) -> Iterator[str]:
    """``airflow api-server`` on the session's Airflow home and metadata DB; yields its base URL."""
    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    env = {
        **os.environ,
        **auth_env,
        "AIRFLOW__ZORDER__TABLES": tables_option(stores),
        "AIRFLOW__API_AUTH__JWT_SECRET": secrets.token_hex(32),
        "AIRFLOW__API__BASE_URL": base,
    }
    log_path = tmp_path_factory.mktemp("api-server") / "api-server.log"
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "airflow",
                "api-server",
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--apps",
                "core",
                "--workers",
                "1",
            ],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            cwd=log_path.parent,
        )
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            if proc.poll() is not None:
                pytest.fail(f"api-server exited with {proc.returncode}:\n{log_path.read_text()[-3000:]}")
            try:
                if httpx.get(base + "/api/v2/monitor/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"api-server not up after {START_TIMEOUT_S} s:\n{log_path.read_text()[-3000:]}")
            time.sleep(0.3)
        yield base
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)  # the server and its uvicorn worker (our own process group)
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(5)


@pytest.fixture(scope="module")
def browser() -> Iterator[Chromium]:
    with Chromium(width=1280, height=900) as b:
        yield b


def _expected(store: Store) -> dict:
    """What the sensor computes on the same stats (its hook and ``core.policy.recluster_policy``)."""
    return FileStatsHook(store.table, store.location).evaluate()


def test_signed_out_the_pages_are_refused(server, browser, stores):
    for path in ("/zorder/", "/zorder/api/tables", "/zorder/table?table=x"):
        assert httpx.get(server + path).status_code == 401
    assert browser.open(server + "/zorder/") == 401
    doc = parse(browser.dom())
    assert doc.find(id="error").attrs["data-status"] == "401"
    assert "Sign in to Airflow" in doc.find("a", id="login").text
    assert stores["events"].table not in browser.dom()
    browser.screenshot(SHOTS / "signed-out.png", full_page=False)


def test_pages_show_the_tables_numbers_and_charts(server, browser, stores):
    r = httpx.post(server + "/auth/token", json={"username": USER, "password": PASSWORD})
    assert r.status_code == 201, r.text
    browser.set_cookie("_token", r.json()["access_token"], server)  # what Airflow's login leaves in the browser

    # all tables
    assert browser.open(server + "/zorder/") == 200
    doc = parse(browser.dom())
    rows = {e.attrs["data-table"]: e for e in doc.find_all("tr", class_="table-row")}
    assert {s.table for s in stores.values()} <= set(rows)  # (plus tables other tests' tasks named in XComs)
    for key in ("events", "orders"):
        want = _expected(stores[key])
        row = rows[stores[key].table]
        assert row.find(data_field="decision").text == want["decision"]
        assert row.find(data_field="worst_column").text == want["worst_column"]
        wc = want["columns"][want["worst_column"]]
        frac = row.find(data_field="partition_fraction")
        assert num(frac.attrs["data-value"]) == pytest.approx(wc["partition_fraction"])
        assert frac.text == f"{100 * wc['partition_fraction']:.1f}%"
        assert num(row.find(data_field="average_depth").attrs["data-value"]) == pytest.approx(wc["average_depth"])
        assert int(row.find(data_field="num_files").attrs["data-value"]) == want["num_files"]
    browser.screenshot(SHOTS / "tables.png")

    # follow the link to the partitioned table's page
    ev: Store = stores["events"]
    href = rows[ev.table].find("a", class_="table-link").attrs["href"]
    assert browser.open(urljoin(server + "/zorder/", href)) == 200
    assert browser.evaluate("location.href") == table_health_url(ev.table, base_url=server)  # the extra link's URL
    doc = parse(browser.dom())
    want = _expected(ev)
    assert doc.find(id="table-name").text == ev.table
    assert doc.find(id="decision").text == want["decision"]
    for row in doc.find_all("tr", class_="column-row"):
        c = row.attrs["data-column"]
        for field in ("expected_fraction", "ideal_fraction", "average_depth", "partition_ratio"):
            assert num(row.find(data_field=field).attrs["data-value"]) == pytest.approx(want["columns"][c][field])
    # the charts are real SVG, laid out by the browser: one line per column, a point per snapshot, the event
    chart = "#history-chart svg"
    assert browser.evaluate(f"document.querySelector('{chart}').getBoundingClientRect().width") > 300
    assert browser.evaluate(f"document.querySelectorAll('{chart} g.series').length") == 2
    assert browser.evaluate(f"document.querySelectorAll('{chart} circle.point').length") == 2 * len(ev.snapshot_ids)
    assert browser.evaluate(f"document.querySelectorAll('{chart} g.marker.cluster').length") == 1
    assert browser.evaluate(f"document.querySelector('{chart} g.marker.cluster title').textContent").startswith(
        "re-clustered"
    )
    bars = browser.evaluate(
        "Array.from(document.querySelectorAll('#histograms svg rect.bar'))"
        ".map(r => [r.closest('.histogram').dataset.column, +r.dataset.value,"
        " r.getBoundingClientRect().height])"
    )
    assert {c for c, _, _ in bars} == {"x", "y"}
    assert sum(v for c, v, _ in bars if c == "x") == want["num_files"]
    assert all(h > 0 for _, v, h in bars if v > 0)  # drawn, not just present
    assert [r.attrs["data-partition"] for r in doc.find_all("tr", class_="partition-row")][0] == "day=2026-03-02"
    browser.screenshot(SHOTS / "table-events.png")


def _cells(selector: str) -> str:
    """JS: ``{data-field: [data-value, text]}`` of the cells inside the first element matching ``selector``."""
    return (
        f"Object.fromEntries(Array.from(document.querySelector({selector!r}).querySelectorAll('[data-field]'))"
        ".map(e => [e.dataset.field, [e.dataset.value, e.textContent.replace(/\\s+/g, ' ').trim()]]))"
    )


def _sign_in(server: str, browser: Chromium) -> None:
    r = httpx.post(server + "/auth/token", json={"username": USER, "password": PASSWORD})
    assert r.status_code == 201, r.text
    browser.set_cookie("_token", r.json()["access_token"], server)


def test_table_page_shows_the_plan_and_each_runs_write_amplification(server, browser, stores):
    """The sensor's latest plan per partition and each run's bytes rewritten, bytes added and write amplification
    beside the ratio, as a person sees them (values computed here from the fixture's files)."""
    _sign_in(server, browser)
    s: Store = stores["appends"]
    assert browser.open(table_health_url(s.table, base_url=server)) == 200

    # the latest plan: the sensor's (its XCom), the 6 files appended last, 6,150 bytes
    plan = s.decision["plan"]
    late = sum(f["size"] for f in s.files[-1] if "/late-" in f["path"])
    assert browser.evaluate("document.querySelector('#latest-plan').dataset.state") == "plan"
    summary = browser.evaluate(_cells("#plan-summary"))
    assert summary["files"] == ["6", "6 files"]
    assert summary["bytes"] == [str(late), "6.0 KiB"] and late == plan["bytes"] == 6150
    assert summary["ratio_before"] == [str(plan["ratio_before"]), f"{plan['ratio_before']:.2f}x"]
    assert summary["ratio_after"] == [str(plan["ratio_after"]), f"{plan['ratio_after']:.2f}x"]
    row = browser.evaluate(_cells("tr.plan-row[data-partition='day=2026-03-02']"))
    assert row["files"][0] == "6" and row["bytes"][0] == "6150"
    assert row["reasons"][1] == "".join(plan["partitions"][0]["reasons"])  # one line each: the steps, the amortised
    assert "late-000.parquet" not in browser.dom()  # the recorded decision keeps no file lists

    # the runs: 12,300 ingested bytes rewritten once; then 10,000 bytes rewritten for 4,000 appended: 2.50
    assert browser.evaluate("Array.from(document.querySelectorAll('tr.event-row')).map(r => r.dataset.run)") == [
        "run-2",
        "run-1",
    ]
    run2 = browser.evaluate(_cells("tr.event-row[data-run='run-2']"))
    assert run2["mode"][1] == "incremental"
    assert run2["bytes_rewritten"] == ["10000", "9.8 KiB"]
    assert run2["bytes_added"] == ["4000", "3.9 KiB"]
    assert run2["write_amplification"] == ["2.5", "2.50"]
    assert run2["ratio_after"][1] == "1.00x" and float(run2["ratio_before"][0]) > 1.5
    run1 = browser.evaluate(_cells("tr.event-row[data-run='run-1']"))
    assert run1["bytes_added"][0] == "12300" and run1["write_amplification"][1] == "1.00"
    totals = browser.evaluate(_cells("#run-totals"))
    assert totals["write_amplification"][1] == f"{22300 / 16300:.2f}"

    # drawn, and readable: the write-amplification chart has its two points inside the plotted area; the tables
    # fit the page's width (no horizontal scrolling at 1280 px)
    pts = browser.evaluate(
        "Array.from(document.querySelectorAll('#runs-chart circle.point'))"
        ".map(c => { const r = c.getBoundingClientRect(); return [c.dataset.id, +c.dataset.value, r.width] })"
    )
    assert [(i, v) for i, v, _ in pts] == [("run-1", 1.0), ("run-2", 2.5)] and all(w > 0 for *_, w in pts)
    assert browser.evaluate("document.documentElement.scrollWidth") <= browser.width
    for table in ("#plan-partitions", "#events"):
        assert browser.evaluate(f"document.querySelector('{table}').getBoundingClientRect().right") <= browser.width
    browser.screenshot(SHOTS / "table-appends.png")

    # a Delta table: the same sections, its runs resolved from the versions they read and committed
    d: Store = stores["delta"]
    assert browser.open(table_health_url(d.table, base_url=server)) == 200
    assert browser.evaluate("document.querySelector('#latest-plan').dataset.state") == "plan"
    r1, r2 = d.runs
    added2 = sum(f["size"] for f in d.files[1])
    run = browser.evaluate(_cells("tr.event-row[data-run='drun-2']"))
    assert run["bytes_added"][0] == str(added2)
    assert run["write_amplification"][1] == f"{r2['rewritten']['bytes'] / added2:.2f}"
    browser.screenshot(SHOTS / "table-delta.png")


def test_the_pages_are_in_airflows_navigation(server, browser, stores):
    # Airflow's React UI embeds the plugin's external view (Browse -> Table health) at /plugin/zorder
    assert browser.open(server + "/plugin/zorder") == 200
    deadline = time.monotonic() + 20
    frames: list[str] = []
    while time.monotonic() < deadline and not frames:
        frames = browser.evaluate("Array.from(document.querySelectorAll('iframe')).map(f => f.src)") or []
        time.sleep(0.25)
    assert frames == [server + "/zorder/"]
    tables: list[str] = []
    while time.monotonic() < deadline and not tables:  # the framed page loads with the session cookie
        tables = (
            browser.evaluate(
                "(() => { const d = document.querySelector('iframe').contentDocument;"
                " return d ? Array.from(d.querySelectorAll('tr.table-row')).map(r => r.dataset.table) : [] })()"
            )
            or []
        )
        time.sleep(0.25)
    assert {s.table for s in stores.values()} <= set(tables)
    browser.screenshot(SHOTS / "airflow-ui-table-health.png", full_page=False)
