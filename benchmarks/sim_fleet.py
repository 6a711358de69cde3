"""Issue 52's benchmark: a fleet of tables under one budget, simulated; and planning 1,000 tables without Spark.

    nice -n 10 .venv/bin/python benchmarks/sim_fleet.py [--tables 50] [--days 60] [--budget-share 0.5]
        [--starvation-runs 3] [--plan-tables 1000] [--hook-tables 200] [--real]
        [--merge-into docs/benchmarks/results.json --doc docs/benchmarks.md --fleet-doc docs/fleet.md]

The fleet (``--tables``, seeded): each table starts clustered in ``k0`` target-sized files (log-uniform 16..2,048),
gets ``f x k0`` unsorted target-sized files a day (``f`` log-uniform 1%..8%) and is read with weight ``w``
(log-normal, sigma 1). A table's state is ``sim_incremental.Model``'s: groups of files written by one run (their
files read per column measured on the job's own curve: ``curve_cost.files_read``, Hilbert, d = 3) and one group of
unsorted files (each read by every query). The sensor's rule each day: degraded when the worst column's files read
over the ideal ``N ** (1 - 1/d)`` exceeds ``--threshold`` (1.5). A table's plan (the incremental rule's shape): its
unsorted files plus its smallest clustered groups, as few as bring the worst ratio to ``--goal`` (the rule's default
goal, 1.35; all of them when none does); its cost is the bytes it rewrites, its gain the files a point query reads saved (the mean over columns), as
the real plan estimates them.

Policies, over ``--days`` days: *never*; *unbounded* (every degraded table re-clustered the day its sensor says so);
*budgeted* (the real choice, ``core.fleet.selection.select``: ranked by read weight x files saved per byte, at most
``--budget-share`` x the unbounded policy's bytes a day, a table skipped for budget ``--starvation-runs`` runs in a
row served first); *round-robin* (the same budget, degraded tables served in a fixed cyclic order, each whole plan).
Reported: bytes rewritten, the read savings kept (weighted files read saved against *never*, summed over the tables and
the days, over the unbounded policy's), and the most runs a degraded table waited.

The planning benchmark (``--plan-tables``): synthetic stats snapshots (FILE_STATS_SCHEMA rows, 24-400 files of 2
columns each, some tables clustered, most degraded) evaluated by the sensor's real rules with their incremental plans
(``recluster_policy.evaluate``, what ``FleetHook`` runs after reading a table's stats), on threads, then chosen
(``select``): the wall time, no Spark, no storage. ``--hook-tables``: as many real small Parquet tables with their stats
stores on local disk, planned through ``FleetHook`` (the I/O included). ``--real`` also plans the tests' real fleet of 9 small tables
(Parquet, Delta, Iceberg; ``tests/fleet_tables.py``) through ``FleetHook`` under a 400 KB budget, the
choice the DAG's ``dag.test()`` runs (``tests/airflow/test_fleet.py``).
"""

from __future__ import annotations

import argparse
import datetime as dt
import math
import os
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_doc import merge_into, splice_section  # noqa: E402
from sim_incremental import D, Model  # noqa: E402  (the group model, reused)

from airflow_zorder.core.fleet.budget import Budget  # noqa: E402
from airflow_zorder.core.fleet.evaluation import cores, evaluate_fleet  # noqa: E402
from airflow_zorder.core.fleet.selection import TableEvaluation, select  # noqa: E402
from airflow_zorder.core.fleet.spec import FleetTable  # noqa: E402
from airflow_zorder.core.layout import curve_cost  # noqa: E402
from airflow_zorder.core.policy.incremental import IncrementalParams  # noqa: E402
from airflow_zorder.core.policy.plan_defaults import DEFAULT_TARGET_RATIO  # noqa: E402

TARGET = 512 << 20  # bytes of a target-sized file (a model quantum)
CURVE = "hilbert"
START, END = "<!-- bench:fleet:start -->", "<!-- bench:fleet:end -->"
SUMMARY_START, SUMMARY_END = "<!-- bench:fleet-summary:start -->", "<!-- bench:fleet-summary:end -->"
POLICIES = ("never", "unbounded", "budgeted", "round_robin")
SWEEP_STARVATION = (1, 3, 5, 10)


def cost(k: int, orient: str, rows_per_file: int) -> np.ndarray:
    """Files a point query on each column reads in ``k`` files cut along the job's curve (measured)."""
    return np.asarray(curve_cost.files_read(CURVE, int(k), D), dtype=np.float64)


PARTITION_FILES = 128  # a table's partitions hold about this many files (the plan is trimmed by partition)


@dataclass
class SimTable:
    """One table of the fleet: its partitions' model states, appends, read weight and what happened to it."""

    name: str
    k0: int
    rate: float  # unsorted files a day, landing in partitions at random
    weight: float
    parts: list[tuple] = field(default_factory=list)
    rng: np.random.Generator | None = None
    carry: float = 0.0
    waited: int = 0  # runs in a row degraded and not re-clustered
    max_waited: int = 0
    runs: int = 0


@dataclass
class Fleet:
    tables: list[SimTable]
    model: Model
    goal: float
    threshold: float
    bytes: int = 0
    read_cost: float = 0.0  # sum over days of sum_i w_i * files read per query (mean over columns)
    daily_bytes: list[int] = field(default_factory=list)


def make_fleet(n: int, seed: int, threshold: float, goal: float = DEFAULT_TARGET_RATIO) -> Fleet:
    rng = np.random.default_rng(seed)
    model = Model(tq=1.0, date=False, days_base=0, cap=threshold, cost=cost, rows_per_file=0, orients=("r0",))
    tables = []
    for i in range(n):
        k0 = int(round(math.exp(rng.uniform(math.log(16), math.log(2048)))))
        rate = k0 * math.exp(rng.uniform(math.log(0.01), math.log(0.08)))
        weight = float(rng.lognormal(0.0, 1.0))
        p = max(1, round(k0 / PARTITION_FILES))
        sizes = [k0 // p + (j < k0 % p) for j in range(p)]
        parts = [((k, k, 0, 0, "r0"),) for k in sizes]
        tables.append(SimTable(f"t{i:02d}", k0, rate, weight, parts, np.random.default_rng([seed, i])))
    return Fleet(tables, model, min(goal, threshold), threshold)


def files_read(model: Model, state: tuple) -> float:
    """Files a point query reads in one partition, the mean over the columns (what the plan's gain is counted in)."""
    return float(np.sum([model.vec(g, 0) for g in state], axis=0).mean())


def table_files_read(model: Model, t: SimTable) -> float:
    """Files a point query without a partition filter reads: every partition's."""
    return sum(files_read(model, st) for st in t.parts)


def plan_of(model: Model, state: tuple, goal: float) -> tuple[tuple, int, float]:
    """``(state after, quanta rewritten, files read saved)`` of one partition: its unsorted files plus as few of its
    smallest clustered groups as bring the worst ratio to ``goal`` (all of them when none does)."""
    raw = [g for g in state if g[4] == "raw"]
    rest = sorted((g for g in state if g[4] != "raw"), key=lambda g: g[0])
    before = files_read(model, state)
    for j in range(len(rest) + 1):
        members = raw + rest[:j]
        if not members or (len(members) == 1 and members[0][4] != "raw"):
            continue
        after = tuple(sorted(rest[j:] + [model.merged(members, "r0")]))
        if model.ratio(after, 0) <= goal or j == len(rest):
            return after, sum(g[0] for g in members), before - files_read(model, after)
    return state, 0, 0.0


def _plan_doc(entries: dict[str, tuple[tuple, int, float]]) -> dict[str, Any]:
    """A plan document of the degraded partitions, with the estimates the selection reads."""
    parts = [
        {
            "partition": label,
            "files": 1,
            "bytes": q * TARGET,
            "num_output_files": 1,
            "columns": [{"files_read_before": saved, "files_read_after": 0.0}],
        }
        for label, (_, q, saved) in entries.items()
    ]
    nbytes = sum(p["bytes"] for p in parts)
    return {"columns": ["a"], "files": len(parts), "bytes": nbytes, "num_output_files": len(parts), "partitions": parts}


def simulate(
    n: int, days: int, seed: int, threshold: float, goal: float, policy: str, daily_budget: int | None, starve: int
) -> Fleet:
    """One policy over the days; returns the fleet (bytes, read cost, waits)."""
    fleet = make_fleet(n, seed, threshold, goal)
    model = fleet.model
    skipped: dict[str, int] = {}
    pointer = 0
    for _day in range(days):
        plans: dict[str, dict[str, tuple]] = {}
        for t in fleet.tables:
            t.carry += t.rate
            new = int(t.carry)
            t.carry -= new
            if new:
                landed = np.bincount(t.rng.integers(0, len(t.parts), new), minlength=len(t.parts))
                for j, m in enumerate(landed):
                    if m:
                        t.parts[j] = model.add(t.parts[j], [(int(m), int(m), 0, 0, "raw")])
            if policy == "never":
                continue
            worse = {f"p={j}": st for j, st in enumerate(t.parts) if model.ratio(st, 0) > threshold}
            entries = {label: plan_of(model, st, fleet.goal) for label, st in worse.items()}
            entries = {k: v for k, v in entries.items() if v[1] > 0}
            if entries:
                plans[t.name] = entries
        degraded = [t for t in fleet.tables if t.name in plans]
        served: dict[str, list[str]] = {}
        if policy == "unbounded":
            served = {t.name: list(plans[t.name]) for t in degraded}
        elif policy == "budgeted":
            evals = [
                TableEvaluation(
                    FleetTable(t.name, read_weight=t.weight),
                    payload={"decision": "recluster", "plan": _plan_doc(plans[t.name])},
                )
                for t in degraded
            ]
            chosen = select(evals, Budget(max_bytes=daily_budget), skipped_runs=skipped, starvation_runs=starve)
            skipped = {k: v for k, v in chosen.skipped_runs().items() if v}
            served = {d["table"]: [p["partition"] for p in d["plan"]["partitions"]] for d in chosen.chosen}
        elif policy == "round_robin":
            left = daily_budget
            for t in sorted(degraded, key=lambda t: (int(t.name[1:]) - pointer) % n):
                nbytes = sum(q for _, q, _ in plans[t.name].values()) * TARGET
                if nbytes > left:
                    continue  # its turn comes again when it fits
                served[t.name] = list(plans[t.name])
                left -= nbytes
                pointer = (int(t.name[1:]) + 1) % n
        spent = 0
        for t in fleet.tables:
            if t.name not in plans:
                t.waited = 0
            elif t.name in served:
                for label in served[t.name]:
                    after, q, _ = plans[t.name][label]
                    t.parts[int(label[2:])] = after
                    spent += q * TARGET
                t.runs += 1
                t.waited = 0
            else:
                t.waited += 1
                t.max_waited = max(t.max_waited, t.waited)
        fleet.bytes += spent
        fleet.daily_bytes.append(spent)
        fleet.read_cost += sum(t.weight * table_files_read(model, t) for t in fleet.tables)
    return fleet


def run_sim(a: argparse.Namespace) -> dict[str, Any]:
    t0 = time.perf_counter()
    args = (a.tables, a.days, a.seed, a.threshold, a.goal)
    never = simulate(*args, "never", None, a.starvation_runs)
    unbounded = simulate(*args, "unbounded", None, a.starvation_runs)
    daily = int(a.budget_share * unbounded.bytes / a.days)
    budgeted = simulate(*args, "budgeted", daily, a.starvation_runs)
    robin = simulate(*args, "round_robin", daily, a.starvation_runs)
    saved_unbounded = never.read_cost - unbounded.read_cost
    out: dict[str, Any] = {
        "tables": a.tables,
        "days": a.days,
        "seed": a.seed,
        "threshold": a.threshold,
        "goal": min(a.goal, a.threshold),
        "budget_share": a.budget_share,
        "daily_budget_bytes": daily,
        "starvation_runs": a.starvation_runs,
        "fleet_bytes": int(sum(t.k0 for t in never.tables) * TARGET),
        "partitions": sum(len(t.parts) for t in never.tables),
        "appended_bytes": int(sum(t.rate for t in never.tables) * a.days * TARGET),
        "policies": {},
    }
    for name, f in (("unbounded", unbounded), ("budgeted", budgeted), ("round_robin", robin)):
        out["policies"][name] = {
            "bytes": int(f.bytes),
            "bytes_vs_unbounded": round(f.bytes / unbounded.bytes, 3) if unbounded.bytes else None,
            "read_savings_kept": round((never.read_cost - f.read_cost) / saved_unbounded, 4)
            if saved_unbounded
            else None,
            "runs": sum(t.runs for t in f.tables),
            "max_runs_waited": max(t.max_waited for t in f.tables),
            "max_daily_bytes": int(max(f.daily_bytes)),
        }
    out["sweep"] = sweep(a, range(a.seed, a.seed + a.seeds)) if a.seeds else []
    out["seconds"] = round(time.perf_counter() - t0, 1)
    return out


def sweep(a: argparse.Namespace, seeds: range) -> list[dict[str, Any]]:
    """The budgeted policy per starvation setting (None: no guard) over several fleets (seeds): read savings kept
    (mean, lowest) and the most runs a degraded table waited."""
    rows = []
    for starve in (*SWEEP_STARVATION, None):
        kept, waited, share = [], [], []
        for seed in seeds:
            args = (a.tables, a.days, seed, a.threshold, a.goal)
            never = simulate(*args, "never", None, 0)
            unbounded = simulate(*args, "unbounded", None, 0)
            daily = int(a.budget_share * unbounded.bytes / a.days)
            f = simulate(*args, "budgeted", daily, starve if starve is not None else 1 << 30)
            kept.append((never.read_cost - f.read_cost) / (never.read_cost - unbounded.read_cost))
            waited.append(max(t.max_waited for t in f.tables))
            share.append(f.bytes / unbounded.bytes)
        rows.append(
            {
                "starvation_runs": starve,
                "seeds": len(seeds),
                "kept_mean": round(float(np.mean(kept)), 4),
                "kept_min": round(float(np.min(kept)), 4),
                "max_runs_waited": int(max(waited)),
                "bytes_vs_unbounded_max": round(float(max(share)), 3),
            }
        )
    return rows


# --------------------------------------------------------------------------- planning 1,000 tables


def synthetic_snapshot(rng: np.random.Generator, files: int, clustered: bool) -> Any:
    """FILE_STATS_SCHEMA rows of one table: ``files`` files of 2 integer columns over [0, 1e6), each file a cell of a
    grid when ``clustered``, else spanning most of the range; appended files unsorted."""
    from airflow_zorder.core.stats.stats_schema import file_stats_table

    side = max(1, int(math.sqrt(files)))
    paths, sizes, rows, cols, mins, maxs = [], [], [], [], [], []
    for f in range(files):
        if clustered:
            cell = (f // side % side, f % side)
            lo = [c * 1_000_000 // side for c in cell]
            hi = [(c + 1) * 1_000_000 // side - 1 for c in cell]
        else:
            lo = list(rng.integers(0, 50_000, 2))
            hi = list(rng.integers(950_000, 1_000_000, 2))
        for j, c in enumerate(("a", "b")):
            paths.append(f"part-{f:05d}.parquet")
            sizes.append(int(rng.integers(400, 600)) << 20)
            rows.append(1_000_000)
            cols.append(c)
            mins.append(str(int(lo[j])))
            maxs.append(str(int(hi[j])))
    n = len(paths)
    now = dt.datetime.now(dt.UTC)
    return file_stats_table(
        {
            "snapshot_id": [1] * n,
            "table_name": ["t"] * n,
            "path": paths,
            "file_size": sizes,
            "file_rows": rows,
            "column_name": cols,
            "min_value": mins,
            "max_value": maxs,
            "arrow_type": ["int64"] * n,
            "has_stats": [True] * n,
            "collected_at": [now] * n,
        },
        n,
    )


_TIMES = ("plan_s", "evaluate_s", "cpu_s", "load_average")


def _cpu() -> float:
    """CPU seconds of this process and its reaped children (the forked evaluators)."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def run_planning(n: int, seed: int, workers: int, processes: int = 1) -> dict[str, Any]:
    from airflow_zorder.core.policy import recluster_policy
    from airflow_zorder.core.policy.thresholds import HealthPolicy

    rng = np.random.default_rng(seed)
    t0 = time.perf_counter()
    snaps = {}
    for i in range(n):
        files = int(rng.integers(24, 401))
        snaps[f"t{i:04d}"] = synthetic_snapshot(rng, files, clustered=rng.random() < 0.3)
    made = time.perf_counter() - t0
    policy = HealthPolicy()
    params = IncrementalParams(target_file_size=512 << 20)

    def evaluate(t: FleetTable) -> dict[str, Any]:
        return recluster_policy.evaluate(snaps[t.table], ["a", "b"], policy, table=t.table, incremental=params)

    tables = [FleetTable(name, read_weight=float(rng.lognormal())) for name in snaps]
    load = os.getloadavg()[0]
    c1, t1 = _cpu(), time.perf_counter()
    evals = evaluate_fleet(tables, evaluate, max_workers=workers, processes=processes)
    t2 = time.perf_counter()
    plan = select(evals, Budget(max_bytes=2 << 40))
    c3, t3 = _cpu(), time.perf_counter()
    totals = plan.totals()
    return {
        "tables": n,
        "files": int(sum(s.num_rows for s in snaps.values()) // 2),
        "workers": workers,
        "processes": processes,
        "evaluate_s": round(t2 - t1, 2),
        "select_s": round(t3 - t2, 3),
        "plan_s": round(t3 - t1, 2),
        "cpu_s": round(c3 - c1, 2),
        "load_average": round(load, 1),
        "cpus": os.cpu_count(),
        "synthesis_s": round(made, 1),
        "by_reason": totals["by_reason"],
        "budget_bytes": 2 << 40,
        "chosen_bytes": totals["bytes"],
        "errors": sum(1 for e in evals if e.error),
    }


def run_real() -> dict[str, Any]:
    """The tests' real fleet (9 small tables) planned through ``FleetHook`` under a 400 KB budget."""
    sys.path.insert(0, str(REPO))
    from airflow_zorder.core.fleet.spec import expand
    from airflow_zorder.hooks.fleet import FleetHook

    sys.path.insert(0, str(REPO / "tests"))  # the tests' helper modules (fleet_tables, overlap_tables)
    from fleet_tables import write_fleet

    with tempfile.TemporaryDirectory() as tmp:
        entries, _ = write_fleet(Path(tmp) / "fleet")
        tables, _ = expand(entries)
        t0 = time.perf_counter()
        plan = FleetHook(max_workers=4, record_decisions=False).plan(tables, Budget(max_bytes=400 << 10))
        seconds = time.perf_counter() - t0
        free = FleetHook(max_workers=4, record_decisions=False).plan(tables, Budget())
    totals, all_ = plan.totals(), free.totals()
    return {
        "tables": len(tables),
        "budget_bytes": 400 << 10,
        "plan_s": round(seconds, 2),
        "by_reason": totals["by_reason"],
        "chosen_bytes": totals["bytes"],
        "unbounded_bytes": all_["bytes"],
        "gain_kept": round(totals["gain"] / all_["gain"], 3) if all_["gain"] else None,
        "decisions": [
            {
                "table": Path(d["table"]).name if "/" in d["table"] else d["table"],
                "reason": d["reason"],
                "rank": d["rank"],
                "planned_bytes": d["planned_bytes"],
                "chosen_bytes": d["chosen_bytes"],
                "weighted_gain": d["weighted_gain"],
            }
            for d in plan.decisions
        ],
    }


def run_hook_planning(n: int, workers: int, processes: int | None = None) -> dict[str, Any]:
    """``n`` real Parquet tables (4 daily partitions x 4 scrambled files each, statistics collected from their
    footers into their stats stores on local disk) planned through ``FleetHook``: the planning path with its I/O."""
    sys.path.insert(0, str(REPO))
    from airflow_zorder.core.fleet.spec import FleetTable
    from airflow_zorder.evaluation.sample_data import write_table
    from airflow_zorder.hooks.fleet import FleetHook

    sys.path.insert(0, str(REPO / "tests"))
    import overlap_tables

    cols = ["user_id", "product_id"]
    with tempfile.TemporaryDirectory() as tmp:
        tables = []
        for i in range(n):
            path = Path(tmp) / f"t{i:04d}"
            write_table(str(path), rows=2000, files_per_partition=4, seed=i)
            overlap_tables.collect(path, columns=cols)
            tables.append(FleetTable(str(path), tuple(cols), target_file_size="4KB"))
        hook = FleetHook(max_workers=workers, processes=processes, record_decisions=False)
        load = os.getloadavg()[0]
        c0, t0 = _cpu(), time.perf_counter()
        plan = hook.plan(tables, Budget(max_bytes=1 << 20))
        seconds, cpu = time.perf_counter() - t0, _cpu() - c0
    return {
        "tables": n,
        "files": n * 16,
        "workers": workers,
        "processes": hook.processes_for(tables),
        "cpu_s": round(cpu, 2),
        "load_average": round(load, 1),
        "plan_s": round(seconds, 2),
        "per_table_ms": round(1000 * seconds / n, 1),
        "by_reason": plan.totals()["by_reason"],
    }


# --------------------------------------------------------------------------- the doc section


def _gb(n: float) -> str:
    return f"{n / (1 << 40):.1f} TiB" if n >= 1 << 40 else f"{n / (1 << 30):.0f} GiB"


def _spread(p: dict[str, Any]) -> str:
    """How a planning run spread its tables: over processes, or threads in one process."""
    procs = p.get("processes") or 1
    return f"{procs} processes" if procs != 1 else f"{p.get('workers', 1)} threads"


def fleet_section(r: dict[str, Any]) -> list[str]:
    """The fleet section of docs/benchmarks.md, from the figures under ``"fleet"`` of results.json."""
    s, p = r["sim"], r.get("planning")
    lines = [START, "", "## A fleet of tables under one budget (issue 52)", ""]
    lines.append(
        f"Simulated (`benchmarks/sim_fleet.py`, {r['finished_utc']}, {s['seconds']} s): {s['tables']} tables of "
        f"{_gb(s['fleet_bytes'])} in all (16 to 2,048 files of 512 MiB each), {_gb(s['appended_bytes'])} appended "
        f"unsorted over {s['days']} days (1% to 8% of a table a day), read weights log-normal; the sensor's trigger "
        f"ratio {s['threshold']}, plans to {s['goal']}. The budgeted policy is the DAG's own choice "
        f"(`core.fleet.selection.select`) at {s['budget_share']:.0%} of the unbounded policy's bytes a day "
        f"({_gb(s['daily_budget_bytes'])}), starvation guard after {s['starvation_runs']} runs."
    )
    lines += [
        "",
        "| policy | bytes rewritten | vs unbounded | read savings kept | runs | most runs a degraded table waited |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for name, label in (("unbounded", "unbounded"), ("budgeted", "budgeted (ranked)"), ("round_robin", "round-robin")):
        q = s["policies"][name]
        lines.append(
            f"| {label} | {_gb(q['bytes'])} | {q['bytes_vs_unbounded']:.2f} | {q['read_savings_kept']:.1%} | "
            f"{q['runs']} | {q['max_runs_waited']} |"
        )
    b = s["policies"]["budgeted"]
    met = "met" if b["read_savings_kept"] >= 0.9 and b["bytes_vs_unbounded"] <= 0.5 + 1e-9 else "NOT met"
    lines += [
        "",
        f"Goal: at half the unbounded policy's bytes, keep at least 90% of its read savings (weighted files read saved "
        f"against never re-clustering, summed over the tables and the days): this fleet "
        f"**{b['read_savings_kept']:.1%} at {b['bytes_vs_unbounded']:.2f}x the bytes, {met}**"
        + "".join(
            f" (over {row['seeds']} fleets: {row['kept_mean']:.1%} on average, {row['kept_min']:.1%} the lowest)"
            for row in s.get("sweep") or []
            if row["starvation_runs"] == s["starvation_runs"]
        )
        + ". "
        f"No degraded table waited more than {b['max_runs_waited']} runs (the guard serves a table skipped "
        f"{s['starvation_runs']} runs in a row first; a table whose plan is larger than a run's budget waits "
        "and is shown with reason `budget`).",
    ]
    if s.get("sweep"):
        lines += [
            "",
            f"The guard's price, over {s['sweep'][0]['seeds']} fleets (seeds {s['seed']} on, the same budget share):",
            "",
            "| starvation guard after | read savings kept (mean) | lowest | most runs a degraded table waited |",
            "|---|---:|---:|---:|",
        ]
        for row in s["sweep"]:
            n = row["starvation_runs"]
            lines.append(
                f"| {f'{n} run' + 's' * (n > 1) if n else 'off'} | {row['kept_mean']:.1%} | {row['kept_min']:.1%} | "
                f"{row['max_runs_waited']} |"
            )
    if p:
        lines += [
            "",
            f"Planning {p['tables']:,} tables without Spark: {p['plan_s']} s of wall time, {p['cpu_s']} s of CPU, at a "
            f"load average of {p['load_average']} on {p['cpus']} CPUs shared with other work ({p['evaluate_s']} s evaluating "
            f"{p['files']:,} files' synthetic statistics with the sensor's rules and incremental plans on "
            f"{_spread(p)}, {p['select_s']} s choosing under a 2 TiB budget; goal under 10 s: "
            f"**{'met' if p['plan_s'] < 10 else 'NOT met'}** in wall time; the evaluation is CPU-bound Python: threads "
            "share one interpreter, processes (`processes=0`: one per core) spread it"
            + (
                f"; on threads only: {p['threads_only']['plan_s']} s)"
                if isinstance(p.get("threads_only"), dict) and p.get("processes", 1) != 1
                else ")"
            )
            + ". "
            "Synthetic stats held in memory: reading each table's "
            "stats store or Delta log / Iceberg manifests adds its I/O"
            + (
                f"; through `FleetHook` on {r['hook_planning']['tables']} real Parquet tables (16 files each, stats "
                f"stores on local disk, {_spread(r['hook_planning'])}): {r['hook_planning']['plan_s']} s, "
                f"{r['hook_planning']['per_table_ms']} ms a table."
                if r.get("hook_planning")
                else "."
            ),
        ]
    real = r.get("real")
    if real:
        lines += [
            "",
            f"The tests' real fleet ({real['tables']} small tables: Parquet, Delta, Iceberg) planned through "
            f"`FleetHook` in {real['plan_s']} s under a {real['budget_bytes'] >> 10} KB budget: "
            + ", ".join(f"{n} {k}" for k, n in real["by_reason"].items() if n)
            + f"; {real['chosen_bytes'] >> 10} KB of {real['unbounded_bytes'] >> 10} KB planned, "
            f"{real['gain_kept']:.0%} of the weighted savings. `tests/airflow/test_fleet.py` runs this choice "
            "through the `zorder_fleet` DAG in `dag.test()` (spark-submit per chosen table).",
            "",
            "| table | reason | rank | planned | chosen | weighted gain (files) |",
            "|---|---|---:|---:|---:|---:|",
        ]
        for d in real["decisions"]:
            lines.append(
                f"| {d['table']} | {d['reason']} | {d['rank'] or ''} | {d['planned_bytes'] >> 10} KB | "
                f"{d['chosen_bytes'] >> 10} KB | {d['weighted_gain']:.1f} |"
            )
    lines += [
        "",
        "Reproduce: `make bench-fleet` (`.venv/bin/python benchmarks/sim_fleet.py --real --merge-into "
        "docs/benchmarks/results.json --doc docs/benchmarks.md --fleet-doc docs/fleet.md --hook-tables 200`) rewrites "
        "only this section, "
        "the key `fleet` and the figures of [fleet.md](fleet.md).",
        "",
        END,
    ]
    return lines


def render_fleet(r: dict[str, Any], doc: Path) -> None:
    """Only this section of ``doc`` (between the markers; at the end the first time)."""
    splice_section(doc, START, END, "\n".join(fleet_section(r)))


def summary_lines(r: dict[str, Any]) -> list[str]:
    """The figures docs/fleet.md quotes (between its markers), from the same results."""
    s, p, real = r["sim"], r.get("planning"), r.get("real")
    b, u, rr = (s["policies"][k] for k in ("budgeted", "unbounded", "round_robin"))
    guard = next((row for row in s.get("sweep") or [] if row["starvation_runs"] == s["starvation_runs"]), None)
    lines = [
        SUMMARY_START,
        "",
        f"Generated by `benchmarks/sim_fleet.py` ({r['finished_utc']}; details in "
        "[benchmarks.md](benchmarks.md#a-fleet-of-tables-under-one-budget-issue-52)):",
        "",
        f"- {s['tables']} simulated tables over {s['days']} days, at half the unbounded policy's bytes a day: the ranked "
        f"budget rewrote {b['bytes_vs_unbounded']:.2f}x the unbounded policy's bytes and kept "
        f"{b['read_savings_kept']:.1%} of its read savings"
        + (
            f" ({guard['kept_mean']:.1%} on average over {guard['seeds']} fleets, {guard['kept_min']:.1%} the lowest)"
            if guard
            else ""
        )
        + f"; round-robin under the same budget {rr['read_savings_kept']:.1%}. The goal is 90%.",
        f"- No degraded table waited more than {b['max_runs_waited']} runs with the guard at {s['starvation_runs']} "
        f"(round-robin: {rr['max_runs_waited']}; unbounded re-clusters every degraded table: {u['runs']} runs).",
    ]
    if p:
        lines.append(
            f"- Planning {p['tables']:,} tables ({p['files']:,} files, synthetic statistics in memory) took "
            f"{p['plan_s']} s without Spark ({p['cpu_s']} s of CPU, load average {p['load_average']} on {p['cpus']} "
            "CPUs; goal: under 10 s)"
            + (
                f"; real Parquet tables through `FleetHook`, their stats read from local disk: "
                f"{r['hook_planning']['per_table_ms']} ms a table."
                if r.get("hook_planning")
                else "."
            )
        )
    if real:
        lines.append(
            f"- The tests' {real['tables']} real tables (Parquet, Delta, Iceberg) planned in {real['plan_s']} s; under a "
            f"{real['budget_bytes'] >> 10} KB budget: "
            + ", ".join(f"{n} {k}" for k, n in real["by_reason"].items() if n)
            + " (`tests/airflow/test_fleet.py` runs that choice through the DAG)."
        )
    return [*lines, "", SUMMARY_END]


def render_summary(r: dict[str, Any], doc: Path) -> None:
    """Only the summary block of docs/fleet.md (between its markers)."""
    text = doc.read_text()
    if SUMMARY_START not in text or SUMMARY_END not in text:
        return
    head, rest = text.split(SUMMARY_START, 1)
    doc.write_text(head + "\n".join(summary_lines(r)) + rest.split(SUMMARY_END, 1)[1])


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tables", type=int, default=50)
    ap.add_argument("--days", type=int, default=60)
    ap.add_argument("--seed", type=int, default=52)
    ap.add_argument("--threshold", type=float, default=1.5, help="the sensor's trigger ratio (sim_incremental's)")
    ap.add_argument("--goal", type=float, default=DEFAULT_TARGET_RATIO, help="the ratio a plan re-clusters to")
    ap.add_argument("--budget-share", type=float, default=0.5, help="the budget, a share of unbounded's bytes a day")
    ap.add_argument("--starvation-runs", type=int, default=3)
    ap.add_argument("--seeds", type=int, default=5, help="fleets (seeds from --seed) of the starvation sweep; 0: none")
    ap.add_argument("--plan-tables", type=int, default=1000, help="tables of the planning benchmark (0: skip it)")
    ap.add_argument("--workers", type=int, default=8, help="threads evaluating tables")
    ap.add_argument("--processes", type=int, default=1, help="processes they are spread over (0: one per core)")
    ap.add_argument("--hook-tables", type=int, default=0, help="also plan this many real Parquet tables (FleetHook)")
    ap.add_argument("--real", action="store_true", help="also plan the tests' real fleet of 9 small tables")
    ap.add_argument("--merge-into", default=None, help="a results JSON to store the figures in (key 'fleet')")
    ap.add_argument("--doc", default=None, help="a markdown whose fleet section to (re)write (with --merge-into)")
    ap.add_argument("--fleet-doc", default=None, help="docs/fleet.md: its block of figures to (re)write")
    a = ap.parse_args(argv)
    if a.doc and not a.merge_into:
        ap.error("--doc needs --merge-into (the section is rendered from that JSON)")
    res: dict[str, Any] = {"sim": run_sim(a)}
    for name, q in res["sim"]["policies"].items():
        print(
            f"{name:12s} bytes {_gb(q['bytes']):>9s} ({q['bytes_vs_unbounded']:.2f}x unbounded)  read savings kept "
            f"{q['read_savings_kept']:.1%}  runs {q['runs']:4d}  most runs waited {q['max_runs_waited']}"
        )
    for row in res["sim"]["sweep"]:
        print(
            f"starvation guard {row['starvation_runs'] or 'off':>3}: read savings kept {row['kept_mean']:.1%} "
            f"(lowest {row['kept_min']:.1%}) over {row['seeds']} fleets, most runs waited {row['max_runs_waited']}"
        )
    if a.plan_tables:
        procs = a.processes or cores()
        res["planning"] = run_planning(a.plan_tables, a.seed, a.workers, procs)
        if procs > 1:  # the same on threads only (one interpreter), for comparison
            res["planning"]["threads_only"] = {
                k: v for k, v in run_planning(a.plan_tables, a.seed, a.workers, 1).items() if k in _TIMES
            }
        p = res["planning"]
        print(
            f"planning {p['tables']} tables ({p['files']:,} files, synthetic stats): {p['plan_s']} s "
            f"(evaluate {p['evaluate_s']} s, select {p['select_s']} s; CPU {p['cpu_s']} s, load {p['load_average']}; "
            f"{p['processes']} processes); {p['by_reason']}"
            + (f"; threads only: {p['threads_only']}" if p.get("threads_only") else "")
        )
    if a.hook_tables:
        res["hook_planning"] = run_hook_planning(a.hook_tables, a.workers, a.processes or None)
        h = res["hook_planning"]
        print(
            f"planning {h['tables']} real Parquet tables through FleetHook (stats stores on local disk): {h['plan_s']} s, "
            f"{h['per_table_ms']} ms a table (CPU {h['cpu_s']} s, load {h['load_average']}, {h['processes']} processes); "
            f"{h['by_reason']}"
        )
    if a.real:
        res["real"] = run_real()
        r = res["real"]
        print(
            f"real fleet: {r['tables']} tables planned in {r['plan_s']} s: {r['by_reason']}; "
            f"{r['chosen_bytes']:,} of {r['unbounded_bytes']:,} bytes, gain kept {r['gain_kept']}"
        )
    res["finished_utc"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    if a.merge_into:
        merge_into(Path(a.merge_into), "fleet", res)
        if a.doc:
            render_fleet(res, Path(a.doc))
    if a.fleet_doc:
        render_summary(res, Path(a.fleet_doc))
    return res


if __name__ == "__main__":
    main()
