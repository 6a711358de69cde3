"""Fixtures of the reliability suite; what it is and how to run it: see reliability_kit.py and docs/reliability.md.

Its figures are printed (and written to ``$ZORDER_RELIABILITY_FIGURES``) by tests/conftest.py, which also gathers
them from pytest-xdist's workers: this conftest is not loaded in xdist's controller process."""

from __future__ import annotations

import shutil
from collections.abc import Iterator

import pytest
from reliability_kit import ROWS

from airflow_zorder.core.storage import faults
from airflow_zorder.evaluation import sample_data


@pytest.fixture(scope="session")
def sources(tmp_path_factory) -> dict[str, str]:
    """Two read-only source tables (ROWS = 10,000 rows): 4 daily partitions x 3 files, and 6 unpartitioned files."""
    base = tmp_path_factory.mktemp("reliability-src")
    out = {"partitioned": str(base / "partitioned"), "flat": str(base / "flat")}
    sample_data.write_table(out["partitioned"], rows=ROWS, files_per_partition=3, partitioned=True)
    sample_data.write_table(out["flat"], rows=ROWS, files_per_partition=6, partitioned=False)
    return out


@pytest.fixture
def copy_table(sources, tmp_path):
    """copy_table(layout) -> a fresh copy of a source table in this test's temp dir."""
    n = [0]

    def make(layout: str = "partitioned") -> str:
        n[0] += 1
        dst = str(tmp_path / f"{layout}-{n[0]}")
        shutil.copytree(sources[layout], dst)
        return dst

    return make


@pytest.fixture
def raise_faults(monkeypatch) -> Iterator[callable]:
    """arm(point) makes ``fault_point(point)`` raise SimulatedCrash (the in-process stand-in for SIGKILL)."""

    def arm(spec: str | None, mode: str = "raise") -> None:
        faults.reset_fault_counters()
        if spec is None:
            monkeypatch.delenv(faults.FAULT_ENV, raising=False)
        else:
            monkeypatch.setenv(faults.FAULT_ENV, spec)
            monkeypatch.setenv(faults.FAULT_MODE_ENV, mode)

    yield arm
    faults.reset_fault_counters()
