"""Apache Hudi's Spark bundle per Spark line and the session settings it needs, declared once.

A Hudi table is re-clustered by Hudi's own clustering (``CALL run_clustering``) in a Spark session that loads
Hudi's bundle jar with Hudi's SQL extension, catalog and Kryo serializer. :data:`BUNDLES` pins the bundle per
Spark line (only lines whose bundle this project resolved and ran: the 4.x bundles are not served by every Maven
mirror); :data:`SESSION_CONF` is what the session needs besides the jar. :func:`fetch` resolves the bundle with
``mvn`` into ``.venv/jars/<line>/hudi/`` (as :mod:`airflow_zorder.spark_jars` does the connectors);
:func:`bundle_jars` gives the local paths for ``spark-submit --jars``; :func:`submit_conf` both for an operator.

``python -m airflow_zorder.hudi_spark fetch [--line 3.5]`` (``make hudi-env``) fetches; ``... jars`` prints them.
Airflow-free.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from airflow_zorder.core.errors import InvalidInputError, JarsNotFetchedError
from airflow_zorder.spark_jars import Artifact, cache_dir, resolve

__all__ = ["BUNDLES", "FOLDER", "SESSION_CONF", "bundle_jars", "fetch", "line_of", "submit_conf"]

#: Spark line -> Hudi's Spark bundle for it (Scala 2.12 on 3.5, 2.13 on 4.x), run here with Java 17.
BUNDLES: dict[str, Artifact] = {
    "3.5": Artifact("org.apache.hudi", "hudi-spark3.5-bundle_2.12", "1.2.0", transitive=False),
}

#: What a Spark session needs besides the bundle to read, write and CALL procedures on Hudi tables.
SESSION_CONF: dict[str, str] = {
    "spark.serializer": "org.apache.spark.serializer.KryoSerializer",
    "spark.sql.extensions": "org.apache.spark.sql.hudi.HoodieSparkSessionExtension",
    "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.hudi.catalog.HoodieCatalog",
    "spark.kryo.registrator": "org.apache.spark.HoodieSparkKryoRegistrar",
}

#: The cache folder's name under ``.venv/jars/<line>/``.
FOLDER = "hudi"


def line_of(spark_version: str) -> str:
    """``"3.5.8"`` -> ``"3.5"``; InvalidInputError naming the lines with a pinned Hudi bundle otherwise."""
    line = ".".join(spark_version.split(".")[:2])
    if line not in BUNDLES:
        raise InvalidInputError(
            f"Spark {spark_version} has no pinned Hudi bundle here; pinned lines: {', '.join(sorted(BUNDLES))} "
            "(airflow_zorder.hudi_spark.BUNDLES): re-cluster Hudi tables on such a Spark (make hudi-env)"
        )
    return line


def _folder(line: str) -> Path:
    return cache_dir() / line / FOLDER


def bundle_jars(line: str = "3.5") -> list[str]:
    """The fetched bundle jar(s) of ``line``; JarsNotFetchedError naming ``make hudi-env`` when not cached."""
    if line not in BUNDLES:
        line_of(line)
    folder = _folder(line)
    if not (folder / ".complete").exists():
        raise JarsNotFetchedError(
            f"Hudi's Spark {line} bundle ({BUNDLES[line].coordinate}) is not fetched: run `make hudi-env` "
            f"(python -m airflow_zorder.hudi_spark fetch --line {line}); it is kept in {folder}"
        )
    return sorted(str(p) for p in folder.glob("*.jar"))


def fetch(line: str = "3.5", *, quiet: bool = True) -> list[str]:
    """Resolve ``line``'s bundle with ``mvn`` into the cache once (``~/.m2`` keeps the download); its jar paths."""
    if line not in BUNDLES:
        line_of(line)
    if not (_folder(line) / ".complete").exists():
        resolve([BUNDLES[line]], _folder(line), f"Hudi's Spark {line} bundle", quiet=quiet)
    return bundle_jars(line)


def submit_conf(line: str) -> tuple[list[str], dict[str, str]]:
    """The jars and ``--conf`` settings a spark-submit of a Hudi table's job on ``line`` adds."""
    return bundle_jars(line), dict(SESSION_CONF)


def main(argv: Sequence[str] | None = None) -> int:
    """``fetch`` the bundle, or print its ``jars`` comma-separated."""
    parser = argparse.ArgumentParser(prog="python -m airflow_zorder.hudi_spark", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    for name in ("fetch", "jars"):
        sub.add_parser(name).add_argument("--line", default="3.5", choices=sorted(BUNDLES))
    args = parser.parse_args(argv)
    try:
        jars = fetch(args.line) if args.command == "fetch" else bundle_jars(args.line)
    except JarsNotFetchedError as exc:
        print(str(exc), file=sys.stderr)
        return 1
    print(",".join(jars))
    return 0


if __name__ == "__main__":
    sys.exit(main())
