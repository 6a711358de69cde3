"""Apache Hudi's Spark bundle per Spark line and the session settings it needs, declared once.

A Hudi table is re-clustered by Hudi's own clustering (``CALL run_clustering``) in a Spark session that loads
Hudi's bundle jar with Hudi's SQL extension, catalog and Kryo serializer. :data:`BUNDLES` pins the bundle per
Spark line (only lines whose bundle this project resolved and ran: the 4.x bundles are not served by every Maven
mirror); :data:`SESSION_CONF` is what the session needs besides the jar. :func:`fetch` resolves the bundle with
``mvn`` into ``.venv/jars/<line>/hudi/`` (as :mod:`airflow_zorder.spark_jars` does the connectors);
:func:`bundle_jars` gives the local paths for ``spark-submit --jars``; :func:`submit_conf` both for an operator.

:func:`submit_settings` is what the cluster operator adds to a spark-submit of a Hudi table (a cluster brings its own
bundle, as it brings its connectors: only the session settings are added there).

``python -m airflow_zorder.hudi_spark fetch [--line 3.5]`` (``make hudi-env``) fetches; ``... jars`` prints them.
Airflow-free.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from airflow_zorder.core.errors import InvalidInputError, JarsNotFetchedError
from airflow_zorder.spark_jars import Artifact, cache_dir, resolve

__all__ = [
    "BUNDLES",
    "FOLDER",
    "SESSION_CONF",
    "bundle_jars",
    "fetch",
    "is_hudi_table",
    "line_of",
    "spark_version_of",
    "submit_conf",
    "submit_settings",
]

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


_VERSION = re.compile(r"""__version__(?:\s*:\s*str)?\s*=\s*["']([0-9][^"']*)["']""")


def spark_version_of(spark_submit: str) -> str | None:
    """The Spark version a ``spark-submit`` runs (pip's pyspark in a virtualenv, pyspark's own ``bin/``, or a Spark
    distribution's ``jars/spark-core_*``), read from its files; None when it cannot be told without running it."""
    found = shutil.which(spark_submit) or spark_submit
    if not os.path.exists(found):
        return None
    bin_dir = Path(os.path.realpath(found)).parent
    home = bin_dir.parent
    for version_file in [home / "version.py", *home.glob("lib/python3*/site-packages/pyspark/version.py")]:
        if version_file.is_file():
            m = _VERSION.search(version_file.read_text(encoding="utf-8"))
            if m:
                return m.group(1)
    for jar in home.glob("jars/spark-core_*.jar"):
        m = re.match(r"spark-core_[0-9.]+-([0-9][^/]*)\.jar$", jar.name)
        if m:
            return m.group(1)
    return None


def spark_home_of(spark_submit: str) -> str | None:
    """The ``SPARK_HOME`` of a pip-installed pyspark's ``spark-submit`` (its package directory), or None. pyspark's
    launcher otherwise asks the first ``python`` on ``PATH`` where Spark is, which may be another line's."""
    found = shutil.which(spark_submit) or spark_submit
    if not os.path.exists(found):
        return None
    home = Path(os.path.realpath(found)).parent.parent
    for package in home.glob("lib/python3*/site-packages/pyspark"):
        if (package / "bin" / "spark-submit").exists() or (package / "jars").is_dir():
            return str(package)
    return None


def is_hudi_table(table: str, arrow_options: Mapping[str, Any] | None = None) -> bool:
    """Whether the path ``table`` is a Hudi table's base path (one probe for ``.hoodie/``); False for catalog names
    and tables that cannot be reached from here (the job then finds out)."""
    from airflow_zorder.core.storage.io import filesystem_for
    from airflow_zorder.core.storage.io.paths import join
    from airflow_zorder.core.storage.locations import is_path_table
    from airflow_zorder.core.storage.table_formats import HUDI_META_DIR

    if not is_path_table(table):
        return False
    try:
        return filesystem_for(table, options=arrow_options).exists(join(table, HUDI_META_DIR, "hoodie.properties"))
    except Exception:  # noqa: BLE001 - unreachable here: the job opens the table and says why
        return False


def submit_settings(
    master: str, spark_submit: str, jars: str | None, conf: Mapping[str, Any]
) -> tuple[str | None, dict[str, Any]]:
    """``jars`` and ``conf`` for a spark-submit of a Hudi table's job: Hudi's session settings (``conf``'s own win);
    on a ``local`` master also the bundle of the line ``spark_submit`` runs, and that Spark's Python when the
    operator had picked its own. InvalidInputError naming the fix when that line has no pinned bundle."""
    out = {**SESSION_CONF, **conf}
    if not master.startswith("local"):
        return jars, out
    version = spark_version_of(spark_submit)
    if version is None:
        raise InvalidInputError(
            f"cannot tell which Spark {spark_submit!r} runs, so not which Hudi bundle to add: pass spark_binary= "
            "the spark-submit of a Spark line with a Hudi bundle (make hudi-env: .venv-hudi/bin/spark-submit)"
        )
    line = line_of(version)
    python = Path(os.path.realpath(shutil.which(spark_submit) or spark_submit)).parent / "python"
    if out.get("spark.pyspark.python") == sys.executable and python.exists():
        out["spark.pyspark.python"] = str(python)  # the driver's pyspark must be that Spark's
    return ",".join([*([jars] if jars else []), *bundle_jars(line)]), out


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
