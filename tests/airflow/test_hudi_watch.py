"""Apache Hudi tables watched through their timeline, with no stats job and no Spark: the table seam's Hudi module,
FileStatsHook, FileOverlapSensor in real ``dag.test()`` runs (poke and deferrable) and the UI's table page. The tables
are real Hudi tables written by Hudi's Spark bundle (tests/hudi_tables.py, Spark 3.5.8 + hudi-spark3.5-bundle 1.2.0);
they are read here by hudi-rs (the ``hudi`` package) and pyarrow only."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import quote

import pyarrow.compute as pc
import pytest
from dag_bundles import dag_module, forget_xcoms, run_watch
from hudi_tables import ROWS, hudi_tables, missing

from airflow_zorder.core.errors import HudiRewriteRefusedError
from airflow_zorder.core.hudi import hudi_timeline
from airflow_zorder.core.policy import recluster_policy
from airflow_zorder.core.stats import footer_stats
from airflow_zorder.core.storage.io import filesystem_for
from airflow_zorder.core.tables.registry import open_table
from airflow_zorder.hooks.file_stats import FileStatsHook

hudi = pytest.importorskip("hudi")
if missing():
    pytest.skip(missing(), allow_module_level=True)

DAG_FILE = Path(__file__).parent / "hudi_dags" / "zorder_hudi_watch_dags.py"
COLUMNS = ["user_id", "product"]


@pytest.fixture(scope="module")
def tables(tmp_path_factory) -> dict[str, Path]:
    return hudi_tables(tmp_path_factory.getbasetemp() / "hudi-tables")


@pytest.fixture(scope="module")
def dags(airflow_db):
    with dag_module(DAG_FILE, "zorder-hudi-tests") as module:
        yield module
        forget_xcoms(module)


def tree(root: Path) -> dict[str, tuple[int, int]]:
    return {str(p.relative_to(root)): (p.stat().st_size, p.stat().st_mtime_ns) for p in root.rglob("*") if p.is_file()}


def hudi_rs_files(root: Path) -> tuple[int, list[str]]:
    """hudi-rs's own answer: the latest completed instant and the latest slices' base files (full paths)."""
    t = hudi.HudiTableBuilder.from_base_uri(str(root)).build()
    latest = int(t.get_timeline().get_latest_commit_timestamp())
    return latest, sorted(f"{root}/{s.base_file_relative_path()}" for s in t.get_file_slices())


def without_state(root: Path) -> dict[str, tuple[int, int]]:
    return {k: v for k, v in tree(root).items() if not k.startswith("_zorder")}


def test_the_hook_reads_the_latest_file_slices_and_their_footers(tables):
    root = tables["cow_part"]
    before = tree(root)
    hook = FileStatsHook(str(root))
    opened = hook.metadata_format
    assert opened is not None and opened.format == "hudi"
    latest, files = hudi_rs_files(root)
    assert hook.get_latest_snapshot_id() == latest  # the version is the latest completed instant
    snap = hook.get_snapshot()
    assert sorted(set(snap["path"].to_pylist())) == files
    assert set(snap["snapshot_id"].to_pylist()) == {latest}
    assert set(snap["partition"].to_pylist()) == {"eu", "us"}  # Hudi's partition paths (not hive-style)
    assert {tuple(v) for v in snap["partition_values"].to_pylist()} == {(("region", "eu"),), (("region", "us"),)}
    assert not [c for c in set(snap["column_name"].to_pylist()) if c.startswith("_hoodie_")]
    # the rows are the table's: every record once (the base files of the latest slices, nothing older)
    ids = opened.reader_dataset().to_table(columns=["id"])["id"]
    assert len(ids) == ROWS and pc.count_distinct(ids).as_py() == ROWS
    # the same metrics as the footers of the same files give, and the decision a scrambled layout earns
    payload = hook.evaluate(columns=COLUMNS)
    footers = footer_stats.read_footers(files, COLUMNS)
    whole = ("expected_fraction", "ideal_fraction", "ratio_to_ideal")  # per partition: Hudi's paths, not k=v ones
    by_footers = recluster_policy.evaluate(footers, COLUMNS)["columns"]
    assert {c: {k: by_footers[c][k] for k in whole} for c in COLUMNS} == {
        c: {k: payload["columns"][c][k] for k in whole} for c in COLUMNS
    }
    assert payload["decision"] == "recluster" and payload["num_files"] == len(files)
    assert payload["snapshot_id"] == latest
    signal = hook.get_change_signal()
    assert signal["snapshot_id"] == latest
    assert tree(root) == before  # reading wrote nothing


def test_a_refused_table_names_why_and_is_left_untouched(tables):
    expected = {
        "mor": r"merge-on-read and \d+ of its \d+ file slices have log files.*Compact first",
        "bucket": r"uses a bucket index.*fixed by a hash",
        "pending": r"pending instant\(s\).*clustering \d+, requested",
    }
    for name, words in expected.items():
        root = tables[name]
        before = tree(root)
        table = open_table(str(root), filesystem_for(str(root)))
        assert table.format == "hudi"
        with pytest.raises(HudiRewriteRefusedError, match=words):
            table.check_rewritable()
        assert tree(root) == before, name
    # a pending clustering is seen by its instant file, whatever the table version's layout
    pending = hudi_timeline.pending_instants(
        filesystem_for(str(tables["pending"])),
        str(tables["pending"]),
        hudi_timeline.read_properties(filesystem_for(str(tables["pending"])), str(tables["pending"])),
    )
    assert [(i.action, i.state) for i in pending] == [("clustering", "requested")]
    # watching still works on them: the base files' statistics (a merge-on-read table's log rows are not in them)
    assert FileStatsHook(str(tables["mor"])).evaluate(columns=COLUMNS)["num_files"] > 0


@pytest.mark.parametrize("mode", ["poke", "deferrable"])
def test_the_sensor_decides_on_a_hudi_table(dags, tables, mode):
    root = tables["cow_part"]
    before = without_state(root)
    state, payload = run_watch(getattr(dags, mode), table=str(root))
    assert state == "success" and payload["decision"] == "recluster", (state, payload)
    assert payload["snapshot_id"] == hudi_rs_files(root)[0]
    assert without_state(root) == before  # the decision lands in _zorder/stats/events only
    assert list((root / "_zorder" / "stats").rglob("*.json"))
    latest, files = hudi_rs_files(root)  # Hudi's reader sees the same table
    assert len(files) == payload["num_files"]


def test_the_table_page_shows_a_hudi_table(airflow_db, tables, tmp_path_factory):
    from ui_app import signed_in_client

    root = str(tables["pending"])  # one no sensor decided on (its recorded columns would lead the page)
    env = {"AIRFLOW__ZORDER__TABLES": root}
    with signed_in_client(tmp_path_factory.mktemp("auth"), env) as api:
        data = api.get(f"/zorder/api/table?table={quote(root, safe='')}")
        assert data.status_code == 200, data.text
        shown = data.json()
        assert shown["evaluation"]["decision"] == FileStatsHook(root).evaluate()["decision"]
        assert sorted(p["partition"] for p in shown["partitions"]) == ["eu", "us"]
        page = api.get(f"/zorder/table?table={quote(root, safe='')}")
        assert page.status_code == 200 and 'id="table-error"' not in page.text, page.text[:2000]
