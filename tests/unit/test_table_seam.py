"""The table seam: every registered format implements the protocol, and the registry opens each one once."""

from __future__ import annotations

import importlib

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from airflow_zorder.core.errors import MissingDependencyError
from airflow_zorder.core.storage.io.local import LocalFileSystem
from airflow_zorder.core.tables import open_table, registry
from airflow_zorder.core.tables.protocol import TableFormat

CAPABILITIES = ("journals_inputs", "rewrites_whole_units", "stats_from_metadata", "column_mapping", "kind")


class _Metastore:
    """A catalog holding one unpartitioned Parquet table at ``location`` (the engine's side, stood in)."""

    def __init__(self, location: str) -> None:
        self.location = location

    def describe(self, name: str) -> dict:
        return {"location": self.location, "home": None, "partition_columns": [], "data_columns": ["a"],
                "partitions": []}  # fmt: skip


@pytest.mark.parametrize("name", sorted(registry.FORMATS))
def test_every_registered_format_implements_the_protocol(name, tmp_path, tmp_path_factory):
    module = importlib.import_module(registry.FORMATS[name].module)
    pq.write_table(pa.table({"a": [1, 2]}), tmp_path / "f.parquet")
    rows, files = 2, 1
    if name == "delta":
        from deltalake import write_deltalake

        write_deltalake(str(tmp_path / "d"), pa.table({"a": [1, 2]}))
        opened = module.open_format(str(tmp_path / "d"), str(tmp_path / "d"), LocalFileSystem())
    elif name == "iceberg":
        from iceberg_tables import CATALOG, write_table

        _, props = write_table(tmp_path / "ice", "ns.t", [pa.table({"a": [1, 2]})])
        opened = module.open_format(
            "ns.t", "ns.t", LocalFileSystem(), iceberg_catalog=CATALOG, catalog_properties=props
        )
    elif name == "hudi":  # a real Hudi table, written by Hudi's Spark bundle (make hudi-env)
        from hudi_tables import ROWS, hudi_tables, missing

        if missing():
            pytest.skip(missing())
        root = str(hudi_tables(tmp_path_factory.getbasetemp() / "hudi-tables")["cow_plain"])
        opened = module.open_format(root, root, LocalFileSystem())
        import hudi

        rows, files = ROWS, len(hudi.HudiTableBuilder.from_base_uri(root).build().get_file_slices())
    else:
        opened = module.open_format(
            str(tmp_path), str(tmp_path), LocalFileSystem(), metastore=_Metastore(str(tmp_path))
        )
    assert isinstance(opened, TableFormat)  # every method and attribute of the protocol is there
    assert opened.format == name and all(hasattr(opened, c) for c in CAPABILITIES)
    snap = opened.snapshot()
    assert snap.format == name and snap.kind == opened.kind and len(snap.files) == files
    assert opened.reader_dataset().to_table().num_rows == rows


def test_the_registry_opens_each_format_by_what_is_on_storage(tmp_path):
    from deltalake import write_deltalake

    pq.write_table(pa.table({"a": [1]}), tmp_path / "f.parquet")
    write_deltalake(str(tmp_path / "d"), pa.table({"a": [1]}))
    fs = LocalFileSystem()
    assert open_table(str(tmp_path), fs).format == "parquet"
    assert open_table(str(tmp_path / "d"), fs).format == "delta"
    assert open_table(str(tmp_path / "missing"), fs).format == "parquet"  # refused when read: "does not exist"


def test_a_missing_library_names_the_extra(monkeypatch, tmp_path):
    monkeypatch.setitem(registry.FORMATS, "delta", registry.FormatEntry("airflow_zorder.no_such_module", "delta"))
    from deltalake import write_deltalake

    write_deltalake(str(tmp_path / "d"), pa.table({"a": [1]}))
    with pytest.raises(MissingDependencyError, match=r"pip install 'airflow-zorder\[delta\]'"):
        open_table(str(tmp_path / "d"), LocalFileSystem())
