"""Scaling (issue #51): ours, the sort rewrite and the fastest anchor on TPC-H lineitem SF1, SF3 and SF10.

    make bench-scale      # = .venv/bin/python benchmarks/bench_scale.py --merge-into docs/benchmarks/results.json
                          #       --doc docs/benchmarks.md

For each scale factor, lineitem in ``--files`` files in ``l_orderkey`` order (``tpch_data``) goes through one Spark
line's jobs (``benchmarks/anchors.py``, as ``bench_engines.py`` runs them): the sort rewrite, ours (``hilbert``) and
the fastest anchor, each timed against the sort rewrite around it in the same JVM (``--rounds``). The fastest anchor
is the one with the lowest time ratio to the sort rewrite on lineitem in the results' ``engines`` key (else
Iceberg's ``rewrite_data_files`` on Spark 4.1), and everything runs on its Spark line, so the ratios compare like
with like. Per rewrite: wall and CPU seconds, the peak RSS of the JVM (in ``local[2]`` the driver is the executor)
and of the Python workers, and the bytes the tasks spilled with their peak execution memory (``anchors.SpillMeter``,
from the session's event log). Files read per query family as in ``bench_engines.py``, with DuckDB's floor.

Goal: our wall seconds per row at the largest scale factor over those at the smallest, at most 1.2x.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import bench_cluster as bc  # noqa: E402
import bench_engines as be  # noqa: E402
from bench_doc import merge_into, splice_section  # noqa: E402
from bench_env import REPO  # noqa: E402  (sets PYSPARK_PYTHON, sys.path, PYTHONPATH)
from engines_env import ENGINES  # noqa: E402

log = bc.log
KEY = "scale"
START, END = "<!-- bench:scale:start -->", "<!-- bench:scale:end -->"
GROWTH_GOAL = 1.2
MB = 1 << 20


def fastest_anchor(results: Path) -> tuple[str, str]:
    """``(job, Spark line)`` of the anchor with the lowest wall ratio on lineitem in ``results``' engines run."""
    try:
        lines = json.loads(results.read_text())["engines"]["lines"]
    except (OSError, KeyError, ValueError):
        return "iceberg", "4.1"
    timed = [
        (j["wall_ratio"], job, line)
        for line, r in lines.items()
        for job, j in r.get("datasets", {}).get("lineitem", {}).get("jobs", {}).items()
        if job in be.ANCHORS and j.get("wall_ratio")
    ]
    return (min(timed)[1], min(timed)[2]) if timed else ("iceberg", "4.1")


def ours_on(line: str) -> str:
    """Our job on ``line``: on Parquet, or on the Hudi table where only Hudi's line runs (our rewrite needs 4.1)."""
    return "ours hilbert hudi" if line == "3.5" else "ours hilbert"


def _mid(xs: list[float]) -> float:
    return sorted(xs)[(len(xs) - 1) // 2]


def one_scale(sf: float, job: str, line: str, a: argparse.Namespace, work: Path) -> dict[str, Any]:
    """One scale factor: the data, the line's run, the cross-check; the rows of :func:`table_rows`."""
    ns = argparse.Namespace(**{**vars(a), "sf": sf, "datasets": ["lineitem"], "skew_rounds": None})
    dss = be.datasets(ns, work, delta=False)
    jobs = [ours_on(line), job]
    log(f"SF{sf:g} on Spark {line}: {', '.join(jobs)}")
    t0 = time.perf_counter()
    started = be.start_line(line, jobs, dss, ns, work, spill=True)
    lres = be.finish_line(started)
    if "error" in lres:
        raise RuntimeError(lres["error"])
    res = {
        "datasets": {d["name"]: {k: d[k] for k in ("title", "columns", "rows", "input_bytes")} for d in dss},
        "lines": {line: lres},
    }
    res["checks"] = be.checks(res, dss)
    d = lres["datasets"]["lineitem"]
    reads = {r["job"]: r for r in be.rows_of(res)["lineitem"]}
    out: dict[str, Any] = {
        "sf": sf,
        "rows": dss[0]["rows"],
        "input_bytes": dss[0]["input_bytes"],
        "spark": lres["spark_version"],
        "wall_s": round(time.perf_counter() - t0, 1),
        "families": [f"point:{c}" for c in dss[0]["columns"]] + ["range"],
        "jobs": {},
    }
    for name in ["sort", *jobs]:
        if name == "sort":
            runs = d["sort_runs"]
            t = {
                "wall_s": _mid([r["wall_s"] for r in runs]),
                "cpu_s": _mid([r["cpu_s"] for r in runs]),
                "wall_ratio": 1.0,
                "wall_ratio_range": None,
                "peak_jvm_rss_mb": max(r["peak_jvm_rss_mb"] for r in runs),
                "peak_workers_pss_mb": max(r["peak_workers_pss_mb"] for r in runs),
                **{k: max(r.get(k, 0) for r in runs) for k in ("spill_memory_bytes", "spill_disk_bytes")},
                "peak_task_execution_memory_bytes": max(r.get("peak_task_execution_memory_bytes", 0) for r in runs),
            }
        else:
            t = d["jobs"].get(name) or {}
        r = reads.get(name, {})
        out["jobs"][name] = {
            **{k: t.get(k) for k in ("wall_s", "cpu_s", "wall_ratio", "wall_ratio_range", "peak_jvm_rss_mb")},
            **{k: t.get(k) for k in ("peak_workers_pss_mb", "spill_memory_bytes", "spill_disk_bytes")},
            "peak_task_execution_memory_bytes": t.get("peak_task_execution_memory_bytes"),
            "files": r.get("files"),
            "read": r.get("read"),
            "with_match": r.get("with_match"),
            "engine_counted": r.get("engine_counted"),
        }
    bad = {k: c for k, c in res["checks"].items() if c["under_floor"] or c["evaluator_violations"]}
    out["cross_check_failed"] = sorted(bad)
    return out


def growth(res: dict[str, Any], job: str) -> float | None:
    """``job``'s wall seconds per row at the largest scale factor over those at the smallest."""
    scales = [s for s in res["scales"] if s["jobs"].get(job, {}).get("wall_s")]
    if len(scales) < 2:
        return None
    first, last = scales[0], scales[-1]
    return round((last["jobs"][job]["wall_s"] / last["rows"]) / (first["jobs"][job]["wall_s"] / first["rows"]), 3)


FIGURE = "scale.png"


def figure(res: dict[str, Any], path: Path) -> None:
    """Seconds per million rows (left) and peak JVM RSS (right) against the scale factor, per rewrite."""
    from bench_report import _plt

    plt = _plt()
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
    for job in res["scales"][0]["jobs"]:
        pts = [(s["sf"], s["jobs"][job]) for s in res["scales"] if s["jobs"].get(job, {}).get("wall_s")]
        name = label(job).strip("*").replace("`", "")
        left.plot(
            [x for x, _ in pts], [j["wall_s"] / s * 1e6 for (x, j), s in zip(pts, _rows(res, pts))], "o-", label=name
        )
        right.plot([x for x, _ in pts], [j["peak_jvm_rss_mb"] for _, j in pts], "o-", label=name)
    for ax, title in ((left, "wall seconds per million rows"), (right, "peak JVM RSS, MB (driver = executor)")):
        ax.set_xscale("log")
        ax.set_xlabel("TPC-H scale factor")
        ax.set_title(title, fontsize=10)
        ax.set_ylim(bottom=0)
    left.legend(fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)


def _rows(res: dict[str, Any], pts: list) -> list[int]:
    by_sf = {s["sf"]: s["rows"] for s in res["scales"]}
    return [by_sf[x] for x, _ in pts]


def label(job: str) -> str:
    return "sort rewrite" if job == "sort" else be.label(job)


def section(res: dict[str, Any], rel: str = "benchmarks") -> str:
    """This benchmark's section of docs/benchmarks.md."""
    anchor = res["anchor"]
    p: list[str] = [START, "", "## Scaling: TPC-H lineitem SF1 to SF10 (issue #51)", ""]
    head = res["git_head"]
    p.append(
        f"`make bench-scale` (`benchmarks/bench_scale.py`) at git `{head['head']}`"
        f"{' (with uncommitted changes)' if head.get('modified') else ''}, {res['started_utc'][:16].replace('T', ' ')}"
        f" UTC, {res['wall_s'] / 60:.0f} minutes on {res['cpus']} CPUs (`uptime` at the start: "
        f"`{res['uptime_start'].split('load average: ')[-1]}`, at the end: `{res['uptime_end'].split('load average: ')[-1]}`)."
        f" Spark {res['scales'][0]['spark']} (`local[2]`, 4 GB driver), the line of the fastest anchor in the engines "
        f"run above ({label(anchor)}, {ENGINES[anchor.split()[0]].title}); every rewrite cuts {res['files']} files; "
        f"time is the median of {res['rounds']} round(s) against the sort rewrite around it in the same JVM."
    )
    p += [
        "",
        "| SF | rows | rewrite | wall s | s per M rows | wall vs sort | CPU s | peak JVM RSS MB | peak workers MB "
        "| spilled MB (memory / disk) | peak task exec. MB | files | files read: point (mean of 3 columns) | range |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for s in res["scales"]:
        for job, j in s["jobs"].items():
            rng = j.get("wall_ratio_range")
            ratio = (
                "1.00x"
                if job == "sort"
                else f"{j['wall_ratio']:.2f}x" + (f" ({rng[0]:.2f}–{rng[1]:.2f})" if rng and rng[0] != rng[1] else "")
            )
            read = j.get("read") or []
            point = statistics.mean(read[:-1]) if read and None not in read[:-1] else None
            spill = f"{(j.get('spill_memory_bytes') or 0) / MB:,.0f} / {(j.get('spill_disk_bytes') or 0) / MB:,.0f}"
            p.append(
                f"| {s['sf']:g} | {s['rows']:,} | {label(job)} | {j['wall_s']:.1f} | {j['wall_s'] / s['rows'] * 1e6:.2f}"
                f" | {ratio} | {j['cpu_s']:.0f} | {j['peak_jvm_rss_mb']:,.0f} | {j['peak_workers_pss_mb']:,.0f} "
                f"| {spill} | {(j.get('peak_task_execution_memory_bytes') or 0) / MB:,.0f} | {j.get('files') or '–'} "
                f"| {'–' if point is None else f'{point:.1f}'} | {'–' if not read else f'{read[-1]:.1f}'} |"
            )
    ideal = res["files"] ** (1 - 1 / 3)
    p += [
        "",
        f"Files read: a table format's own planning in Spark where the rewrite made one, else the pruning evaluator "
        f"on the files' footers; the ideal for a point query on one of 3 columns is {res['files']}^(2/3) = "
        f"{ideal:.0f} of {res['files']} files. DuckDB cross-check (no skipped file holds a match): "
        f"{'passed' if not any(s['cross_check_failed'] for s in res['scales']) else 'FAILED'}.",
        "",
    ]
    for job in res["scales"][0]["jobs"]:
        g = growth(res, job)
        if g is not None:
            p.append(
                f"- {label(job)}: wall seconds per row at SF{res['scales'][-1]['sf']:g} over SF"
                f"{res['scales'][0]['sf']:g}: **{g:.2f}x**"
                + (
                    f" (goal <= {GROWTH_GOAL}x: {'met' if g <= GROWTH_GOAL else 'not met'})"
                    if job.startswith("ours")
                    else ""
                )
            )
    p += ["", f"![scaling]({rel}/{FIGURE})", "", "Reproduce: `make bench-scale`.", "", END]
    return "\n".join(p)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sfs", default="1,3,10", help="scale factors (default 1,3,10)")
    ap.add_argument("--files", type=int, default=64)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--anchor", default=None, help="job:line (default: the fastest anchor of the engines run)")
    ap.add_argument("--n-point", type=int, default=20)
    ap.add_argument("--n-range", type=int, default=10)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--work", default=str(REPO / ".bench" / "scale"))
    ap.add_argument("--merge-into", default=None, help="a results JSON to store the figures in (key 'scale')")
    ap.add_argument("--doc", default=None, help="a markdown whose scale section to (re)write (with --merge-into)")
    ap.add_argument(
        "--add",
        action="store_true",
        help="with --merge-into: keep the other scale factors of the run already there (same anchor and line)",
    )
    a = ap.parse_args(argv)
    for k, v in {"skew_rows": 0, "skew_files": 1, "layout_only": [], "ours": "hilbert"}.items():
        setattr(a, k, v)
    job, line = (
        a.anchor.split(":")
        if a.anchor
        else fastest_anchor(Path(a.merge_into or REPO / "docs" / "benchmarks" / "results.json"))
    )
    work = Path(a.work).resolve()
    res: dict[str, Any] = {
        "started_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "uptime_start": be._uptime(),
        "git_head": bc.code_state(),
        "cpus": __import__("os").cpu_count(),
        "files": a.files,
        "rounds": a.rounds,
        "line": line,
        "anchor": job,
        "scales": [],
    }
    t0 = time.perf_counter()
    sfs = [float(x) for x in a.sfs.split(",")]
    if a.add and a.merge_into:  # a scale factor run again (or added) beside the others of the earlier run
        old = json.loads(Path(a.merge_into).read_text()).get(KEY) or {}
        if (old.get("anchor"), old.get("line")) == (job, line):
            res.update({k: old[k] for k in ("started_utc", "uptime_start", "git_head")})
            res["scales"] = [s for s in old["scales"] if s["sf"] not in sfs]
            t0 -= old.get("wall_s", 0.0)
    for sf in sfs:
        res["scales"].append(one_scale(sf, job, line, a, work / f"sf{sf:g}"))
        res["scales"].sort(key=lambda s: s["sf"])
        res["uptime_end"], res["wall_s"] = be._uptime(), round(time.perf_counter() - t0, 1)
        (work / "scale_results.json").write_text(json.dumps(res, indent=1, default=str) + "\n")
        if a.merge_into:
            merge_into(Path(a.merge_into), KEY, res)
            if a.doc:
                figure(res, Path(a.doc).parent / "benchmarks" / FIGURE)
                splice_section(Path(a.doc), START, END, section(res), before="<!-- bench:incremental:start -->")
    for j in res["scales"][0]["jobs"]:
        print(f"{label(j)}: per-row growth {growth(res, j)}")
    return 1 if any(s["cross_check_failed"] for s in res["scales"]) else 0


if __name__ == "__main__":
    sys.exit(main())
