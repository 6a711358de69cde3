"""The field's engines the benchmark runs beside ours, declared once: each one's Spark line, jars and session settings.

Each anchor runs on the Spark line whose jars Maven serves here (issue #51): Delta Lake 4.4.0 on Spark 4.2 (the
project's line) and 4.1, Iceberg 1.11.0 on Spark 4.1 (its 4.2 runtime, 1.12, is not served), Hudi 1.2.0 on Spark
3.5 (no Spark 4 bundle is served; :mod:`airflow_zorder.hudi_spark` declares it). :data:`LINES` names each line's
virtualenv (``.venv``; ``.venv-spark41`` made by ``scripts/spark_line_env.sh``; ``.venv-hudi`` by
``scripts/hudi_env.sh``); :data:`ENGINES` each engine's Maven artifacts and settings per line. :func:`fetch`
resolves them with ``mvn`` (``spark_jars.resolve``) into ``.venv/jars/<line>/<engine>/``; :func:`session_conf`
merges the jars and settings of the engines a line's session loads.

``python benchmarks/engines_env.py fetch`` (``make engines-env``) makes ``.venv-spark41`` and resolves every
engine's jars, once.
"""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from airflow_zorder import hudi_spark
from airflow_zorder.spark_jars import Artifact, cache_dir, resolve

REPO = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Line:
    """A Spark line: the pyspark release installed for it and the virtualenv that holds it."""

    line: str
    pyspark: str
    venv: str

    @property
    def python(self) -> Path:
        return REPO / self.venv / "bin" / "python"


LINES: dict[str, Line] = {
    "4.2": Line("4.2", "4.2.0", ".venv"),
    "4.1": Line("4.1", "4.1.2", ".venv-spark41"),
    "3.5": Line("3.5", "3.5.8", ".venv-hudi"),
}


@dataclass(frozen=True)
class Engine:
    """An anchor: its artifacts per Spark line and the session settings it needs (``extensions`` are joined)."""

    name: str
    title: str
    artifacts: dict[str, tuple[Artifact, ...]]
    extension: str = ""
    conf: dict[str, str] = field(default_factory=dict)


DELTA_VERSION, ICEBERG_VERSION, SQLITE_JDBC_VERSION = "4.4.0", "1.11.0", "3.54.1.0"
# The catalog our job's Iceberg tables live in: pyiceberg's SQL catalog on SQLite (the driver commits through it) and,
# under the same name, Java's JdbcCatalog on the same file (Spark plans the queries through it).
OURS_ICEBERG_CATALOG = "icepy"
ENGINES: dict[str, Engine] = {
    "delta": Engine(
        "delta",
        f"Delta Lake {DELTA_VERSION}",
        {line: (Artifact("io.delta", f"delta-spark_{line}_2.13", DELTA_VERSION),) for line in ("4.2", "4.1")},
        extension="io.delta.sql.DeltaSparkSessionExtension",
        conf={
            "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
            # the log's state in 2 partitions, not 50: each query's data skipping is a Spark job over it
            "spark.databricks.delta.snapshotPartitions": "2",
        },
    ),
    "iceberg": Engine(
        "iceberg",
        f"Apache Iceberg {ICEBERG_VERSION}",
        {
            "4.1": (
                Artifact("org.apache.iceberg", "iceberg-spark-runtime-4.1_2.13", ICEBERG_VERSION, transitive=False),
                # Java's JdbcCatalog over the SQLite file of the pyiceberg SQL catalog our job commits to
                Artifact("org.xerial", "sqlite-jdbc", SQLITE_JDBC_VERSION, transitive=False),
            )
        },
        extension="org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions",
        conf={
            "spark.sql.catalog.ice": "org.apache.iceberg.spark.SparkCatalog",
            "spark.sql.catalog.ice.type": "hadoop",
            # a count is planned and read like any query, never answered from the manifests
            "spark.sql.iceberg.aggregate-push-down.enabled": "false",
        },
    ),
    "hudi": Engine(
        "hudi",
        f"Apache Hudi {hudi_spark.BUNDLES['3.5'].version}",
        {line: (a,) for line, a in hudi_spark.BUNDLES.items()},
        extension=hudi_spark.SESSION_CONF["spark.sql.extensions"],
        conf={k: v for k, v in hudi_spark.SESSION_CONF.items() if k != "spark.sql.extensions"},
    ),
}


def engines_on(line: str) -> list[str]:
    """The engines whose jars are declared for ``line``."""
    return [name for name, e in ENGINES.items() if line in e.artifacts]


def _folder(line: str, engine: str) -> Path:
    return cache_dir() / line / ("hudi" if engine == "hudi" else engine)


def fetch(line: str, engine: str) -> list[str]:
    """``engine``'s jars for ``line``, resolved with mvn into the cache once (``~/.m2`` keeps the downloads)."""
    if engine == "hudi":
        return hudi_spark.fetch(line)
    folder = _folder(line, engine)
    if not (folder / ".complete").exists():
        resolve(ENGINES[engine].artifacts[line], folder, f"{ENGINES[engine].title} for Spark {line}")
    return sorted(str(p) for p in folder.glob("*.jar"))


def session_conf(line: str, engines: list[str], warehouse: str) -> dict[str, str]:
    """The settings of a ``line`` session that loads ``engines`` (jars, extensions, catalogs; Iceberg's warehouse)."""
    jars: list[str] = []
    exts: list[str] = []
    conf: dict[str, str] = {}
    for name in engines:
        e = ENGINES[name]
        jars += fetch(line, name)
        exts.append(e.extension)
        conf.update(e.conf)
    if "iceberg" in engines:
        conf["spark.sql.catalog.ice.warehouse"] = warehouse
        conf.update(jdbc_catalog_conf(ours_iceberg_properties(warehouse)))
    if jars:
        conf["spark.jars"] = ",".join(dict.fromkeys(jars))
    if exts:
        conf["spark.sql.extensions"] = ",".join(exts)
    return conf


def ours_iceberg_properties(warehouse: str) -> dict[str, str]:
    """The pyiceberg SQL catalog (on SQLite, beside Iceberg's Hadoop warehouse) our job's Iceberg tables live in."""
    from airflow_zorder.core.iceberg.catalogs import embedded_properties

    return embedded_properties(str(Path(warehouse).parent / OURS_ICEBERG_CATALOG))


def jdbc_catalog_conf(props: dict[str, str]) -> dict[str, str]:
    """Spark's side of the pyiceberg SQL catalog ``props``: Java's JdbcCatalog on the same SQLite file, same name."""
    key = f"spark.sql.catalog.{OURS_ICEBERG_CATALOG}"
    return {
        key: "org.apache.iceberg.spark.SparkCatalog",
        f"{key}.type": "jdbc",
        f"{key}.uri": "jdbc:" + props["uri"].replace("sqlite:///", "sqlite:"),
        f"{key}.warehouse": props["warehouse"],
        f"{key}.cache-enabled": "false",  # pyiceberg commits between the queries: read the catalog's current table
    }


def make_venvs() -> None:
    """The lines' virtualenvs besides .venv and .venv-hudi (``make hudi-env``): ``scripts/spark_line_env.sh``."""
    for spec in LINES.values():
        if spec.venv not in (".venv", ".venv-hudi"):
            subprocess.run(["bash", str(REPO / "scripts" / "spark_line_env.sh"), spec.venv, spec.pyspark], check=True)


def main(argv: list[str]) -> int:
    """``fetch``: make the lines' virtualenvs and resolve every engine's jars on every line."""
    if argv[:1] != ["fetch"]:
        print("usage: engines_env.py fetch", file=sys.stderr)
        return 2
    make_venvs()
    for name, e in ENGINES.items():
        for line in e.artifacts:
            jars = fetch(line, name)
            print(f"{e.title} on Spark {line}: {', '.join(Path(j).name for j in jars)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
