"""The fleet page inside the real Airflow API app: the example fleet DAG runs (``dag.test()``, a budget of one byte so
no table is chosen and no Spark starts) and records its run; a second record is a real plan of the same tables under
a 400 KB budget. The page and its JSON twin show every table's health, rank, reason, planned cost and gain, and the
budget and savings of each run, as the records hold them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fleet_tables import write_fleet
from htmlq import num, parse
from ui_app import signed_in_client

from airflow_zorder.core.fleet import records
from airflow_zorder.core.fleet.budget import Budget
from airflow_zorder.core.fleet.spec import expand
from airflow_zorder.plugins.rendering import fmt_bytes

pytest.importorskip("deltalake")
pytest.importorskip("pyiceberg")


@pytest.fixture(scope="module")
def fleet_runs(airflow_db, tmp_path_factory):
    """A recorded run of zorder_fleet (nothing chosen), then a recorded plan with a 400 KB budget."""
    from airflow.dag_processing.dagbag import DagBag

    from airflow_zorder.hooks.fleet import FleetHook

    root = tmp_path_factory.mktemp("uifleet")
    entries, env = write_fleet(root / "tables")
    home = str(root / "records")
    mp = pytest.MonkeyPatch()
    for k, v in env.items():
        mp.setenv(k, v)
    mp.setenv("ZORDER_FLEET_SPEC", str(root / "tables" / "fleet.json"))
    mp.setenv("ZORDER_FLEET_HOME", records.fleet_home(home, "zorder_fleet"))
    try:
        bag = DagBag(dag_folder=str(Path(__file__).resolve().parents[2] / "dags"))
        dag = bag.dags["zorder_fleet"]
        runs = [dag.test(run_conf={"budget_bytes": "1"})]
        tables, _ = expand(entries)
        plan = FleetHook(record_decisions=False).plan(tables, Budget(max_bytes=400 << 10), run_id="manual__budgeted")
        records.write_run(records.fleet_home(home, "zorder_fleet"), json.loads(json.dumps(plan.to_dict())))
    finally:
        mp.undo()
    assert all(r.state == "success" for r in runs)
    return home, runs, plan


@pytest.fixture(scope="module")
def client(fleet_runs, tmp_path_factory):
    home, _, _ = fleet_runs
    with signed_in_client(tmp_path_factory.mktemp("auth"), {"AIRFLOW__ZORDER__FLEET_HOME": home}) as c:
        yield c


def test_the_fleet_page_shows_each_tables_decision_and_each_runs_budget(fleet_runs, client):
    home, runs, plan = fleet_runs
    kept = records.load_runs(records.fleet_home(home, "zorder_fleet"))
    assert [r["run_id"] for r in kept] == [runs[0].run_id, "manual__budgeted"]
    # the DAG's run: one byte buys nothing; the degraded tables were skipped for budget, the errors recorded
    by = kept[0]["totals"]["by_reason"]
    assert (by["chosen"], by["budget"], by["error"], by["healthy"]) == (0, 6, 2, 1)
    assert {d["skipped_runs"] for d in kept[0]["decisions"] if d["reason"] == "budget"} == {1}

    r = client.get("/zorder/fleet")  # the only fleet: shown without its name
    assert r.status_code == 200, r.text
    page = parse(r.text)
    rows = page.find(id="decisions").find_all("tr", class_="decision-row")
    assert [row.attrs["data-table"] for row in rows] == [d["table"] for d in plan.decisions]
    for row, d in zip(rows, plan.decisions):
        assert row.attrs["data-reason"] == d["reason"]
        assert row.find("td", data_field="rank").text == ("" if d["rank"] is None else str(d["rank"]))
        assert int(row.find("td", data_field="planned_bytes").attrs["data-value"]) == d["planned_bytes"]
        assert int(row.find("td", data_field="chosen_bytes").attrs["data-value"]) == d["chosen_bytes"]
        assert num(row.find("td", data_field="weighted_gain").attrs["data-value"]) == pytest.approx(d["weighted_gain"])
    totals = plan.totals()
    last = page.find(id="last-run")
    assert last.find("span", data_field="bytes").text == fmt_bytes(totals["bytes"])
    assert last.find("span", data_field="budget").text == fmt_bytes(400 << 10)
    assert len(page.find(id="runs").find_all("tr", class_="run-row")) == 2
    assert page.find("svg", class_="line-chart") is not None  # budget spent and savings over the runs
    assert "Budget spent per run" in r.text and "Read savings per run" in r.text

    api = client.get("/zorder/api/fleet", params={"name": "zorder_fleet"}).json()
    assert [x["planned_bytes"] for x in api["runs"]] == [k["totals"]["bytes"] for k in kept]
    assert api["state"]["skipped_runs"] == {t: n for t, n in plan.skipped_runs().items() if n}
    assert client.get("/zorder/api/fleet", params={"name": "not_a_fleet"}).status_code == 404
