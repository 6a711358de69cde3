"""core.storage: one decoding rule for every location, and one dispatch from a location to a filesystem."""

from __future__ import annotations

import datetime as dt
import os

import pytest
from pyarrow import fs as pafs

from airflow_zorder.core.storage import locations
from airflow_zorder.core.storage.io import filesystem_for
from airflow_zorder.core.storage.io.arrow import ArrowFileSystem
from airflow_zorder.core.storage.io.hadoop import HadoopFileSystem
from airflow_zorder.core.storage.io.local import LocalFileSystem
from airflow_zorder.core.storage.locations import parse_location


@pytest.mark.parametrize(
    "raw, store, bucket, arrow_path",
    [
        ("/t/k=a%3Ab", "local", "", "/t/k=a%3Ab"),
        ("file:/t/k=a%3Ab", "local", "", "/t/k=a%3Ab"),
        ("file:///t/k=a%20b", "local", "", "/t/k=a%20b"),
        ("file://localhost/t", "local", "", "/t"),
        ("s3://lake/events/k=a%3Ab", "s3", "lake", "lake/events/k=a%3Ab"),
        ("s3a://lake/events/", "s3", "lake", "lake/events"),
        ("S3N://lake", "s3", "lake", "lake"),
        ("gs://bkt/t", "gcs", "bkt", "bkt/t"),
        ("abfss://cont@acct.dfs.core.windows.net/t/x", "azure", "cont", "cont/t/x"),
        ("hdfs://nn:8020/warehouse/t", "hdfs", "", "/warehouse/t"),
    ],
)
def test_one_rule_nothing_is_percent_decoded(raw, store, bucket, arrow_path):
    loc = parse_location(raw)
    assert (loc.store, loc.bucket, loc.arrow_path()) == (store, bucket, arrow_path)


def test_relative_paths_become_absolute_and_foreign_hosts_are_refused(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert parse_location("t/x").local_path() == str(tmp_path / "t" / "x")
    with pytest.raises(ValueError, match="not a local file URI"):
        parse_location("file://otherhost/t")
    with pytest.raises(ValueError, match="not on this machine"):
        parse_location("s3://b/k").local_path()
    assert parse_location("s3a://b/k").uri() == "s3://b/k"


def test_local_and_hadoop_filesystems_read_file_uris_by_the_same_rule(tmp_path):
    """A Spark-escaped partition directory named literally ``k=a%3Ab`` is found through a file: URI by
    the commit filesystem, the stats store and the listing alike (they used to disagree)."""
    d = tmp_path / "k=a%3Ab"
    d.mkdir()
    (d / "f.parquet").write_bytes(b"PAR1")
    uri = f"file://{tmp_path}/k=a%3Ab/f.parquet"
    assert LocalFileSystem().exists(uri)
    assert LocalFileSystem.local_path(uri) == str(d / "f.parquet")
    fs, path = locations.arrow_filesystem(uri)
    assert isinstance(fs, pafs.LocalFileSystem) and fs.get_file_info(path).size == 4
    part = f"file://{tmp_path}/k=a%3Ab"  # the seam the stats store opens its locations through
    assert [f.path.rsplit("/", 1)[-1] for f in filesystem_for(part).list_files(part, recursive=False)] == ["f.parquet"]
    assert HadoopFileSystem.__new__(HadoopFileSystem)._local_path(uri) == str(d / "f.parquet")


def test_filesystem_for_picks_by_what_the_caller_holds_then_by_the_scheme(tmp_path):
    """The one loader: a held FileSystem as it is, pyarrow's and fsspec's wrapped, else the location's own."""
    local = LocalFileSystem()
    assert filesystem_for(str(tmp_path), filesystem=local) is local
    assert isinstance(filesystem_for(str(tmp_path)), LocalFileSystem)
    assert isinstance(filesystem_for(f"file://{tmp_path}"), LocalFileSystem)
    assert isinstance(filesystem_for(str(tmp_path), filesystem=pafs.LocalFileSystem()), LocalFileSystem)
    sub = pafs.SubTreeFileSystem(str(tmp_path), pafs.LocalFileSystem())
    held = filesystem_for("d", filesystem=sub)
    assert isinstance(held, ArrowFileSystem) and held.fs is sub
    fsspec = pytest.importorskip("fsspec")
    assert isinstance(filesystem_for(str(tmp_path), filesystem=fsspec.filesystem("memory")), ArrowFileSystem)
    with pytest.raises(TypeError, match="unsupported filesystem object"):
        filesystem_for(str(tmp_path), filesystem=object())


def test_arrow_filesystem_lists_a_directory_a_file_and_nothing(tmp_path):
    (tmp_path / "d" / "k=1").mkdir(parents=True)
    (tmp_path / "d" / "k=1" / "f.parquet").write_bytes(b"PAR1")
    (tmp_path / "d" / "g.json").write_text("{}")
    fs = ArrowFileSystem(pafs.SubTreeFileSystem(str(tmp_path), pafs.LocalFileSystem()))
    assert [f.path for f in fs.list_files("d")] == ["d/g.json", "d/k=1/f.parquet"]
    assert [f.path for f in fs.list_files("d", recursive=False)] == ["d/g.json"]
    assert [(f.path, f.size) for f in fs.list_files("d/k=1/f.parquet")] == [("d/k=1/f.parquet", 4)]
    assert fs.list_files("missing") == [] and fs.list_files("d/k=1/f.parquet/x") == []
    fs.write_atomic("d/new/r.json", b"{}\n")  # its directory made first, as the stats store's records need
    assert fs.read_bytes("d/new/r.json") == b"{}\n" and fs.read_text("d/new/r.json") == "{}\n"


def test_each_store_gets_its_pyarrow_filesystem_with_the_options(monkeypatch):
    made: list[tuple[str, tuple, dict]] = []

    def fake(name):
        def build(*args, **kwargs):
            made.append((name, args, kwargs))
            return pafs.LocalFileSystem()

        return build

    for cls in ("S3FileSystem", "GcsFileSystem", "AzureFileSystem", "HadoopFileSystem"):
        monkeypatch.setattr(pafs, cls, fake(cls))
    monkeypatch.setattr(locations, "_CACHE", {})
    monkeypatch.delenv("STORAGE_EMULATOR_HOST", raising=False)
    opts = {"access_key": "AK", "secret_key": "SK", "region": "eu-west-1"}
    assert locations.arrow_filesystem("s3a://lake/t", opts)[1] == "lake/t"
    assert locations.arrow_filesystem("s3://lake/u", opts)[1] == "lake/u"  # cached: same store, bucket, options
    assert locations.arrow_filesystem("gs://b/t", {"anonymous": True})[1] == "b/t"
    assert locations.arrow_filesystem("abfss://c@acct.dfs.core.windows.net/t")[1] == "c/t"
    assert locations.arrow_filesystem("hdfs://nn:9000/w/t")[1] == "/w/t"
    assert made == [
        ("S3FileSystem", (), opts),
        ("GcsFileSystem", (), {"anonymous": True, "retry_time_limit": dt.timedelta(seconds=5)}),  # bounded
        ("AzureFileSystem", (), {"account_name": "acct"}),
        ("HadoopFileSystem", ("nn", 9000), {}),
    ]


def test_store_errors_become_one_clear_message():
    denied = OSError("When reading 'k' in bucket 'lake': AWS Error ACCESS_DENIED during HeadObject operation")
    err = locations.describe_error(denied, "s3://lake/t", "aws_lake")
    assert isinstance(err, locations.StorageError)
    assert "cannot read s3://lake/t with connection 'aws_lake': access denied" in str(err)
    missing = OSError("AWS Error NO_SUCH_BUCKET during ListObjectsV2 operation")
    assert "bucket lake does not exist" in str(locations.describe_error(missing, "s3://lake/t"))
    assert locations.describe_error(FileNotFoundError(os.strerror(2)), "s3://lake/t") is None
    # an unreachable endpoint on a port whose digits hold "403" is not an access denial (a CI flake once)
    down = OSError(
        "GetProperties failed for 'http://127.0.0.1:33403/a/c'. Azure Error: [] Fail to get a new connection"
    )
    assert "the store did not answer" in str(locations.describe_error(down, "abfss://c@a.dfs.core.windows.net/t"))
    assert "access denied" in str(locations.describe_error(OSError("http_status_code=403"), "gs://b/t"))
    assert locations.describe_error(OSError("served at 127.0.0.1:1403, no answer yet"), "gs://b/t") is None
