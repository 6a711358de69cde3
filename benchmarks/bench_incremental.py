"""Issue #25's benchmark: never / full / incremental / delta-rs re-clustering over daily appends.

    .venv/bin/python benchmarks/bench_incremental.py [--sf 1] [--days 30] [--work DIR]
        [--merge-into docs/benchmarks/results.json] [--doc docs/benchmarks.md] [--policies never,full,...]

Setup: TPC-H lineitem at ``--sf`` (``tpch_data.generate_lineitem``, 64 files in generation order) clustered by
our job into ``--files`` (64) files on (l_partkey, l_suppkey, l_shipdate) (``run_cluster``, curve hilbert): the
*base*, an unpartitioned Parquet table.  Then ``--days`` appends, each of ``rows / days`` fresh rows in 2 unsorted
Parquet files with plain names (as an ingest job writes them): day ``i``'s rows are the ``i``-th of ``days``
consecutive ``l_orderkey`` slices of the same generated lineitem, ``l_orderkey`` shifted past the base's largest
(TPC-H draws order dates and part keys independently of the order key, so each slice is a 1/``days`` sample of
the base's distribution of the three columns, in rows the base does not hold).

Policies, each on its own copy of the base (one SparkSession for everything, ``bench_cluster.build_spark``):

* ``never``: appends only;
* ``full``: ``run_cluster(incremental=False)`` (today's job: the whole table, ``target_file_size`` = the base's mean
  file size);
* ``incremental``: ``run_cluster(incremental=True, plan=<the sensor's plan as JSON>)``, same target size;
* ``delta-rs``: a Delta copy of the base (``write_deltalake``, one append per file), appends by ``write_deltalake``
  ``mode="append"``, re-clustered by ``DeltaTable.optimize.z_order(columns, target_size=the Delta base's mean
  file size)`` in a child process (``--delta-zorder``).

After each append, per policy: the stats job in-process (``run_collect``, the 3 columns), the sensor's decision
(``recluster_policy.evaluate`` with ``HEALTH``, the same for every policy; the incremental policy's plan from the
sensor: ``evaluate(..., incremental=...)``), the policy's run when the
decision is ``recluster``, then stats again and each column's ``ratio_to_ideal`` (``metrics.table_clustering``,
d = 3).  Per day: bytes and files rewritten, files, the ratios, job time (the clustering call's wall) and stats
time; in total: write amplification, mean and worst of the daily worst-column ratio, clustering time, and
incremental against full.  Rows are checked at the end (count and DuckDB ``sum(hash(l_orderkey, l_linenumber))``
against base + appends): exit 1 if a table differs.

Writes ``<work>/incremental_results.json``; with ``--merge-into`` the same under key ``"incremental"`` of that JSON
(other keys kept) and the plot ``incremental_days.png`` next to it; with ``--doc`` also its section of that markdown
(``bench_report.render_incremental``; nothing else in the doc changes).  ``run_all.py`` runs it as a child
(``--incremental-sf``).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import bench_cluster as bc  # noqa: E402
from bench_env import REPO  # noqa: E402  (sets PYSPARK_PYTHON, sys.path, PYTHONPATH)
from tpch_data import generate_lineitem  # noqa: E402

from airflow_zorder.core.policy import metrics, recluster_policy  # noqa: E402
from airflow_zorder.core.policy.incremental import IncrementalParams  # noqa: E402
from airflow_zorder.core.policy.thresholds import HealthPolicy  # noqa: E402
from airflow_zorder.core.stats import stats_store  # noqa: E402
from airflow_zorder.evaluation import layout_report  # noqa: E402

COLUMNS = ["l_partkey", "l_suppkey", "l_shipdate"]
D = 3  # num_clustering_columns of the ideal
CURVE = "hilbert"
POLICIES = ("never", "full", "incremental", "delta-rs")
HEALTH = HealthPolicy(max_ratio_to_ideal=1.5, min_interval_since_cluster=None, max_stats_age=None, min_files=1)
ROW_KEY = ["l_orderkey", "l_linenumber"]  # the rows' identity, for the checksum
APPENDS_MARKER = "_APPENDS.json"
MB = 1024 * 1024
log = bc.log


class NotReady(RuntimeError):
    """The clustering job does not run incremental plans yet (its result has no ``mode``)."""


# --------------------------------------------------------------------------- data


def make_appends(src: Path, out: Path, days: int) -> dict[str, Any]:
    """Write the days' append files (2 per day) from ``src``'s rows in order, ``l_orderkey`` shifted; cached."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.dataset as pds
    import pyarrow.parquet as pq

    files = layout_report.data_files(str(src))
    data = pds.dataset(files, format="parquet")
    rows = data.count_rows()
    per_day = rows // days
    params = {"src": str(src), "days": days, "rows_per_day": per_day, "src_rows": rows}
    marker = out / APPENDS_MARKER
    if marker.exists() and json.loads(marker.read_text()).get("params") == params:
        return json.loads(marker.read_text())
    bc.fresh_dir(out).mkdir(parents=True)
    shift = pc.max(data.to_table(columns=["l_orderkey"])["l_orderkey"]).as_py()
    halves = [per_day // 2, per_day - per_day // 2]
    targets = [(d, h, n) for d in range(1, days + 1) for h, n in enumerate(halves)]
    names: list[list[str]] = [[] for _ in range(days)]
    idx, buf, held = 0, [], 0
    for batch in data.to_batches(batch_size=128 * 1024):
        while batch.num_rows and idx < len(targets):
            d, h, n = targets[idx]
            take = min(batch.num_rows, n - held)
            buf.append(batch.slice(0, take))
            held += take
            batch = batch.slice(take)
            if held == n:
                t = pa.Table.from_batches(buf)
                t = t.set_column(t.schema.get_field_index("l_orderkey"), "l_orderkey", pc.add(t["l_orderkey"], shift))
                name = f"ingest-day{d:02d}-{h}.parquet"
                pq.write_table(t, out / name, compression="snappy")
                names[d - 1].append(name)
                idx, buf, held = idx + 1, [], 0
        if idx == len(targets):
            break
    info = {"params": params, "orderkey_shift": shift, "files": names, "dir": str(out)}
    marker.write_text(json.dumps(info, indent=1) + "\n")
    return info


def cluster_base(spark, src: Path, dst: Path, n: int) -> dict[str, Any]:
    """Our job on a copy of the generated data: the base every policy starts from (hilbert, ``n`` files)."""
    from airflow_zorder.core.jobs.options import ClusterOptions
    from spark_jobs.cluster_table import run_cluster

    bc.copy_input(src, dst)
    t = time.perf_counter()
    r = run_cluster(spark, ClusterOptions(table=str(dst), columns=list(COLUMNS), curve=CURVE, num_files=n))
    wall = time.perf_counter() - t
    files = layout_report.data_files(str(dst))
    size = bc.dir_bytes(files)
    shutil.rmtree(dst / "_zorder", ignore_errors=True)  # each policy's copy starts without stats or events
    return {
        "dir": str(dst),
        "rows": r["after"]["rows"],
        "files": len(files),
        "bytes": size,
        "mean_file_bytes": size // max(len(files), 1),
        "cluster_wall_s": round(wall, 2),
        "job_has_mode": "mode" in r,
    }


# --------------------------------------------------------------------------- one policy's table


@dataclasses.dataclass
class PolicyTable:
    """One policy's copy of the table, its stats location and its per-day figures."""

    name: str
    path: Path
    delta: bool = False
    days: list[dict[str, Any]] = dataclasses.field(default_factory=list)

    @property
    def stats(self) -> str:
        """The stats location (the default one: ``<table>/_zorder/stats``)."""
        return stats_store.default_location(str(self.path))

    def live_files(self) -> list[str]:
        """The table's data files (a Delta table's from its log)."""
        return bc.delta_live_files(self.path) if self.delta else layout_report.data_files(str(self.path))


def append_day(t: PolicyTable, appends: dict[str, Any], day: int) -> int:
    """Add day ``day``'s files to the table; returns the bytes appended (as the table stores them)."""
    src = [Path(appends["dir"]) / n for n in appends["files"][day - 1]]
    if not t.delta:
        for f in src:
            shutil.copyfile(f, t.path / f.name)
        return sum(f.stat().st_size for f in src)
    import pyarrow.parquet as pq
    from deltalake import DeltaTable, write_deltalake

    before = set(bc.delta_live_files(t.path))
    for f in src:
        write_deltalake(str(t.path), pq.read_table(f), mode="append")
    new = set(DeltaTable(str(t.path)).file_uris())
    return bc.dir_bytes([x.removeprefix("file://") for x in new if x.removeprefix("file://") not in before])


def collect(spark, t: PolicyTable) -> tuple[Any, float]:
    """The stats job on the table (the 3 columns, in-process); the snapshot and the job's wall seconds."""
    from airflow_zorder.core.jobs.options import CollectOptions
    from spark_jobs.stats_collection.run import run_collect

    s = time.perf_counter()
    run_collect(spark, CollectOptions(table=str(t.path), columns=list(COLUMNS), stats_location=t.stats))
    wall = time.perf_counter() - s
    return stats_store.load_latest(t.stats, columns=COLUMNS), wall


def sensor(snapshot, t: PolicyTable, params: IncrementalParams | None) -> tuple[dict[str, Any], dict | None, str]:
    """The sensor's decision (same thresholds for every policy) and, with ``params``, its incremental plan
    (``evaluate(..., incremental=params)`` attaches it to a ``recluster``); the third value says where it came from."""
    events = stats_store.load_events(t.stats)
    kw: dict[str, Any] = {} if params is None else {"incremental": params}
    payload = recluster_policy.evaluate(snapshot, COLUMNS, HEALTH, events=events, num_clustering_columns=D, **kw)
    if params is None or payload["decision"] != "recluster":
        return payload, None, ""
    return payload, payload.get("plan"), "sensor"


def measure(snapshot) -> dict[str, Any]:
    """Each column's ratio to ideal and expected files read (``metrics.table_clustering``, d = 3), and the worst."""
    tc = metrics.table_clustering(snapshot, COLUMNS, num_clustering_columns=D)
    per = tc["per_column"]
    ratios = {c: round(per[c]["ratio_to_ideal"], 4) for c in COLUMNS}
    return {
        "ratios": ratios,
        "files_read": {c: round(per[c]["expected_files_read"], 2) for c in COLUMNS},
        "worst": max(ratios.values()),
        "files": tc["num_files"],
    }


def run_job(spark, t: PolicyTable, target: int, incremental: bool, plan_path: Path | None) -> tuple[dict, float]:
    """Our clustering job, full or incremental (the given plan, or its own without one); result and wall seconds."""
    from airflow_zorder.core.jobs.options import ClusterOptions
    from spark_jobs.cluster_table import run_cluster

    opts = ClusterOptions(
        table=str(t.path),
        columns=list(COLUMNS),
        curve=CURVE,
        target_file_size=target,
        stats_location=t.stats,
        incremental=incremental,
        plan=str(plan_path) if plan_path else None,
    )
    s = time.perf_counter()
    r = run_cluster(spark, opts)
    wall = time.perf_counter() - s
    if "mode" not in r:
        raise NotReady("run_cluster's result has no 'mode': the job does not run incremental plans yet")
    return r, wall


def job_figures(r: dict[str, Any]) -> dict[str, Any]:
    """Files and bytes a run of our job rewrote (``result["rewritten"]``; else its before/after)."""
    rw = r.get("rewritten") or {}
    if r.get("status") != "clustered":
        return {"bytes_rewritten": 0, "files_rewritten": 0, "output_files": 0}
    return {
        "bytes_rewritten": int(rw.get("bytes", r["before"]["bytes"])),
        "files_rewritten": int(rw.get("files", r["before"]["files"])),
        "output_files": int(rw.get("output_files", r["after"]["files"])),
    }


def delta_zorder(t: PolicyTable, target: int, work: Path) -> dict[str, Any]:
    """delta-rs ``optimize.z_order`` in a child process (as run_all runs delta-rs); its figures."""
    out = work / "delta_zorder.json"
    out.unlink(missing_ok=True)
    cmd = [sys.executable, str(Path(__file__).resolve()), "--delta-zorder", str(t.path), ",".join(COLUMNS)]
    s = time.perf_counter()
    subprocess.run([*cmd, str(target), str(out)], check=True)
    res = json.loads(out.read_text())
    res["process_wall_s"] = round(time.perf_counter() - s, 2)
    return res


def delta_zorder_child(argv: list[str]) -> int:
    """``--delta-zorder TABLE COLUMNS TARGET OUT_JSON``: z_order timed, then an untimed vacuum of the old files."""
    table, columns, target, out_json = argv
    import deltalake
    from deltalake import DeltaTable

    dt = DeltaTable(table)
    read_version = dt.version()
    s = time.perf_counter()
    m = dt.optimize.z_order(columns.split(","), target_size=int(target))
    wall = time.perf_counter() - s
    removed = m.get("filesRemoved") or {}
    removed = json.loads(removed) if isinstance(removed, str) else removed  # delta-rs gives it as JSON text
    res = {
        "wall_s": round(wall, 3),
        "read_version": read_version,
        "version": DeltaTable(table).version(),
        "files_rewritten": int(m.get("numFilesRemoved", 0)),
        "bytes_rewritten": int(removed.get("totalSize", 0)),
        "output_files": int(m.get("numFilesAdded", 0)),
        "deltalake": deltalake.__version__,
    }
    DeltaTable(table).vacuum(retention_hours=0, enforce_retention_duration=False, dry_run=False)
    Path(out_json).write_text(json.dumps(res))
    return 0


def act(spark, t: PolicyTable, plan: dict | None, target: int, delta_target: int, work: Path, day: int) -> dict:
    """The policy's re-clustering run after a ``recluster`` decision: what it rewrote and its wall time."""
    if t.name == "never":
        return {"action": "none (policy)", "job_s": 0.0, "bytes_rewritten": 0, "files_rewritten": 0}
    if t.name == "delta-rs":
        z = delta_zorder(t, delta_target, work)
        return {"action": "z_order", "job_s": z["wall_s"], **{k: v for k, v in z.items() if k != "wall_s"}}
    plan_path = None
    if t.name == "incremental" and plan is not None:  # None: the sensor could not plan, the job plans itself
        if not plan.get("files"):
            return {"action": "plan empty", "job_s": 0.0, "bytes_rewritten": 0, "files_rewritten": 0}
        plan_path = work / "plans" / f"day{day:02d}.json"
        plan_path.parent.mkdir(parents=True, exist_ok=True)
        plan_path.write_text(json.dumps(plan))
    r, wall = run_job(spark, t, target, t.name == "incremental", plan_path)
    out = {"action": r["status"], "job_s": round(wall, 3), **job_figures(r), "mode": r.get("mode")}
    out["phases"] = r.get("phases")
    if r.get("plan"):
        out["job_plan"] = {k: v for k, v in r["plan"].items() if k != "reasons"}
    return out


def plan_summary(plan: dict | None, source: str) -> dict[str, Any] | None:
    """The plan's figures without its paths (for the results)."""
    if plan is None:
        return None
    keys = ("files", "bytes", "num_output_files", "ratio_before", "ratio_after")
    reasons = [r for p in plan.get("partitions", []) for r in p.get("reasons", [])]
    return {"source": source, **{k: plan.get(k) for k in keys}, "reasons": reasons}


def day_step(
    spark, t: PolicyTable, day: int, appends: dict, params: IncrementalParams, target: int, dt_target: int, work: Path
) -> dict[str, Any]:
    """One day of one policy: append, stats, the sensor, the run if it says so, stats again, the ratios."""
    rec: dict[str, Any] = {"day": day, "appended_bytes": append_day(t, appends, day)}
    snap, rec["stats_s"] = collect(spark, t)
    before = measure(snap)
    rec["worst_before"] = before["worst"]
    payload, plan, source = sensor(snap, t, params if t.name == "incremental" else None)
    rec["decision"] = payload["decision"]
    rec["plan"] = plan_summary(plan, source)
    rec.update(action="none", job_s=0.0, bytes_rewritten=0, files_rewritten=0)
    if payload["decision"] == "recluster":
        rec.update(act(spark, t, plan, target, dt_target, work, day))
    if rec["bytes_rewritten"]:
        snap, rec["stats_after_s"] = collect(spark, t)
        after = measure(snap)
    else:
        after = before
    rec.update(ratios=after["ratios"], files_read=after["files_read"], worst=after["worst"], files=after["files"])
    rec["bytes"] = table_bytes(snap)
    return rec


def table_bytes(snapshot) -> int:
    """The bytes of the snapshot's files (one row per file and column: one column's rows)."""
    import pyarrow.compute as pc

    one = snapshot.filter(pc.equal(snapshot["column_name"], COLUMNS[0]))
    return int(pc.sum(one["file_size"]).as_py() or 0)


# --------------------------------------------------------------------------- rows, totals


def rows_checksum(files: list[str]) -> dict[str, Any]:
    """Rows and DuckDB ``sum(hash(l_orderkey, l_linenumber))`` over Parquet files."""
    import duckdb

    con = duckdb.connect()
    try:
        q = f"SELECT count(*), sum(hash({', '.join(ROW_KEY)}))::VARCHAR FROM read_parquet(?)"
        rows, total = con.execute(q, [files]).fetchone()
    finally:
        con.close()
    return {"rows": int(rows), "checksum": total or "0"}


def check_rows(tables: list[PolicyTable], expected: dict[str, Any]) -> dict[str, Any]:
    """Each table's rows and checksum against base + appends; ``ok`` when all equal."""
    out: dict[str, Any] = {"expected": expected}
    for t in tables:
        if t.delta:
            s = bc.delta_rows_checksum(t.path, ROW_KEY)
            got = {"rows": s["rows"], "checksum": s["checksum"]}
        else:
            got = rows_checksum(t.live_files())
        out[t.name] = {**got, "equal": got == expected}
    out["ok"] = all(v["equal"] for k, v in out.items() if k not in ("expected", "ok"))
    return out


def totals(days: list[dict[str, Any]]) -> dict[str, Any]:
    """A policy's totals over the days."""
    appended = sum(d["appended_bytes"] for d in days)
    rewritten = sum(d["bytes_rewritten"] for d in days)
    amplification = metrics.write_amplification(rewritten, appended)  # the UI's rule: sums, not a mean of ratios
    worst = [d["worst"] for d in days]
    return {
        "runs": sum(1 for d in days if d["bytes_rewritten"]),
        "recluster_decisions": sum(1 for d in days if d["decision"] == "recluster"),
        "bytes_appended": appended,
        "bytes_rewritten": rewritten,
        "files_rewritten": sum(d["files_rewritten"] for d in days),
        "write_amplification": round(amplification, 3) if amplification is not None else None,
        "mean_worst_ratio": round(sum(worst) / len(worst), 4) if worst else None,
        "max_worst_ratio": round(max(worst), 4) if worst else None,
        "clustering_s": round(sum(d["job_s"] for d in days), 2),
        "stats_s": round(sum(d["stats_s"] + d.get("stats_after_s", 0.0) for d in days), 2),
        "final_files": days[-1]["files"] if days else None,
        "final_bytes": days[-1]["bytes"] if days else None,
    }


def compare(policies: dict[str, dict[str, Any]]) -> dict[str, Any] | None:
    """Incremental against full: bytes and time ratios and issue #25's goals."""
    inc, full = policies.get("incremental"), policies.get("full")
    if not inc or not full:
        return None
    ti, tf = inc["totals"], full["totals"]
    br = ti["bytes_rewritten"] / tf["bytes_rewritten"] if tf["bytes_rewritten"] else None
    tr = ti["clustering_s"] / tf["clustering_s"] if tf["clustering_s"] else None
    goals = [
        ("mean worst ratio <= full's + 0.2", ti["mean_worst_ratio"] <= tf["mean_worst_ratio"] + 0.2),
        ("worst ratio never above 1.5", ti["max_worst_ratio"] <= 1.5),
        ("bytes rewritten <= 1/5 of full's", br is not None and br <= 0.2),
        ("clustering time <= 1/3 of full's", tr is not None and tr <= 1 / 3),
        ("moonshot: bytes rewritten <= 1/10 of full's", br is not None and br <= 0.1),
    ]
    return {
        "bytes_ratio": round(br, 4) if br is not None else None,
        "time_ratio": round(tr, 4) if tr is not None else None,
        "mean_worst_delta": round(ti["mean_worst_ratio"] - tf["mean_worst_ratio"], 4),
        "goals": [{"goal": g, "pass": bool(ok)} for g, ok in goals],
    }


def print_summary(res: dict[str, Any]) -> None:
    """The totals per policy and the comparison, as a table on stdout."""
    lines = [
        "",
        f"Incremental re-clustering benchmark: lineitem SF{res['sf']:g}, base {res['base']['files']} files "
        f"{res['base']['bytes'] / MB:.0f} MB, {res['days']} days x 2 files of {res['appends']['rows_per_day']:,} rows",
        f"{'policy':<12}{'runs':>5}{'rewritten MB':>14}{'files':>7}{'WA':>7}{'mean':>7}{'worst':>7}"
        f"{'cluster s':>11}{'stats s':>9}{'final files':>13}{'rows':>6}",
    ]
    for name, p in res["policies"].items():
        t = p["totals"]
        ok = res["rows_check"].get(name, {}).get("equal")
        lines.append(
            f"{name:<12}{t['runs']:>5}{t['bytes_rewritten'] / MB:>14.1f}{t['files_rewritten']:>7}"
            f"{t['write_amplification']:>7.2f}{t['mean_worst_ratio']:>7.3f}{t['max_worst_ratio']:>7.3f}"
            f"{t['clustering_s']:>11.1f}{t['stats_s']:>9.1f}{t['final_files']!s:>13}{'ok' if ok else 'DIFF':>6}"
        )
    cmp_ = res.get("comparison")
    if cmp_:
        lines.append(
            f"incremental / full: bytes {cmp_['bytes_ratio']}, clustering time {cmp_['time_ratio']}, "
            f"mean worst ratio {cmp_['mean_worst_delta']:+.3f}"
        )
        lines += [f"  {'PASS' if g['pass'] else 'FAIL'}  {g['goal']}" for g in cmp_["goals"]]
    print("\n".join(lines), flush=True)


# --------------------------------------------------------------------------- main


def machine() -> dict[str, Any]:
    """CPUs, model and versions of what was measured (``run_all.machine``'s, in this section's shape)."""
    import run_all

    m = run_all.machine()
    keep = {k: m[k] for k in ("cpus", "cpu_model", "python")}
    return {**keep, "pyspark": m["versions"]["pyspark"], "deltalake": m["versions"]["deltalake"]}


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """The command line (see the module doc)."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sf", type=float, default=1.0, help="TPC-H scale factor of the base (default 1)")
    ap.add_argument("--days", type=int, default=30, help="appends (default 30), each of 1/days of the base's rows")
    ap.add_argument("--files", type=int, default=64, help="files of the base (default 64)")
    ap.add_argument(
        "--work", default=str(REPO / ".bench" / "incremental"), help="data and tables (default .bench/incremental)"
    )
    ap.add_argument(
        "--src",
        default=None,
        help="lineitem as generated, 64 files (default <work>/lineitem_sf<SF>_64; generated when absent, reused when "
        "its tpch_data marker matches, e.g. run_all's)",
    )
    ap.add_argument("--policies", default=",".join(POLICIES), help=f"comma-separated subset of {', '.join(POLICIES)}")
    ap.add_argument("--target-ratio", type=float, default=IncrementalParams().target_ratio, help="incremental's target")
    ap.add_argument("--merge-into", default=None, help="a results JSON to store the figures in (key 'incremental')")
    ap.add_argument("--doc", default=None, help="a markdown whose incremental section to (re)write (with --merge-into)")
    ap.add_argument(
        "--json-out", default=None, help="write the results JSON here (default <work>/incremental_results.json)"
    )
    ap.add_argument("--keep", action="store_true", help="keep the policies' tables in --work")
    a = ap.parse_args(argv)
    a.policies = [p.strip() for p in a.policies.split(",") if p.strip()]
    unknown = set(a.policies) - set(POLICIES)
    if unknown:
        ap.error(f"unknown policies {sorted(unknown)}; choose from {', '.join(POLICIES)}")
    if a.doc and not a.merge_into:
        ap.error("--doc needs --merge-into (the section is rendered from that JSON)")
    return a


def incremental_params(target: int, target_ratio: float) -> IncrementalParams:
    """The policy's knobs at this scale: the defaults' sizes in units of the target file size (as sim_incremental)."""
    d = IncrementalParams()
    scale = target / d.target_file_bytes
    return IncrementalParams(
        target_ratio=target_ratio,
        target_file_bytes=target,
        min_new_files=d.min_new_files,
        min_new_bytes=max(1, int(d.min_new_bytes * scale)),
        seal_bytes=max(1, int(d.seal_bytes * scale)) if d.seal_bytes else None,
    )


def setup(spark, a: argparse.Namespace, work: Path) -> tuple[dict[str, Any], dict[str, Any], list[PolicyTable]]:
    """Data, base, appends, and each policy's copy of the base."""
    src = Path(a.src).resolve() if a.src else work / f"lineitem_sf{a.sf:g}_64"
    gen = generate_lineitem(a.sf, src, files=64)
    log(f"lineitem SF{a.sf:g}: {gen['rows']:,} rows in {src} ({'reused' if gen['skipped'] else 'generated'})")
    appends = make_appends(src, work / f"appends_sf{a.sf:g}_d{a.days}", a.days)
    log(f"base: run_cluster {CURVE} into {a.files} files")
    base = cluster_base(spark, src, work / "base", a.files)
    log(f"base: {base['files']} files, {base['bytes'] / MB:.1f} MB, clustered in {base['cluster_wall_s']:.1f} s")
    if "incremental" in a.policies and not base["job_has_mode"]:
        raise NotReady("run_cluster's result has no 'mode': the job does not run incremental plans yet")
    tables = []
    for name in a.policies:
        dst = work / f"table_{name.replace('-', '_')}"
        if name == "delta-rs":
            bc.write_delta_input(Path(base["dir"]), dst, bc.MemoryMonitor())
            tables.append(PolicyTable(name, dst, delta=True))
        else:
            bc.copy_input(Path(base["dir"]), dst)
            tables.append(PolicyTable(name, dst))
    return base, appends, tables


def run_days(
    spark, a, tables: list[PolicyTable], appends: dict, params, targets: tuple[int, int], work: Path, res
) -> None:
    """The days: every policy's step, a progress line per policy and day, the load after each day."""
    t0 = time.perf_counter()
    for day in range(1, a.days + 1):
        s = time.perf_counter()
        for t in tables:
            rec = day_step(spark, t, day, appends, params, *targets, work)
            t.days.append(rec)
            plan = rec.get("plan") or {}
            log(
                f"day {day:2d} {t.name:<11} {rec['decision']:<9} worst {rec['worst_before']:.3f} -> "
                f"{rec['worst']:.3f}  {rec['action']:<12} {rec['bytes_rewritten'] / MB:8.1f} MB "
                f"{rec['files_rewritten']:4d} files  job {rec['job_s']:6.1f} s  stats {rec['stats_s']:4.1f}"
                f"+{rec.get('stats_after_s', 0.0):.1f} s  {rec['files']} files"
                + (f"  plan {plan.get('files')} files ({plan.get('source')})" if plan else "")
            )
        load = round(os.getloadavg()[0], 2)
        res.setdefault("load_per_day", []).append(load)
        log(
            f"day {day} done in {time.perf_counter() - s:.1f} s ({(time.perf_counter() - t0) / 60:.1f} min of days, "
            f"load {load})"
        )


def run(a: argparse.Namespace) -> dict[str, Any]:
    """The whole benchmark; the results dict."""
    work = Path(a.work).resolve()
    work.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    res: dict[str, Any] = {
        "started_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "command": "python benchmarks/bench_incremental.py " + " ".join(a.argv),
        "sf": a.sf,
        "days": a.days,
        "columns": COLUMNS,
        "curve": CURVE,
        "machine": machine(),
        "load_start": round(os.getloadavg()[0], 2),
        "health_policy": HEALTH.to_dict(),
    }
    spark = bc.build_spark(64)
    tables: list[PolicyTable] = []
    try:
        spark.sparkContext.setLogLevel("WARN")
        res["spark_version"] = spark.version
        base, appends, tables = setup(spark, a, work)
        target = base["mean_file_bytes"]
        params = incremental_params(target, a.target_ratio)
        dt = next((t for t in tables if t.delta), None)
        dt_files = bc.delta_live_files(dt.path) if dt else []
        dt_target = bc.dir_bytes(dt_files) // max(len(dt_files), 1)
        res.update(base=base, target_file_bytes=target, delta_target_file_bytes=dt_target)
        res["incremental_params"] = dataclasses.asdict(params)
        res["appends"] = {
            "rows_per_day": appends["params"]["rows_per_day"],
            "files_per_day": 2,
            "orderkey_shift": appends["orderkey_shift"],
        }
        run_days(spark, a, tables, appends, params, (target, dt_target), work, res)
        src_files = [*layout_report.data_files(base["dir"])]
        src_files += [str(Path(appends["dir"]) / n) for names in appends["files"][: a.days] for n in names]
        res["rows_check"] = check_rows(tables, rows_checksum(src_files))
        res["policies"] = {t.name: {"days": t.days, "totals": totals(t.days)} for t in tables}
        res["comparison"] = compare(res["policies"])
    finally:
        spark.stop()
    if not a.keep:
        for t in tables:
            shutil.rmtree(t.path, ignore_errors=True)
        shutil.rmtree(work / "base", ignore_errors=True)
    res["wall_s"] = round(time.perf_counter() - t0, 1)
    res["load_end"] = round(os.getloadavg()[0], 2)
    res["finished_utc"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    return res


def merge_into(path: Path, inc: dict[str, Any]) -> dict[str, Any]:
    """Store ``inc`` under ``"incremental"`` of the JSON at ``path`` (created if absent; other keys kept)."""
    doc = json.loads(path.read_text()) if path.exists() else {}
    doc["incremental"] = inc
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=1, default=str) + "\n")
    return doc


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args[:1] == ["--delta-zorder"]:
        return delta_zorder_child(args[1:])
    a = parse_args(args)
    a.argv = args
    try:
        res = run(a)
    except NotReady as exc:
        log(f"not ready: {exc}")
        return 3
    out = Path(a.json_out) if a.json_out else Path(a.work).resolve() / "incremental_results.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(res, indent=1, default=str) + "\n")
    print_summary(res)
    log(f"results: {out} ({res['wall_s'] / 60:.1f} min)")
    if a.merge_into:
        import bench_report

        target = Path(a.merge_into).resolve()
        merge_into(target, res)
        bench_report.render_incremental(res, target.parent, Path(a.doc).resolve() if a.doc else None)
        log(f"merged into {target}" + (f"; section of {a.doc} rewritten" if a.doc else ""))
    if not res["rows_check"]["ok"]:
        log(f"ROWS DIFFER: {res['rows_check']}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
