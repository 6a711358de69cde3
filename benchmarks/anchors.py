"""One Spark line's part of the engines benchmark (issue #51): the sort rewrite, ours and that line's anchors, timed.

    <line's python> benchmarks/anchors.py SPEC.json      (bench_engines.py writes SPEC and runs this per line)

Run under the virtualenv of one Spark line (``engines_env.LINES``), in one SparkSession (``bench_cluster.build_spark``:
local[2], 4g driver, 64 shuffle partitions) with the jars and settings of the anchors on that line
(``engines_env.session_conf``). Per data set of the spec:

1. each anchor's input, untimed: Delta -- a copy of the table delta-rs wrote from the Parquet input (one commit per
   input file); Iceberg -- a table in a Hadoop catalog that ``add_files`` imports the Parquet input files into (the
   same files, a snapshot to roll back to before each run); Hudi -- a copy-on-write table ``bulk_insert`` writes from
   the input, one file per input file (no re-sort);
2. a layout round, untimed (it warms the JVM up too): every job once, then the files each engine plans for every
   query of the spec on its output (:func:`planned_files`: the scan node's own count once the plan is built --
   ``numFiles`` of a file scan (Delta's and Hudi's data skipping act there), Iceberg's ``resultDataFiles``) and the
   output's data files (for the DuckDB cross-check of bench_engines.py);
3. ``rounds`` timed rounds, the sort rewrite between every two jobs (R, j1, R, j2, ..., R): each job's wall and CPU
   time against the mean of the two sort rewrites around it (``bench_cluster.ratio_to_references``).

Jobs: ``sort`` (``bench_cluster.run_baseline``: ``repartitionByRange(n, key).sortWithinPartitions(key)``),
``sort scrambled`` (the same on the rows in random order), ``ours <curve>`` (``run_cluster`` on a copy of the
Parquet input) and ``ours <curve> delta`` (on a copy of the Delta input), ``delta`` (``OPTIMIZE ... ZORDER BY``),
``iceberg`` (``rewrite_data_files``, strategy ``sort``, ``zorder(...)``), ``hudi zorder`` / ``hudi hilbert``
(``run_clustering``). Writes the spec's ``out`` JSON.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import sys
import time
from pathlib import Path
from typing import Any

import bench_cluster as bc  # noqa: E402
from bench_env import REPO  # noqa: E402,F401  (sets PYSPARK_PYTHON, sys.path, PYTHONPATH)
from engines_env import OURS_ICEBERG_CATALOG, ours_iceberg_properties, session_conf  # noqa: E402

from spark_jobs.hudi_clustering import WRITER_RATIO  # noqa: E402

log = bc.log
HUGE = str(1 << 50)


def data_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*.parquet") if ".hoodie" not in p.parts)


def local(path: str) -> str:
    """A ``file:`` URI as a local path."""
    return "/" + path[len("file:") :].lstrip("/") if path.startswith("file:") else path


# --------------------------------------------------------------------------- inputs (untimed)


def iceberg_input(spark, src: Path, work: Path, name: str) -> dict[str, Any]:
    """An Iceberg table ``ice.bench.<name>`` holding the Parquet input's own files (``add_files``); its snapshot."""
    files = work / f"{name}_iceberg_files"
    bc.copy_input(src, files)
    spark.sql(f"DROP TABLE IF EXISTS ice.bench.{name}")
    spark.sql(f"CREATE TABLE ice.bench.{name} USING iceberg AS SELECT * FROM parquet.`{files}` LIMIT 0")
    spark.sql(f"CALL ice.system.add_files(table => 'bench.{name}', source_table => '`parquet`.`{files}`')")
    snap = spark.sql(f"SELECT snapshot_id FROM ice.bench.{name}.snapshots ORDER BY committed_at DESC LIMIT 1")
    return {"table": f"bench.{name}", "snapshot": snap.collect()[0][0], "files": len(list(files.glob("*.parquet")))}


def ours_iceberg_input(src: Path, dst: Path, catalog: Any, identifier: str) -> dict[str, Any]:
    """A fresh copy of the Parquet input in ``dst``, registered as ``identifier`` (located at ``dst``) of the pyiceberg
    catalog our job commits to, by ``add_files`` (the same files, no rewrite)."""
    import pyarrow.parquet as pq

    bc.copy_input(src, dst)
    from pyiceberg.exceptions import NoSuchTableError

    try:  # the catalog's entry only: the last run's metadata went with its folder
        catalog.drop_table(identifier)
    except NoSuchTableError:
        pass
    files = sorted(str(p) for p in dst.glob("*.parquet"))
    table = catalog.create_table(identifier, schema=pq.read_schema(files[0]), location=str(dst))
    table.add_files(files)
    return {"table": identifier, "files": len(files)}


def hudi_options(name: str, key: list[str]) -> dict[str, str]:
    """A copy-on-write, non-partitioned Hudi table keyed by ``key``, with the metadata table's column stats (the
    index Hudi's data skipping reads)."""
    return {
        "hoodie.table.name": name,
        "hoodie.datasource.write.recordkey.field": ",".join(key),
        "hoodie.datasource.write.partitionpath.field": "",
        "hoodie.datasource.write.keygenerator.class": "org.apache.hudi.keygen.NonpartitionedKeyGenerator",
        "hoodie.datasource.write.table.type": "COPY_ON_WRITE",
        "hoodie.metadata.enable": "true",
        "hoodie.metadata.index.column.stats.enable": "true",
    }


def hudi_stats_columns(columns: list[str]) -> str:
    """The column stats index limited to the clustering columns (the ones the queries filter on)."""
    return ",".join(columns)


def hudi_input(
    spark, src: Path, dst: Path, name: str, key: list[str], columns: list[str], n_files: int
) -> dict[str, Any]:
    """``bulk_insert`` of the Parquet input, one Spark partition (so one base file) per input file, order kept."""
    bc.fresh_dir(dst)
    one = max(p.stat().st_size for p in src.glob("*.parquet"))
    spark.conf.set("spark.sql.files.maxPartitionBytes", str(one))
    spark.conf.set("spark.sql.files.openCostInBytes", str(one))
    try:
        df = spark.read.parquet(str(src))
        opts = {
            **hudi_options(name, key),
            "hoodie.metadata.index.column.stats.column.list": hudi_stats_columns(columns),
            "hoodie.datasource.write.operation": "bulk_insert",
            "hoodie.bulkinsert.sort.mode": "NONE",
            "hoodie.bulkinsert.shuffle.parallelism": str(n_files),
            "hoodie.parquet.max.file.size": HUGE,
            "hoodie.combine.before.insert": "false",
        }
        df.write.format("hudi").options(**opts).mode("overwrite").save(str(dst))
    finally:
        spark.conf.unset("spark.sql.files.maxPartitionBytes")
        spark.conf.unset("spark.sql.files.openCostInBytes")
    return {"table": str(dst), "files": len(spark.read.format("hudi").load(str(dst)).inputFiles())}


def scrambled_input(spark, src: Path, dst: Path, n: int) -> dict[str, Any]:
    """The same rows in random order (a seeded shuffle), ``n`` files: the sort rewrite's input when it must sort."""
    from pyspark.sql import functions as F

    bc.fresh_dir(dst)
    spark.read.parquet(str(src)).repartition(n, F.rand(7)).sortWithinPartitions(F.rand(11)).write.parquet(str(dst))
    return {"dir": str(dst), "files": len(list(dst.glob("*.parquet")))}


# --------------------------------------------------------------------------- bytes spilled, from the event log


class SpillMeter:
    """Bytes the tasks spilled (memory and disk) and their peak execution memory, read from the session's event log
    (``spark.eventLog.dir``), which Spark flushes at every job's end: :meth:`take` sums the tasks ended since the
    last call. In local mode the executor is the driver's JVM: its peak RSS is the phase's ``peak_jvm_rss_mb``."""

    CONF = {
        "spark.eventLog.enabled": "true",
        "spark.eventLog.compress": "false",
        "spark.eventLog.rolling.enabled": "false",
    }
    KEYS = ("spill_memory_bytes", "spill_disk_bytes", "peak_task_execution_memory_bytes")

    def __init__(self, folder: Path) -> None:
        self.folder, self.offset = folder, 0

    def take(self) -> dict[str, int]:
        out = dict.fromkeys(self.KEYS, 0)
        logs = sorted(self.folder.glob("*"), key=lambda p: p.stat().st_mtime)
        if not logs:
            return out
        with logs[-1].open("rb") as fh:
            fh.seek(self.offset)
            data = fh.read()
        whole = data[: data.rfind(b"\n") + 1]  # a line still being written waits for the next call
        self.offset += len(whole)
        for line in whole.splitlines():
            if b'"SparkListenerTaskEnd"' not in line:
                continue
            m = json.loads(line).get("Task Metrics") or {}
            out["spill_memory_bytes"] += int(m.get("Memory Bytes Spilled", 0))
            out["spill_disk_bytes"] += int(m.get("Disk Bytes Spilled", 0))
            peak = int(m.get("Peak Execution Memory", 0))
            out["peak_task_execution_memory_bytes"] = max(out["peak_task_execution_memory_bytes"], peak)
        return out


# --------------------------------------------------------------------------- files planned per query


def _scan_files(node) -> int | None:
    """Files the scan nodes under ``node`` planned: a file scan's ``numFiles``, Iceberg's ``resultDataFiles``."""
    found = None
    metrics = node.metrics()
    for key in ("numFiles", "resultDataFiles"):
        if metrics.contains(key):
            found = (found or 0) + int(metrics.apply(key).value())
    children = node.children()
    for i in range(children.size()):
        sub = _scan_files(children.apply(i))
        if sub is not None:
            found = (found or 0) + sub
    return found


def planned_files(spark, reader, queries: list[dict[str, str]]) -> list[int]:
    """For each query, the files the engine planned for ``reader().filter(sql)`` (a count): the physical plan's RDD
    is built (``execute()``: the scan lists its files and sets its file metrics) but no job runs."""
    from pyspark.sql import functions as F

    quick = {"spark.sql.adaptive.enabled": "false", "spark.sql.codegen.wholeStage": "false"}  # a plain plan tree
    for key, value in quick.items():
        spark.conf.set(key, value)
    try:
        table = reader()  # listed (or its log read) once
        out = []
        for q in queries:
            plan = table.filter(q["sql"]).agg(F.count(F.lit(1)))._jdf.queryExecution().executedPlan()
            plan.execute()
            n = _scan_files(plan)
            out.append(-1 if n is None else n)
        return out
    finally:
        for key in quick:
            spark.conf.unset(key)


# --------------------------------------------------------------------------- the jobs


class Jobs:
    """The jobs of one data set on this line: ``run(name, dst)`` rewrites, ``layout(name, dst)`` reads back."""

    def __init__(self, spark, spec: dict, ds: dict, work: Path) -> None:
        self.spark, self.spec, self.ds, self.work = spark, spec, ds, work
        self.n = spec["files"]
        self.src = Path(ds["src"])
        self.cols = ds["columns"]
        self.target = data_bytes(self.src) // self.n
        self.targets: dict[str, int] = {}  # job -> its file size setting, once calibrated (:meth:`calibrate`)
        self.inputs: dict[str, Any] = {}
        self._ice_catalog: Any = None

    def ours_iceberg(self) -> tuple[Any, str, str]:
        """(the pyiceberg catalog our job commits to, its properties file, our table's identifier there)."""
        from airflow_zorder.core.iceberg.catalogs import load_catalog, write_catalog_file

        props = ours_iceberg_properties(str(self.work / "iceberg_warehouse"))
        file = str(self.work / f"{OURS_ICEBERG_CATALOG}.yaml")
        if self._ice_catalog is None:
            write_catalog_file(file, OURS_ICEBERG_CATALOG, props)
            self._ice_catalog = load_catalog(OURS_ICEBERG_CATALOG, props)
            self._ice_catalog.create_namespace_if_not_exists("bench")
        return self._ice_catalog, file, f"bench.{self.ds['name']}"

    def prepare(self, names: list[str]) -> None:
        name = self.ds["name"]
        if any(j.startswith("hudi") or j.endswith(" hudi") for j in names):
            self.inputs["hudi"] = hudi_input(
                self.spark, self.src, self.work / f"{name}_hudi_input", name, self.ds["record_key"], self.cols, self.n
            )
        if "iceberg" in names:
            self.inputs["iceberg"] = iceberg_input(self.spark, self.src, self.work, name)
        if "sort scrambled" in names:
            self.inputs["scrambled"] = scrambled_input(self.spark, self.src, self.work / f"{name}_scrambled", self.n)
        if "delta" in names or any(j.endswith(" delta") for j in names):
            self.inputs["delta"] = {"table": self.ds["delta_input"]}
        log(f"{name}: inputs {json.dumps(self.inputs, default=str)}")

    def copy(self, job: str) -> Path:
        """The job's starting point (untimed): a fresh copy of its input, or Iceberg's snapshot rolled back to."""
        dst = self.work / f"{self.ds['name']}_{job.replace(' ', '_')}"
        if job.startswith("ours") and job.endswith(" iceberg"):
            catalog, _, ident = self.ours_iceberg()
            self.inputs["ours iceberg"] = ours_iceberg_input(self.src, dst, catalog, ident)
        elif job.startswith("ours") and job.endswith(" hudi"):
            bc.copy_table(Path(self.inputs["hudi"]["table"]), dst)
        elif job.startswith("ours") and not job.endswith(" delta"):
            bc.copy_input(self.src, dst)
        elif job == "delta" or job.endswith(" delta"):
            bc.copy_table(Path(self.inputs["delta"]["table"]), dst)
        elif job.startswith("hudi"):
            bc.copy_table(Path(self.inputs["hudi"]["table"]), dst)
        elif job == "iceberg":
            ice = self.inputs["iceberg"]
            cur = self.spark.sql(f"SELECT snapshot_id FROM ice.{ice['table']}.snapshots ORDER BY committed_at DESC")
            if cur.collect()[0][0] != ice["snapshot"]:
                self.spark.sql(f"CALL ice.system.rollback_to_snapshot('{ice['table']}', {ice['snapshot']})")
        return dst

    def run(self, job: str, dst: Path) -> dict[str, Any]:
        spark, cols, n = self.spark, self.cols, self.n
        target = self.targets.get(job, self.target)
        if job == "sort":
            bc.run_baseline(spark, self.src, dst, n, self.ds["key"])
            return {}
        if job == "sort scrambled":
            bc.run_baseline(spark, Path(self.inputs["scrambled"]["dir"]), dst, n, self.ds["key"])
            return {}
        if job.startswith("ours"):
            from airflow_zorder.core.jobs.options import ClusterOptions
            from spark_jobs.cluster_table import run_action

            curve = job.split()[1]
            opts = ClusterOptions(table=str(dst), columns=list(cols), curve=curve, num_files=n)
            if job.endswith(" iceberg"):  # the same options, the table named in our pyiceberg catalog
                _, file, ident = self.ours_iceberg()
                opts = dataclasses.replace(
                    opts, table=ident, iceberg_catalog=OURS_ICEBERG_CATALOG, iceberg_catalog_file=file
                )
            if job.endswith(" hudi"):  # Hudi's own column stats index kept on the clustering columns, as the anchors'
                spark.conf.set("hoodie.metadata.index.column.stats.column.list", hudi_stats_columns(cols))
            try:
                r = run_action(spark, opts)
            finally:
                spark.conf.unset("hoodie.metadata.index.column.stats.column.list")
            if r.get("status") != "clustered":
                raise RuntimeError(f"run_cluster {job}: {r.get('status')} {r.get('messages')}")
            return {"phases": r.get("phases", {}), "duration_s": r.get("duration_s")}
        if job == "delta":
            spark.conf.set("spark.databricks.delta.optimize.maxFileSize", str(target))
            m = spark.sql(f"OPTIMIZE delta.`{dst}` ZORDER BY ({', '.join(cols)})").collect()[0]
            return {"metrics": str(m["metrics"])[:400]}
        if job == "iceberg":
            opts = f"map('target-file-size-bytes', '{target}', 'rewrite-all', 'true')"
            r = spark.sql(
                f"CALL ice.system.rewrite_data_files(table => '{self.inputs['iceberg']['table']}', strategy => 'sort', "
                f"sort_order => 'zorder({', '.join(cols)})', options => {opts})"
            ).collect()[0]
            return {"result": r.asDict()}
        if job.startswith("hudi"):
            order = {"hudi zorder": "z-order", "hudi hilbert": "hilbert"}[job]
            opts = ",".join(
                [
                    f"hoodie.clustering.plan.strategy.target.file.max.bytes={target}",
                    f"hoodie.clustering.plan.strategy.small.file.limit={HUGE}",
                    f"hoodie.clustering.plan.strategy.max.bytes.per.group={HUGE}",
                    "hoodie.clustering.plan.strategy.max.num.groups=1000000",
                    "hoodie.metadata.index.column.stats.enable=true",
                    # Hudi's knob for a writer cutting files smaller than planned (it rolled each planned file into
                    # ~6 at its default): the same value our Hudi path sets, so both are cut by the plan's groups
                    f"hoodie.parquet.compression.ratio={WRITER_RATIO}",
                ]
            )
            # a list with commas cannot go through the procedure's options: the session's hoodie.* settings reach it
            spark.conf.set("hoodie.metadata.index.column.stats.column.list", hudi_stats_columns(cols))
            try:
                r = spark.sql(
                    f"CALL run_clustering(path => '{dst}', order => '{','.join(cols)}', order_strategy => '{order}', "
                    f"op => 'scheduleAndExecute', options => '{opts}')"
                ).collect()
            finally:
                spark.conf.unset("hoodie.metadata.index.column.stats.column.list")
            return {"result": [str(x) for x in r][:3]}
        raise ValueError(f"unknown job {job!r}")

    def reader(self, job: str, dst: Path):
        spark = self.spark
        if job == "iceberg":
            return lambda: spark.table(f"ice.{self.inputs['iceberg']['table']}")
        if job == "delta" or job.endswith(" delta"):
            return lambda: spark.read.format("delta").load(str(dst))
        if job.endswith(" iceberg"):
            table = f"{OURS_ICEBERG_CATALOG}.{self.ours_iceberg()[2]}"

            def read():
                spark.sql(f"REFRESH TABLE {table}")  # our commit went through pyiceberg, not this session
                return spark.table(table)

            return read
        if job.startswith("hudi") or job.endswith(" hudi"):
            opts = {"hoodie.metadata.enable": "true", "hoodie.enable.data.skipping": "true"}
            return lambda: spark.read.format("hudi").options(**opts).load(str(dst))
        return lambda: spark.read.parquet(str(dst))

    def calibrate(self, job: str, dst: Path, files: int) -> tuple[Path, int]:
        """An anchor that made other than ``n`` files (off by more than n/32) runs again, untimed, with its size
        setting scaled by files made / ``n`` (once): its layout is compared, and it is timed, at about the
        same file count as ours (as ``bench_cluster.run_delta`` re-cuts delta-rs's). Returns the output and its
        file count."""
        for _ in range(1):
            if job not in ("delta", "iceberg", "hudi zorder", "hudi hilbert") or abs(files - self.n) <= self.n // 32:
                break
            self.targets[job] = int(self.targets.get(job, self.target) * files / self.n)
            log(f"{self.ds['name']}: {job} made {files} files, not {self.n}: again with {self.targets[job]:,} bytes")
            if job != "iceberg":
                shutil.rmtree(dst, ignore_errors=True)
            dst = self.copy(job)
            self.run(job, dst)
            files = len(self.data_files(job, dst))
        return dst, files

    @staticmethod
    def has_file_stats(job: str) -> bool:
        """Whether the job's output is a table format whose planning in Spark skips files by their statistics."""
        return job in ("delta", "iceberg") or job.startswith("hudi") or job.endswith((" delta", " iceberg", " hudi"))

    def data_files(self, job: str, dst: Path) -> list[str]:
        """The output's live data files, as its own format lists them."""
        if job == "iceberg" or job.endswith(" iceberg"):
            table = (
                f"ice.{self.inputs['iceberg']['table']}"
                if job == "iceberg"
                else f"{OURS_ICEBERG_CATALOG}.{self.ours_iceberg()[2]}"
            )
            self.spark.sql(f"REFRESH TABLE {table}")
            return sorted(local(r[0]) for r in self.spark.sql(f"SELECT file_path FROM {table}.files").collect())
        return sorted(local(f) for f in self.reader(job, dst)().inputFiles())


def run(spec: dict) -> dict[str, Any]:
    work = Path(spec["work"])
    work.mkdir(parents=True, exist_ok=True)
    mon = bc.MemoryMonitor().start()
    conf = session_conf(spec["line"], spec["engines"], str(work / "iceberg_warehouse"))
    meter = None
    if spec.get("spill"):
        events = bc.fresh_dir(work / "eventlog")
        events.mkdir(parents=True)
        conf = {**conf, **SpillMeter.CONF, "spark.eventLog.dir": events.as_uri()}
        meter = SpillMeter(events)
    spark = bc.build_spark(64, conf)
    res: dict[str, Any] = {
        "line": spec["line"],
        "spark_version": spark.version,
        "conf": {k: v for k, v in conf.items() if k != "spark.jars"},
        "jars": [Path(j).name for j in conf.get("spark.jars", "").split(",") if j],
        "datasets": {},
        "rounds": {ds["name"]: ds.get("rounds", spec["rounds"]) for ds in spec["datasets"]},
        "started_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "load_start": [round(x, 2) for x in os.getloadavg()],
    }
    spark.sparkContext.setLogLevel("ERROR")
    try:
        for ds in spec["datasets"]:
            jobs_names = [j for j in spec["jobs"] if not (j == "sort scrambled" and not ds.get("scramble"))]
            res["datasets"][ds["name"]] = run_dataset(spark, mon, spec, ds, jobs_names, work, meter)
            Path(spec["out"] + ".partial").write_text(json.dumps(res, indent=1, default=str) + "\n")  # if stopped
    finally:
        spark.stop()
        mon.stop()
    res["load_end"] = [round(x, 2) for x in os.getloadavg()]
    return res


def run_dataset(
    spark, mon, spec: dict, ds: dict, names: list[str], work: Path, meter: SpillMeter | None = None
) -> dict[str, Any]:
    jobs = Jobs(spark, spec, ds, work)
    t0 = time.perf_counter()
    jobs.prepare(names)
    out: dict[str, Any] = {"inputs": jobs.inputs, "target_file_bytes": jobs.target, "jobs": {}, "layouts": {}}
    out["prepare_s"] = round(time.perf_counter() - t0, 1)
    for job in ["sort", *names]:  # the layout round: untimed, every job once (the JVM's warm-up too)
        dst = jobs.copy(job)
        t = time.perf_counter()
        extra = jobs.run(job, dst)
        first = round(time.perf_counter() - t, 2)
        made = len(jobs.data_files(job, dst))
        dst, _ = jobs.calibrate(job, dst, made)
        files = jobs.data_files(job, dst)
        # Spark plans every file of a Parquet directory: its files read are the evaluator's (bench_engines.py)
        counts = planned_files(spark, jobs.reader(job, dst), ds["queries"]) if jobs.has_file_stats(job) else None
        out["layouts"][job] = {
            "first_run_s": first,
            "first_run_files": made,
            "target_file_bytes": jobs.targets.get(job, jobs.target),
            "files": files,
            "planned": counts,
            "run": extra,
        }
        log(f"{ds['name']}: {job}: first run {first:.1f} s, {len(files)} files, planned {counts and sum(counts)}")
        if job != "iceberg":  # kept for bench_engines.py's DuckDB cross-check (Iceberg's files stay in its warehouse)
            keep = bc.fresh_dir(work / "layouts" / dst.name)
            keep.parent.mkdir(parents=True, exist_ok=True)
            shutil.move(str(dst), str(keep))
            files = [str(keep) + f[len(str(dst)) :] if f.startswith(str(dst)) else f for f in files]
            out["layouts"][job]["files"] = files
    refs: list[dict[str, Any]] = []
    sort_out = work / f"{ds['name']}_sort_ref"

    def reference() -> dict[str, Any]:
        d: dict[str, Any] = {}
        meter and meter.take()
        with bc.phase(mon, f"{ds['name']}: sort #{len(refs)}", d):
            jobs.run("sort", sort_out)
        d.update(meter.take() if meter else {})
        refs.append(d)
        return d

    timed = [j for j in names if j not in spec.get("layout_only", [])] if ds.get("rounds", spec["rounds"]) else []
    runs: dict[str, list[dict[str, Any]]] = {j: [] for j in timed}
    before = reference()
    for rnd in range(ds.get("rounds", spec["rounds"])):
        for job in timed:
            dst = jobs.copy(job)
            d: dict[str, Any] = {"round": rnd}
            meter and meter.take()
            with bc.phase(mon, f"{ds['name']}: {job} (round {rnd + 1})", d):
                jobs.run(job, dst)
            d.update(meter.take() if meter else {})
            if job != "iceberg":
                shutil.rmtree(dst, ignore_errors=True)
            after = reference()
            bc.ratio_to_references(d, before, after)
            runs[job].append(d)
            before = after
    shutil.rmtree(sort_out, ignore_errors=True)
    out["sort_runs"] = refs
    for job, rs in runs.items():
        med = bc.median_run(rs)
        out["jobs"][job] = {
            "wall_ratio": med["wall_ratio"],
            "cpu_ratio": med["cpu_ratio"],
            "wall_s": sorted(r["wall_s"] for r in rs)[(len(rs) - 1) // 2],
            "cpu_s": sorted(r["cpu_s"] for r in rs)[(len(rs) - 1) // 2],
            "wall_ratio_range": [min(r["wall_ratio"] for r in rs), max(r["wall_ratio"] for r in rs)],
            "cpu_ratio_range": [min(r["cpu_ratio"] for r in rs), max(r["cpu_ratio"] for r in rs)],
            "peak_jvm_rss_mb": max(r["peak_jvm_rss_mb"] for r in rs),
            "peak_workers_pss_mb": max(r["peak_workers_pss_mb"] for r in rs),
            **({k: max(r[k] for r in rs) for k in SpillMeter.KEYS} if meter else {}),
            "rounds": med["rounds"],
        }
    return out


def main(argv: list[str]) -> int:
    spec = json.loads(Path(argv[0]).read_text())
    res = run(spec)
    Path(spec["out"]).write_text(json.dumps(res, indent=1, default=str) + "\n")
    log(f"line {spec['line']}: figures in {spec['out']}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
