"""Tests for benchmarks/tpch_data.py (small scale factor; needs tpchgen-cli)."""

from __future__ import annotations

import importlib.util
import shutil
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

ROOT = Path(__file__).resolve().parents[2]


def _load():
    spec = importlib.util.spec_from_file_location("tpch_data", ROOT / "benchmarks" / "tpch_data.py")
    mod = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(mod)
    return mod


pytestmark = pytest.mark.skipif(
    not (Path(sys.executable).parent / "tpchgen-cli").exists() and shutil.which("tpchgen-cli") is None,
    reason="tpchgen-cli not installed",
)


def test_split_into_equal_files_in_generation_order(tmp_path: Path) -> None:
    tpch = _load()
    res = tpch.generate_lineitem(0.01, tmp_path, files=7)
    assert not res["skipped"] and res["num_files"] == 7
    paths = sorted(tmp_path.glob("lineitem-*.parquet"))
    counts = [pq.ParquetFile(p).metadata.num_rows for p in paths]
    assert sum(counts) == res["rows"] > 50_000
    assert max(counts) - min(counts) <= 1 and counts == sorted(counts, reverse=True)
    # generation order = l_orderkey ascending, so file ranges are contiguous
    last = None
    for p in paths:
        keys = pq.read_table(p, columns=["l_orderkey"])["l_orderkey"].to_numpy()
        assert (keys[1:] >= keys[:-1]).all()
        if last is not None:
            assert keys[0] >= last
        last = keys[-1]
    assert pq.ParquetFile(paths[0]).schema_arrow.field("l_comment").type == "string"

    again = tpch.generate_lineitem(0.01, tmp_path, files=7)
    assert again["skipped"] and again["rows"] == res["rows"]
    with pytest.raises(FileExistsError):
        tpch.generate_lineitem(0.01, tmp_path, files=3)
    forced = tpch.generate_lineitem(0.01, tmp_path, files=3, force=True)
    assert forced["num_files"] == 3 and len(list(tmp_path.glob("lineitem*.parquet"))) == 3
    assert not list(tmp_path.glob(".tpchgen-*"))  # temporary output cleaned up


def test_cli_prints_summary(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tpch = _load()
    assert tpch.main(["--sf", "0.01", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "rows=60,175" in out and "files=1" in out and "bytes=" in out and "seconds=" in out
    assert (tmp_path / "lineitem.parquet").exists()
