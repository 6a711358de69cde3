"""Delta Lake, Hudi and Iceberg tables are told apart from plain Parquet directories (issue 22, point 3).

Every table here is a real directory on disk:

* Delta: written by ``deltalake`` (delta-rs), then deleted from and overwritten, so removed but not
  vacuumed files sit in the directory (reading the directory would bring deleted rows back);
* Hudi: Hudi cannot be written here (its writer needs Hudi's Spark bundle jars and there is no Maven
  access), so the directory is laid out as Hudi 0.14 lays out a copy-on-write table with hive-style
  partitions: ``.hoodie/hoodie.properties`` and timeline instants, ``.hoodie_partition_metadata`` in each
  partition, and two file slices of one file group (the older one superseded by an upsert);
* Iceberg: written by ``pyiceberg`` with a SqlCatalog on SQLite (partitioned, then deleted from), and a
  hand-written Hadoop-style table (``v1/v2.metadata.json``, ``version-hint.text``, ``data/``; no
  manifests) for when pyiceberg is not installed;
* plain Parquet, including a column named ``metadata`` (``metadata=x/`` partitions), Spark's
  ``_SUCCESS`` and Parquet ``_metadata``/``_common_metadata`` summary files.

The builders are shared with tests/integration/test_foreign_formats.py (it loads this module by path).
"""

from __future__ import annotations

import json
import os
import pickle
import uuid
from pathlib import Path
from types import SimpleNamespace

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest

from airflow_zorder.core.errors import ForeignTableFormatError
from airflow_zorder.core.storage import table_formats as tf
from airflow_zorder.core.storage.io.local import LocalFileSystem

# --------------------------------------------------------------------------- builders (real directories)


def events(n: int, start: int = 0) -> pa.Table:
    """``n`` rows: id, region (us/eu), v."""
    ids = list(range(start, start + n))
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "region": pa.array(["us" if i % 3 else "eu" for i in ids]),
            "v": pa.array([i * 0.5 for i in ids], pa.float64()),
        }
    )


def write_delta(path: str, partitioned: bool = False) -> pa.Table:
    """A real Delta table: three appends, a delete, and (unpartitioned) an overwrite; returns its live rows."""
    from deltalake import DeltaTable, write_deltalake

    parts = ["region"] if partitioned else None
    for k in range(3):
        write_deltalake(path, events(100, start=100 * k), mode="append", partition_by=parts)
    DeltaTable(path).delete("id < 50")  # rewrites files: the old ones stay until VACUUM
    if not partitioned:
        write_deltalake(path, events(40, start=1000), mode="overwrite")  # removes every earlier file
    return DeltaTable(path).to_pyarrow_table()


HUDI_INSTANTS = ("20240105093000123", "20240106101500456")


def write_hudi(path: str) -> None:
    """A Hudi 0.14 copy-on-write table with hive-style partitions, as Hudi lays it out on disk.

    Not written by Hudi: that needs Hudi's Spark bundle jars (no Maven access here). The layout and
    file contents follow what Hudi writes: table config, timeline instants, partition markers, and
    base files named ``<fileId>_<writeToken>_<instant>.parquet`` with the ``_hoodie_*`` meta columns.
    The second commit upserts into one file group: its older slice stays until the cleaner runs.
    """
    root = Path(path)
    hoodie = root / ".hoodie"
    for d in (hoodie / ".aux" / ".bootstrap" / ".partitions", hoodie / ".temp", hoodie / "archived"):
        d.mkdir(parents=True, exist_ok=True)
    (hoodie / "hoodie.properties").write_text(
        "#Updated at 2024-01-05T09:30:01.512Z\n"
        "#Fri Jan 05 09:30:01 UTC 2024\n"
        "hoodie.table.precombine.field=ts\n"
        "hoodie.datasource.write.drop.partition.columns=false\n"
        "hoodie.table.partition.fields=region\n"
        "hoodie.table.type=COPY_ON_WRITE\n"
        "hoodie.archivelog.folder=archived\n"
        "hoodie.timeline.layout.version=1\n"
        "hoodie.table.version=6\n"
        "hoodie.table.recordkey.fields=id\n"
        "hoodie.datasource.write.partitionpath.urlencode=false\n"
        "hoodie.database.name=default\n"
        "hoodie.table.name=events\n"
        "hoodie.table.keygenerator.class=org.apache.hudi.keygen.SimpleKeyGenerator\n"
        "hoodie.datasource.write.hive_style_partitioning=true\n"
        "hoodie.table.metadata.partitions=\n"
        "hoodie.populate.meta.fields=true\n"
        "hoodie.table.base.file.format=PARQUET\n"
        "hoodie.table.checksum=2702201862\n"
    )
    file_ids = {"us": f"{uuid.UUID(int=1)}-0", "eu": f"{uuid.UUID(int=2)}-0"}
    for n, instant in enumerate(HUDI_INSTANTS):
        stats: dict[str, list[dict]] = {}
        regions = ("us", "eu") if n == 0 else ("us",)
        for region in regions:
            part = root / f"region={region}"
            part.mkdir(exist_ok=True)
            (part / ".hoodie_partition_metadata").write_text(
                f"#partition metadata\n#Fri Jan 05 09:30:00 UTC 2024\ncommitTime={HUDI_INSTANTS[0]}\npartitionDepth=1\n"
            )
            name = f"{file_ids[region]}_0-{10 + 12 * n}-{15 + 15 * n}_{instant}.parquet"
            batch = events(60 if n == 0 else 70)  # the upsert rewrites ids 0..59 and inserts 60..69
            rows = batch.filter(pc.equal(batch["region"], region))
            k = rows.num_rows
            meta = {
                "_hoodie_commit_time": [instant] * k,
                "_hoodie_commit_seqno": [f"{instant}_0_{i}" for i in range(k)],
                "_hoodie_record_key": [str(i) for i in rows["id"].to_pylist()],
                "_hoodie_partition_path": [f"region={region}"] * k,
                "_hoodie_file_name": [name] * k,
            }
            table = pa.table(
                {
                    **{c: pa.array(v, pa.string()) for c, v in meta.items()},
                    **{c: rows[c] for c in rows.column_names},
                    "ts": pa.array([int(instant[:14])] * k, pa.int64()),
                }
            )
            pq.write_table(table, part / name)
            stats.setdefault(f"region={region}", []).append(
                {
                    "fileId": file_ids[region],
                    "path": f"region={region}/{name}",
                    "prevCommit": "null" if n == 0 else HUDI_INSTANTS[0],
                    "numWrites": k,
                    "numDeletes": 0,
                    "numUpdateWrites": 0 if n == 0 else 40,
                    "numInserts": k if n == 0 else k - 40,
                    "totalWriteBytes": (part / name).stat().st_size,
                    "totalWriteErrors": 0,
                    "partitionPath": f"region={region}",
                    "fileSizeInBytes": (part / name).stat().st_size,
                }
            )
        (hoodie / f"{instant}.commit.requested").write_text("")
        (hoodie / f"{instant}.inflight").write_text(
            json.dumps(
                {"partitionToWriteStats": {}, "compacted": False, "extraMetadata": {}, "operationType": "UPSERT"}
            )
        )
        (hoodie / f"{instant}.commit").write_text(
            json.dumps(
                {
                    "partitionToWriteStats": stats,
                    "compacted": False,
                    "extraMetadata": {"schema": json.dumps({"type": "record", "name": "events_record", "fields": []})},
                    "operationType": "UPSERT" if n else "INSERT",
                },
                indent=2,
            )
        )


def write_iceberg(base: str) -> tuple[str, pa.Table]:
    """A real Iceberg table written by pyiceberg (SqlCatalog on SQLite), identity-partitioned by region,
    then deleted from (copy-on-write: the old data file stays); returns (its directory, its live rows)."""
    pytest.importorskip("pyiceberg", reason="pyiceberg[sql-sqlite] is not installed")
    from pyiceberg.catalog.sql import SqlCatalog

    os.makedirs(base, exist_ok=True)
    catalog = SqlCatalog("zorder_tests", uri=f"sqlite:///{base}/catalog.db", warehouse=f"file://{base}")
    catalog.create_namespace("db")
    rows = events(300)
    table = catalog.create_table("db.events", schema=rows.schema)
    with table.update_spec() as spec:
        spec.add_identity("region")
    table.append(rows)
    table.delete("id < 50")
    location = table.location()
    return location.removeprefix("file://"), table.scan().to_arrow()


def load_iceberg_rows(base: str) -> pa.Table:
    """The live rows of :func:`write_iceberg`'s table, read through its catalog."""
    from pyiceberg.catalog.sql import SqlCatalog

    catalog = SqlCatalog("zorder_tests", uri=f"sqlite:///{base}/catalog.db", warehouse=f"file://{base}")
    return catalog.load_table("db.events").scan().to_arrow()


def write_iceberg_handwritten(path: str) -> None:
    """An Iceberg Hadoop table as Iceberg's HadoopCatalog names it (``metadata/vN.metadata.json``,
    ``version-hint.text``, ``data/``); written by hand (no manifests or manifest lists: the detection
    looks at the table metadata files only)."""
    root = Path(path)
    (root / "metadata").mkdir(parents=True)
    (root / "data").mkdir()
    data_file = root / "data" / f"00000-0-{uuid.UUID(int=3)}-00001.parquet"
    pq.write_table(events(100), data_file)
    schema = {
        "type": "struct",
        "schema-id": 0,
        "fields": [
            {"id": 1, "name": "id", "required": False, "type": "long"},
            {"id": 2, "name": "region", "required": False, "type": "string"},
            {"id": 3, "name": "v", "required": False, "type": "double"},
        ],
    }
    for version in (1, 2):
        snapshot = {
            "snapshot-id": 3051729675574597004,
            "sequence-number": 1,
            "timestamp-ms": 1704447000123,
            "manifest-list": f"{root}/metadata/snap-3051729675574597004-1-{uuid.UUID(int=4)}.avro",
            "summary": {
                "operation": "append",
                "added-data-files": "1",
                "added-records": "100",
                "total-records": "100",
                "total-data-files": "1",
            },
            "schema-id": 0,
        }
        meta = {
            "format-version": 2,
            "table-uuid": str(uuid.UUID(int=5)),
            "location": str(root),
            "last-sequence-number": version - 1,
            "last-updated-ms": 1704447000123,
            "last-column-id": 3,
            "current-schema-id": 0,
            "schemas": [schema],
            "default-spec-id": 0,
            "partition-specs": [{"spec-id": 0, "fields": []}],
            "last-partition-id": 999,
            "default-sort-order-id": 0,
            "sort-orders": [{"order-id": 0, "fields": []}],
            "properties": {"write.parquet.compression-codec": "zstd"},
            "current-snapshot-id": snapshot["snapshot-id"] if version == 2 else -1,
            "refs": {"main": {"snapshot-id": snapshot["snapshot-id"], "type": "branch"}} if version == 2 else {},
            "snapshots": [snapshot] if version == 2 else [],
            "snapshot-log": [],
            "metadata-log": [],
        }
        (root / "metadata" / f"v{version}.metadata.json").write_text(json.dumps(meta, indent=2))
    (root / "metadata" / "version-hint.text").write_text("2")


def write_plain(path: str, partition_column: str | None = None) -> None:
    """A plain Parquet table (optionally Hive-partitioned) with Spark's and Parquet's side files."""
    root = Path(path)
    root.mkdir(parents=True)
    rows = events(90)
    if partition_column:
        rows = rows.append_column(partition_column, pa.array(["x", "y", "z"] * 30))
        ds.write_dataset(
            rows,
            root,
            format="parquet",
            partitioning=[partition_column],
            partitioning_flavor="hive",
            basename_template="part-{i}.parquet",
        )
    else:
        for k in range(3):
            pq.write_table(rows.slice(30 * k, 30), root / f"part-{k:05d}.snappy.parquet")
        pq.write_metadata(rows.schema, root / "_common_metadata")
        pq.write_metadata(rows.schema, root / "_metadata")
    (root / "_SUCCESS").write_text("")


# --------------------------------------------------------------------------- helpers


def local_calls():
    """(exists, list_names, calls): ``os``-backed callables that record what they were asked."""
    calls: list[tuple[str, str]] = []

    def exists(p: str) -> bool:
        calls.append(("exists", p))
        return os.path.exists(p)

    def list_names(p: str) -> list[str]:
        calls.append(("list", p))
        return os.listdir(p)

    return exists, list_names, calls


def detect(path: str) -> str | None:
    return tf.detect_table_format(path, os.path.exists, os.listdir)


def find(path: str) -> tf.Detection | None:
    return tf.find_table_format(path, os.path.exists, os.listdir)


def refused(path: str, **kw) -> ForeignTableFormatError:
    with pytest.raises(ForeignTableFormatError) as err:
        tf.refuse_foreign_format(path, os.path.exists, os.listdir, **kw)
    return err.value


# --------------------------------------------------------------------------- tests


def test_delta_table_written_by_deltalake_is_detected(tmp_path):
    path = str(tmp_path / "delta")
    live = write_delta(path)
    directory_rows = ds.dataset(path, format="parquet", ignore_prefixes=["_", "."]).count_rows()
    assert (
        live.num_rows == 40 and directory_rows == 40 + 300 + 50
    )  # removed files (and the rewritten one) are still there
    assert detect(path) == tf.DELTA
    assert detect(path + "/") == tf.DELTA
    assert detect("file://" + path) is None  # os.path.exists does not read URIs: callers pass matching callables
    fs = LocalFileSystem()
    assert (
        tf.detect_table_format(
            "file://" + path, fs.exists, lambda d: [f.path for f in fs.list_files(d, recursive=False)]
        )
        == tf.DELTA
    )
    err = refused(path)
    assert err.format == "delta" and err.table == path and err.enclosing is None
    assert str(err).startswith(f"table {path} is a Delta Lake table (found: _delta_log/), not a plain Parquet")


def test_a_partition_of_a_delta_table_is_refused_as_part_of_it(tmp_path):
    path = str(tmp_path / "delta")
    write_delta(path, partitioned=True)
    assert sorted(os.listdir(path)) == ["_delta_log", "region=eu", "region=us"]
    assert detect(path) == tf.DELTA
    part = path + "/region=us"
    assert detect(part) is None  # the directory itself has no log...
    assert find(part) == tf.Detection("delta", path, "_delta_log/")  # ...the table it lies in has
    err = refused(part)
    assert err.enclosing == path and err.table == part
    assert f"table {part} lies inside a Delta Lake table, {path} (found: _delta_log/)" in str(err)


def test_hudi_directory_and_its_partitions(tmp_path):
    path = str(tmp_path / "hudi")
    write_hudi(path)
    # what a directory reader would see: both slices of the upserted file group, the old one superseded
    assert len(os.listdir(path + "/region=us")) == 3
    assert detect(path) == tf.HUDI
    err = refused(path)
    assert err.format == "hudi" and "(found: .hoodie/)" in str(err)
    part = path + "/region=us"
    assert detect(part) is None
    assert find(part) == tf.Detection("hudi", path, ".hoodie/")
    assert refused(part).enclosing == path
    # a partition of a non-hive-style Hudi table (2024/01/05) has the marker too, and no k=v to walk up
    deep = Path(path) / "2024" / "01" / "05"
    deep.mkdir(parents=True)
    (deep / ".hoodie_partition_metadata.parquet").write_bytes(b"PAR1")
    assert find(str(deep)) == tf.Detection(
        "hudi", str(deep), ".hoodie_partition_metadata.parquet, the marker of a Hudi table's partition"
    )


def test_iceberg_table_written_by_pyiceberg(tmp_path):
    path, live = write_iceberg(str(tmp_path / "warehouse"))
    assert live.num_rows == 250
    assert sorted(os.listdir(path)) == ["data", "metadata"]
    assert detect(path) == tf.ICEBERG
    found = find(path)
    assert found.root == path and found.evidence.startswith("metadata/") and found.evidence.endswith(".metadata.json")
    # pointed at the Parquet files under data/ (or one of its partitions): refused as part of the table
    for inner in (path + "/data", path + "/data/region=us"):
        assert detect(inner) is None
        err = refused(inner)
        assert err.format == "iceberg" and err.enclosing == path
        assert "lies inside an Apache Iceberg table" in str(err)


def test_handwritten_iceberg_hadoop_table(tmp_path):
    path = str(tmp_path / "ice")
    write_iceberg_handwritten(path)
    assert detect(path) == tf.ICEBERG
    assert find(path).evidence == "metadata/v2.metadata.json"  # the last metadata file by name
    for name in ("v1.metadata.json", "v2.metadata.json"):
        os.remove(os.path.join(path, "metadata", name))
    assert find(path).evidence == "metadata/version-hint.text"  # the version hint alone is enough
    assert find(path + "/data").root == path


@pytest.mark.parametrize("partition_column", [None, "metadata", "data"])
def test_plain_parquet_is_not_a_foreign_table(tmp_path, partition_column):
    path = str(tmp_path / "plain")
    write_plain(path, partition_column)
    assert detect(path) is None
    assert find(path) is None
    tf.refuse_foreign_format(path, os.path.exists, os.listdir)  # no error
    if partition_column:
        part = f"{path}/{partition_column}=x"
        assert os.path.isdir(part) and find(part) is None


def test_look_alikes_are_not_iceberg(tmp_path):
    # a table directory named "metadata" or "data", and a metadata/ dir without Iceberg table metadata
    for name in ("metadata", "data"):
        write_plain(str(tmp_path / name))
        assert find(str(tmp_path / name)) is None
    odd = tmp_path / "odd"
    write_plain(str(odd))
    (odd / "metadata").mkdir()
    (odd / "metadata" / "notes.json").write_text("{}")
    (odd / "metadata" / "snap-1-1-x.avro").write_bytes(b"Obj\x01")
    assert detect(str(odd)) is None


def test_the_check_is_cheap(tmp_path):
    plain = str(tmp_path / "plain")
    write_plain(plain)
    exists, list_names, calls = local_calls()
    assert tf.find_table_format(plain, exists, list_names) is None
    assert [c[0] for c in calls] == ["exists"] * 5  # _delta_log, .hoodie, metadata, two Hudi partition markers
    delta = str(tmp_path / "delta")
    write_delta(delta)
    exists, list_names, calls = local_calls()
    assert tf.detect_table_format(delta, exists, list_names) == "delta"
    assert calls == [("exists", delta + "/_delta_log")]
    ice = str(tmp_path / "ice")
    write_iceberg_handwritten(ice)
    exists, list_names, calls = local_calls()
    assert tf.detect_table_format(ice, exists, list_names) == "iceberg"
    assert calls[-1] == ("list", ice + "/metadata")  # listed only because it exists
    assert [c[0] for c in calls].count("list") == 1


def test_any_filesystem_callables_work(tmp_path):
    """The hook, sensor and UI can pass pyarrow (or fsspec, Hadoop, ...) callables as they are."""
    from pyarrow import fs as pafs

    path = str(tmp_path / "delta")
    write_delta(path, partitioned=True)
    local = pafs.LocalFileSystem()

    def exists(p: str) -> bool:
        return local.get_file_info(p).type != pafs.FileType.NotFound

    def list_names(p: str) -> list[str]:
        return [i.base_name for i in local.get_file_info(pafs.FileSelector(p))]

    assert tf.detect_table_format(path, exists, list_names) == "delta"
    assert tf.find_table_format(path + "/region=eu", exists, list_names).root == path


@pytest.mark.parametrize(
    "fmt, name, why, what",
    [
        ("delta", "Delta Lake", "its truth is _delta_log/", "the Delta table's root directory"),
        ("hudi", "Apache Hudi", "its truth is the .hoodie/ timeline", "Hudi's own clustering"),
        ("iceberg", "Apache Iceberg", "its truth is metadata/", "rewrite_data_files"),
    ],
)
def test_error_message_names_format_table_reason_and_remedy(fmt, name, why, what):
    err = ForeignTableFormatError(fmt, "/data/events", "x/")
    msg = str(err)
    assert isinstance(err, ValueError)
    assert f"table /data/events is {'an' if fmt != 'delta' else 'a'} {name} table (found: x/)" in msg
    assert why in msg and "bring back" in msg and "break" in msg
    assert "The table was left untouched" in msg
    assert "What to do: " in msg and what in msg
    again = pickle.loads(pickle.dumps(err))
    assert (type(again), str(again), again.format, again.table, again.evidence) == (
        ForeignTableFormatError,
        msg,
        fmt,
        "/data/events",
        "x/",
    )
    if fmt == "delta":
        assert "both jobs read a Delta table's files from its log" in msg


@pytest.mark.parametrize(
    "provider, kw, expected",
    [
        ("delta", {}, "delta"),
        ("DELTA", {}, "delta"),
        ("org.apache.spark.sql.delta.sources.DeltaDataSource", {}, "delta"),
        ("hudi", {}, "hudi"),
        ("org.apache.hudi", {}, "hudi"),
        ("iceberg", {}, "iceberg"),
        ("org.apache.iceberg.spark.source.IcebergSource", {}, "iceberg"),
        # synced into a Hive metastore: provider "hive", the format shows elsewhere
        (
            "hive",
            {
                "input_format": "org.apache.hudi.hadoop.HoodieParquetInputFormat",
                "serde": "org.apache.hadoop.hive.ql.io.parquet.serde.ParquetHiveSerDe",
            },
            "hudi",
        ),
        ("hive", {"input_format": "org.apache.hudi.hadoop.realtime.HoodieParquetRealtimeInputFormat"}, "hudi"),
        ("hive", {"properties": {"table_type": "ICEBERG"}}, "iceberg"),
        (
            "hive",
            {
                "input_format": "org.apache.iceberg.mr.hive.HiveIcebergInputFormat",
                "serde": "org.apache.iceberg.mr.hive.HiveIcebergSerDe",
            },
            "iceberg",
        ),
        ("hive", {"properties": {"storage_handler": "io.delta.hive.DeltaStorageHandler"}}, "delta"),
        ("parquet", {}, None),
        ("PARQUET", {}, None),
        (
            "hive",
            {
                "input_format": "org.apache.hadoop.hive.ql.io.parquet.MapredParquetInputFormat",
                "serde": "org.apache.hadoop.hive.ql.io.parquet.serde.ParquetHiveSerDe",
            },
            None,
        ),
        ("csv", {}, None),
        (None, {}, None),
        ("", {"properties": {"table_type": "EXTERNAL_TABLE"}}, None),
    ],
)
def test_catalog_provider_check(provider, kw, expected):
    found = tf.catalog_table_format(provider, **kw)
    assert (found[0] if found else None) == expected
    if expected is None:
        tf.refuse_foreign_catalog_table("db.events", provider, **kw)
        return
    with pytest.raises(ForeignTableFormatError) as err:
        tf.refuse_foreign_catalog_table("db.events", provider, **kw)
    assert err.value.format == expected
    assert str(err.value).startswith("table db.events (a catalog table) is a")


# --------------------------------------------------------------------------- the jobs' shared resolution


class RecordingFS(LocalFileSystem):
    """The local filesystem, recording every listing (to prove nothing was listed as Parquet)."""

    def __init__(self) -> None:
        self.listings: list[tuple[str, bool]] = []

    def list_files(self, path: str, recursive: bool = True):
        self.listings.append((path, recursive))
        return super().list_files(path, recursive)


def test_open_table_refuses_before_listing_the_table(tmp_path):
    """The table seam detects the format once, with probes only: a part of a Delta table and an Iceberg table are
    refused before anything is listed as Parquet; a Delta root opens as Delta (its log, no listing)."""
    from airflow_zorder.core.errors import TableError
    from airflow_zorder.core.tables import open_table

    delta, ice, plain = str(tmp_path / "delta"), str(tmp_path / "ice"), str(tmp_path / "plain")
    write_delta(delta, partitioned=True)
    write_iceberg_handwritten(ice)
    write_plain(plain, "day")
    for path, fmt, listed in (
        (delta + "/region=us", "delta", []),
        (ice, "iceberg", [(ice + "/metadata", False)]),
    ):
        fs = RecordingFS()
        with pytest.raises(ForeignTableFormatError) as err:
            open_table(path, fs).snapshot()
        assert err.value.format == fmt
        assert fs.listings == listed  # never the recursive listing of the table's files
    fs = RecordingFS()
    assert open_table(delta, fs).format == "delta" and fs.listings == []
    fs = RecordingFS()
    snap = open_table(plain, fs).snapshot()
    assert snap.partition_columns == ["day"] and len(snap.units) == 3 and fs.listings == [(plain, True)]
    with pytest.raises(TableError, match="does not exist"):
        open_table(str(tmp_path / "missing"), RecordingFS()).snapshot()


class _Untouchable:
    """A filesystem that fails the test if the job touches the table's files at all."""

    def __getattr__(self, name):
        raise AssertionError(f"the table's filesystem was used ({name}) before the format check refused it")


def _fake_spark(describe: dict[str, str]):
    """A stand-in SparkSession answering tableExists and DESCRIBE TABLE EXTENDED (nothing else)."""
    from pyspark.sql import Row

    rows = [Row(col_name="id", data_type="bigint", comment=None), Row(col_name="", data_type="", comment="")]
    rows += [Row(col_name="# Detailed Table Information", data_type="", comment="")]
    rows += [Row(col_name=k, data_type=v, comment="") for k, v in describe.items()]

    def sql(text: str):
        assert text.startswith("DESCRIBE TABLE EXTENDED"), text
        return SimpleNamespace(collect=lambda: rows)

    return SimpleNamespace(catalog=SimpleNamespace(tableExists=lambda name: True), sql=sql)


@pytest.mark.parametrize(
    "describe, fmt",
    [
        # Hudi's hive sync registers a Parquet-serde table with Hudi's InputFormat. A real one cannot be
        # made here: Spark loads the InputFormat class when the table is created (Hudi's jars are absent).
        (
            {
                "Provider": "hive",
                "Location": "file:/w/events",
                "Serde Library": "org.apache.hadoop.hive.ql.io.parquet.serde.ParquetHiveSerDe",
                "InputFormat": "org.apache.hudi.hadoop.HoodieParquetInputFormat",
            },
            "hudi",
        ),
        # an Iceberg SparkCatalog table (cat.db.t) describes as Provider iceberg; needs Iceberg's jars for real
        (
            {"Provider": "iceberg", "Location": "file:/w/events", "Table Properties": "[format=iceberg/parquet]"},
            "iceberg",
        ),
        # a Delta table seen through the session catalog with Delta's jars (without them DESCRIBE fails;
        # tests/integration/test_foreign_formats.py covers that case with a real metastore entry)
        ({"Provider": "delta", "Location": "file:/w/events"}, "delta"),
    ],
)
def test_resolve_catalog_table_refuses_foreign_providers_stand_in(describe, fmt):
    """Stand-in Spark (the real catalog cases are in tests/integration/test_foreign_formats.py)."""
    from airflow_zorder.core.tables import open_table
    from spark_jobs.catalog import SparkMetastore

    with pytest.raises(ForeignTableFormatError) as err:
        open_table("db.events", _Untouchable(), metastore=SparkMetastore(_fake_spark(describe)))
    assert err.value.format == fmt and "db.events (a catalog table)" in str(err.value)
