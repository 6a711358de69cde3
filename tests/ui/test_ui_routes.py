"""The plugin's routes inside the real Airflow API app (FastAPI TestClient), over real stats stores.

The app is Airflow's own ``create_app``: the plugin comes in through the ``airflow.plugins`` entry point,
SimpleAuthManager issues the tokens, the metadata DB is the session's SQLite DB.  Every number on the
pages is checked against ``core.policy.recluster_policy.evaluate`` / ``core.policy.metrics.table_clustering`` on the same stats.
"""

from __future__ import annotations

import datetime as dt
import importlib.util
import json
import secrets
import textwrap
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import pyarrow as pa
import pytest
from fastapi.testclient import TestClient
from htmlq import Element, num, parse
from ui_stores import (
    PASSWORD,
    USER,
    VIEWER,
    VIEWER_PASSWORD,
    Store,
    build_events_store,
    build_orders_store,
    tables_option,
)

from airflow_zorder import table_access
from airflow_zorder.core.policy import metrics, recluster_policy
from airflow_zorder.core.policy.formatting import format_percent
from airflow_zorder.core.stats import stats_store
from airflow_zorder.hooks.file_stats import FileStatsHook
from airflow_zorder.plugins import discovery, page_data
from airflow_zorder.plugins.rendering import fmt_bytes, fmt_ratio, fmt_ts


@pytest.fixture(scope="module")
def api(airflow_db, stores, auth_env) -> Iterator[TestClient]:
    """Airflow's API app (core) with the plugin, SimpleAuthManager and ``[zorder] tables`` set."""
    mp = pytest.MonkeyPatch()
    for k, v in auth_env.items():
        mp.setenv(k, v)
    mp.setenv("AIRFLOW__ZORDER__TABLES", tables_option(stores))
    mp.setenv("AIRFLOW__API_AUTH__JWT_SECRET", secrets.token_hex(32))
    from airflow.api_fastapi.app import create_app, purge_cached_app

    purge_cached_app()
    page_data.CACHE.clear()
    with TestClient(create_app(apps="core")) as client:
        yield client
    purge_cached_app()
    mp.undo()


def token(api: TestClient, user: str = USER, password: str = PASSWORD) -> str:
    r = api.post("/auth/token", json={"username": user, "password": password})
    assert r.status_code == 201, r.text
    return r.json()["access_token"]


@pytest.fixture(scope="module")
def auth(api) -> dict[str, str]:
    return {"Authorization": f"Bearer {token(api)}"}


def table_url(table: str, api_prefix: str = "") -> str:
    path = table_access.table_page_path(table)
    return path.replace("/zorder/table", "/zorder/api/table") if api_prefix else path


def expected_now(store: Store, policy: recluster_policy.HealthPolicy | None = None, columns=None) -> dict:
    """The oracle: what the sensor computes on the same stats (its hook, ``core.policy.recluster_policy``), outside the plugin."""
    return FileStatsHook(store.table, store.location).evaluate(policy or recluster_policy.HealthPolicy(), columns)


def cells(row: Element) -> dict[str, Element]:
    """A row's value cells by their ``data-field``."""
    return {e.attrs["data-field"]: e for e in row.find_all() if "data-field" in e.attrs}


# --------------------------------------------------------------------------- registration and auth


def test_plugin_is_registered_through_the_entry_point(api, auth):
    r = api.get("/api/v2/plugins", headers=auth)
    assert r.status_code == 200, r.text
    plugin = next(p for p in r.json()["plugins"] if p["name"] == "zorder")
    assert "airflow-zorder" in plugin["source"]  # loaded from the installed distribution's entry point
    assert [a["url_prefix"] for a in plugin["fastapi_apps"]] == ["/zorder"]
    view = next(v for v in plugin["external_views"] if v["url_route"] == "zorder")
    assert view["href"] == "/zorder/" and view["destination"] == "nav"


@pytest.mark.parametrize("path", ["/zorder/", "TABLE", "/zorder/api/tables", "API_TABLE"])
def test_unauthenticated_requests_are_refused(api, stores, path):
    ev = stores["events"]
    path = {"TABLE": table_url(ev.table), "API_TABLE": table_url(ev.table, "api")}.get(path, path)
    r = api.get(path)
    assert r.status_code == 401
    assert ev.table not in r.text  # nothing about the tables leaks
    r = api.get(path, headers={"Authorization": "Bearer not-a-jwt"})
    assert r.status_code == 403 and ev.table not in r.text
    r = api.get(path, headers={"Cookie": "_token=forged"})
    assert r.status_code == 403 and ev.table not in r.text


def test_unauthenticated_browser_gets_a_sign_in_link(api):
    r = api.get("/zorder/", headers={"Accept": "text/html"})
    assert r.status_code == 401
    login = parse(r.text).find("a", id="login").attrs["href"]
    assert login.startswith("/auth/login") and "next=" in login


def test_session_cookie_and_viewer_role_are_accepted(api, stores):
    r = api.get("/zorder/", headers={"Cookie": f"_token={token(api, VIEWER, VIEWER_PASSWORD)}"})
    assert r.status_code == 200
    assert stores["events"].table in r.text


def test_unknown_table_is_not_read(api, auth, tmp_path):
    # the pages read stats only of tables listed in the config or named by this provider's tasks
    for path in (table_access.table_page_path("/etc"), table_url(str(tmp_path), "api")):
        r = api.get(path, headers=auth)
        assert r.status_code == 404
        assert "[zorder] tables" in r.text


# --------------------------------------------------------------------------- the all-tables page


def test_index_shows_every_table_with_the_core_numbers(api, auth, stores):
    r = api.get("/zorder/", headers=auth)
    assert r.status_code == 200
    doc = parse(r.text)
    rows = {e.attrs["data-table"]: e for e in doc.find_all("tr", class_="table-row")}
    # the configured tables (plus any that other tests' tasks named in XComs of the shared metadata DB)
    assert {stores["events"].table, stores["orders"].table, stores["missing"].table} <= set(rows)
    for key in ("events", "orders"):
        s = stores[key]
        want = expected_now(s)
        got = cells(rows[s.table])
        assert got["decision"].text == want["decision"]
        assert got["worst_column"].text == want["worst_column"]
        wc = want["columns"][want["worst_column"]]
        for field in ("partition_fraction", "partition_ideal_fraction", "average_depth"):
            assert num(got[field].attrs["data-value"]) == pytest.approx(wc[field], rel=1e-12), (key, field)
        assert got["partition_fraction"].text == format_percent(wc["partition_fraction"])
        # files read / ideal within partitions is the headline
        assert wc["partition_fraction"] / wc["partition_ideal_fraction"] == pytest.approx(want["headline"])
        assert num(got["headline"].attrs["data-value"]) == pytest.approx(want["headline"], rel=1e-12)
        assert got["headline"].text == fmt_ratio(want["headline"])
        assert int(got["num_files"].attrs["data-value"]) == want["num_files"]
        assert int(got["total_bytes"].attrs["data-value"]) == want["total_bytes"]
        assert num(got["stats_age_s"].attrs["data-value"]) == pytest.approx(want["stats_age_s"], abs=30)
        link = rows[s.table].find("a", class_="table-link").attrs["href"]
        assert link == "table?table=" + quote(s.table, safe="")
    # independent of health: sizes as written, the unpartitioned headline is metrics' own ratio
    orders = stores["orders"]
    got = cells(rows[orders.table])
    assert int(got["total_bytes"].attrs["data-value"]) == sum(1000 + 10 * i for i in range(12))
    clu = metrics.table_clustering(stats_store.load_latest(orders.location), ["customer_id", "order_day"])
    assert num(got["headline"].attrs["data-value"]) == pytest.approx(clu["headline"], rel=1e-12)
    assert got["decision"].text == "recluster"  # 12 nested files on 2 columns: ~3.4x the ideal 29%
    # events: re-clustered at cluster_at, the latest snapshot is younger than the default max_stats_age
    ev_row = cells(rows[stores["events"].table])
    assert ev_row["last_cluster_at"].text == stores["events"].cluster_at.strftime("%Y-%m-%d %H:%M:%S UTC")
    assert "StatsNotFoundError" in rows[stores["missing"].table].find("td", class_="table-error").text


def test_api_tables_matches_the_page(api, auth, stores):
    r = api.get("/zorder/api/tables", headers=auth)
    assert r.status_code == 200
    by_table = {t["table"]: t for t in r.json()}
    want = expected_now(stores["events"])
    got = by_table[stores["events"].table]
    assert got["decision"] == want["decision"] and got["snapshot_id"] == stores["events"].snapshot_ids[-1]
    assert got["columns"] == list(want["columns"])
    assert by_table[stores["missing"].table]["error"].startswith("StatsNotFoundError")


# --------------------------------------------------------------------------- one table's page


def test_table_page_numbers_charts_and_partitions_match_the_core(api, auth, stores):
    s = stores["events"]
    r = api.get(table_access.table_page_path(s.table), headers=auth)
    assert r.status_code == 200
    doc = parse(r.text)
    want = expected_now(s)
    cols = list(want["columns"])
    assert cols == ["x", "y"]  # the columns of the last re-clustering
    assert doc.find(id="table-name").text == s.table
    assert doc.find(id="decision").text == want["decision"] == "recluster"
    assert doc.find(id="worst-column").text == want["worst_column"]
    assert [li.text for li in doc.find(id="reasons").find_all("li")] == want["reasons"]

    # per-column metrics
    rows = {e.attrs["data-column"]: cells(e) for e in doc.find_all("tr", class_="column-row")}
    assert list(rows) == cols
    for c in cols:
        for field in (
            "expected_fraction",
            "ideal_fraction",
            "ratio_to_ideal",
            "partition_fraction",
            "partition_ideal_fraction",
            "partition_ratio",
            "average_overlaps",
            "average_depth",
            "max_depth",
            "files_without_stats",
            "threshold",
        ):
            assert num(rows[c][field].attrs["data-value"]) == pytest.approx(want["columns"][c][field], rel=1e-12), (
                c,
                field,
            )

    # depth histograms: metrics.table_clustering on the same snapshot with the evaluation's d
    snap = stats_store.load_latest(s.location)
    clu = metrics.table_clustering(snap, cols, num_clustering_columns=want["num_clustering_columns"])
    for c in cols:
        svg = doc.find("div", class_="histogram", data_column=c).find("svg")
        bars = {b.attrs["data-bucket"]: num(b.attrs["data-value"]) for b in svg.find_all("rect", class_="bar")}
        hist = clu["per_column"][c]["depth_histogram"]
        assert {k: v for k, v in bars.items() if v} == {k: float(v) for k, v in hist.items() if v}
        assert sum(bars.values()) == want["num_files"]

    # health over time: one point per snapshot and column, as evaluated at that snapshot's time
    chart = doc.find(id="history-chart").find("svg")
    events = stats_store.load_events(s.location).to_pylist()
    for c in cols:
        series = chart.find("g", class_="series", data_series=c)
        points = series.find_all("circle", class_="point")
        assert [p.attrs["data-id"] for p in points] == [str(i) for i in s.snapshot_ids]
        for p, sid, at in zip(points, s.snapshot_ids, s.times):
            then = recluster_policy.evaluate(
                stats_store.load_snapshot(s.location, sid), cols, events=[e for e in events if e["at"] <= at], now=at
            )
            assert num(p.attrs["data-value"]) == pytest.approx(then["columns"][c]["partition_ratio"], rel=1e-12)
            assert dt.datetime.fromisoformat(p.attrs["data-at"]) == at
        values = [num(p.attrs["data-value"]) for p in points]
        assert values[0] > 2.0 and values[1] == pytest.approx(1.0)  # scrambled, then a perfect grid after clustering
    markers = chart.find_all("g", class_="cluster")
    assert [dt.datetime.fromisoformat(m.attrs["data-at"]) for m in markers] == [s.cluster_at]
    # the ideal; the threshold line only on unpartitioned tables (the sensor judges each partition)
    assert {num(g.attrs["data-value"]) for g in chart.find_all("g", class_="ref")} == {1.0}
    # the appended files are narrow on y only: y recovers, x does not
    last = {
        c: num(chart.find("g", class_="series", data_series=c).find_all("circle")[-1].attrs["data-value"]) for c in cols
    }
    assert last["x"] > last["y"]

    # partitions: metrics' per-partition ratios, the ones the sensor would re-cluster flagged
    prow = {e.attrs["data-partition"]: e for e in doc.find_all("tr", class_="partition-row")}
    assert set(prow) == set(clu["partitions"])
    for p, e in prow.items():
        assert num(cells(e)["ratio_to_ideal"].attrs["data-value"]) == pytest.approx(
            clu["partitions"][p]["ratio_to_ideal"], rel=1e-12
        )
        assert ("re-cluster" in e.text) == (p in want["partitions"])
    assert want["partitions"] == ["day=2026-03-02"]

    # snapshots and re-clustering runs
    assert [e.attrs["data-snapshot"] for e in doc.find_all("tr", class_="snapshot-row")] == [
        str(i) for i in reversed(s.snapshot_ids)
    ]
    assert len(doc.find_all("tr", class_="event-row")) == 1
    assert "has not recorded a decision" in doc.find(id="last-decision").text
    # no decision recorded: no plan, and the page says so
    plan = doc.find(id="latest-plan")
    assert plan.attrs["data-state"] == "no-decision"
    assert plan.find(id="no-plan").text == "No plan: the sensor has not recorded a decision for this table yet."


def test_unpartitioned_table_page(api, auth, stores):
    s = stores["orders"]
    doc = parse(api.get(table_access.table_page_path(s.table), headers=auth).text)
    want = expected_now(s)
    chart = doc.find(id="history-chart").find("svg")
    # unpartitioned: the sensor compares the whole table with its threshold, so the chart shows it
    assert {num(g.attrs["data-value"]) for g in chart.find_all("g", class_="ref")} == {1.0, 2.0}
    for c, col in want["columns"].items():
        (point,) = chart.find("g", class_="series", data_series=c).find_all("circle", class_="point")
        assert num(point.attrs["data-value"]) == pytest.approx(col["ratio_to_ideal"], rel=1e-12)
        assert col["partition_ratio"] == pytest.approx(col["ratio_to_ideal"])
    assert chart.find_all("g", class_="marker") == []
    assert [r.attrs["data-partition"] for r in doc.find_all("tr", class_="partition-row")] == [""]
    assert "(unpartitioned)" in doc.find(id="partitions").text
    assert doc.find(id="no-events").text == "No re-clustering recorded yet."


def test_page_uses_the_sensors_last_decision_and_policy(api, auth, tmp_path, monkeypatch, stores):
    s = build_events_store(tmp_path)
    monkeypatch.setenv("AIRFLOW__ZORDER__TABLES", tables_option({**stores, "events": s}))
    sensor_policy = recluster_policy.HealthPolicy(max_ratio_to_ideal=3.5, min_interval_since_cluster=0)
    payload = expected_now(s, sensor_policy)
    recluster_policy.record_decision(s.location, payload, source="sensor-run-1")
    r = api.get(table_access.table_page_path(s.table), headers=auth)
    assert r.status_code == 200
    doc = parse(r.text)
    last = doc.find(id="last-decision")
    assert last.find("span", data_field="decision").text == payload["decision"] == "healthy"
    assert [li.text for li in last.find_all("li")] == payload["reasons"]
    # "decision now" is judged with the sensor's policy, not the defaults (which say recluster)
    assert num(doc.find(id="threshold").attrs["data-value"]) == 3.5
    assert doc.find(id="decision").text == expected_now(s, sensor_policy)["decision"] == "healthy"
    assert expected_now(s)["decision"] == "recluster"
    r = api.get(table_url(s.table, "api"), headers=auth)
    assert r.json()["last_decision"]["decision"] == "healthy"
    # a healthy decision plans nothing: the plan section says why
    plan = doc.find(id="latest-plan")
    assert plan.attrs["data-state"] == "not-recluster" and plan.find_all("tr", class_="plan-row") == []
    assert "re-clusters nothing" in plan.find(id="no-plan").text and "healthy" in plan.text


def test_recluster_decision_without_a_plan_says_so(api, auth, tmp_path, monkeypatch, stores):
    s = build_orders_store(tmp_path)  # degraded, unpartitioned
    monkeypatch.setenv("AIRFLOW__ZORDER__TABLES", tables_option({**stores, "orders": s}))
    payload = expected_now(s)  # the sensor with incremental_plan=False: a recluster decision without a plan
    assert payload["decision"] == "recluster" and payload["plan"] is None
    recluster_policy.record_decision(s.location, payload, source="sensor-run-2")
    doc = parse(api.get(table_access.table_page_path(s.table), headers=auth).text)
    plan = doc.find(id="latest-plan")
    assert plan.attrs["data-state"] == "no-plan"
    assert "No incremental plan recorded" in plan.text and "incremental_plan is off" in plan.text
    assert plan.find_all("table") == []


# --------------------------------------------------------------------------- the plan and the runs' cost


def _headline(location: str, snapshot_id: int) -> float:
    """The worst column's files read / ideal within partitions of one snapshot (``metrics.table_clustering``)."""
    snap = stats_store.load_snapshot(location, snapshot_id)
    return metrics.table_clustering(snap, ["x", "y"], num_clustering_columns=2)["headline"]


def _size(files: list[dict]) -> int:
    return sum(f["size"] for f in files)


def test_table_page_shows_the_sensors_plan_per_partition(api, auth, stores):
    """The sensor (one real poke, ``incremental_plan`` on) recorded a ``recluster`` decision with its plan; the page
    shows that plan per partition, as the sensor returned it (its XCom), without the plan's file lists."""
    s = stores["appends"]
    xcom = s.decision
    plan = xcom["plan"]
    assert xcom["decision"] == "recluster" and plan is not None
    # independently of the plan rule: the plan rewrites the 6 files appended last (not yet clustered), their bytes
    late = [f for f in s.files[-1] if "/late-" in f["path"]]
    planned = [p for e in plan["partitions"] for b in e["bins"] for p in b["paths"]]
    assert sorted(planned) == sorted(f["path"] for f in late)
    assert plan["bytes"] == _size(late) == 6150 and plan["files"] == 6

    r = api.get(table_access.table_page_path(s.table), headers=auth)
    assert r.status_code == 200
    assert "late-000.parquet" not in r.text  # the recorded decision keeps no file lists
    doc = parse(r.text)
    section = doc.find(id="latest-plan")
    assert section.attrs["data-state"] == "plan"
    summary = cells(section.find(id="plan-summary"))
    assert summary["evaluated_at"].text == fmt_ts(xcom["evaluated_at"])
    assert int(summary["files"].attrs["data-value"]) == 6 and summary["files"].text == "6 files"
    assert int(summary["bytes"].attrs["data-value"]) == 6150 and summary["bytes"].text == fmt_bytes(6150) == "6.0 KiB"
    assert int(summary["num_output_files"].attrs["data-value"]) == plan["num_output_files"]
    assert int(summary["partitions"].attrs["data-value"]) == 1
    for k in ("ratio_before", "ratio_after"):
        assert num(summary[k].attrs["data-value"]) == plan[k]
        assert summary[k].text == fmt_ratio(plan[k])
    assert plan["ratio_before"] > 2.0 > plan["ratio_after"]  # y 2.5x the ideal, estimated below the threshold after

    rows = {e.attrs["data-partition"]: e for e in section.find_all("tr", class_="plan-row")}
    assert list(rows) == [e["partition"] for e in plan["partitions"]] == ["day=2026-03-02"]
    entry = plan["partitions"][0]
    got = cells(rows["day=2026-03-02"])
    assert int(got["files"].attrs["data-value"]) == 6
    assert int(got["bytes"].attrs["data-value"]) == 6150
    partition_files = [f for f in s.files[-1] if f["partition"] == "day=2026-03-02"]
    assert f"of {len(partition_files)}" in rows["day=2026-03-02"].text  # 6 of the partition's 10 files
    assert f"of {fmt_bytes(_size(partition_files))}" in rows["day=2026-03-02"].text
    assert int(got["num_output_files"].attrs["data-value"]) == entry["num_output_files"]
    assert num(got["ratio_before"].attrs["data-value"]) == entry["ratio_before"]
    assert num(got["ratio_after"].attrs["data-value"]) == entry["ratio_after"]
    assert [d.text for d in got["reasons"].find_all("div")] == entry["reasons"]
    assert entry["reasons"][0].startswith("cluster the new files (1 groups, 6 files")

    data = api.get(table_url(s.table, "api"), headers=auth).json()
    assert data["latest_plan"]["state"] == "plan" and data["latest_plan"]["totals"]["bytes"] == 6150


def test_table_page_shows_each_runs_cost_and_write_amplification(api, auth, stores):
    """Two runs recorded as the clustering job records them: a full run of the ingested files, then an incremental
    run that rewrote 10,000 bytes after 4,000 bytes were appended: write amplification 2.50."""
    s = stores["appends"]
    ingest, grid1, with_appends, after2 = s.files[:4]
    r1, r2 = s.runs
    appended = [f for f in with_appends if f["path"] not in {g["path"] for g in grid1}]
    assert _size(appended) == 4000 and r2["rewritten"]["bytes"] == 10000

    doc = parse(api.get(table_access.table_page_path(s.table), headers=auth).text)
    rows = {e.attrs["data-run"]: e for e in doc.find_all("tr", class_="event-row")}
    assert list(rows) == ["run-2", "run-1"]  # newest first
    want = {
        # first run: every byte of the table no clustering run wrote (all ingested), rewritten once
        "run-1": ("full", 12, 8, _size(ingest), _size(ingest), 1.0, "1.00", s.snapshot_ids[0], s.snapshot_ids[1]),
        # the 4 appended files (4,000 bytes) and the partition's 4 grid files (6,000): 10,000 / 4,000
        "run-2": ("incremental", 8, 4, 10000, 4000, 2.5, "2.50", s.snapshot_ids[2], s.snapshot_ids[3]),
    }
    for run_id, (mode, files, out, rewritten, added, wa, wa_text, before, after) in want.items():
        got = cells(rows[run_id])
        assert got["mode"].text == mode
        assert int(got["files_rewritten"].attrs["data-value"]) == files
        assert int(got["output_files"].attrs["data-value"]) == out
        assert int(got["bytes_rewritten"].attrs["data-value"]) == rewritten
        assert got["bytes_rewritten"].text == fmt_bytes(rewritten)
        assert int(got["bytes_added"].attrs["data-value"]) == added
        assert num(got["write_amplification"].attrs["data-value"]) == pytest.approx(wa)
        assert got["write_amplification"].text == wa_text
        # the worst ratio to the ideal in the snapshot before the run and the first one after it
        assert num(got["ratio_before"].attrs["data-value"]) == pytest.approx(_headline(s.location, before), rel=1e-12)
        assert num(got["ratio_after"].attrs["data-value"]) == pytest.approx(_headline(s.location, after), rel=1e-12)
        assert got["ratio_after"].text == "1.00x"  # a perfect grid after each run
    assert _size(ingest) == 12300
    assert "(first run)" in rows["run-1"].text and "(first run)" not in rows["run-2"].text
    assert cells(rows["run-2"])["plan_ratios"].text == "plan: 1.70x → 1.00x (est.)"  # the job's plan, recorded
    assert dt.datetime.fromisoformat(cells(rows["run-2"])["at"].attrs["data-value"]) == s.cluster_at

    totals = cells(doc.find(id="run-totals"))
    assert int(totals["bytes_rewritten"].attrs["data-value"]) == 22300
    assert int(totals["bytes_added"].attrs["data-value"]) == 16300
    assert num(totals["write_amplification"].attrs["data-value"]) == pytest.approx(22300 / 16300)
    assert totals["write_amplification"].text == "1.37"

    # the chart: one point per run, its write amplification, on the health chart's time axis
    chart = doc.find(id="runs-chart").find("svg")
    points = chart.find("g", class_="series").find_all("circle", class_="point")
    assert [(p.attrs["data-id"], num(p.attrs["data-value"])) for p in points] == [("run-1", 1.0), ("run-2", 2.5)]
    assert "write amplification 2.50" in points[1].find("title").text
    health = doc.find(id="history-chart").find("svg")
    marker = [m for m in health.find_all("g", class_="cluster") if m.attrs["data-at"] == s.cluster_at.isoformat()]
    assert "incremental" in marker[0].find("title").text and "write amplification 2.50" in marker[0].text

    runs = api.get(table_url(s.table, "api"), headers=auth).json()["runs"]
    assert [(r["run_id"], r["bytes_added"], r["write_amplification"]) for r in runs] == [
        ("run-1", 12300, 1.0),
        ("run-2", 4000, 2.5),
    ]


def test_delta_table_page_shows_the_plan_and_runs_from_its_versions(api, auth, stores):
    """A Delta table: the runs' states are the versions they read and committed (recorded in their events); the
    bytes added are the appends' files between them, read here with delta-rs."""
    from deltalake import DeltaTable

    s = stores["delta"]
    r1, r2 = s.runs

    def live(version: int) -> dict[str, int]:
        adds = pa.table(DeltaTable(s.table, version=version).get_add_actions(flatten=True)).to_pylist()
        return {a["path"]: a["size_bytes"] for a in adds}

    before1, before2 = live(r1["delta"]["version"] - 1), live(r2["delta"]["version"] - 1)
    added1 = sum(before1.values())  # the first run: all 4 ingested files
    added2 = sum(v for p, v in before2.items() if p not in before1 and "-zorder-" not in p)  # the 2 appends
    assert added2 == sum(f["size"] for f in s.files[1]) and len(s.files[1]) == 2

    doc = parse(api.get(table_access.table_page_path(s.table), headers=auth).text)
    rows = {e.attrs["data-run"]: cells(e) for e in doc.find_all("tr", class_="event-row")}
    assert list(rows) == ["drun-2", "drun-1"]
    for run_id, r, added in (("drun-1", r1, added1), ("drun-2", r2, added2)):
        got = rows[run_id]
        assert int(got["bytes_rewritten"].attrs["data-value"]) == r["rewritten"]["bytes"]
        assert int(got["bytes_added"].attrs["data-value"]) == added
        assert num(got["write_amplification"].attrs["data-value"]) == pytest.approx(r["rewritten"]["bytes"] / added)
        assert got["write_amplification"].text == f"{r['rewritten']['bytes'] / added:.2f}"
        assert num(got["ratio_before"].attrs["data-value"]) > num(got["ratio_after"].attrs["data-value"])
    assert rows["drun-1"]["mode"].text == "full" and rows["drun-2"]["mode"].text == "incremental"

    plan = s.decision["plan"]
    section = doc.find(id="latest-plan")
    assert section.attrs["data-state"] == "plan"
    (row,) = section.find_all("tr", class_="plan-row")
    assert "(unpartitioned)" in row.text
    got = cells(row)
    assert int(got["files"].attrs["data-value"]) == plan["files"]
    assert int(got["bytes"].attrs["data-value"]) == plan["bytes"]
    assert [d.text for d in got["reasons"].find_all("div")] == plan["partitions"][0]["reasons"]


def test_table_without_stats_says_why(api, auth, stores):
    r = api.get(table_access.table_page_path(stores["missing"].table), headers=auth)
    assert r.status_code == 200
    # the sensor's hook explains it: this table's directory does not exist
    assert "does not exist (nothing at that path)" in parse(r.text).find(id="table-error").text
    r = api.get(table_url(stores["missing"].table, "api"), headers=auth)
    assert r.status_code == 409 and "StatsNotFoundError" in r.json()["detail"]


# --------------------------------------------------------------------------- links to the pages


def test_one_url_builder_for_the_pages_and_the_extra_links(monkeypatch):
    """``[api] base_url`` (else Airflow 3's default API server address) + the page's path, as the extra link."""
    from airflow_zorder.links import TableHealthLink

    table = "s3://lake/events?x=1 y"
    path = "/zorder/table?table=s3%3A%2F%2Flake%2Fevents%3Fx%3D1%20y"
    assert table_access.table_page_path(table) == path
    monkeypatch.delenv("AIRFLOW__API__BASE_URL", raising=False)
    assert table_access.table_health_url(table) == "http://localhost:8080" + path
    assert table_access.table_health_url(table, base_url="") == path  # relative to the host
    assert table_access.table_health_url(table, base_url="http://h:1/") == "http://h:1" + path
    monkeypatch.setenv("AIRFLOW__API__BASE_URL", "https://airflow.example.com/base/")
    assert table_access.table_health_url(table) == "https://airflow.example.com/base" + path

    class Task:  # what the link reads off an operator or the sensor
        pass

    task = Task()
    task.table = table
    assert TableHealthLink().get_link(task, ti_key=None) == table_access.table_health_url(table)
    task.table = ""
    assert TableHealthLink().get_link(task, ti_key=None) == ""


# --------------------------------------------------------------------------- table discovery


def test_tables_option_parsing():
    refs = discovery.parse_tables_option(
        "/data/a\n s3a://b/t | s3://stats/t | aws_lake ,db.tbl|/stats/tbl,\n# comment\n, other.tbl"
    )
    assert [(r.table, r.stats_location, r.conn_id, r.error) for r in refs[:3]] == [
        ("/data/a", "/data/a/_zorder/stats", None, None),
        ("s3a://b/t", "s3://stats/t", "aws_lake", None),
        ("db.tbl", "/stats/tbl", None, None),
    ]
    assert (
        refs[3].table == "other.tbl"
        and refs[3].stats_location is None
        and "'other.tbl|<stats location>'" in refs[3].error
    )
    with pytest.raises(ValueError, match="bad \\[zorder\\] tables entry 'a\\|b\\|c\\|d'"):
        discovery.parse_tables_option("a|b|c|d")
    (ice,) = discovery.parse_tables_option("ns.events|||iceberg_conn_id=lake")
    assert (ice.table, ice.stats_location, ice.iceberg_conn_id, ice.iceberg_catalog, ice.error) == (
        "ns.events",
        None,
        "lake",
        None,
        None,
    )
    assert discovery.parse_tables_option("ns.e||aws|iceberg_catalog=cat")[0].iceberg_catalog == "cat"
    with pytest.raises(ValueError, match="fourth field 'iceberg_catalog=<name>'"):
        discovery.parse_tables_option("ns.e|||glue=cat")


def _write_sensor_dag(folder: Path, dag_id: str, table: str, stats_location: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{dag_id}.py"
    path.write_text(
        textwrap.dedent(f"""
        import datetime as dt
        from airflow.sdk import DAG
        from airflow_zorder.sensors.file_overlap import FileOverlapSensor

        with DAG({dag_id!r}, schedule=None, start_date=dt.datetime(2026, 1, 1), catchup=False) as probe_dag:
            FileOverlapSensor(task_id="watch_orders", table={table!r}, stats_location={stats_location!r},
                              poke_interval=1, timeout=60)
    """)
    )
    return path


def test_tables_watched_by_the_sensor_are_discovered(api, auth, airflow_db, tmp_path, monkeypatch):
    """A DAG with the provider's FileOverlapSensor runs (dag.test); its XCom names the table, its decision
    event lands in the stats store, and the pages pick up both."""
    orders = build_orders_store(tmp_path)  # not in [zorder] tables
    dag_id = "zorder_ui_discovery_probe"
    folder = tmp_path / "bundle"
    path = _write_sensor_dag(folder, dag_id, orders.table, orders.location)
    monkeypatch.setenv(
        "AIRFLOW__DAG_PROCESSOR__DAG_BUNDLE_CONFIG_LIST",
        json.dumps(
            [
                {
                    "name": "zorder-ui-tests",
                    "classpath": "airflow.dag_processing.bundles.local.LocalDagBundle",
                    "kwargs": {"path": str(folder)},
                },
                {
                    "name": "dags-folder",
                    "classpath": "airflow.dag_processing.bundles.local.LocalDagBundle",
                    "kwargs": {},
                },
            ]
        ),
    )
    spec = importlib.util.spec_from_file_location(dag_id, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    dr = mod.probe_dag.test()
    assert dr.state == "success"

    found = {r.table: r for r in discovery.xcom_tables()}
    ref = found[orders.table]
    assert ref.stats_location == orders.location and ref.sources == (f"dag:{dag_id}/watch_orders",)
    assert discovery.xcom_tables(dag_ids={"some_other_dag"}) == []  # only DAGs the user may read

    r = api.get("/zorder/api/tables", headers=auth)
    row = next(t for t in r.json() if t["table"] == orders.table)
    assert row["sources"] == [f"dag:{dag_id}/watch_orders"]
    want = expected_now(orders)
    assert row["num_files"] == 12 and row["decision"] == want["decision"] == "recluster"
    # its page (where the sensor's extra link points) shows the decision the sensor recorded
    r = api.get(table_access.table_page_path(orders.table), headers=auth)
    assert r.status_code == 200
    last = parse(r.text).find(id="last-decision")
    recorded = recluster_policy.last_decision(orders.location)
    assert last.find("span", data_field="decision").text == recorded["decision"] == "recluster"
    assert [li.text for li in last.find_all("li")] == recorded["reasons"]


# --------------------------------------------------------------------------- the workload advice


def test_table_page_shows_the_last_workload_advice(api, auth, tmp_path, monkeypatch, stores):
    from airflow_zorder.core.advisor.workload import Statement

    s = build_events_store(tmp_path)
    monkeypatch.setenv("AIRFLOW__ZORDER__TABLES", tables_option({**stores, "events": s}))
    doc = parse(api.get(table_access.table_page_path(s.table), headers=auth).text)
    assert doc.find(id="advice").attrs["data-state"] == "none"
    workload = [Statement(f"SELECT * FROM ev WHERE x = {i}") for i in range(30)]
    workload += [Statement("SELECT * FROM ev e JOIN other o ON e.y = o.y WHERE o.z = 1"), Statement("SELECT (")]
    advice = FileStatsHook(s.table, s.location).recommend_columns(workload, table_name="ev", record=True)
    assert advice["columns"] == ["x"] and advice["scans"] == 31
    doc = parse(api.get(table_access.table_page_path(s.table), headers=auth).text)
    panel = doc.find(id="advice")
    assert panel.attrs["data-state"] == "advice"
    f = cells(panel)
    assert f["columns"].attrs["data-value"] == "x"
    assert num(f["served"].attrs["data-value"]) == pytest.approx(advice["served"]) == pytest.approx(30 / 31)
    assert f["served"].text == format_percent(30 / 31)
    assert num(f["files_after"].attrs["data-value"]) == pytest.approx(advice["files_after"])
    assert num(f["statements"].attrs["data-value"]) == 32 and num(f["failed"].attrs["data-value"]) == 1
    assert api.get(table_url(s.table, "api"), headers=auth).json()["advice"]["columns"] == ["x"]
