"""Apache Hudi: our plan-driven clustering beside Hudi's own ``run_clustering`` (hilbert and z-order), files read per
point query as Hudi's own data skipping plans them.

    .venv/bin/python benchmarks/bench_hudi.py [--sf 0.1] [--files 64] [--queries 10] [--work .bench/hudi]
        [--json-out FILE] [--merge-into docs/benchmarks/results.json] [--doc docs/benchmarks.md]

``make bench-hudi`` runs it with ``--merge-into docs/benchmarks/results.json --doc docs/benchmarks.md`` (the key
``"hudi"`` and the section between ``<!-- bench:hudi:start -->`` and ``<!-- bench:hudi:end -->``; nothing else).

TPC-H lineitem at ``--sf`` (``tpch_data.generate_lineitem``) is written by Hudi's Spark bundle as a copy-on-write,
unpartitioned table of ``--files`` base files (bulk_insert; record key ``l_orderkey,l_linenumber``; the metadata
table's column statistics on), then copied three times, each copy re-clustered on ``l_partkey, l_suppkey,
l_shipdate`` into ``--files`` files:

- ``ours``: the cluster job (``spark_jobs/cluster_table.py`` -> ``spark_jobs/hudi_clustering.py``) with
  ``--curve hilbert --num-files N``: Hudi's clustering driven by our options (every base file a candidate, every
  file group in one sorted group, the curve over sampled ranges, the target size from our sizing);
- ``hudi hilbert`` / ``hudi z-order``: ``CALL run_clustering(order => ..., order_strategy => ...,
  op => 'scheduleAndExecute')`` with Hudi's defaults, only ``target.file.max.bytes`` and
  ``hoodie.parquet.compression.ratio`` (so that its writer does not roll files early) set, for the same number of
  files.

For each layout (and the unclustered input) and each column, ``--queries`` values drawn from the data: the files
Spark's scan plans for ``column = value`` with ``hoodie.enable.data.skipping=true`` (the ``numFiles`` metric of the
file scan; adaptive execution off so the plan is the one executed). Runs in one Spark JVM under ``.venv-hudi``
(Spark 3.5.8 + hudi-spark3.5-bundle 1.2.0: ``make hudi-env``), spark-submitted by this script with ``--driver``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bench_doc import merge_into, splice_section  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
COLUMNS = ["l_partkey", "l_suppkey", "l_shipdate"]
LAYOUTS = ("input", "ours", "hudi hilbert", "hudi z-order")
START, END = "<!-- bench:hudi:start -->", "<!-- bench:hudi:end -->"
MB = 1 << 20


def log(msg: str) -> None:
    print(f"[bench_hudi] {msg}", file=sys.stderr, flush=True)


# --------------------------------------------------------------------------- the driver (Spark 3.5 + Hudi)


def _scan_files(df: Any) -> int:
    """Files the executed plan's file scans read (their ``numFiles`` metric, after Hudi's data skipping)."""
    qe = df.groupBy().count()._jdf.queryExecution()
    qe.toRdd().count()  # executed: the scans' metrics are filled in
    leaves = qe.executedPlan().collectLeaves()
    total = 0
    for i in range(leaves.size()):
        metric = leaves.apply(i).metrics().get("numFiles")
        if metric.isDefined():
            total += int(metric.get().value())
    return total


def _read(spark: Any, path: str) -> Any:
    return (
        spark.read.format("hudi")
        .option("hoodie.enable.data.skipping", "true")
        .option("hoodie.metadata.enable", "true")
        .load(path)
    )


def _live_files(path: str) -> tuple[int, int]:
    """Files and bytes of the latest file slices, as the read side lists them (hudi-rs; clustering keeps Hudi's
    meta columns, so ``_hoodie_file_name`` still names the files a row came from)."""
    from airflow_zorder.core.storage.io import filesystem_for
    from airflow_zorder.core.tables import open_table

    files = open_table(path, filesystem_for(path)).snapshot().files
    return len(files), sum(f.size for f in files)


def driver(a: argparse.Namespace) -> dict[str, Any]:
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F

    from airflow_zorder.core.jobs.options import ClusterOptions
    from spark_jobs.cluster_table import run_action
    from spark_jobs.hudi_clustering import WRITER_RATIO

    spark = SparkSession.builder.getOrCreate()
    spark.conf.set("spark.sql.adaptive.enabled", "false")
    work = Path(a.work)
    res: dict[str, Any] = {"spark": spark.version, "layouts": {}, "timings_s": {}}
    src = spark.read.parquet(*sorted(str(p) for p in Path(a.data).glob("*.parquet")))
    base = str(work / "tables" / "input")
    shutil.rmtree(work / "tables", ignore_errors=True)
    t = time.time()
    (
        src.repartition(a.files)
        .write.format("hudi")
        .options(
            **{
                "hoodie.table.name": "lineitem",
                "hoodie.datasource.write.recordkey.field": "l_orderkey,l_linenumber",
                "hoodie.datasource.write.keygenerator.class": "org.apache.hudi.keygen.ComplexKeyGenerator",
                "hoodie.datasource.write.partitionpath.field": "",
                "hoodie.datasource.write.operation": "bulk_insert",
                "hoodie.bulkinsert.sort.mode": "NONE",
                "hoodie.bulkinsert.shuffle.parallelism": str(a.files),
                "hoodie.parquet.compression.codec": "snappy",
                "hoodie.metadata.enable": "true",
                "hoodie.metadata.index.column.stats.enable": "true",
            }
        )
        .mode("overwrite")
        .save(base)
    )
    res["timings_s"]["write"] = round(time.time() - t, 1)
    files, size = _live_files(base)
    res["input"] = {"rows": src.count(), "files": files, "bytes": size}
    log(f"wrote {base}: {files} files, {size / MB:.0f} MB in {res['timings_s']['write']} s")
    target = math.ceil(size / a.files)
    copies = {name: str(work / "tables" / name.replace(" ", "_")) for name in LAYOUTS[1:]}
    for path in copies.values():
        shutil.copytree(base, path)
    t = time.time()
    argv = ["--table", copies["ours"], "--columns", ",".join(COLUMNS), "--curve", "hilbert"]
    ours = run_action(spark, ClusterOptions.from_args([*argv, "--num-files", str(a.files), "--run-id", "bench"]))
    res["timings_s"]["ours"] = round(time.time() - t, 1)
    res["ours"] = {k: ours.get(k) for k in ("status", "hudi", "phases", "before", "after")}
    log(f"ours: {ours['status']} in {res['timings_s']['ours']} s")
    for name, strategy in (("hudi hilbert", "hilbert"), ("hudi z-order", "z-order")):
        t = time.time()
        spark.sql(
            f"CALL run_clustering(path => '{copies[name]}', order => '{','.join(COLUMNS)}', "
            f"order_strategy => '{strategy}', op => 'scheduleAndExecute', "
            f"options => 'hoodie.clustering.plan.strategy.target.file.max.bytes={target},"
            f"hoodie.parquet.compression.ratio={WRITER_RATIO}')"
        ).collect()
        res["timings_s"][name] = round(time.time() - t, 1)
        log(f"{name}: {res['timings_s'][name]} s")
    rng = random.Random(a.seed)
    sample = src.sample(fraction=min(1.0, 50 * a.queries / max(1, res["input"]["rows"])), seed=a.seed)
    rows = sample.select(*COLUMNS).collect()
    values = {c: [r[c] for r in rng.sample(rows, min(a.queries, len(rows)))] for c in COLUMNS}
    paths = {"input": base, **copies}
    for name, path in paths.items():
        df = _read(spark, path)
        files, size = _live_files(path)
        per: dict[str, Any] = {}
        for c in COLUMNS:
            counts = [_scan_files(df.where(F.col(c) == F.lit(v))) for v in values[c]]
            per[c] = {"mean": round(sum(counts) / len(counts), 2), "max": max(counts), "fraction": None}
            per[c]["fraction"] = round(per[c]["mean"] / files, 4) if files else None
        total = df.count()
        res["layouts"][name] = {"files": files, "bytes": size, "rows": total, "files_read": per}
        log(f"{name}: {files} files, rows {total}, " + ", ".join(f"{c} {per[c]['mean']}" for c in COLUMNS))
    res["values"] = {c: [str(v) for v in vs] for c, vs in values.items()}
    spark.stop()
    return res


# --------------------------------------------------------------------------- the orchestrator (.venv)


def render(res: dict[str, Any]) -> str:
    """The doc's section from the figures (between :data:`START` and :data:`END`)."""
    ideal = res["files"] ** (-1 / len(COLUMNS))
    head = (
        "| layout | files | MB | rows | clustering s | "
        + " | ".join(f"{c} files read (fraction)" for c in COLUMNS)
        + " |"
    )
    lines = [
        START,
        "",
        "## Apache Hudi: our plan-driven clustering beside Hudi's own",
        "",
        f"TPC-H lineitem SF{res['sf']:g} ({res['input']['rows']:,} rows) written by Hudi's Spark bundle as a "
        f"copy-on-write table of {res['input']['files']} base files ({res['input']['bytes'] / MB:.0f} MB; "
        f"{res['timings_s']['write']} s), then re-clustered on {', '.join(f'`{c}`' for c in COLUMNS)} into "
        f"{res['files']} files three ways: **ours** (the cluster job on a Hudi table: Hudi's `run_clustering` "
        "driven by our options, Hilbert over sampled ranges, every file group in one sorted group), and Hudi's own "
        "`run_clustering` with its defaults and `hilbert` or `z-order` (only `target.file.max.bytes` and "
        "`hoodie.parquet.compression.ratio` set, for the same number of files). Files read per point query: the files Spark's scan plans with Hudi's data "
        f"skipping (`hoodie.enable.data.skipping=true`, column statistics of the metadata table), mean of "
        f"{res['queries']} values per column drawn from the data (ideal for {res['files']} files and "
        f"{len(COLUMNS)} columns: {ideal:.2f} of the files).",
        "",
        head,
        "| --- | ---: | ---: | ---: | ---: | " + " | ".join("---:" for _ in COLUMNS) + " |",
    ]
    for name in LAYOUTS:
        lay = res["layouts"][name]
        secs = res["timings_s"].get(name, "-")
        cells = " | ".join(
            f"{lay['files_read'][c]['mean']:g} ({lay['files_read'][c]['fraction']:.3f})" for c in COLUMNS
        )
        lines.append(f"| {name} | {lay['files']} | {lay['bytes'] / MB:.0f} | {lay['rows']:,} | {secs} | {cells} |")
    lines += [
        "",
        "With every input file below Hudi's default small-file limit and all of them within one default group, "
        "ours differs from Hudi's defaults here in the curve's build (`hoodie.layout.optimize.curve.build.method`: "
        "`sample`, ranges of sampled values, where Hudi's default `direct` maps the columns' raw values onto the "
        "curve) and the codec.",
        "",
        f"Spark {res['spark']} with hudi-spark3.5-bundle_2.12 {res['hudi']} (`.venv-hudi`), Java 17, "
        f"{res['cpus']} CPUs, `local[2]`, load average {res['load'][0]} at the start and {res['load'][1]} at the end "
        f"(other work on the machine: the wall times are rough); {res['wall_s']:.0f} s in all, measured "
        f"{res['finished_utc']}. Hudi's own clusterings write Hudi's default codec (gzip), ours `--compression` (snappy). "
        "Reproduce: `make bench-hudi` (`.venv/bin/python benchmarks/bench_hudi.py --sf "
        f"{res['sf']:g} --merge-into docs/benchmarks/results.json --doc docs/benchmarks.md`).",
        "",
        END,
    ]
    return "\n".join(lines)


def write_doc(res: dict[str, Any], doc: Path) -> None:
    """Replace this benchmark's section of ``doc`` (or append it); nothing else in the doc changes."""
    splice_section(doc, START, END, render(res))


def orchestrate(a: argparse.Namespace) -> dict[str, Any]:
    sys.path.insert(0, str(REPO / "tests"))
    sys.path.insert(0, str(REPO / "benchmarks"))
    from hudi_tables import missing, submit_cmd, submit_env
    from tpch_data import generate_lineitem

    from airflow_zorder.hudi_spark import BUNDLES

    why = missing()
    if why:
        raise SystemExit(f"bench_hudi: {why}")
    started = time.time()
    load_start = round(os.getloadavg()[0], 1)
    work = Path(a.work).resolve()
    data = work / f"lineitem-sf{a.sf:g}"
    info = generate_lineitem(a.sf, data)
    log(f"lineitem SF{a.sf:g}: {info['rows']:,} rows in {info['seconds']:.0f} s")
    out = work / "driver.json"
    cmd = submit_cmd(
        Path(__file__).resolve(),
        "--driver",
        "--data",
        str(data),
        "--work",
        str(work),
        "--files",
        str(a.files),
        "--queries",
        str(a.queries),
        "--seed",
        str(a.seed),
        "--json-out",
        str(out),
        conf={"spark.driver.memory": a.driver_memory},
    )
    done = subprocess.run(cmd, env=submit_env(), capture_output=True, text=True)
    for line in done.stderr.splitlines():
        if "[bench_hudi]" in line or "[hudi_clustering]" in line:
            print(line, file=sys.stderr)
    if done.returncode != 0:
        raise SystemExit(f"the driver failed ({done.returncode}):\n{done.stderr[-4000:]}")
    res = json.loads(out.read_text())
    res.update(
        sf=a.sf,
        files=a.files,
        queries=a.queries,
        hudi=BUNDLES["3.5"].version,
        cpus=os.cpu_count(),
        wall_s=round(time.time() - started, 1),
        load=[load_start, round(os.getloadavg()[0], 1)],
        finished_utc=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    )
    return res


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sf", type=float, default=0.1, help="TPC-H scale factor of lineitem (default 0.1)")
    ap.add_argument("--files", type=int, default=64, help="base files of the input and of each clustering")
    ap.add_argument("--queries", type=int, default=10, help="point-query values per column (default 10)")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--work", default=str(REPO / ".bench" / "hudi"))
    ap.add_argument("--driver-memory", default="3g")
    ap.add_argument("--json-out", default=None, help="the results JSON (default <work>/hudi_results.json)")
    ap.add_argument("--merge-into", default=None, help="a results JSON to store the figures in (key 'hudi')")
    ap.add_argument("--doc", default=None, help="a markdown whose Hudi section to (re)write (with --merge-into)")
    ap.add_argument("--driver", action="store_true", help=argparse.SUPPRESS)  # under spark-submit
    ap.add_argument("--data", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.driver:
        Path(a.json_out).write_text(json.dumps(driver(a), indent=1, default=str) + "\n")
        return 0
    if a.doc and not a.merge_into:
        ap.error("--doc needs --merge-into (the section is rendered from that JSON)")
    res = orchestrate(a)
    out = Path(a.json_out) if a.json_out else Path(a.work).resolve() / "hudi_results.json"
    out.write_text(json.dumps(res, indent=1, default=str) + "\n")
    print(render(res))
    if a.merge_into:
        merge_into(Path(a.merge_into).resolve(), "hudi", res)
        if a.doc:
            write_doc(res, Path(a.doc).resolve())
    rows = {lay["rows"] for lay in res["layouts"].values()}
    return 0 if rows == {res["input"]["rows"]} else 1


if __name__ == "__main__":
    sys.exit(main())
