"""check_pyspark_pairing: pyspark and pyspark-client (same pyspark/ folder) must be the same version."""

from __future__ import annotations

import subprocess
import sys
from importlib import metadata

import pytest

from airflow_zorder import spark_versions


def fake_versions(monkeypatch: pytest.MonkeyPatch, versions: dict[str, str]) -> None:
    """importlib.metadata.version answers from ``versions``; other distributions are not installed."""

    def version(name: str) -> str:
        if name in versions:
            return versions[name]
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(metadata, "version", version)


@pytest.mark.parametrize(
    "versions",
    [
        {},
        {"pyspark": "4.2.0"},
        {"pyspark-client": "4.1.1"},
        {"pyspark": "4.2.0", "pyspark-client": "4.2.0"},
    ],
)
def test_passes_with_one_or_both_at_the_same_version(monkeypatch, versions):
    fake_versions(monkeypatch, versions)
    spark_versions.check_pyspark_pairing()


def test_different_versions_name_both_and_the_fix(monkeypatch):
    fake_versions(monkeypatch, {"pyspark": "4.3.0", "pyspark-client": "4.2.0"})
    with pytest.raises(RuntimeError) as err:
        spark_versions.check_pyspark_pairing()
    msg = str(err.value)
    assert "pyspark 4.3.0" in msg and "pyspark-client 4.2.0" in msg
    # every pyspark-client release has a pyspark twin, not the other way round: the fix names the client's
    assert "pip install pyspark==4.2.0 pyspark-client==4.2.0" in msg


def test_installed_version_is_none_when_missing(monkeypatch):
    fake_versions(monkeypatch, {"pyspark": "4.2.0"})
    assert spark_versions.installed_version("pyspark") == "4.2.0"
    assert spark_versions.installed_version("pyspark-client") is None


def test_this_environment_is_paired():
    """The test session's own environment (the conftest checks it too; this names the failure)."""
    out = subprocess.run(
        [sys.executable, "-m", "airflow_zorder.spark_versions"], capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr


def test_module_imports_no_airflow():
    code = "import sys, airflow_zorder.spark_versions; print('airflow' in sys.modules, 'pyspark' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.split() == ["False", "False"]
