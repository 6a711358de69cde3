"""The jobs on S3 (a moto server) and on local disk: one table, a stats run and a full re-cluster on each store.

    .venv/bin/python benchmarks/bench_s3.py [--sf 0.05] [--files 16] [--rounds 3] [--work .bench/s3]
        [--json-out FILE] [--merge-into docs/benchmarks/results.json] [--doc docs/benchmarks.md]

``make bench-s3`` runs it with ``--merge-into docs/benchmarks/results.json --doc docs/benchmarks.md``; ``make bench``
runs it as a step of ``run_all.py`` (its figures under the key ``"s3"``).

One table: TPC-H lineitem at ``--sf`` in ``--files`` files (``tpch_data.generate_lineitem``, generated into
``--work`` once). One moto server (``tests/moto_s3.start_moto``: a real HTTP S3 endpoint on loopback, signatures
checked), started and stopped here, and one SparkSession (``local[2]``, the ``s3a`` connector jars of
``airflow_zorder.spark_jars``: ``make jars``) with the server's S3A settings.

Untimed warm-up: both jobs once on a local copy of the whole table (JIT, Python workers) and once on 4 of its
files in the bucket (S3A's classes, the SDK's client and connection pool). Then ``--rounds`` rounds; in each,
for each store (local disk and ``s3a://lake/``; which goes first alternates between rounds), on a fresh copy
of the table's files (copied or uploaded, untimed): a stats run (``run_collect``: no previous stats, so every
footer is read), then a full re-cluster (``run_cluster``, zorder on ``l_partkey, l_suppkey, l_shipdate``) into
``--files`` files. After each run the table's rows are counted (Spark) and must equal the input's.

Per run it keeps the wall time, the job's own phases (``result["phases"]``, ``duration_s``) and, on S3, the
requests moto served during the run (its request log, one line per request: by kind and by area of the table,
e.g. Spark's ``_temporary`` task commit, our staging, the stats store). Reported: each job's median, lowest and
highest wall time per store, the median of the rounds' S3/local ratios, the median phases and request counts.

Writes ``--json-out`` (default ``<work>/s3_results.json``); ``--merge-into`` stores the figures under ``"s3"`` of
that JSON and ``--doc`` rewrites only the section of that markdown (``bench_report.render_s3``).
Exit code 1 if a job failed or a row count differs; 3 if the connector jars are not fetched (``make jars``).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import sys
import time
from collections import Counter
from importlib.metadata import version as pkg_version
from pathlib import Path
from typing import Any

from bench_doc import merge_into  # noqa: E402
from bench_env import REPO  # noqa: E402  (sets PYSPARK_PYTHON, sys.path, PYTHONPATH)

if str(REPO / "tests") not in sys.path:
    sys.path.insert(0, str(REPO / "tests"))  # moto_s3: the tests' moto server

COLUMNS = ["l_partkey", "l_suppkey", "l_shipdate"]
STORES = ("local", "s3")
JOBS = ("stats", "cluster")
PREFIX = "bench"  # the copies go to s3a://lake/bench/<name>/

# One request line of moto's (werkzeug's) log: `... "GET /lake?list-type=2&prefix=x/ HTTP/1.1" 200 -`; lines
# of 3xx/4xx/5xx answers are wrapped in ANSI colour codes.
_ANSI = r"(?:\x1b\[[0-9;]*m)*"
REQUEST_LINE = re.compile(_ANSI.join(['"', r"([A-Z]+) (\S+) HTTP/[0-9.]+", r'" (\d{3})']))


def log(msg: str) -> None:
    print(f"[bench_s3 {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


# --------------------------------------------------------------------------- moto's request log


def request_kind(method: str, target: str) -> str:
    """What an S3 request does, from its method and target (path and query)."""
    query = target.partition("?")[2]
    if method == "GET":
        return "LIST" if "list-type=" in query or "prefix=" in query else "GET"
    if method == "POST":
        return "DELETE" if query.split("&")[0] in ("delete", "delete=") else "POST"
    return method  # HEAD, PUT (a write or a copy: a rename is a copy and a delete), DELETE


def request_area(target: str, prefix: str) -> str:
    """Which part of the table a request touches: its key (or a listing's prefix) below ``prefix``."""
    path, _, query = target.partition("?")
    key = path.lstrip("/").partition("/")[2]
    for part in query.split("&"):
        if part.startswith("prefix="):
            key = part[len("prefix=") :]
    if not key.startswith(prefix):
        return "other"
    if "/_temporary/" in key or key.endswith("/_temporary"):
        return "spark task commit (_temporary)"
    for area in ("staging", "trash", "journal", "lock", "stats"):
        if f"_zorder/{area}" in key:
            return {"stats": "stats store"}.get(area, area)
    return "_zorder (other)" if "_zorder" in key else "table files"


def count_requests(lines: list[str], prefix: str) -> dict[str, Any]:
    """Requests in moto's log lines: total, by kind, by area of the table under ``prefix``, 404s."""
    kinds: Counter[str] = Counter()
    areas: Counter[str] = Counter()
    not_found = 0
    for line in lines:
        m = REQUEST_LINE.search(line)
        if not m:
            continue
        method, target, status = m.group(1), m.group(2), int(m.group(3))
        kinds[request_kind(method, target)] += 1
        areas[request_area(target, prefix)] += 1
        not_found += status == 404
    return {"total": sum(kinds.values()), "kinds": dict(kinds), "areas": dict(areas), "not_found": not_found}


class RequestLog:
    """The lines moto appended to its log since :meth:`mark`."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.offset = 0

    def mark(self) -> None:
        self.offset = self.path.stat().st_size

    def since_mark(self) -> list[str]:
        time.sleep(0.3)  # the server logs a request after its answer: let the last lines land
        with open(self.path, "rb") as f:
            f.seek(self.offset)
            return f.read().decode("utf-8", "replace").splitlines()


# --------------------------------------------------------------------------- the jobs' phases


def breakdown(job: str, result: dict[str, Any]) -> dict[str, float]:
    """The job's ``duration_s`` cut into its phases (the job's own timings), in order; they sum to it.

    The stats job's phases are disjoint; the rest of its duration is the session's work between them
    (the file list's and the stats rows' DataFrames). The re-cluster's ``count_s``, ``sample_and_plan_s``,
    ``write_s`` and ``verify_s`` lie inside ``stage_and_verify_s``; the rest of its duration is the table's
    listing, the lock, the journal and the run's event.
    """
    ph = result.get("phases", {})
    total = float(result.get("duration_s") or 0.0)
    if job == "stats":
        parts = {
            k[: -len("_s")]: ph.get(k, 0.0) for k in ("list_s", "read_previous_s", "footer_s", "scan_s", "write_s")
        }
    else:
        inner = {k[: -len("_s")]: ph.get(k, 0.0) for k in ("count_s", "sample_and_plan_s", "write_s", "verify_s")}
        staged = ph.get("stage_and_verify_s", 0.0)
        parts = dict(inner)
        parts["stage (other)"] = max(staged - sum(inner.values()), 0.0)
        parts["plan"] = ph.get("plan_s", 0.0)
        parts["commit"] = ph.get("commit_s", 0.0)
        parts["cleanup"] = ph.get("cleanup_s", 0.0)
    parts["other"] = max(total - sum(parts.values()), 0.0)
    return {k: round(v, 3) for k, v in parts.items()}  # every phase, so both stores list them in one order


def summarize(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """One job on one store over its rounds: wall median, lowest, highest; median phases and requests."""
    walls = [r["wall_s"] for r in runs]
    out: dict[str, Any] = {
        "wall_s": walls,
        "median_s": round(statistics.median(walls), 3),
        "min_s": round(min(walls), 3),
        "max_s": round(max(walls), 3),
        "rows_ok": all(r["rows_ok"] for r in runs),
    }
    keys = list(dict.fromkeys(k for r in runs for k in r["breakdown"]))
    out["breakdown"] = {k: round(statistics.median(r["breakdown"].get(k, 0.0) for r in runs), 3) for k in keys}
    if all("requests" in r for r in runs):
        reqs = [r["requests"] for r in runs]
        med = lambda xs: int(statistics.median(xs))  # noqa: E731
        out["requests"] = {
            "total": med([q["total"] for q in reqs]),
            "not_found": med([q["not_found"] for q in reqs]),
            "kinds": {
                k: med([q["kinds"].get(k, 0) for q in reqs]) for k in sorted({k for q in reqs for k in q["kinds"]})
            },
            "areas": {
                k: med([q["areas"].get(k, 0) for q in reqs]) for k in sorted({k for q in reqs for k in q["areas"]})
            },
        }
    out["runs"] = runs
    return out


def compare(local: dict[str, Any], s3: dict[str, Any]) -> dict[str, Any]:
    """The S3/local ratio of each round's pair, their median and range."""
    ratios = [round(s / loc, 3) for s, loc in zip(s3["wall_s"], local["wall_s"])]
    return {"ratios": ratios, "ratio": round(statistics.median(ratios), 3), "range": [min(ratios), max(ratios)]}


# --------------------------------------------------------------------------- the run


class NotReady(RuntimeError):
    """What the benchmark needs is missing (the connector jars)."""


def build_spark(jars: list[str], shuffle_partitions: int):
    from pyspark.sql import SparkSession

    from airflow_zorder.core.jobs.jvm_options import JIT_OPTION

    return (
        SparkSession.builder.master("local[2]")
        .appName("airflow-zorder-bench-s3")
        .config("spark.jars", ",".join(jars))
        .config("spark.ui.enabled", "false")
        .config("spark.driver.memory", "4g")
        .config("spark.driver.extraJavaOptions", JIT_OPTION)  # as the operators pass it
        .config("spark.sql.shuffle.partitions", str(shuffle_partitions))
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.ui.showConsoleProgress", "false")
        .getOrCreate()
    )


def copy_files(src: Path, dst: Path, first: int | None = None) -> Path:
    shutil.rmtree(dst, ignore_errors=True)
    dst.mkdir(parents=True)
    for f in sorted(src.glob("*.parquet"))[:first]:
        shutil.copyfile(f, dst / f.name)
    return dst


def upload_files(s3, src: Path, prefix: str, first: int | None = None) -> str:
    """Upload the table's parquet files (the first ``first``) to ``s3a://lake/<prefix>/``; returns that URI."""
    c = s3.client()
    for f in sorted(src.glob("*.parquet"))[:first]:
        c.upload_file(str(f), "lake", f"{prefix}/{f.name}")
    return f"s3a://lake/{prefix}"


def drop_prefix(s3, prefix: str) -> None:
    """Delete every object under ``prefix`` in the bucket (moto keeps them in its memory)."""
    c = s3.client()
    for page in c.get_paginator("list_objects_v2").paginate(Bucket="lake", Prefix=prefix):
        keys = [{"Key": o["Key"]} for o in page.get("Contents", [])]
        if keys:
            c.delete_objects(Bucket="lake", Delete={"Objects": keys})


def run(a: argparse.Namespace) -> dict[str, Any]:
    from airflow_zorder.core.errors import JarsNotFetchedError
    from airflow_zorder.spark_jars import SPARK_LINES, apply_hadoop_conf, jars_for

    try:
        jars = jars_for(["s3a"])
    except JarsNotFetchedError as exc:
        raise NotReady(str(exc)) from exc
    import run_all
    from moto_s3 import start_moto
    from tpch_data import generate_lineitem

    from airflow_zorder.core.jobs.options import ClusterOptions, CollectOptions
    from spark_jobs.cluster_table import run_cluster
    from spark_jobs.stats_collection.run import run_collect

    t_start = time.perf_counter()
    work = Path(a.work).resolve()
    work.mkdir(parents=True, exist_ok=True)
    src = work / f"lineitem_sf{a.sf:g}_{a.files}"
    log(f"data: TPC-H lineitem SF{a.sf:g} in {a.files} files ({src})")
    info = generate_lineitem(a.sf, src, files=a.files)
    rows = int(info["rows"])
    res: dict[str, Any] = {
        "started_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "command": "python benchmarks/bench_s3.py " + " ".join(a.argv),
        "machine": run_all.machine(),
        "load_start": round(os.getloadavg()[0], 2),
        "table": {
            "title": f"TPC-H lineitem SF{a.sf:g}",
            "sf": a.sf,
            "rows": rows,
            "files": a.files,
            "bytes": int(info["bytes"]),
            "columns": COLUMNS,
            "curve": "zorder",
        },
        "rounds": a.rounds,
    }
    res["machine"]["versions"]["moto"] = pkg_version("moto")

    s3 = start_moto(work)
    reqlog = RequestLog(work / "moto.log")
    spark = None
    try:
        spark = build_spark(jars, a.files)
        spark.sparkContext.setLogLevel("WARN")
        apply_hadoop_conf(spark, s3.hadoop_conf())
        line = SPARK_LINES[".".join(spark.version.split(".")[:2])]
        res["spark_version"] = spark.version
        res["connector"] = {
            "hadoop": line.hadoop,
            "artifacts": [x.coordinate for x in line.stores["s3a"]],
            "endpoint": "moto server on 127.0.0.1 (path-style, http)",
        }

        def job(name: str, table: str) -> dict[str, Any]:
            if name == "stats":
                return run_collect(spark, CollectOptions(table=table))
            return run_cluster(spark, ClusterOptions(table=table, columns=COLUMNS, curve="zorder", num_files=a.files))

        def timed(name: str, store: str, table: str, rnd: int) -> dict[str, Any]:
            reqlog.mark()
            t0 = time.perf_counter()
            r = job(name, table)
            wall = time.perf_counter() - t0
            lines = reqlog.since_mark()
            ok = {"stats": ("ok",), "cluster": ("clustered",)}[name]
            if r.get("status") not in ok:
                raise RuntimeError(f"{name} on {table}: {r.get('status')}: {r.get('messages') or r.get('errors')}")
            counted = spark.read.parquet(table).count()
            seen = r.get("rows_total") if name == "stats" else r.get("after", {}).get("rows")
            d: dict[str, Any] = {
                "round": rnd,
                "wall_s": round(wall, 3),
                "duration_s": r.get("duration_s"),
                "phases": r.get("phases", {}),
                "breakdown": breakdown(name, r),
                "rows": counted,
                "rows_ok": counted == rows and seen == rows,
            }
            if name == "cluster":
                d["files_after"] = r.get("after", {}).get("files")
            if store == "s3":
                d["requests"] = count_requests(lines, f"{PREFIX}/")
            log(
                f"round {rnd + 1} {store:5s} {name:7s} {wall:6.2f} s, rows {counted:,} "
                + ("ok" if d["rows_ok"] else f"DIFFER (expected {rows:,}, job said {seen})")
                + (f", {d['requests']['total']} S3 requests" if "requests" in d else "")
            )
            return d

        # -- untimed warm-up: both jobs on a local copy of the whole table, then on 4 files in the bucket
        log("warm-up (untimed)")
        warm = copy_files(src, work / "warmup")
        warm_s3 = upload_files(s3, src, f"{PREFIX}/warmup", first=4)
        for table in (str(warm), warm_s3):
            for name in JOBS:
                t0 = time.perf_counter()
                job(name, table)
                log(f"warm-up {name} on {table}: {time.perf_counter() - t0:.1f} s")
        shutil.rmtree(warm, ignore_errors=True)
        drop_prefix(s3, f"{PREFIX}/warmup/")

        runs: dict[str, dict[str, list]] = {j: {s: [] for s in STORES} for j in JOBS}
        for rnd in range(a.rounds):
            for store in STORES if rnd % 2 == 0 else STORES[::-1]:
                if store == "local":
                    table = str(copy_files(src, work / f"local_r{rnd}"))
                else:
                    table = upload_files(s3, src, f"{PREFIX}/r{rnd}")
                for name in JOBS:
                    runs[name][store].append(timed(name, store, table, rnd))
                if store == "local" and not a.keep:
                    shutil.rmtree(table, ignore_errors=True)
                elif store == "s3" and not a.keep:
                    drop_prefix(s3, f"{PREFIX}/r{rnd}/")
        res["jobs"] = {}
        for name in JOBS:
            loc, rem = summarize(runs[name]["local"]), summarize(runs[name]["s3"])
            res["jobs"][name] = {"local": loc, "s3": rem, **compare(loc, rem)}
    finally:
        if spark is not None:
            spark.stop()
        s3.stop()
    res["rows_ok"] = all(res["jobs"][j][s]["rows_ok"] for j in JOBS for s in STORES)
    res["wall_s"] = round(time.perf_counter() - t_start, 1)
    res["load_end"] = round(os.getloadavg()[0], 2)
    res["finished_utc"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    return res


def print_summary(res: dict[str, Any]) -> None:
    for name in JOBS:
        j = res["jobs"][name]
        print(
            f"{name:8s} local {j['local']['median_s']:7.2f} s  S3 {j['s3']['median_s']:7.2f} s  "
            f"S3/local {j['ratio']:.2f}x ({j['range'][0]:.2f}-{j['range'][1]:.2f})  "
            f"S3 requests {j['s3'].get('requests', {}).get('total')}  rows {'ok' if j['local']['rows_ok'] and j['s3']['rows_ok'] else 'DIFFER'}"
        )
    print(f"{res['wall_s']:.0f} s in all")


def parse_args(argv: list[str]) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sf", type=float, default=0.05, help="TPC-H scale factor of lineitem (default 0.05)")
    ap.add_argument("--files", type=int, default=16, help="input files, and output files of the re-cluster")
    ap.add_argument("--rounds", type=int, default=3, help="rounds, each on fresh copies (default 3)")
    ap.add_argument("--work", default=str(REPO / ".bench" / "s3"), help="data, copies and moto's log")
    ap.add_argument("--json-out", default=None, help="the results JSON (default <work>/s3_results.json)")
    ap.add_argument("--merge-into", default=None, help="a results JSON to store the figures in (key 's3')")
    ap.add_argument("--doc", default=None, help="a markdown whose S3 section to (re)write (with --merge-into)")
    ap.add_argument("--keep", action="store_true", help="keep each round's copies (local and in the bucket)")
    a = ap.parse_args(argv)
    if a.rounds < 1:
        ap.error("--rounds must be at least 1")
    if a.doc and not a.merge_into:
        ap.error("--doc needs --merge-into (the section is rendered from that JSON)")
    a.argv = argv
    return a


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    a = parse_args(args)
    try:
        res = run(a)
    except NotReady as exc:
        log(f"not ready: {exc}")
        return 3
    out = Path(a.json_out) if a.json_out else Path(a.work).resolve() / "s3_results.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(res, indent=1, default=str) + "\n")
    print_summary(res)
    log(f"results: {out}")
    if a.merge_into:
        import bench_report

        target = Path(a.merge_into).resolve()
        merge_into(target, "s3", res)
        if a.doc:
            bench_report.render_s3(res, Path(a.doc).resolve())
        log(f"merged into {target}" + (f"; section of {a.doc} rewritten" if a.doc else ""))
    if not res["rows_ok"]:
        log("ROWS DIFFER")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
