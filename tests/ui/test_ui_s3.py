"""The UI's table page for a table on real S3 (a local moto server), read through an ordinary ``aws``
connection named in ``[zorder] tables``; the stats were collected by the real stats job and uploaded.
A Delta table's page is read from its log (no stats job), an Iceberg table's from its manifests through an ``iceberg``
connection named in ``[zorder] tables``; a Hudi table is refused, naming the format."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import pytest
from fastapi.testclient import TestClient
from htmlq import parse
from ui_app import signed_in_client

from airflow_zorder.hooks.file_stats import FileStatsHook

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def delta_table(tmp_path_factory) -> str:
    """A real Delta table written by ``deltalake``, 16 commits of one file each, every file spanning the whole
    range of a and b (degraded): the UI reads it through its log."""
    import numpy as np
    import pyarrow as pa
    from deltalake import write_deltalake

    root = tmp_path_factory.mktemp("delta") / "events"
    rng = np.random.default_rng(7)
    for _ in range(16):
        v = rng.integers(0, 100, (2, 40))
        v[:, 0], v[:, 1] = 0, 99
        write_deltalake(str(root), pa.table({"a": v[0], "b": v[1]}), mode="append")
    return str(root)


@pytest.fixture(scope="module")
def hudi_table(tmp_path_factory) -> str:
    """A Hudi table's directory (tests/unit/test_table_formats.py lays it out): the UI must refuse it."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "table_format_builders", Path(__file__).resolve().parents[1] / "unit" / "test_table_formats.py"
    )
    builders = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(builders)
    root = tmp_path_factory.mktemp("hudi") / "events"
    builders.write_hudi(str(root))
    return str(root)


@pytest.fixture(scope="module")
def iceberg_table(tmp_path_factory) -> dict[str, str] | None:
    """A real Iceberg table (pyiceberg, SQL catalog on SQLite): 16 appends of one file each spanning the whole range
    of a and b (degraded); returns its catalog's properties, or None without pyiceberg and the Iceberg provider."""
    try:
        import airflow.providers.apache.iceberg  # noqa: F401
        from iceberg_tables import write_table
    except ImportError:
        return None
    import numpy as np
    import pyarrow as pa

    rng = np.random.default_rng(7)
    files = []
    for _ in range(16):
        v = rng.integers(0, 100, (2, 40))
        v[:, 0], v[:, 1] = 0, 99
        files.append(pa.table({"a": v[0], "b": v[1]}))
    _, props = write_table(tmp_path_factory.mktemp("iceberg"), "ns.events", files)
    return props


@pytest.fixture(scope="module")
def api(airflow_db, s3, lake, delta_table, hudi_table, iceberg_table, tmp_path_factory) -> Iterator[TestClient]:
    tables = (
        f"{lake['events']}||aws_lake\ns3://lake/raw|s3://lake/raw/_zorder/stats|aws_wrong\n{delta_table}\n{hudi_table}"
    )
    env = {
        "AIRFLOW_CONN_AWS_LAKE": s3.connection_uri(),
        "AIRFLOW_CONN_AWS_WRONG": s3.connection_uri(secret_key="not-the-secret"),
    }
    if iceberg_table:
        env["AIRFLOW_CONN_ZORDERTESTS"] = json.dumps({"conn_type": "iceberg", "extra": iceberg_table})
        tables += "\nns.events|||iceberg_conn_id=zordertests"
    env["AIRFLOW__ZORDER__TABLES"] = tables
    with signed_in_client(tmp_path_factory.mktemp("auth"), env) as client:
        yield client


def test_table_page_reads_s3_stats_through_the_aws_connection(api, lake, s3):
    before = s3.keys()
    r = api.get(f"/zorder/table?table={quote(lake['events'], safe='')}")
    assert r.status_code == 200, r.text
    assert not parse(r.text).find_all(id="table-error"), r.text[:2000]
    want = FileStatsHook(lake["events"], conn_id="aws_lake").evaluate()
    data = api.get(f"/zorder/api/table?table={quote(lake['events'], safe='')}").json()
    assert data["evaluation"]["decision"] == want["decision"] == "recluster"
    assert data["evaluation"]["partitions"] == ["day=2"] and data["partitions_total"] == 2
    assert data["evaluation"]["columns"] == want["columns"]
    assert want["decision"] in r.text and "day=2" in r.text
    assert s3.keys() == before  # the UI only reads


def test_table_page_names_a_credentials_error(api, s3):
    r = api.get(f"/zorder/api/table?table={quote('s3://lake/raw', safe='')}")
    assert r.status_code == 409
    assert "with connection 'aws_wrong': access denied" in r.json()["detail"]
    page = api.get(f"/zorder/table?table={quote('s3://lake/raw', safe='')}")
    assert page.status_code == 200
    assert "access denied" in parse(page.text).find(id="table-error").text


def test_table_page_shows_a_delta_table_read_from_its_log(api, delta_table):
    r = api.get(f"/zorder/api/table?table={quote(delta_table, safe='')}")
    assert r.status_code == 200, r.text
    data = r.json()
    want = FileStatsHook(delta_table).evaluate()
    assert data["evaluation"]["decision"] == want["decision"] == "recluster"
    assert data["evaluation"]["snapshot_id"] == want["snapshot_id"] == 15  # the Delta version
    assert data["evaluation"]["columns"] == want["columns"] and data["evaluation"]["num_files"] == 16
    assert [h["snapshot_id"] for h in data["history"]] == [15]  # the current version only
    assert {c["column"] for c in data["columns"]} == {"a", "b"} and data["partitions_total"] == 1
    page = api.get(f"/zorder/table?table={quote(delta_table, safe='')}")
    assert page.status_code == 200 and not parse(page.text).find_all(id="table-error"), page.text[:2000]
    assert parse(page.text).find(id="decision").text.strip() == "recluster"
    rows = {t["table"]: t for t in api.get("/zorder/api/tables").json()}
    assert rows[delta_table]["error"] is None and rows[delta_table]["decision"] == "recluster"
    assert not (Path(delta_table) / "_zorder").exists()  # the UI only reads


def test_table_page_shows_an_iceberg_table_read_from_its_manifests(api, iceberg_table):
    if not iceberg_table:
        pytest.skip("the iceberg extra (pyiceberg, the Iceberg provider)")
    r = api.get("/zorder/api/table?table=ns.events")
    assert r.status_code == 200, r.text
    data = r.json()
    want = FileStatsHook("ns.events", iceberg_conn_id="zordertests").evaluate()
    assert data["evaluation"]["decision"] == want["decision"] == "recluster"
    assert data["evaluation"]["snapshot_id"] == want["snapshot_id"] == 16  # the snapshot's sequence number
    assert data["evaluation"]["num_files"] == 16 and {c["column"] for c in data["columns"]} == {"a", "b"}
    page = api.get("/zorder/table?table=ns.events")
    assert page.status_code == 200 and not parse(page.text).find_all(id="table-error"), page.text[:2000]
    assert parse(page.text).find(id="decision").text.strip() == "recluster"
    rows = {t["table"]: t for t in api.get("/zorder/api/tables").json()}
    assert rows["ns.events"]["error"] is None and rows["ns.events"]["decision"] == "recluster"


def test_table_page_shows_why_a_hudi_table_cannot_be_read(api, hudi_table):
    # hand-laid Hudi table whose commits carry no schema: hudi-rs refuses it, the page says so (a real Hudi table's
    # page: tests/integration/test_hudi_tables.py)
    r = api.get(f"/zorder/api/table?table={quote(hudi_table, safe='')}")
    assert r.status_code in (404, 409, 422) and "with hudi-rs" in r.json()["detail"], r.text
    page = api.get(f"/zorder/table?table={quote(hudi_table, safe='')}")
    assert "TableError" in parse(page.text).find(id="table-error").text
    assert not (Path(hudi_table) / "_zorder").exists()
