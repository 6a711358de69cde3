"""The field's engines side by side (issue #51): Delta's OPTIMIZE ZORDER, Iceberg's rewrite_data_files, Hudi's
clustering, delta-rs, ours and a plain sort rewrite, on the same data, in one run.

    make bench-engines     # = .venv/bin/python benchmarks/bench_engines.py --merge-into docs/benchmarks/results.json
                           #       --doc docs/benchmarks.md --readme README.md
    .venv/bin/python benchmarks/bench_engines.py --sf 0.1 --skew-rows 400000 --work .bench/engines-dev   # a try-out

The data sets of ``run_all.py`` (TPC-H lineitem in ``--files`` files in l_orderkey order; the skewed table), each
also written once as a Delta table by delta-rs (``bench_cluster.write_delta_input``, one commit per input file,
then a checkpoint; untimed). One query set per data
set (``bench_queries.build_queries`` with ``--seed``): ``--n-point`` point queries per clustering column and
``--n-range`` 3-column ranges (20 % of each column's rows).

Each Spark line runs in its own process under its own virtualenv (``engines_env.LINES``; ``benchmarks/anchors.py``):
on Spark 4.2 ours (on Parquet and on the Delta table), Delta's OPTIMIZE ZORDER and the sort rewrite on scrambled rows;
on Spark 4.1 ours (on Parquet and on an Iceberg table of a pyiceberg SQL catalog, which Spark reads through Java's
JdbcCatalog on the same SQLite file), Iceberg's zorder rewrite and Delta's OPTIMIZE ZORDER; on Spark 3.5 ours on the
Hudi table (our plan run by Hudi's clustering: ``spark_jobs/hudi_clustering.py``) and Hudi's z-order and hilbert
clustering (our rewrite itself needs Spark >= 4.1). Every job is
timed against the sort rewrite run just before and after it in the same JVM (median of ``--rounds``, with the lowest
and highest). delta-rs ``optimize.z_order`` runs last in this process (no Spark: its time is put against the median
sort rewrite on Spark 4.2, for information).

Files read per query are the files each engine planned for the query in Spark (``anchors.planned_files``); a plain
Parquet directory (ours, the sort rewrite) has no file-level pruning in Spark, which opens every file (and skips row
groups inside), so its figure is the pruning evaluator's on the files' footers -- the files a table format with those
min/max statistics plans (ours on the Delta table shows Delta's own planning of the same layout). Every layout's
files are cross-checked with DuckDB (``bench_queries.evaluate_layout``): no file an engine skipped may hold a match.

``--merge-into`` stores the figures under ``"engines"`` of a results JSON; ``--doc`` rewrites only this benchmark's
section of the markdown; ``--readme`` its line in README. Exit 1 if a cross-check failed or a line's run failed.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import bench_cluster as bc  # noqa: E402
import bench_queries as bq  # noqa: E402
import pyarrow.parquet as pq
import skewed_data  # noqa: E402
from bench_doc import merge_into, splice_section  # noqa: E402
from bench_env import REPO  # noqa: E402  (sets PYSPARK_PYTHON, sys.path, PYTHONPATH)
from deltalake import DeltaTable
from engines_env import DELTA_VERSION, ENGINES, ICEBERG_VERSION, LINES  # noqa: E402
from tpch_data import generate_lineitem  # noqa: E402

from airflow_zorder.evaluation import layout_report  # noqa: E402

log = bc.log
KEY = "engines"
START, END = "<!-- bench:engines:start -->", "<!-- bench:engines:end -->"
README_START, README_END = "<!-- bench:engines-headline:start -->", "<!-- bench:engines-headline:end -->"
RANGE_FAMILY_WIDTH = 0.2


def line_jobs(ours: list[str]) -> dict[str, list[str]]:
    """The jobs each Spark line runs (besides the sort rewrite between them)."""
    mine = [f"ours {c}" for c in ours]
    return {
        "4.2": [*mine, *(f"{j} delta" for j in mine), "delta", "sort scrambled"],
        "4.1": [*mine, *(f"{j} iceberg" for j in mine), "iceberg", "delta"],
        "3.5": [*(f"{j} hudi" for j in mine), "hudi zorder", "hudi hilbert"],
    }


def datasets(a: argparse.Namespace, work: Path, delta: bool = True) -> list[dict[str, Any]]:
    """The data sets (generated or reused), each with its query set and (``delta``) its Delta input."""
    out = []
    specs = [
        (
            "lineitem",
            f"TPC-H lineitem SF{a.sf:g}",
            work / f"lineitem_sf{a.sf:g}_{a.files}",
            ["l_partkey", "l_suppkey", "l_shipdate"],
            "l_orderkey",
            ["l_orderkey", "l_linenumber"],
            lambda d: generate_lineitem(a.sf, d, files=a.files),
            True,
        ),
        (
            "skewed",
            f"skewed synthetic ({a.skew_rows:,} rows)",
            work / f"skewed_{a.skew_rows}_{a.skew_files}",
            list(skewed_data.COLUMNS),
            skewed_data.KEY,
            [skewed_data.KEY],
            lambda d: skewed_data.generate_skewed(d, a.skew_rows, a.skew_files),
            False,  # its rows are in random order already
        ),
    ]
    mon = bc.MemoryMonitor().start()
    for name, title, src, cols, key, record_key, make, scramble in specs:
        if name not in a.datasets:
            continue
        make(src)
        files = layout_report.data_files(str(src))
        delta_in = work / f"{name}_delta_input"
        if delta and not (delta_in / "_delta_log").is_dir():
            bc.write_delta_input(src, delta_in, mon)
        if delta and not (delta_in / "_delta_log" / "_last_checkpoint").exists():
            # as a table written by Delta Spark would have (one every 10 commits): no engine replays 64 JSON commits
            DeltaTable(str(delta_in)).create_checkpoint()
        queries = [
            q
            for q in bq.build_queries(
                files, cols, n_point=a.n_point, n_range=0, n_multi=a.n_range, widths=(), seed=a.seed
            )
            if (q.family.startswith("point:") and "&" not in q.family)
            or (q.family.startswith("range") and q.family.count("&") == 2)
        ]
        rows = sum(pq.ParquetFile(f).metadata.num_rows for f in files)
        out.append(
            {
                "name": name,
                "title": title,
                "src": str(src),
                "columns": cols,
                "key": key,
                "record_key": record_key,
                "scramble": scramble,
                "delta_input": str(delta_in),
                "rounds": a.rounds if name == "lineitem" or a.skew_rounds is None else a.skew_rounds,
                "input_files": len(files),
                "input_bytes": bc.dir_bytes(files),
                "rows": rows,
                "queries": [{"family": q.family, "sql": q.sql} for q in queries],
                "_queries": queries,
            }
        )
    mon.stop()
    return out


def start_line(
    line: str, jobs: list[str], dss: list[dict], a: argparse.Namespace, work: Path, spill: bool = False
) -> dict[str, Any]:
    """Start one line's jobs in a child process under its virtualenv (benchmarks/anchors.py); ``spill``: measure the
    bytes each rewrite spilled (``anchors.SpillMeter``, from the session's event log)."""
    spec_path, out = work / f"spec_{line}.json", work / f"line_{line}.json"
    engines = [e for e in ENGINES if line in ENGINES[e].artifacts and any(j.startswith(e) for j in jobs)]
    spec = {
        "line": line,
        "engines": engines,
        "jobs": jobs,
        "layout_only": [j.split(":", 1)[1] for j in a.layout_only if j.startswith(f"{line}:")],
        "rounds": a.rounds,
        "files": a.files,
        "spill": spill,
        "work": str(work / f"spark{line}"),
        "out": str(out),
        "datasets": [{k: v for k, v in d.items() if not k.startswith("_")} for d in dss],
    }
    spec_path.write_text(json.dumps(spec, indent=1) + "\n")
    shutil.rmtree(work / f"spark{line}", ignore_errors=True)
    py = LINES[line].python
    if not py.exists():
        return {"line": line, "error": f"{py} is missing: make engines-env"}
    out.unlink(missing_ok=True)
    log_file = (work / f"line_{line}.log").open("w")
    cmd = [str(py), str(REPO / "benchmarks" / "anchors.py"), str(spec_path)]
    proc = subprocess.Popen(cmd, cwd=REPO, stdout=log_file, stderr=subprocess.STDOUT)
    return {"line": line, "proc": proc, "out": out, "t": time.perf_counter(), "log": log_file, "work": work}


def finish_line(started: dict[str, Any]) -> dict[str, Any]:
    """Wait for a line's child process; its figures (or the error, with the tail of its log)."""
    if "error" in started:
        return {"error": started["error"]}
    code = started["proc"].wait()
    started["log"].close()
    out, line = started["out"], started["line"]
    if code != 0 or not out.exists():
        tail = Path(started["log"].name).read_text()[-2000:]
        return {"error": f"benchmarks/anchors.py on Spark {line} exited {code}: {tail}"}
    res = json.loads(out.read_text())
    res["wall_s"] = round(time.perf_counter() - started["t"], 1)
    return res  # its work folder keeps the layouts for the cross-check (.bench/, deleted by the next run)


def run_delta_rs(ds: dict, a: argparse.Namespace, work: Path) -> dict[str, Any]:
    """delta-rs ``optimize.z_order`` on copies of the Delta input, ``--rounds`` times; the last layout's files."""
    import deltalake

    mon = bc.MemoryMonitor().start()
    runs = []
    cols, n, src = ds["columns"], a.files, Path(ds["src"])
    dst = work / f"{ds['name']}_delta_rs"
    for _ in range(a.rounds):
        # re-cut (untimed) to about n files when its own sizing makes others, as run_all.py does
        r = bc.run_delta(src, dst, n, mon, {}, cols, start=Path(ds["delta_input"]), match_files=True)
        runs.append({"wall_s": r["z_order"]["wall_s"], "cpu_s": r["z_order"]["cpu_s"]})
    mon.stop()
    files = bc.delta_live_files(dst)
    return {"version": deltalake.__version__, "runs": runs, "files": files}


def cross_check(ds: dict, files: list[str], planned: list[int] | None) -> dict[str, Any]:
    """Per query family: the engine's planned files (mean), the pruning evaluator's on the same files and DuckDB's
    floor (files holding a match); ``violations``: queries whose planned count is under the files holding a match."""
    ev = bq.evaluate_layout(files, ds["columns"], ds["_queries"])
    fams: dict[str, dict[str, Any]] = {}
    for fam, d in ev["families"].items():
        fams[fam] = {"evaluator": d["files_read"], "with_match": d["files_with_match"]}
    under = []
    if planned is not None:
        per: dict[str, list[int]] = {}
        for q, n in zip(ds["queries"], planned):
            per.setdefault(q["family"], []).append(n)
        for fam, ns in per.items():
            fams[fam]["planned"] = round(statistics.mean(ns), 3)
        # a count under DuckDB's floor for one query would mean a skipped file held a match
        floors = _floors(ds, files)
        under = [q["sql"] for q, n, f in zip(ds["queries"], planned, floors) if n < f]
    return {"files": len(files), "families": fams, "evaluator_violations": len(ev["violations"]), "under_floor": under}


def _floors(ds: dict, files: list[str]) -> list[int]:
    import duckdb

    con = duckdb.connect()
    try:
        bq.load_rows(con, files, ds["columns"])
        return [len(bq.duckdb_file_matches(con, q.sql)) for q in ds["_queries"]]
    finally:
        con.close()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sf", type=float, default=1.0)
    ap.add_argument("--files", type=int, default=64, help="input files of lineitem, output files of every rewrite")
    ap.add_argument("--skew-rows", type=int, default=4_000_000)
    ap.add_argument("--skew-files", type=int, default=256)
    ap.add_argument("--datasets", default="lineitem,skewed")
    ap.add_argument("--lines", default="4.2,4.1,3.5", help="the Spark lines to run (default all)")
    ap.add_argument("--ours", default="hilbert", help="our curves (default hilbert)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument(
        "--skew-rounds",
        type=int,
        default=None,
        help="timed rounds on the skewed table (default --rounds; 0: the layout round's single runs only)",
    )
    ap.add_argument("--n-point", type=int, default=20, help="point queries per clustering column (default 20)")
    ap.add_argument("--n-range", type=int, default=10, help="3-column range queries (default 10)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--no-delta-rs", action="store_true")
    ap.add_argument("--rerun-delta-rs", action="store_true", help="with --merge-lines: run delta-rs again")
    ap.add_argument(
        "--merge-lines",
        action="append",
        default=[],
        help="run nothing: add the Spark lines of this results JSON (a run of other --lines, same data and queries) "
        "to --json-out's, re-check and publish (repeat)",
    )
    ap.add_argument("--skip", default="", help="jobs not run, as line:job, comma-separated (e.g. '4.1:delta')")
    ap.add_argument(
        "--layout-only", default="", help="jobs measured for files read but not timed, as line:job, comma-separated"
    )
    ap.add_argument(
        "--parallel",
        action="store_true",
        help="run the Spark lines at the same time (each job is still timed against the sort rewrite around it "
        "in its own JVM; the doc says so)",
    )
    ap.add_argument("--work", default=str(REPO / ".bench" / "engines"))
    ap.add_argument("--json-out", default=None, help="default <work>/engines_results.json")
    ap.add_argument("--merge-into", default=None, help="a results JSON to store the figures in (key 'engines')")
    ap.add_argument("--doc", default=None, help="a markdown whose engines section to (re)write (with --merge-into)")
    ap.add_argument("--readme", default=None, help="README whose engines line to (re)write (with --merge-into)")
    a = ap.parse_args(argv)
    a.datasets = a.datasets.split(",")
    a.skip = [x for x in a.skip.split(",") if x]
    a.layout_only = [x for x in a.layout_only.split(",") if x]
    work = Path(a.work).resolve()
    work.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    res: dict[str, Any] = {
        "sf": a.sf,
        "files": a.files,
        "rounds": a.rounds,
        "started_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "uptime_start": _uptime(),
        "git_head": bc.code_state(),
        "cpus": os.cpu_count(),
        "versions": {"delta": DELTA_VERSION, "iceberg": ICEBERG_VERSION, "hudi": ENGINES["hudi"].title.split()[-1]},
    }
    dss = datasets(a, work)
    res["datasets"] = {
        d["name"]: {k: d[k] for k in ("title", "columns", "input_files", "input_bytes", "rows")} for d in dss
    }
    res["queries"] = {d["name"]: d["queries"] for d in dss}
    jobs = line_jobs(a.ours.split(","))
    res["lines"] = {}
    out = Path(a.json_out) if a.json_out else work / "engines_results.json"

    def publish() -> None:
        """The figures so far: the JSON, and (with --merge-into) the doc's section and README's line."""
        res["checks"] = checks(res, dss)
        res["uptime_end"] = res.get("uptime_end_merged") or _uptime()
        res["wall_s"] = round(time.perf_counter() - t0, 1)
        out.write_text(json.dumps(res, indent=1, default=str) + "\n")
        log(f"figures in {out}")
        if a.merge_into:
            target = Path(a.merge_into).resolve()
            merge_into(target, KEY, res)
            if a.doc:
                render_doc(res, Path(a.doc))
            if a.readme:
                render_readme(Path(a.readme), target, Path(a.doc) if a.doc else REPO / "docs" / "benchmarks.md")

    if a.merge_lines:
        res = json.loads(out.read_text()) if out.exists() else {**res, "lines": {}, "parallel": a.parallel}
        for other in a.merge_lines:
            more = json.loads(Path(other).read_text())
            if "lines" not in more:  # anchors.py's own (partial) figures of one line
                more = {"lines": {more["line"]: more}, "started_utc": more["started_utc"]}
            res["lines"].update({k: v for k, v in more["lines"].items() if "error" not in v})
            for key in ("delta_rs", "delta_rs_run_utc"):  # delta-rs ran with the Spark 4.2 line's run
                if key in more and key not in res:
                    res[key] = more[key]
            if "uptime_start" in more:  # the machine's load over the runs merged: the first's start, the last's end
                runs = [*res.get("merged", []), {"started_utc": more["started_utc"]}]
                if more["started_utc"] <= min(m["started_utc"] for m in runs):
                    res["uptime_start"] = more["uptime_start"]
                if more["started_utc"] >= max(m["started_utc"] for m in runs):
                    res["uptime_end_merged"] = more.get("uptime_end", more["uptime_start"])
            if any(m["started_utc"] == more["started_utc"] for m in res.get("merged", [])):
                continue  # merged already
            res.setdefault("merged", []).append(
                {
                    "lines": sorted(more["lines"]),
                    "started_utc": more["started_utc"],
                    "partial": other.endswith(".partial"),
                    "load": [
                        more.get(k, "").split("load average:")[-1].strip() for k in ("uptime_start", "uptime_end")
                    ],
                    "datasets": sorted({d for v in more["lines"].values() for d in v.get("datasets", {})}),
                }
            )
        if ("delta_rs" not in res or a.rerun_delta_rs) and not a.no_delta_rs:
            res["delta_rs_run_utc"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
            res["delta_rs"] = {d["name"]: run_delta_rs(d, a, work) for d in dss}
        if "wall_s" in res:
            t0 -= res["wall_s"]
        else:  # made of the lines' own figures: the run began with the first of them
            import calendar

            res["started_utc"] = min(m["started_utc"] for m in res["merged"])
            began = calendar.timegm(time.strptime(res["started_utc"], "%Y-%m-%dT%H:%M:%SZ"))
            t0 = time.perf_counter() - (time.time() - began)
        publish()
        print("\n".join(summary_lines(res)))
        return 0
    lines = a.lines.split(",")
    res["parallel"] = a.parallel
    running = []
    for line in lines:  # delta-rs after Spark 4.2, whose sort rewrite it is put against
        line_jobs_ = [j for j in jobs[line] if f"{line}:{j}" not in a.skip]
        log(f"Spark {line}: {', '.join(line_jobs_)}")
        running.append(start_line(line, line_jobs_, dss, a, work))
        if a.parallel and line != lines[-1]:
            continue
        for started in running:
            ln = started["line"]
            res["lines"][ln] = finish_line(started)
            res[f"uptime_after_{ln}"] = _uptime()
            if ln == "4.2" and not a.no_delta_rs:
                res["delta_rs"] = {d["name"]: run_delta_rs(d, a, work) for d in dss}
            publish()
        running = []
    if "delta_rs" not in res and not a.no_delta_rs:
        res["delta_rs"] = {d["name"]: run_delta_rs(d, a, work) for d in dss}
        publish()
    print("\n".join(summary_lines(res)))
    failed = [ln for ln, r in res["lines"].items() if "error" in r]
    bad = [k for k, c in res["checks"].items() if c["under_floor"] or c["evaluator_violations"]]
    if failed or bad:
        log(f"FAILED lines: {failed}; cross-checks failed: {bad}")
        return 1
    return 0


def _uptime() -> str:
    try:
        return subprocess.run(["uptime"], capture_output=True, text=True, timeout=5).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return " ".join(f"{x:.2f}" for x in os.getloadavg())


def checks(res: dict[str, Any], dss: list[dict]) -> dict[str, Any]:
    """The cross-check of every layout (``line/dataset/job`` and ``delta-rs/dataset``)."""
    by_name = {d["name"]: d for d in dss}
    out = {}
    for line, r in res["lines"].items():
        for name, dres in r.get("datasets", {}).items():
            for job, lay in dres["layouts"].items():
                out[f"{line}/{name}/{job}"] = cross_check(by_name[name], lay["files"], lay["planned"])
    for name, d in res.get("delta_rs", {}).items():
        out[f"delta-rs/{name}"] = cross_check(by_name[name], d["files"], None)
    return out


LABELS = {
    "sort": "sort rewrite (`repartitionByRange` + sort)",
    "sort scrambled": "sort rewrite, rows scrambled first",
    "delta": "Delta `OPTIMIZE ZORDER BY`",
    "iceberg": "Iceberg `rewrite_data_files` zorder",
    "hudi zorder": "Hudi `run_clustering` z-order",
    "hudi hilbert": "Hudi `run_clustering` hilbert",
}
FORMATS = {"delta": "Delta", "iceberg": "Iceberg", "hudi": "Hudi"}  # ours on a table format (else on Parquet)
ANCHORS = ("delta", "iceberg", "hudi zorder", "hudi hilbert", "delta-rs")


def label(job: str) -> str:
    if job.startswith("ours"):
        curve, *fmt = job.split()[1:]
        return f"**{curve} (ours{', ' + FORMATS[fmt[0]] if fmt else ''})**"
    return LABELS.get(job, job)


def _engine_counted(job: str) -> bool:
    """Whether Spark plans this layout's files from its format's statistics (else: the evaluator's figure)."""
    from anchors import Jobs

    return Jobs.has_file_stats(job)


def _range(lo_hi: list[float] | None) -> str:
    return f"{lo_hi[0]:.2f}–{lo_hi[1]:.2f}" if lo_hi else "1 run"


def rows_of(res: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """Per data set, one row per layout: line, files out, mean files read per query family, time ratios."""
    out: dict[str, list[dict[str, Any]]] = {}
    for name, meta in res["datasets"].items():
        cols = meta["columns"]
        fams = [f"point:{c}" for c in cols] + [bq.family_name("range", cols, RANGE_FAMILY_WIDTH)]
        rows = []
        for line, r in res["lines"].items():
            dres = r.get("datasets", {}).get(name)
            if not dres:
                continue
            sort_walls = sorted(x["wall_s"] for x in dres["sort_runs"])
            for job, lay in dres["layouts"].items():
                check = res["checks"].get(f"{line}/{name}/{job}", {})
                counted = _engine_counted(job)
                read = [check["families"][f].get("planned" if counted else "evaluator") for f in fams]
                t = dres["jobs"].get(job)
                if t is None and job != "sort":  # not timed in rounds: its layout round's run against the sort's
                    first = lay["first_run_s"] / dres["layouts"]["sort"]["first_run_s"]
                    t = {"wall_ratio": round(first, 3), "wall_ratio_range": None, "wall_s": lay["first_run_s"]}
                    t.update(cpu_ratio=None, cpu_ratio_range=None)
                rows.append(
                    {
                        "job": job,
                        "line": line,
                        "spark": r["spark_version"],
                        "files": len(lay["files"]),
                        "read": read,
                        "engine_counted": counted,
                        "with_match": [check["families"][f]["with_match"] for f in fams],
                        "wall": (t["wall_ratio"], t["wall_ratio_range"]) if t else None,
                        "cpu": (t["cpu_ratio"], t["cpu_ratio_range"]) if t and t["cpu_ratio"] else None,
                        "wall_s": t["wall_s"] if t else statistics.median(sort_walls),
                    }
                )
        d = res.get("delta_rs", {}).get(name)
        if d:
            check = res["checks"][f"delta-rs/{name}"]
            ref = next((r for r in rows if r["job"] == "sort" and r["line"] == "4.2"), None)
            walls = sorted(x["wall_s"] for x in d["runs"])
            cpus = sorted(x["cpu_s"] for x in d["runs"])
            med = walls[(len(walls) - 1) // 2]
            rows.append(
                {
                    "job": "delta-rs",
                    "line": "-",
                    "spark": f"delta-rs {d['version']}",
                    "files": len(d["files"]),
                    "read": [check["families"][f]["evaluator"] for f in fams],
                    "engine_counted": False,
                    "with_match": [check["families"][f]["with_match"] for f in fams],
                    "wall": (round(med / ref["wall_s"], 3), [walls[0] / ref["wall_s"], walls[-1] / ref["wall_s"]])
                    if ref
                    else None,
                    "cpu": None,
                    "wall_s": med,
                    "cpu_s": cpus[(len(cpus) - 1) // 2],
                }
            )
        out[name] = rows
    return out


def goals(res: dict[str, Any]) -> list[tuple[str, bool, str]]:
    """Issue #51's goals on these figures: files read vs every anchor; time vs the fastest anchor's Z-order."""
    out = []
    for name, rows in rows_of(res).items():
        ours = [r for r in rows if r["job"].startswith("ours")]
        anchors = [r for r in rows if r["job"] in ANCHORS]
        if not ours or not anchors:
            continue
        share = lambda r, i: r["read"][i] / r["files"]  # noqa: E731 - engines cut somewhat different file counts
        worse = [
            f"{o['job']} ({o['line']}) {o['read'][i]:.1f} of {o['files']} > {a['job']} {a['read'][i]:.1f} of "
            f"{a['files']} on family {i + 1}"
            for o in ours
            for a in anchors
            for i in range(len(o["read"]))
            if o["read"][i] is not None and a["read"][i] is not None and share(o, i) > share(a, i) + 1e-9
        ]
        out.append(
            (
                f"{name}: ours reads no larger share of its files per query (mean per family) than every anchor",
                not worse,
                "; ".join(worse[:4]) or "met",
            )
        )
        spark_anchors = [a for a in anchors if a["wall"] and a["job"] != "delta-rs"]
        timed = [a for a in spark_anchors if a["wall"][1]] or spark_anchors  # anchors timed in rounds first
        if timed:
            fastest = min(timed, key=lambda r: r["wall"][0])
            mine = [o for o in ours if o["wall"] and o["wall"][1]] or [
                o for o in ours if o["wall"]
            ]  # timed rounds first
            best = min(mine, key=lambda r: r["wall"][0])
            out.append(
                (
                    f"{name}: ours' time (vs the sort rewrite on its line) <= the fastest anchor's Z-order "
                    f"({fastest['job']} on Spark {fastest['line']})",
                    best["wall"][0] <= fastest["wall"][0],
                    f"ours {best['wall'][0]:.2f}x ({best['job']}, Spark {best['line']}) vs "
                    f"{fastest['wall'][0]:.2f}x; moonshot 0.9x of it: "
                    f"{'met' if best['wall'][0] <= 0.9 * fastest['wall'][0] else 'not met'}",
                )
            )
    return out


def section(res: dict[str, Any], rel: str = "benchmarks") -> list[str]:
    """This benchmark's section of docs/benchmarks.md (between :data:`START` and :data:`END`)."""
    lines = [START, "", "## The field's engines side by side (issue #51)", ""]
    p = lines.append
    v = res["versions"]
    head = res["git_head"]
    p(
        f"`make bench-engines` (`benchmarks/bench_engines.py`) at git `{head.get('head', '?')}`"
        + (" with uncommitted changes" if head.get("modified") else "")
        + f", {res['started_utc'][:16].replace('T', ' ')} UTC, {res['wall_s'] / 60:.0f} minutes on {res['cpus']} CPUs "
        f"(`uptime` at the start: `{res['uptime_start'].split('load average:')[-1].strip()}`, "
        f"at the end: `{res['uptime_end'].split('load average:')[-1].strip()}`). Engines: Delta Lake {v['delta']} "
        f"(Spark 4.2 and 4.1), Apache Iceberg {v['iceberg']} (Spark 4.1: its Spark 4.2 runtime is not on Maven "
        f"here), Apache Hudi {v['hudi']} (Spark 3.5: no Spark 4 bundle is served here), delta-rs, ours and the plain "
        "sort rewrite; every rewrite targets the input's bytes / "
        f"{res['files']} per file (each engine's own size setting), and the table gives the files each one made."
    )
    p("")
    p(
        "Files read: the mean number of files a query reads, over "
        f"{sum(1 for q in next(iter(res['queries'].values())) if q['family'].startswith('point'))} point queries "
        "and the 3-column ranges (20 % of each column's rows) per data set, the same values for every layout. "
        "Counted by each format's own planning in Spark (the scan node's files once the query's plan is built: Delta's "
        "and Hudi's data skipping, Iceberg's manifest pruning); † marks a plain Parquet directory, which Spark "
        "opens file by file (skipping row groups inside): there the figure is the pruning evaluator's on the "
        "files' footers, the files a table format with those statistics plans (ours on the Delta table is Delta's "
        "own count of our layout). Every layout is cross-checked with DuckDB: no file a count left out holds a "
        "matching row."
    )
    p("")
    p(
        "Time: wall and CPU seconds of each rewrite over the sort rewrite run just before and after it in the same "
        f"JVM, on the same Spark line; the median of {_rounds_text(res)} with the lowest and highest in "
        "parentheses. Our rewrite needs Spark >= 4.1: on Spark 3.5, Hudi's line, ours is our plan run by Hudi's own "
        "clustering (`spark_jobs/hudi_clustering.py`, as the operator runs a Hudi table), and every ratio there is "
        "against the sort rewrite on Spark 3.5; "
        "delta-rs (no Spark) is put against the median sort rewrite on Spark 4.2, for information. "
        '"1 run": a rewrite timed only in the layout round (its first run in that JVM against the sort rewrite\'s '
        "first run there)."
        + (
            " The Spark lines ran at the same time (`--parallel`), each in its own JVM: every ratio still compares "
            "two runs of the same JVM, under the same load."
            if res.get("parallel")
            else ""
        )
    )
    if res.get("delta_rs_run_utc"):
        p("")
        p(
            f"delta-rs: run again at {res['delta_rs_run_utc'][11:16]} UTC, after the Spark lines (re-cut to about "
            f"{res['files']} files): its time ratio is not from the same load as the sort rewrite's."
        )
    for m in res.get("merged", []):
        p("")
        if m.get("partial"):
            p(
                f"Spark {', '.join(m['lines'])}: {', '.join(m['datasets'])} only; that line's run (started "
                f"{m['started_utc'][:16].replace('T', ' ')} UTC) was stopped before its other data sets."
            )
        else:
            load = m.get("load") or []
            p(
                f"Spark {', '.join(m['lines'])}: from a separate run of the same script on the same data and "
                f"queries, started {m['started_utc'][:16].replace('T', ' ')} UTC"
                + (f" (load average at its start `{load[0]}`, at its end `{load[1]}`)" if len(load) == 2 else "")
                + "."
            )
    for line, text in sorted(res.get("line_notes", {}).items()):  # what the run's figures cannot say themselves
        p("")
        p(f"Spark {line}: {text}")
    p("")
    p(
        "Settings: an anchor that made other than the target file count (off by more than 1/32) ran once more, "
        "untimed, with its size setting scaled by files made / target, and that layout is the one counted and "
        "timed. Delta's input is delta-rs's table of the input (one commit per input file, then a checkpoint; "
        "`spark.databricks.delta.snapshotPartitions=2`); Iceberg's is the input's own files (`add_files`) in a "
        "Hadoop catalog, with Iceberg's default column metrics (strings truncated to 16 characters); Hudi's a "
        "copy-on-write table written by `bulk_insert` (one file per input file, its 5 meta columns) with the "
        "metadata table's column stats index on the clustering columns, read with `hoodie.enable.data.skipping`; "
        "Hudi's clusterings run with its knob for writers that cut files smaller than planned "
        "(`hoodie.parquet.compression.ratio`, the value ours on Hudi sets: at its default each planned file came out "
        "as ~6) and its default curve build (`direct`: raw values on the curve; ours on Hudi sets `sample`). "
        "Ours on Delta and on Hudi starts from copies of those same inputs; ours on Iceberg from the input's files "
        "added to a table of a pyiceberg SQL catalog (SQLite), which our job commits to with pyiceberg and Spark "
        "reads through Iceberg's JdbcCatalog on the same SQLite file."
    )
    for name, rows in rows_of(res).items():
        meta = res["datasets"][name]
        cols = meta["columns"]
        p("")
        p(
            f"**{meta['title']}**, {meta['rows']:,} rows, {meta['input_files']} input files "
            f"({meta['input_bytes'] / 2**20:.0f} MiB)"
        )
        p("")
        p(f"![{meta['title']}]({rel}/{FIGURE.format(name)})")
        p("")
        p(
            "| rewrite | Spark | files | "
            + " | ".join(f"`{c} = v`" for c in cols)
            + " | 3-col range | wall vs sort rewrite | CPU vs sort rewrite | wall s |"
        )
        p("| --- | --- | --- | " + " | ".join("---" for _ in cols) + " | --- | --- | --- | --- |")
        for r in rows:
            mark = "" if r["engine_counted"] else " †"
            cells = " | ".join("-" if x is None else f"{x:.1f}{mark}" for x in r["read"])
            wall = (
                "1.00x"
                if r["job"] == "sort"
                else (f"{r['wall'][0]:.2f}x ({_range(r['wall'][1])})" if r["wall"] else "-")
            )
            cpu = (
                "1.00x" if r["job"] == "sort" else (f"{r['cpu'][0]:.2f}x ({_range(r['cpu'][1])})" if r["cpu"] else "-")
            )
            p(f"| {label(r['job'])} | {r['spark']} | {r['files']} | {cells} | {wall} | {cpu} | {r['wall_s']:.1f} |")
        floor = next((r["with_match"] for r in rows if r["job"].startswith("ours")), None)
        if floor:
            p("")
            p(
                "Files holding a match (DuckDB) under ours: "
                + ", ".join(f"{c} {x:.1f}" for c, x in zip([*cols, "3-col range"], floor))
                + "."
            )
    p("")
    p("Goals (issue #51):")
    p("")
    for text, ok, detail in goals(res):
        p(f"- {'met' if ok else 'NOT met'}: {text}: {detail}.")
    bad = [k for k, c in res["checks"].items() if c["under_floor"] or c["evaluator_violations"]]
    p(f"- DuckDB cross-check: {'every layout passes' if not bad else 'FAILED on ' + ', '.join(bad)}.")
    p("")
    p(END)
    return lines


def _rounds_text(res: dict[str, Any]) -> str:
    """The timed rounds, per line and data set where they differ (``anchors.run`` records each line's)."""
    per = {
        (line, name): r.get("rounds", {}).get(name, res["rounds"])
        for line, r in res["lines"].items()
        for name in r.get("datasets", {})
    }
    if len(set(per.values())) <= 1:
        return f"{next(iter(per.values()), res['rounds'])} rounds"
    return "rounds (" + ", ".join(f"Spark {ln} {n}: {k}" for (ln, n), k in sorted(per.items())) + ")"


def summary_lines(res: dict[str, Any]) -> list[str]:
    return section(res)


FIGURE = "engines_{}.png"


def figure(res: dict[str, Any], name: str, path: Path) -> None:
    """One data set: files read per query family (left) and rewrite time vs the sort rewrite (right) per rewrite."""
    from bench_report import _plt

    plt = _plt()
    rows = [r for r in rows_of(res)[name] if r["job"] not in ("sort", "sort scrambled")]
    cols = res["datasets"][name]["columns"]
    fams = [f"{c} = v" for c in cols] + ["3-col range"]
    where = lambda r: f"Spark {r['line']}" if r["line"] != "-" else "no Spark"  # noqa: E731
    names = [f"{label(r['job']).strip('*').replace('`', '')}\n({where(r)})" for r in rows]
    fig, (left, right) = plt.subplots(1, 2, figsize=(14, 0.45 * len(rows) + 2.2), gridspec_kw={"width_ratios": [3, 2]})
    height = 0.8 / len(fams)
    for i, fam in enumerate(fams):
        ys = [k + i * height for k in range(len(rows))]
        left.barh(ys, [r["read"][i] or 0 for r in rows], height=height, label=fam)
    left.set_yticks([k + 0.4 - height / 2 for k in range(len(rows))], names, fontsize=8)
    left.invert_yaxis()
    left.set_xlabel(f"files read per query (of about {res['files']})")
    left.legend(fontsize=8, loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=len(fams))
    walls = [r["wall"][0] if r["wall"] else 0 for r in rows]
    err = [
        [w - (r["wall"][1] or [w, w])[0] if r["wall"] else 0 for w, r in zip(walls, rows)],
        [(r["wall"][1] or [w, w])[1] - w if r["wall"] else 0 for w, r in zip(walls, rows)],
    ]
    right.barh(range(len(rows)), walls, xerr=err, color="#888888")
    right.axvline(1.0, color="black", lw=0.8)
    right.set_yticks(range(len(rows)), [""] * len(rows))
    right.invert_yaxis()
    right.set_xscale("log")
    right.set_xlabel("rewrite wall time / sort rewrite's, same Spark line (log)")
    fig.suptitle(res["datasets"][name]["title"], fontsize=11)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)


def render_doc(res: dict[str, Any], doc: Path) -> None:
    """Only this benchmark's section of ``doc``: replaced between its markers, else appended."""
    for name in res["datasets"]:
        figure(res, name, doc.parent / "benchmarks" / FIGURE.format(name))
    splice_section(doc, START, END, "\n".join(section(res)), before="<!-- bench:incremental:start -->")


README_JOBS = (
    "ours hilbert",
    "ours hilbert iceberg",
    "ours hilbert hudi",
    "delta",
    "iceberg",
    "hudi zorder",
    "delta-rs",
)


def headline(res: dict[str, Any], rel: str) -> list[str]:
    """README's table (inside bench_report's headline block): on the first data set, files read per query and
    rewrite time vs the sort rewrite on the same Spark line, for ours (on each line's format) and each anchor on the
    first line it runs on; every other row is in the doc."""
    name = next(iter(res["datasets"]))
    meta = res["datasets"][name]
    rows, seen = [], set()
    for r in rows_of(res)[name]:
        key = r["job"] if r["job"] != "ours hilbert" else (r["job"], r["line"])
        if r["job"] not in README_JOBS or key in seen:
            continue
        seen.add(key)
        rows.append(r)
    out = [
        f"**Against the field** (`make bench-engines`): {meta['title']}, {meta['input_files']} files in, about "
        f"{res['files']} out; mean files read per query; rewrite time vs the sort rewrite on the same Spark line "
        f"(versions, the skewed table and every line: [{rel}]({rel}#the-fields-engines-side-by-side-issue-51))",
        "",
        "| rewrite | Spark | files | " + " | ".join(f"`{c} = v`" for c in meta["columns"]) + " | 3-col range | time |",
        "| --- | --- | --- | " + " | ".join("---" for _ in meta["columns"]) + " | --- | --- |",
    ]
    for r in rows:
        where = r["line"] if r["line"] != "-" else "none"
        cells = " | ".join("-" if x is None else f"{x:.1f}" for x in r["read"])
        wall = f"{r['wall'][0]:.2f}x" if r["wall"] else "-"
        out.append(f"| {label(r['job'])} | {where} | {r['files']} | {cells} | {wall} |")
    return out


def render_readme(readme: Path, results: Path, doc: Path) -> bool:
    """README's headline block re-rendered from the merged results JSON (``bench_report.update_readme``: this
    benchmark's line is part of it)."""
    import bench_report

    return bench_report.update_readme(readme, json.loads(results.read_text()), doc)


if __name__ == "__main__":
    sys.exit(main())
