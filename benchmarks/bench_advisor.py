"""The workload advisor (issue #53): its recommendation against the best column set found by exhaustive search,
and its speed.

    .venv/bin/python benchmarks/bench_advisor.py [--sf 0.02] [--files 64] [--statements 600] [--speed 10000]
        [--rounds 3] [--curve zorder] [--work .bench/advisor] [--json-out FILE]
        [--merge-into docs/benchmarks/results.json --doc docs/benchmarks.md]

``make bench-advisor`` runs it with ``--merge-into docs/benchmarks/results.json --doc docs/benchmarks.md``: its
figures go under the key ``"advisor"`` and only its section of the doc (between ``<!-- bench:advisor:start -->``
and ``<!-- bench:advisor:end -->``) is rewritten.

Two real tables, TPC-H ``lineitem`` and ``orders`` at ``--sf`` (``tpchgen-cli``), each in ``--files`` Parquet
files in generation order (clustered by their order key only: the layout the advisor starts from, read from the
files' footers). Three workloads per table of ``--statements`` statements each: one derived from the TPC-H
queries that filter the table (their predicates on it, qgen's substitution ranges, each query equally often) and
two synthetic mixes (point lookups; dashboards' date ranges). The advisor recommends up to 4 columns from the
footers and the statements (the engine's dialect: Trino, Spark).

The advisor runs twice per workload: from the statistics alone, and with a sample of ``--sample-rows`` rows
(whole row groups drawn at random) on which it lays out its best sets (``core.advisor.sample_layout``).

The judge: every set of 1 to 3 of the table's columns (lineitem: 696 sets) is really laid out: the table's rows
are cut into ``--files`` files along the curve by the clustering job's own key plan (``core.layout.curve_keys``:
sampled range ids, the curve, the file boundaries; in process with Arrow, not the Spark job), each file's
min/max computed from its rows, and each statement's files read counted by the project's pruning evaluator
(``core.skipping.pruning``) on those bounds. A set's saving is the files a statement reads now minus after; the
recommended set (in its order) is laid out and judged the same way, and its saving is compared with the best
set's (goal: at least 90%). The advisor never sees these layouts: it works from the footers of the table as it
is (its estimate is ``core.policy.clustered_reads``).

Speed: ``--speed`` statements of lineitem's TPC-H mix (qgen's few substitution values: texts repeat) and of its
dashboards mix (almost every text new) advised from the footers, ``--rounds`` times each; the medians (goal:
10,000 statements in under 5 s).
"""

from __future__ import annotations

import argparse
import datetime as dt
import itertools
import json
import os
import platform
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from bench_doc import merge_into, splice_section  # noqa: E402
from bench_env import REPO  # noqa: E402  (sets sys.path)
from tpch_data import _tpchgen_cli, generate_lineitem

from airflow_zorder.core.advisor import sample_layout
from airflow_zorder.core.advisor.extraction import Extractor, TableName
from airflow_zorder.core.advisor.recommend import advise, partition_columns, stats_columns
from airflow_zorder.core.advisor.workload import Statement
from airflow_zorder.core.layout import curve_keys
from airflow_zorder.core.skipping import pruning
from airflow_zorder.core.skipping.predicates import And, Const
from airflow_zorder.core.stats import footer_stats

START, END = "<!-- bench:advisor:start -->", "<!-- bench:advisor:end -->"
GOAL_SHARE, GOAL_SECONDS, GOAL_STATEMENTS = 0.9, 5.0, 10_000
MAX_SET = 3  # the exhaustive search: every set of 1 to 3 columns
SPEED_MIXES = ("tpch", "dashboards")  # lineitem's mixes timed


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


# --------------------------------------------------------------------------- tables


def _orders(sf: float, out: Path, files: int) -> list[str]:
    """TPC-H orders at ``sf`` in ``files`` files of equal rows, in generation order (``o_orderkey``)."""
    marker = out / "_ORDERS.json"
    want = {"sf": sf, "files": files}
    if marker.exists() and json.loads(marker.read_text()) == want:
        return sorted(str(p) for p in out.glob("orders-*.parquet"))
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    with tempfile.TemporaryDirectory(dir=out) as tmp:
        cmd = [_tpchgen_cli(), "parquet", f"--scale-factor={sf}", "--tables=orders", f"--output-dir={tmp}", "--quiet"]
        subprocess.run(cmd, check=True)
        table = pa.concat_tables(pq.read_table(p) for p in sorted(Path(tmp).rglob("*.parquet")))
    table = table.cast(
        pa.schema([pa.field(f.name, pa.string() if pa.types.is_string_view(f.type) else f.type) for f in table.schema])
    )
    table = table.sort_by("o_orderkey")
    bounds = np.linspace(0, table.num_rows, files + 1).astype(int)
    for i in range(files):
        pq.write_table(table.slice(bounds[i], bounds[i + 1] - bounds[i]), out / f"orders-{i:05d}.parquet")
    marker.write_text(json.dumps(want))
    return sorted(str(p) for p in out.glob("orders-*.parquet"))


# --------------------------------------------------------------------------- workloads

Template = Callable[[random.Random], str]


def _day(rng: random.Random, first: dt.date, last: dt.date) -> dt.date:
    return first + dt.timedelta(days=rng.randrange((last - first).days + 1))


def _month(rng: random.Random, years: tuple[int, int] = (1993, 1997)) -> str:
    return f"{rng.randint(*years)}-{rng.randint(1, 12):02d}-01"


SHIPMODES = ["REG AIR", "AIR", "RAIL", "SHIP", "TRUCK", "MAIL", "FOB"]
SEGMENTS = ["AUTOMOBILE", "BUILDING", "FURNITURE", "MACHINERY", "HOUSEHOLD"]

#: TPC-H's queries that filter lineitem, with their predicates on it and qgen's substitution ranges (Trino SQL);
#: the others filter it by joins or column-to-column conditions only, which no clustering serves (Q4, Q21 kept)
LINEITEM_TPCH: dict[str, Template] = {
    "Q1": lambda r: (
        "select l_returnflag, l_linestatus, sum(l_quantity), sum(l_extendedprice), count(*) from lineitem "
        f"where l_shipdate <= date '1998-12-01' - interval '{r.randint(60, 120)}' day group by l_returnflag, l_linestatus"
    ),
    "Q3": lambda r: (
        lambda d: (
            "select l_orderkey, sum(l_extendedprice * (1 - l_discount)) as revenue from customer, "
            f"orders, lineitem where c_mktsegment = '{r.choice(SEGMENTS)}' and c_custkey = o_custkey and l_orderkey = o_orderkey "
            f"and o_orderdate < date '{d}' and l_shipdate > date '{d}' group by l_orderkey"
        )
    )(_day(r, dt.date(1995, 3, 1), dt.date(1995, 3, 31))),
    "Q4": lambda r: (
        "select o_orderpriority, count(*) from orders where o_orderdate >= date "
        f"'{_month(r)}' and exists (select * from lineitem where l_orderkey = o_orderkey and l_commitdate < l_receiptdate) "
        "group by o_orderpriority"
    ),
    "Q6": lambda r: (
        lambda y, disc, q: (
            "select sum(l_extendedprice * l_discount) as revenue from lineitem where "
            f"l_shipdate >= date '{y}-01-01' and l_shipdate < date '{y}-01-01' + interval '1' year and l_discount between "
            f"{disc} - 0.01 and {disc} + 0.01 and l_quantity < {q}"
        )
    )(r.randint(1993, 1997), f"0.0{r.randint(2, 9)}", r.randint(24, 25)),
    "Q7": lambda r: (
        "select n1.n_name, sum(l_extendedprice * (1 - l_discount)) from supplier, lineitem, orders, nation n1 "
        "where s_suppkey = l_suppkey and o_orderkey = l_orderkey and s_nationkey = n1.n_nationkey and "
        "l_shipdate between date '1995-01-01' and date '1996-12-31' group by n1.n_name"
    ),
    "Q10": lambda r: (
        lambda d: (
            "select c_custkey, sum(l_extendedprice * (1 - l_discount)) from customer, orders, "
            f"lineitem where c_custkey = o_custkey and l_orderkey = o_orderkey and o_orderdate >= date '{d}' and o_orderdate < "
            f"date '{d}' + interval '3' month and l_returnflag = 'R' group by c_custkey"
        )
    )(_month(r, (1993, 1994))),
    "Q12": lambda r: (
        lambda m, y: (
            "select l_shipmode, count(*) from orders, lineitem where o_orderkey = l_orderkey and "
            f"l_shipmode in ('{m[0]}', '{m[1]}') and l_commitdate < l_receiptdate and l_shipdate < l_commitdate and "
            f"l_receiptdate >= date '{y}-01-01' and l_receiptdate < date '{y}-01-01' + interval '1' year group by l_shipmode"
        )
    )(r.sample(SHIPMODES, 2), r.randint(1993, 1997)),
    "Q14": lambda r: (
        lambda d: (
            "select sum(l_extendedprice * (1 - l_discount)) from lineitem, part where "
            f"l_partkey = p_partkey and l_shipdate >= date '{d}' and l_shipdate < date '{d}' + interval '1' month"
        )
    )(_month(r)),
    "Q15": lambda r: (
        lambda d: (
            "with revenue as (select l_suppkey as supplier_no, sum(l_extendedprice * (1 - l_discount)) "
            f"as total_revenue from lineitem where l_shipdate >= date '{d}' and l_shipdate < date '{d}' + interval '3' month "
            "group by l_suppkey) select s_suppkey, s_name, total_revenue from supplier, revenue where s_suppkey = supplier_no"
        )
    )(_month(r, (1993, 1997))),
    "Q20": lambda r: (
        lambda y: (
            "select ps_suppkey from partsupp where ps_availqty > (select 0.5 * sum(l_quantity) from "
            f"lineitem where l_partkey = ps_partkey and l_suppkey = ps_suppkey and l_shipdate >= date '{y}-01-01' and "
            f"l_shipdate < date '{y}-01-01' + interval '1' year)"
        )
    )(r.randint(1993, 1997)),
    "Q21": lambda r: (
        "select s_name, count(*) from supplier, lineitem l1, orders where s_suppkey = l1.l_suppkey and "
        "o_orderkey = l1.l_orderkey and o_orderstatus = 'F' and l1.l_receiptdate > l1.l_commitdate group by s_name"
    ),
}

ORDERS_TPCH: dict[str, Template] = {
    "Q3": lambda r: (
        "select o_orderkey, o_orderdate from customer, orders where c_custkey = o_custkey and o_orderdate < "
        f"date '{_day(r, dt.date(1995, 3, 1), dt.date(1995, 3, 31))}'"
    ),
    "Q4": lambda r: (
        lambda d: (
            f"select o_orderpriority, count(*) from orders where o_orderdate >= date '{d}' and "
            f"o_orderdate < date '{d}' + interval '3' month group by o_orderpriority"
        )
    )(_month(r)),
    "Q5": lambda r: (
        lambda y: (
            "select n_name, count(*) from customer, orders, nation where c_custkey = o_custkey and "
            f"c_nationkey = n_nationkey and o_orderdate >= date '{y}-01-01' and o_orderdate < date '{y}-01-01' + interval '1' "
            "year group by n_name"
        )
    )(r.randint(1993, 1997)),
    "Q8": lambda r: (
        "select extract(year from o_orderdate), count(*) from orders, customer where o_custkey = c_custkey "
        "and o_orderdate between date '1995-01-01' and date '1996-12-31' group by 1"
    ),
    "Q10": lambda r: (
        lambda d: (
            "select c_custkey, count(*) from customer, orders where c_custkey = o_custkey and "
            f"o_orderdate >= date '{d}' and o_orderdate < date '{d}' + interval '3' month group by c_custkey"
        )
    )(_month(r, (1993, 1994))),
    "Q13": lambda r: (
        "select c_custkey, count(o_orderkey) from customer left outer join orders on c_custkey = o_custkey "
        f"and o_comment not like '%{r.choice(['special', 'pending', 'unusual', 'express'])}%requests%' group by c_custkey"
    ),
    "Q21": lambda r: "select count(*) from orders where o_orderstatus = 'F'",
}


def _lineitem_points(r: random.Random) -> str:
    x = r.random()
    if x < 0.5:
        return f"SELECT * FROM lineitem WHERE l_partkey = {r.randint(1, 4000)}"
    if x < 0.8:
        return f"SELECT * FROM lineitem l WHERE l.l_suppkey = {r.randint(1, 200)}"
    k = r.randint(1, 120_000)
    return f"SELECT count(*) FROM lineitem WHERE l_orderkey BETWEEN {k} AND {k + 1000}"


def _lineitem_dashboards(r: random.Random) -> str:
    x = r.random()
    if x < 0.4:
        d = _month(r, (1992, 1998))
        return f"SELECT l_shipmode, sum(l_quantity) FROM lineitem WHERE l_shipdate >= DATE '{d}' AND l_shipdate < DATE '{d}' + INTERVAL '1' MONTH GROUP BY 1"
    if x < 0.7:
        d = _day(r, dt.date(1992, 2, 1), dt.date(1998, 11, 1))
        return (
            f"SELECT count(*) FROM lineitem WHERE l_receiptdate BETWEEN DATE '{d}' AND DATE '{d + dt.timedelta(days=7)}' "
            f"AND l_shipmode = '{r.choice(SHIPMODES)}'"
        )
    keys = ", ".join(str(r.randint(1, 4000)) for _ in range(3))
    return f"SELECT * FROM lineitem WHERE l_partkey IN ({keys})"


def _orders_points(r: random.Random) -> str:
    x = r.random()
    if x < 0.5:
        return f"SELECT * FROM orders WHERE o_custkey = {r.randint(1, 3000)}"
    if x < 0.8:
        d = _day(r, dt.date(1992, 1, 1), dt.date(1998, 7, 1))
        return f"SELECT * FROM orders o WHERE o.o_orderdate BETWEEN DATE '{d}' AND DATE '{d + dt.timedelta(days=7)}'"
    p = r.randint(1000, 400_000)
    return f"SELECT count(*) FROM orders WHERE o_totalprice BETWEEN {p} AND {p + 1000}"


def _orders_dashboards(r: random.Random) -> str:
    x = r.random()
    if x < 0.6:
        d = _month(r, (1992, 1998))
        return f"SELECT o_orderpriority, count(*) FROM orders WHERE o_orderdate >= DATE '{d}' AND o_orderdate < DATE '{d}' + INTERVAL '1' MONTH AND o_orderstatus = 'O' GROUP BY 1"
    return f"SELECT * FROM orders WHERE o_orderpriority = '{r.randint(1, 5)}-URGENT' AND o_clerk = 'Clerk#{r.randint(1, 20):09d}'"


def tpch_mix(templates: dict[str, Template]) -> Callable[[random.Random, int], list[Statement]]:
    def make(r: random.Random, n: int) -> list[Statement]:
        names = sorted(templates)
        return [Statement(templates[names[i % len(names)]](r), "trino") for i in range(n)]

    return make


def mix(one: Callable[[random.Random], str], engine: str) -> Callable[[random.Random, int], list[Statement]]:
    return lambda r, n: [Statement(one(r), engine) for _ in range(n)]


TABLES = {
    "lineitem": {
        "tpch": tpch_mix(LINEITEM_TPCH),
        "point lookups": mix(_lineitem_points, "spark"),
        "dashboards": mix(_lineitem_dashboards, "trino"),
    },
    "orders": {
        "tpch": tpch_mix(ORDERS_TPCH),
        "point lookups": mix(_orders_points, "spark"),
        "dashboards": mix(_orders_dashboards, "trino"),
    },
}

# --------------------------------------------------------------------------- layouts: the judge


class Judge:
    """A table's rows laid out along the curve for any column set, and the files each statement reads there."""

    def __init__(self, data: pa.Table, files: int, curve: str, name: str) -> None:
        self.data, self.files, self.curve, self.name = data, files, curve, name
        self.columns = data.column_names
        self.cache: dict[tuple[str, ...], pa.Table] = {}

    def stats(self, order: tuple[str, ...]) -> pa.Table:
        """FILE_STATS_SCHEMA rows of the table cut along the curve over ``order`` (cached)."""
        if order not in self.cache:
            plan = curve_keys.build_plan(
                self.data.select(list(order)), list(order), self.curve, self.files, salt_bits=0
            )
            keys = curve_keys.compute_keys(plan, [self.data.column(c).combine_chunks() for c in order], None)
            self.cache[order] = sample_layout.bounds_stats(self.data, curve_keys.file_ids(plan, keys))
        return self.cache[order]

    def files_read(self, stats: pa.Table, predicates: list, weights: np.ndarray) -> float:
        """Mean files read per scan (the pruning evaluator on ``stats``)."""
        kept = pruning.kept_fractions(stats, predicates)
        return float(np.dot(kept, weights) / weights.sum() * self.files)


def scans(statements: list[Statement], table: str, stats: pa.Table) -> tuple[list, np.ndarray]:
    """The distinct filters of the statements' scans of ``table`` (the advisor's extraction) and their runs."""
    x = Extractor(TableName.of(table), stats_columns(stats), partition_columns(stats))
    runs: Counter = Counter()
    for s in statements:
        for scan in x.extract(s).scans:
            runs[tuple(sorted(scan.filters.items()))] += 1
    keys = list(runs)
    preds = [And(tuple(e for _, e in k)) if k else Const(True) for k in keys]
    return preds, np.array([runs[k] for k in keys], dtype=np.float64)


# --------------------------------------------------------------------------- the run


def run_table(name: str, paths: list[str], args: argparse.Namespace, rng: random.Random) -> dict[str, Any]:
    data = pa.concat_tables(pq.read_table(p) for p in paths)
    columns = data.column_names
    now = footer_stats.read_footers_parallel(paths, columns, 4, None)  # the advisor's input: the table as it is
    judge = Judge(data, args.files, args.curve, name)
    sets = [c for d in range(1, MAX_SET + 1) for c in itertools.combinations(columns, d)]
    t0 = time.perf_counter()
    for i, s in enumerate(sets):
        judge.stats(s)
        if i % 100 == 99:
            log(f"{name}: {i + 1}/{len(sets)} layouts ({time.perf_counter() - t0:.0f} s)")
    layout_s = time.perf_counter() - t0
    out: dict[str, Any] = {
        "rows": data.num_rows,
        "files": args.files,
        "columns": len(columns),
        "sets": len(sets),
        "workloads": {},
    }
    for wname, make in TABLES[name].items():
        statements = make(rng, args.statements)
        preds, weights = scans(statements, name, now)
        before = judge.files_read(now, preds, weights)
        saved = {s: before - judge.files_read(judge.stats(s), preds, weights) for s in sets}
        ranked = sorted(saved.items(), key=lambda kv: -kv[1])
        best_set, best = ranked[0]
        w: dict[str, Any] = {
            "statements": len(statements),
            "before": before,
            "best_set": list(best_set),
            "best_after": before - best,
            "top": [{"columns": list(s), "after": before - v} for s, v in ranked[:3]],
        }
        samples = {
            "statistics": None,
            "sample": lambda cols: sample_layout.read_sample(paths, cols, args.sample_rows, seed=3),
        }
        for how, sample in samples.items():
            t1 = time.perf_counter()
            rec = advise(statements, now, name, curve=args.curve, num_files=args.files, sample=sample)
            advise_s = time.perf_counter() - t1
            chosen = tuple(rec.columns)
            after_rec = judge.files_read(judge.stats(chosen), preds, weights) if chosen else before
            got = before - after_rec
            share = got / best if best > 0 else 1.0
            w["status"], w["scans"], w["column_use"] = rec.status, rec.scans, dict(list(rec.column_use.items())[:6])
            w[how] = {
                "recommended": list(chosen),
                "served": rec.served,
                "after": after_rec,
                "predicted_after": rec.files_after,
                "share_of_best": share,
                "rank": 1 + sum(1 for _, v in ranked if v > got + 1e-9),
                "advise_s": advise_s,
            }
            log(
                f"{name} / {wname} ({how}): recommended {', '.join(chosen) or '-'} -> {after_rec:.1f} files (before "
                f"{before:.1f}); best {', '.join(best_set)} -> {before - best:.1f}: {share:.1%} of the best saving "
                f"({advise_s:.2f} s)"
            )
        out["workloads"][wname] = w
    out["layout_s"] = layout_s
    return out


def run_speed(paths: list[str], args: argparse.Namespace) -> dict[str, Any]:
    """``--speed`` statements advised from lineitem's footers, ``--rounds`` times, for two mixes: TPC-H's (qgen's
    few substitution values: many statements repeat a text) and the dashboards' (almost every text new)."""
    data_cols = pq.read_schema(paths[0]).names
    now = footer_stats.read_footers_parallel(paths, data_cols, 4, None)
    out: dict[str, Any] = {}
    for mix_name in SPEED_MIXES:
        statements = TABLES["lineitem"][mix_name](random.Random(11), args.speed)
        times = []
        for i in range(args.rounds):
            t0 = time.perf_counter()
            rec = advise(statements, now, "lineitem", curve=args.curve, num_files=args.files)
            times.append(time.perf_counter() - t0)
            log(f"speed, {mix_name}, round {i + 1}: {args.speed:,} statements in {times[-1]:.2f} s")
        out[mix_name] = {
            "statements": args.speed,
            "distinct": len({s.sql for s in statements}),
            "median_s": statistics.median(times),
            "min_s": min(times),
            "max_s": max(times),
            "recommended": rec.columns,
        }
    return out


def advisor_section(res: dict[str, Any]) -> list[str]:
    """The doc's section (between its markers) from ``results["advisor"]``."""
    m, sp = res["machine"], res["speed"]
    lines = [START, "## The workload advisor: recommended columns against the best by exhaustive search", ""]
    p = lines.append
    p(
        f"`make bench-advisor` (benchmarks/bench_advisor.py) at git `{m['git_head']}` ({res['started_utc'][:16].replace('T', ' ')} "
        f"UTC, {m['cpus']} CPUs, load average {m['load'][0]:.1f}), curve {res['curve']}. Tables: TPC-H lineitem and "
        f"orders at SF {res['sf']} in {res['files']} files each, in generation order (their order key only). Per "
        f"workload {res['statements']} statements; the advisor reads them and the files' footers. Every set of 1 to "
        f"{MAX_SET} columns is laid out for real (the rows cut into {res['files']} files by the clustering job's key "
        "plan, in process), and each statement's files read are counted by the pruning evaluator on the resulting "
        "bounds; the recommended set (up to 4 columns, in its order) is laid out and counted the same way. Files read "
        "are per scan of the table, averaged over the workload."
    )
    p("")
    p(
        "| table | workload | files read now | best set of 1-3 (exhaustive) | best, after | recommended from the "
        "statistics | after (predicted) | share of the best saving | recommended with a sample | after (predicted) | "
        "share of the best saving |"
    )
    p("|---|---|---:|---|---:|---|---:|---:|---|---:|---:|")
    shares: dict[str, list[float]] = {"statistics": [], "sample": []}
    for tname, t in res["tables"].items():
        for wname, w in t["workloads"].items():
            cells = []
            for how in ("statistics", "sample"):
                r = w[how]
                shares[how].append(r["share_of_best"])
                cells.append(
                    f"{', '.join(r['recommended']) or '—'} | {r['after']:.1f} ({r['predicted_after']:.1f}) | "
                    f"{r['share_of_best']:.1%}"
                )
            p(
                f"| {tname} | {wname} | {w['before']:.1f} | {', '.join(w['best_set'])} | {w['best_after']:.1f} | "
                + " | ".join(cells)
                + " |"
            )
    p("")
    p(
        f"Goal: at least {GOAL_SHARE:.0%} of the best set's saving on every workload. From the statistics alone: "
        f"**{'met' if min(shares['statistics']) >= GOAL_SHARE else 'not met'}** (lowest "
        f"{min(shares['statistics']):.1%}); with a sample of {res['sample_rows']:,} rows (whole row groups drawn at "
        "random, on which the statistics' best 4 sets of each size are laid out and judged): "
        f"**{'met' if min(shares['sample']) >= GOAL_SHARE else 'not met'}** (lowest {min(shares['sample']):.1%}). "
        "*Predicted* (in parentheses) is the advisor's own figure before any rewrite: from the statistics "
        "(`airflow_zorder.core.policy.clustered_reads`), which take columns as independent and so miss what a "
        "correlated column (a ship date for a receipt date) saves, or measured on the sample."
    )
    p("")
    slow = max(v["median_s"] for v in sp.values())
    p(
        "Speed, lineitem's footers and "
        + "; ".join(
            f"{v['statements']:,} statements of its {k} mix ({v['distinct']:,} distinct texts): **{v['median_s']:.2f} s** "
            f"({v['min_s']:.2f}–{v['max_s']:.2f})"
            for k, v in sp.items()
        )
        + f" (medians of {res['rounds']} rounds); goal {GOAL_STATEMENTS:,} statements in under {GOAL_SECONDS:.0f} s: "
        f"**{'met' if slow < GOAL_SECONDS else 'not met'}**. Statements that differ only in their literals share one "
        "parse (the extractor's cache), so the second mix measures the parse of each statement's tokens and the "
        "translation of its filters."
    )
    lines.append(END)
    return lines


def render_advisor(res: dict[str, Any], doc: Path) -> None:
    """Only this section of ``doc``: replaced between its markers, else appended; nothing else changes."""
    splice_section(doc, START, END, "\n".join(advisor_section(res)))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sf", type=float, default=0.02)
    ap.add_argument("--files", type=int, default=64)
    ap.add_argument("--statements", type=int, default=600, help="statements per workload")
    ap.add_argument("--speed", type=int, default=GOAL_STATEMENTS, help="statements advised in the speed test")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--sample-rows", type=int, default=20_000, help="rows of the sample the second advisor reads")
    ap.add_argument("--curve", default="zorder")
    ap.add_argument("--tables", default="lineitem,orders")
    ap.add_argument("--work", default=str(REPO / ".bench" / "advisor"))
    ap.add_argument("--json-out", default=None)
    ap.add_argument("--merge-into", default=None)
    ap.add_argument("--doc", default=None)
    args = ap.parse_args(argv)
    work = Path(args.work)
    started = dt.datetime.now(dt.UTC)
    rng = random.Random(7)
    paths = {
        "lineitem": generate_lineitem(args.sf, work / "lineitem", args.files)["paths"],
        "orders": _orders(args.sf, work / "orders", args.files),
    }
    res: dict[str, Any] = {
        "started_utc": started.isoformat(),
        "sf": args.sf,
        "files": args.files,
        "statements": args.statements,
        "sample_rows": args.sample_rows,
        "rounds": args.rounds,
        "curve": args.curve,
        "machine": {
            "cpus": os.cpu_count(),
            "load": list(os.getloadavg()),
            "python": platform.python_version(),
            "git_head": subprocess.run(
                ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=REPO
            ).stdout.strip(),
        },
        "speed": run_speed(paths["lineitem"], args),
        "tables": {},
    }
    for name in args.tables.split(","):
        res["tables"][name] = run_table(name, paths[name], args, rng)
    res["wall_s"] = (dt.datetime.now(dt.UTC) - started).total_seconds()
    out = Path(args.json_out or work / "advisor_results.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(res, indent=1, default=str) + "\n")
    print("\n".join(advisor_section(res)[2:-1]))
    if args.merge_into:
        merge_into(Path(args.merge_into), "advisor", res)
        if args.doc:
            render_advisor(res, Path(args.doc))
    shares = [w["sample"]["share_of_best"] for t in res["tables"].values() for w in t["workloads"].values()]
    slow = max(v["median_s"] for v in res["speed"].values())
    return 0 if min(shares) >= GOAL_SHARE and slow < GOAL_SECONDS else 1


if __name__ == "__main__":
    sys.exit(main())
