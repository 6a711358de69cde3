"""The 30-append loop's real Hudi policy (issue #51): Hudi's inline clustering on its own schedule, beside ours.

    .venv-hudi/bin/python benchmarks/hudi_inline_policy.py --work .bench/incremental --sf 1 --days 30 \
        --merge-into docs/benchmarks/results.json --doc docs/benchmarks.md [--merge-only]

Runs under ``.venv-hudi`` (Spark 3.5.8 + Hudi's bundle, ``make hudi-env``) on the data of ``bench_incremental.py``'s
uniform scenario, which must have run with ``--keep`` first (its clustered base in ``<work>/base``, its appends in
``<work>/appends_sf<SF>_d<DAYS>``): the base is written as a copy-on-write Hudi table (``bulk_insert``, one file
group per base file, order kept); each day's 2 append files are inserted (small-file packing off, so an insert adds
files as the other policies' appends do) with Hudi's inline clustering on at its defaults -- every
``hoodie.clustering.inline.max.commits`` (4) commits, every file under the small-file limit (300 MB) -- sorted on
the clustering columns by ``--curve`` and cut at the Hudi base's mean file size (the plan's groups size the
files; Hudi's files are larger than the Parquet base's by its meta columns, ``base_bytes_over_parquet``). Per day, from the table's own
timeline and files (no Spark): the bytes appended (the insert's files), the bytes rewritten (files live before the
day or written by its insert and replaced by its clustering; replaced files stay on storage until Hudi's cleaner
removes them, so each size is read from the listing), and the ratios of ``bench_incremental.measure`` on the
footers' statistics (``open_table``, as the sensor reads a Hudi table). ``--merge-into`` adds the policy
``hudi-inline`` to the uniform scenario's policies already in the results (``bench_incremental.added_to``).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import bench_incremental as bi  # noqa: E402
from bench_env import REPO  # noqa: E402,F401  (sets PYSPARK_PYTHON, sys.path, PYTHONPATH)

from airflow_zorder import hudi_spark
from airflow_zorder.core.storage.io.local import LocalFileSystem
from airflow_zorder.core.tables import open_table
from spark_jobs.hudi_clustering import WRITER_RATIO

NAME = "hudi-inline"
log = bi.log


def _session():
    from pyspark.sql import SparkSession

    b = SparkSession.builder.master("local[2]").appName("hudi-inline-policy")
    conf = {**hudi_spark.SESSION_CONF, "spark.jars": ",".join(hudi_spark.fetch("3.5"))}
    conf.update({"spark.driver.memory": "4g", "spark.sql.shuffle.partitions": "64", "spark.ui.enabled": "false"})
    for k, v in conf.items():
        b = b.config(k, v)
    return b.getOrCreate()


def _options(name: str, target: int, curve: str) -> dict[str, str]:
    """A copy-on-write, unpartitioned table keyed by the rows' identity; inline clustering at Hudi's defaults but
    for the sort columns, the curve and the target file size."""
    return {
        "hoodie.table.name": name,
        "hoodie.datasource.write.recordkey.field": ",".join(bi.ROW_KEY),
        "hoodie.datasource.write.keygenerator.class": "org.apache.hudi.keygen.ComplexKeyGenerator",
        "hoodie.datasource.write.partitionpath.field": "",
        "hoodie.datasource.write.table.type": "COPY_ON_WRITE",
        "hoodie.parquet.compression.codec": "snappy",
        "hoodie.clustering.inline": "true",
        "hoodie.clustering.plan.strategy.sort.columns": ",".join(bi.COLUMNS),
        "hoodie.layout.optimize.strategy": {"zorder": "z-order"}.get(curve, curve),
        "hoodie.clustering.plan.strategy.target.file.max.bytes": str(target),
        # files are cut by the clustering plan's groups (ceil(bytes / target) per group), not by the writer's roll:
        # at the target, an insert's estimate of the record size split a day's 2 files into hundreds, and the
        # clustering's writer (which rolls at the target) cut each planned file in two; the ratio is our Hudi path's
        "hoodie.parquet.max.file.size": str(1 << 40),
        "hoodie.parquet.compression.ratio": str(WRITER_RATIO),
    }


def _files_on_disk(root: Path) -> dict[str, int]:
    return {str(p): p.stat().st_size for p in root.rglob("*.parquet") if ".hoodie" not in p.parts}


def _instant_of(path: str) -> str:
    """A base file's commit time: the last ``_`` field of ``<fileId>_<writeToken>_<instant>.parquet``."""
    return Path(path).name.rsplit("_", 1)[-1].split(".")[0]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--work", default=str(REPO / ".bench" / "incremental"))
    ap.add_argument("--sf", type=float, default=1.0)
    ap.add_argument("--days", type=int, default=30)
    ap.add_argument("--curve", default=bi.CURVE, choices=("hilbert", "zorder"))
    ap.add_argument("--merge-into", default=None)
    ap.add_argument("--doc", default=None)
    ap.add_argument("--merge-only", action="store_true", help="merge <work>/hudi_inline_results.json, run nothing")
    a = ap.parse_args(argv)
    work = Path(a.work).resolve()
    if a.merge_only:
        merge(json.loads((work / "hudi_inline_results.json").read_text()), Path(a.merge_into), a.doc)
        return 0
    base = work / "base"
    appends = json.loads((work / f"appends_sf{a.sf:g}_d{a.days}" / bi.APPENDS_MARKER).read_text())
    base_files = sorted(str(p) for p in base.glob("*.parquet"))
    if not base_files:
        raise SystemExit(f"no base in {base}: run bench_incremental.py --scenario uniform --keep first")
    parquet_target = bi.bc.dir_bytes(base_files) // len(base_files)
    root = work / "uniform" / "table_hudi_inline"
    bi.bc.fresh_dir(root)
    t0 = time.perf_counter()
    spark = _session()
    fs = LocalFileSystem()
    opts = _options("lineitem", parquet_target, a.curve)
    try:
        one = max(Path(f).stat().st_size for f in base_files)
        spark.conf.set("spark.sql.files.maxPartitionBytes", str(one))
        spark.conf.set("spark.sql.files.openCostInBytes", str(one))
        bulk = {
            **opts,
            "hoodie.datasource.write.operation": "bulk_insert",
            "hoodie.bulkinsert.sort.mode": "NONE",
            "hoodie.clustering.inline": "false",
        }
        spark.read.parquet(*base_files).write.format("hudi").options(**bulk).mode("overwrite").save(str(root))
        spark.conf.unset("spark.sql.files.maxPartitionBytes")
        spark.conf.unset("spark.sql.files.openCostInBytes")
        sizes = _files_on_disk(root)
        # Hudi's files carry its meta columns (the record key, the commit time...): the target is the Hudi base's
        # own mean file size, as the Delta policies size theirs by the Delta base's
        target = sum(sizes.values()) // len(sizes)
        opts = _options("lineitem", target, a.curve)
        insert = {**opts, "hoodie.datasource.write.operation": "insert", "hoodie.parquet.small.file.limit": "0"}
        log(
            f"{NAME}: Hudi base {len(sizes)} files, {sum(sizes.values()) / bi.MB:.1f} MB (Parquet base "
            f"{bi.bc.dir_bytes(base_files) / bi.MB:.1f} MB); target {target / bi.MB:.2f} MB"
        )
        days: list[dict[str, Any]] = []
        for day in range(1, a.days + 1):
            before = _live(root, fs)
            files = [str(Path(appends["dir"]) / n) for n in appends["files"][day - 1]]
            s = time.perf_counter()
            spark.read.parquet(*files).write.format("hudi").options(**insert).mode("append").save(str(root))
            wall = time.perf_counter() - s
            sizes.update(_files_on_disk(root))
            table = open_table(str(root), fs)
            after = _live(root, fs, table)
            instants = [i for i in _instants(root, fs) if i.state == "completed"]
            commit = max(i.timestamp for i in instants if i.action.split("@")[0] == "commit")
            clustered = [i for i in instants if i.action.split("@")[0] == "replacecommit" and i.timestamp > commit]
            inserted = {p for p in sizes if _instant_of(p) == commit}
            replaced = (before | inserted) - after
            written = [p for p in after if any(_instant_of(p) == i.timestamp for i in clustered)]
            st = time.perf_counter()
            m = bi.measure(table.metadata_stats(bi.COLUMNS), target)
            rec: dict[str, Any] = {
                "day": day,
                "appended_bytes": sum(sizes[p] for p in inserted),
                "decision": "own schedule",
                "action": "inline clustering" if clustered else "none",
                "job_s": round(wall, 3),
                "stats_s": round(time.perf_counter() - st, 3),
                "bytes_rewritten": sum(sizes[p] for p in replaced),
                "files_rewritten": len(replaced),
                "files_written": len(written),
                "bytes_written": sum(sizes[p] for p in written),
                "written_max_over_target": round(max(sizes[p] for p in written) / target, 4) if written else None,
                **{k: m[k] for k in ("ratios", "bytes_ratios", "files_read", "worst", "worst_bytes", "files", "bytes")},
                "mean_file_over_target": m["mean_file_over_target"],
            }
            days.append(rec)
            log(
                f"uniform day {day:2d} {NAME} worst {rec['worst']:.3f}  {rec['action']:<17} "
                f"{rec['bytes_rewritten'] / bi.MB:8.1f} MB {rec['files_rewritten']:4d} files  write {wall:6.1f} s  "
                f"{rec['files']} files"
            )
        live = sorted(_live(root, fs))
    finally:
        spark.stop()
    src = base_files + [str(Path(appends["dir"]) / n) for names in appends["files"][: a.days] for n in names]
    expected, got = bi.rows_checksum(src), bi.rows_checksum(live)
    policy = {
        "days": days,
        "totals": bi.totals(days, target),
        "curve": a.curve,
        "spark": "3.5.8",
        "target": target,
        "base_bytes_over_parquet": round(target / parquet_target, 3),
    }
    res = {
        "sf": a.sf,
        "days": a.days,
        "started_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - (time.perf_counter() - t0))),
        "command": "python benchmarks/hudi_inline_policy.py " + " ".join(sys.argv[1:] if argv is None else argv),
        "scenarios": {
            "uniform": {
                "policies": {NAME: policy},
                "rows_check": {NAME: {**got, "equal": got == expected}, "ok": got == expected},
            }
        },
    }
    (work / "hudi_inline_results.json").write_text(json.dumps(res, indent=1, default=str) + "\n")
    t = policy["totals"]
    log(
        f"{NAME}: {t['runs']} clusterings, {t['bytes_rewritten'] / bi.MB:.0f} MB rewritten, worst ratio max "
        f"{t['max_worst_ratio']}, mean {t['mean_worst_ratio']}; rows {'equal' if got == expected else 'DIFFER'}"
    )
    if a.merge_into:
        merge(res, Path(a.merge_into), a.doc)
    return 0 if got == expected else 1


def merge(res: dict[str, Any], results: Path, doc: str | None) -> None:
    """Add the policy to the uniform scenario of ``results`` (key ``incremental``) and render its doc section."""
    import bench_report

    target_json = results.resolve()
    merged = bi.added_to(json.loads(target_json.read_text())["incremental"], res)
    bi.merge_into(target_json, "incremental", merged)
    bench_report.render_incremental(merged, target_json.parent, Path(doc).resolve() if doc else None)


def _live(root: Path, fs: LocalFileSystem, table: Any = None) -> set[str]:
    """The latest slices' base files, as absolute local paths."""
    files = (table or open_table(str(root), fs)).snapshot().files
    return {f.path if f.path.startswith("/") else str(root / f.path) for f in files}


def _instants(root: Path, fs: LocalFileSystem) -> list:
    from airflow_zorder.core.hudi import hudi_timeline as tl

    return tl.timeline_instants(fs, str(root), tl.read_properties(fs, str(root)))


if __name__ == "__main__":
    sys.exit(main())
