"""The JVM parts a Spark line needs to reach object stores: pinned Maven coordinates, fetched once with ``mvn``.

Spark ships no object-store connector: ``s3a://`` needs ``hadoop-aws`` (of the Hadoop version the Spark line
bundles) and the AWS SDK v2 ``bundle`` its pom names; ``gs://`` the gcs-connector's shaded jar; ``abfss://``
``hadoop-azure``. :data:`SPARK_LINES` declares them once per Spark line; :func:`fetch` resolves them with ``mvn``
(as the machine configures it: Spark's own Ivy resolution may not see that configuration) into
``.venv/jars/<line>/<store>/`` inside the project, offline after the first fetch; :func:`jars_for` gives the local
jar paths to hand to ``spark-submit --jars`` or a SparkSession's ``spark.jars``.

``python -m airflow_zorder.spark_jars fetch [--line 4.2] [--store s3a ...]`` (``make jars``) fetches;
``python -m airflow_zorder.spark_jars jars s3a`` prints the comma-separated list; ``... table --write
docs/connections.md`` renders the docs' table from :data:`SPARK_LINES`. Airflow-free.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from xml.sax.saxutils import escape

from airflow_zorder.core.errors import InvalidInputError, JarsNotFetchedError
from airflow_zorder.spark_versions import installed_version

__all__ = [
    "SPARK_LINES",
    "STORES",
    "Artifact",
    "SparkLine",
    "apply_hadoop_conf",
    "cache_dir",
    "connector_settings",
    "docs_table",
    "fetch",
    "fetched_jars",
    "jars_for",
    "line_of",
    "local_spark_line",
    "resolve",
    "store_of",
    "update_doc",
]


@dataclass(frozen=True)
class Artifact:
    """One Maven artifact; ``transitive=False`` for a shaded jar that carries its own dependencies."""

    group: str
    name: str
    version: str
    classifier: str = ""
    transitive: bool = True

    @property
    def coordinate(self) -> str:
        """``group:artifact:version[:classifier]``, as a user writes it for ``--packages`` (or Maven)."""
        tail = f":{self.classifier}" if self.classifier else ""
        return f"{self.group}:{self.name}:{self.version}{tail}"


@dataclass(frozen=True)
class SparkLine:
    """A Spark release line, the Hadoop client it bundles, and each store's connector artifacts for it."""

    line: str
    hadoop: str
    stores: dict[str, tuple[Artifact, ...]] = field(default_factory=dict)
    #: store -> Hadoop settings the connector needs on this line besides its credentials (``spark.hadoop.<key>`` on
    #: spark-submit, or :func:`apply_hadoop_conf` on a live session)
    settings: dict[str, dict[str, str]] = field(default_factory=dict)
    #: store -> how far it was verified on this project's machines (docs/connections.md shows it)
    verified: dict[str, str] = field(default_factory=dict)


def _hadoop_aws(hadoop: str, sdk: str) -> tuple[Artifact, ...]:
    # hadoop-aws names the SDK bundle as a compile dependency; pinned here too so a user sees the pair.
    return (Artifact("org.apache.hadoop", "hadoop-aws", hadoop), Artifact("software.amazon.awssdk", "bundle", sdk))


#: gcs-connector's shaded jar (Hadoop 3.x); 3.1.20-3.1.22 lack their parent pom on Maven Central.
_GCS = (Artifact("com.google.cloud.bigdataoss", "gcs-connector", "3.1.18", "shaded", transitive=False),)

#: gcs-connector 3.1.x was built against Hadoop 3.3, whose ``VectoredReadUtils.validateRangeRequest`` returned void;
#: Hadoop 3.4.1+ returns the range, so Parquet's vectored reads through it fail with a NoSuchMethodError
#: (GoogleCloudDataproc/hadoop-connectors#1498): Parquet reads row groups the classic way instead.
_GCS_NO_VECTORED_READS = {"parquet.hadoop.vectored.io.enabled": "false"}

#: Hadoop 3.5's core-default.xml maps ``gs://`` to its own connector (``org.apache.hadoop.fs.gs``, the separate
#: ``hadoop-gcp`` artifact) and gives ``fs.gs.block.size`` as ``64m``, which gcs-connector cannot parse.
_GCS_ON_HADOOP_35 = {
    "fs.gs.impl": "com.google.cloud.hadoop.fs.gcs.GoogleHadoopFileSystem",
    "fs.AbstractFileSystem.gs.impl": "com.google.cloud.hadoop.fs.gcs.GoogleHadoopFS",
    "fs.gs.block.size": "67108864",
    **_GCS_NO_VECTORED_READS,
}

#: The store families: the URI schemes each connector serves.
STORES: dict[str, tuple[str, ...]] = {"s3a": ("s3a",), "gs": ("gs",), "abfs": ("abfs", "abfss")}

SPARK_LINES: dict[str, SparkLine] = {
    "4.2": SparkLine(
        "4.2",
        hadoop="3.5.0",
        stores={
            "s3a": _hadoop_aws("3.5.0", "2.35.4"),
            "gs": _GCS,
            "abfs": (Artifact("org.apache.hadoop", "hadoop-azure", "3.5.0"),),
        },
        settings={"gs": _GCS_ON_HADOOP_35},
        verified={
            "s3a": "verified here: both jobs, the commit protocol and the reliability suite against a moto server",
            "gs": "verified here: both jobs against fake-gcs-server 1.54 (with two emulator settings, below)",
            "abfs": "`abfs://` verified here against Azurite (its blob endpoint): the stats job, and a full re-cluster "
            "run once by hand; `abfss://` (TLS) not run",
        },
    ),
    "4.1": SparkLine(
        "4.1",
        hadoop="3.4.2",
        stores={
            "s3a": _hadoop_aws("3.4.2", "2.29.52"),
            "gs": _GCS,
            "abfs": (Artifact("org.apache.hadoop", "hadoop-azure", "3.4.2"),),
        },
        settings={"gs": _GCS_NO_VECTORED_READS},
        verified={
            "s3a": "verified here (make test-lowest, Spark 4.1.2): the stats job, both jobs by spark-submit from a "
            "DAG, the sensor and the UI against a moto server",
            "gs": "resolved here, not run",
            "abfs": "resolved here, not run",
        },
    ),
}

#: Where the jars are kept: inside the project's virtualenv, one folder per Spark line and store.
CACHE_ENV = "AIRFLOW_ZORDER_JARS_DIR"
_REPO = Path(__file__).resolve().parents[1]


def cache_dir() -> Path:
    """``$AIRFLOW_ZORDER_JARS_DIR``, else ``<project>/.venv/jars``."""
    env = os.environ.get(CACHE_ENV)
    return Path(env) if env else _REPO / ".venv" / "jars"


def line_of(spark_version: str) -> str:
    """``"4.2.0"`` -> ``"4.2"``; InvalidInputError naming the lines we pin for any other line."""
    line = ".".join(spark_version.split(".")[:2])
    if line not in SPARK_LINES:
        raise InvalidInputError(
            f"Spark {spark_version} is on line {line}, for which no connector jars are pinned; "
            f"pinned lines: {', '.join(sorted(SPARK_LINES))} (airflow_zorder.spark_jars.SPARK_LINES)"
        )
    return line


def local_spark_line() -> str:
    """The line of the installed pyspark (``$ZORDER_SPARK_LINE`` overrides it)."""
    forced = os.environ.get("ZORDER_SPARK_LINE")
    if forced:
        return line_of(forced)
    version = installed_version("pyspark")
    if version is None:
        raise JarsNotFetchedError("pyspark is not installed: pip install 'airflow-zorder[spark]'")
    return line_of(version)


def store_of(scheme: str) -> str | None:
    """The store family serving a URI scheme (``"s3a"`` -> ``"s3a"``, ``"abfss"`` -> ``"abfs"``), else None."""
    for store, schemes in STORES.items():
        if scheme in schemes:
            return store
    return None


def _folder(line: str, store: str) -> Path:
    return cache_dir() / line / store


def _complete_marker(line: str, store: str) -> Path:
    return _folder(line, store) / ".complete"


def jars_for(stores: Iterable[str], line: str | None = None) -> list[str]:
    """Local paths of the fetched jars of ``stores`` for ``line`` (default: the installed pyspark's), sorted.

    Raises :class:`JarsNotFetchedError` naming the command that fetches them when a store is not cached.
    """
    line = line or local_spark_line()
    out: list[str] = []
    for store in stores:
        if store not in STORES:
            raise InvalidInputError(f"unknown store {store!r}: one of {', '.join(STORES)}")
        if not _complete_marker(line, store).exists():
            raise JarsNotFetchedError(
                f"the {store} connector jars for Spark {line} are not fetched: run `make jars` "
                f"(python -m airflow_zorder.spark_jars fetch --line {line} --store {store}); "
                f"they are kept in {_folder(line, store)}"
            )
        out.extend(sorted(str(p) for p in _folder(line, store).glob("*.jar")))
    return out


def _pom(artifacts: Sequence[Artifact]) -> str:
    deps = []
    for a in artifacts:
        parts = [
            f"<groupId>{escape(a.group)}</groupId>",
            f"<artifactId>{escape(a.name)}</artifactId>",
            f"<version>{escape(a.version)}</version>",
        ]
        if a.classifier:
            parts.append(f"<classifier>{escape(a.classifier)}</classifier>")
        if not a.transitive:
            parts.append(
                "<exclusions><exclusion><groupId>*</groupId><artifactId>*</artifactId></exclusion></exclusions>"
            )
        deps.append("<dependency>" + "".join(parts) + "</dependency>")
    return (
        '<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0</modelVersion>'
        "<groupId>airflow-zorder</groupId><artifactId>spark-jars</artifactId><version>1</version>"
        f"<packaging>pom</packaging><dependencies>{''.join(deps)}</dependencies></project>"
    )


def _spark_jar_names() -> set[str]:
    """Artifact names of the jars the local pyspark already ships (not copied twice onto its classpath)."""
    try:
        import pyspark
    except ImportError:
        return set()
    names = set()
    for jar in (Path(pyspark.__file__).parent / "jars").glob("*.jar"):
        stem = jar.stem
        names.add(stem.rsplit("-", 1)[0] if "-" in stem else stem)
    return names


def resolve(artifacts: Sequence[Artifact], folder: Path, what: str, *, quiet: bool = True) -> list[Path]:
    """Resolve ``artifacts`` with ``mvn`` into ``folder`` (replaced; a ``.complete`` marker written last) and return
    its jars; ``what`` names them in the error. Jars the local pyspark already ships are left out."""
    mvn = shutil.which("mvn")
    if mvn is None:
        raise JarsNotFetchedError("mvn (Apache Maven) is not on PATH: install it to fetch connector jars")
    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".fetch-{folder.name}-", dir=folder.parent))  # same disk: moved, not copied
    try:
        (tmp / "pom.xml").write_text(_pom(artifacts), encoding="utf-8")
        cmd = [mvn, "-B", "dependency:copy-dependencies", "-DincludeScope=runtime", f"-DoutputDirectory={tmp / 'jars'}"]
        if quiet:
            cmd.insert(2, "-q")
        done = subprocess.run(cmd, cwd=tmp, capture_output=True, text=True)
        if done.returncode != 0:
            raise JarsNotFetchedError(
                f"mvn could not resolve {what} ({', '.join(a.coordinate for a in artifacts)}):\n"
                f"{(done.stdout + done.stderr)[-3000:]}"
            )
        shipped = _spark_jar_names()
        if folder.exists():
            shutil.rmtree(folder)
        folder.mkdir(parents=True)
        for jar in sorted((tmp / "jars").glob("*.jar")):
            if jar.stem.rsplit("-", 1)[0] in shipped:
                continue
            jar.rename(folder / jar.name)
        (folder / ".complete").write_text("\n".join(a.coordinate for a in artifacts) + "\n", encoding="utf-8")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return sorted(folder.glob("*.jar"))


def fetch(stores: Iterable[str] | None = None, line: str | None = None, *, quiet: bool = True) -> dict[str, list[str]]:
    """Resolve ``stores``' artifacts for ``line`` with ``mvn`` into the cache (skipped when already there).

    Returns store -> jar paths. The local Maven repository (``~/.m2``) keeps the downloads, so a second
    project checkout on the machine fetches nothing. Jars the local pyspark already ships are left out.
    """
    line = line or local_spark_line()
    spec = SPARK_LINES[line]
    out: dict[str, list[str]] = {}
    for store in stores or spec.stores:
        if not _complete_marker(line, store).exists():
            resolve(spec.stores[store], _folder(line, store), f"the {store} jars for Spark {line}", quiet=quiet)
        out[store] = jars_for([store], line)
    return out


def fetched_jars(stores: Iterable[str] = tuple(STORES), line: str | None = None) -> list[str]:
    """The cached jars of those ``stores`` that were fetched (none is an error): for a local session that
    reaches object stores when it can."""
    out: dict[str, str] = {}  # by file name: a jar two connectors share (wildfly-openssl) goes on the classpath once
    for store in stores:
        try:
            out.update({Path(p).name: p for p in jars_for([store], line) if Path(p).name not in out})
        except JarsNotFetchedError:
            continue
    return list(out.values())


def connector_settings(stores: Iterable[str], line: str | None = None) -> dict[str, str]:
    """The Hadoop settings ``stores``' connectors need on ``line`` (default: the installed pyspark's), merged."""
    spec = SPARK_LINES[line or local_spark_line()]
    out: dict[str, str] = {}
    for store in stores:
        out.update(spec.settings.get(store, {}))
    return out


#: The block of docs/connections.md that :func:`docs_table` renders (``python -m airflow_zorder.spark_jars table
#: --write docs/connections.md``); tests/unit/test_docs.py checks that it is current.
DOC_START, DOC_END = "<!-- spark-jars:start -->", "<!-- spark-jars:end -->"


def docs_table() -> str:
    """The markdown table of what a user adds to a cluster per Spark line and store, and what was verified here."""
    out = [
        DOC_START,
        "",
        "| Spark (Hadoop) | scheme | Maven coordinates | Hadoop settings (`spark.hadoop.<key>`) | verified |",
        "| --- | --- | --- | --- | --- |",
    ]
    for line in sorted(SPARK_LINES, reverse=True):
        spec = SPARK_LINES[line]
        for store, artifacts in spec.stores.items():
            schemes = ", ".join(f"`{s}://`" for s in STORES[store])
            coords = "<br>".join(f"`{a.coordinate}`" for a in artifacts)
            settings = "<br>".join(f"`{k}={v}`" for k, v in spec.settings.get(store, {}).items()) or "-"
            out.append(
                f"| {line}.x ({spec.hadoop}) | {schemes} | {coords} | {settings} | {spec.verified.get(store, '-')} |"
            )
    out += ["", DOC_END]
    return "\n".join(out)


def update_doc(path: Path) -> bool:
    """Rewrite the block between :data:`DOC_START` and :data:`DOC_END` in ``path``; False if it has no block."""
    text = path.read_text(encoding="utf-8")
    if DOC_START not in text or DOC_END not in text:
        return False
    head, rest = text.split(DOC_START, 1)
    tail = rest.split(DOC_END, 1)[1]
    path.write_text(head + docs_table() + tail, encoding="utf-8")
    return True


def apply_hadoop_conf(spark: Any, hadoop: Mapping[str, str]) -> None:
    """Set Hadoop settings (e.g. a connection's ``StoreOptions.hadoop``) on a live session's driver, and drop
    Hadoop's cached filesystems so the next open of a store uses them."""
    conf = spark._jsc.hadoopConfiguration()
    for key, value in hadoop.items():
        conf.set(key, str(value))
    spark._jvm.org.apache.hadoop.fs.FileSystem.closeAll()


def main(argv: Sequence[str] | None = None) -> int:
    """``fetch`` the jars, or print the ``jars`` of stores as one comma-separated list."""
    parser = argparse.ArgumentParser(prog="python -m airflow_zorder.spark_jars", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    f = sub.add_parser("fetch", help="resolve the connectors' jars with mvn into the cache")
    f.add_argument("--line", help="Spark line (default: the installed pyspark's)")
    f.add_argument("--store", action="append", choices=sorted(STORES), help="a store (repeat; default: all)")
    j = sub.add_parser("jars", help="print the cached jars of stores, comma-separated (for --jars)")
    j.add_argument("stores", nargs="+", choices=sorted(STORES))
    j.add_argument("--line")
    t = sub.add_parser("table", help="print the docs' table of coordinates per Spark line (or --write it into a doc)")
    t.add_argument("--write", type=Path, help="a markdown file with the spark-jars markers, e.g. docs/connections.md")
    args = parser.parse_args(argv)
    try:
        if args.command == "fetch":
            got = fetch(args.store, args.line)
            for store, jars in got.items():
                size = sum(os.path.getsize(p) for p in jars) / 2**20
                print(f"{store}: {len(jars)} jar(s), {size:,.0f} MiB in {Path(jars[0]).parent if jars else '-'}")
        elif args.command == "table":
            if args.write is None:
                print(docs_table())
            elif not update_doc(args.write):
                print(f"{args.write} has no {DOC_START} ... {DOC_END} block", file=sys.stderr)
                return 1
        else:
            print(",".join(jars_for(args.stores, args.line)))
    except (JarsNotFetchedError, ValueError) as exc:
        print(str(exc), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
