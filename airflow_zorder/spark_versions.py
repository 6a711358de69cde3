"""Is the local pyspark whole? pyspark and pyspark-client must be the same version when both are installed.

The Spark provider depends on ``pyspark-client`` (the Spark Connect client), which installs into the
same ``pyspark/`` folder as ``pyspark`` and silently overwrites its Python files: with two versions,
the Python side of one Spark talks to the JVM of another. Airflow-free: scripts/bootstrap.sh runs it
after an install (``python -m airflow_zorder.spark_versions``), tests/conftest.py at session start.
"""

from __future__ import annotations

from importlib import metadata

__all__ = ["check_pyspark_pairing", "installed_version"]


def installed_version(distribution: str) -> str | None:
    """The installed version of ``distribution``, or None when it is not installed."""
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return None


def check_pyspark_pairing() -> None:
    """Raise RuntimeError when pyspark and pyspark-client are both installed with different versions.

    The fix names pyspark-client's version: every pyspark-client release has a pyspark release of the
    same version, not the other way round (and the Spark provider may require that client).
    """
    full = installed_version("pyspark")
    client = installed_version("pyspark-client")
    if full is None or client is None or full == client:
        return
    raise RuntimeError(
        f"pyspark {full} and pyspark-client {client} are both installed: they share the pyspark/ folder, so one "
        f"overwrote the other's files and this Spark mixes two versions. Install the same version of both: "
        f"pip install pyspark=={client} pyspark-client=={client}"
    )


if __name__ == "__main__":  # python -m airflow_zorder.spark_versions: exit 1 with the message on a mismatch
    import sys

    try:
        check_pyspark_pairing()
    except RuntimeError as exc:
        sys.exit(str(exc))
