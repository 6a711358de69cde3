"""Numpy simulation of issue 25/37's benchmark: 30 days of appends, re-clustering policies and the optimum.

    nice -n 10 .venv/bin/python benchmarks/sim_incremental.py [--scenario uniform|date|partitioned|all]
        [--rows 300000] [--days 30] [--quiet] [--calibrate] [--no-bound]

No Spark, no Parquet: a "file" is an in-memory block of rows of 3 integer columns.  The target file size is
the base's file size; bytes are rows x 24.  Each day the sensor rule (the worst column's ``ratio_to_ideal``
from :func:`metrics.partition_clustering` over FILE_STATS_SCHEMA rows, d = 3, worst over partitions) is
compared with ``--threshold`` and triggers the policy's run.

Scenarios (``--scenario``):

* ``uniform``: issue 25's benchmark.  Columns (a, b, c) uniform; the base (``--rows``) is clustered into 64
  files; each day appends ``rows / days`` fresh rows in 2 unsorted files.
* ``date``: columns (a, b, date); appends follow an ingestion-date clustering column: the base covers
  ``days`` date slabs, day t's rows all fall in a fresh slab ``days + t``.
* ``partitioned``: a date-partitioned table, (a, b, c) uniform inside each partition; ``days`` base
  partitions of ``--part-files`` clustered files; each day a new partition arrives clustered (the ingest's
  own run) and ``--late-files`` small unsorted files of ``--late-rows`` rows land in older partitions
  (lag uniform in 1..``--late-days`` days).

Policies: never; full (every file of each degraded unit -- the table or a partition -- rewritten into
``round(bytes / target)`` files); incremental (:func:`incremental_stats.plan_from_stats`, the real rule);
liquid (Delta Liquid-like: once ``--liquid-min`` target files of new data accumulate, they are clustered
together with the unsealed cubes into one new cube; cubes of ``--liquid-seal`` target files are sealed and
never merged again; runs daily, ignores the sensor); hudi (Hudi size-based: every ``--hudi-every`` days, the
files below ``--hudi-small`` x target of each unit are clustered among themselves; ignores the sensor);
online (a prototype rule, this file only: :func:`online_policy`); bound (the optimum's schedule, replayed);
gamed (not in the default list: new files written at ``--gamed-size`` x target, which passes a files-read
threshold while the bytes ratio shows the cost).

Reported per policy: runs, bytes rewritten, write amplification (bytes rewritten / bytes appended), bytes
versus full's, mean and max of the daily worst files-read ratio, of the bytes-read ratio (expected bytes a
point query reads over the ideal ``bytes x (bytes / target) ** (-1/d)``), and the largest file written
(x target).

The optimum (:func:`optimum`): dynamic programming over group states.  A state is the multiset of the
table's groups (files written by one run, or unsorted append files), each (size, files, date span,
orientation); per day the append is added, then any one merge of a subset of groups (clustered on all
columns in a rotated order, or -- date scenario -- on the wide columns only) may be applied; the state must
keep the modelled worst ratio <= the cap.  A group's per-column files read is measured from this file's own
clustering (:func:`measured_cost`) and scaled by its width in the date column.  The exact minimum over all
such schedules is the bound (``--dp-merges`` merges per day; ``--dp-new-first``: a day may first cluster its
unsorted files alone, as the rule's first step does; ``--dp-permutations``: all 6 column orders, not the 3
rotations), its schedule is replayed in the simulator (and, written by ``--schedule-out``, by the Spark job in
``bench_incremental.py``'s optimum policy), and the same DP with an ideal grid (``k ** (2/3)`` per column,
``sqrt(k)`` on two columns) gives the edge.  ``--schedule-in`` replays a written schedule without solving it.

Past the horizon: ``--extra-days N`` lets the appends go on N more days at the same rate (the totals stay at
``--days``; the bound policy hands over to the rule) and prints each policy's bytes over full's by day, so
that a figure at day 30 can be read against the days around it.
"""

from __future__ import annotations

import argparse
import datetime as dt
import itertools
import json
import math
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from airflow_zorder.core.layout import curve_cost, curve_keys
from airflow_zorder.core.policy import incremental, incremental_stats, metrics
from airflow_zorder.core.stats.stats_schema import file_stats_table

ROW_BYTES = 24
RAW_WEIGHT = [1.0]  # bytes per row of a never-clustered file over a clustered one's (--raw-weight; Spark SF1: 1.11)
DOMAIN = 1_000_000
SLAB = 1_000  # date values per ingestion day (date scenario)
D = 3  # clustering columns
_NOW = dt.datetime(2025, 1, 1, tzinfo=dt.UTC)
SCENARIOS = ("uniform", "date", "partitioned")
# curve column order per orientation: rotations r*, reflections p* (--dp-permutations), w: the wide columns only
ORDERS = {
    "r0": (0, 1, 2),
    "r1": (1, 2, 0),
    "r2": (2, 0, 1),
    "p0": (0, 2, 1),
    "p1": (2, 1, 0),
    "p2": (1, 0, 2),
    "w": (0, 1),
}
RESULTS = Path(__file__).resolve().parents[1] / "docs" / "benchmarks" / "results.json"


def _round(x: float) -> int:
    """Files for ``x`` target sizes, as the job and the rule count them."""
    return max(1, int(math.floor(x + 0.5)))


@dataclass
class File:
    """An in-memory data file: its rows (n x 3), the run that wrote it (None: never), its partition, model group."""

    path: str
    rows: np.ndarray
    run: str | None
    part: int | None = None
    gid: tuple = ()

    @property
    def bytes(self) -> int:
        """Size on 'disk': a never-clustered file's rows weigh ``RAW_WEIGHT`` times a clustered file's."""
        return int(self.rows.shape[0] * ROW_BYTES * (RAW_WEIGHT[0] if self.run is None else 1.0))


def cluster(rows: np.ndarray, k: int, order: tuple[int, ...] = (0, 1, 2), seed: int = 0) -> list[np.ndarray]:
    """Cut rows into ``k`` files as the job does (:func:`curve_keys.build_plan`: per-column quantile range ids ->
    Hilbert key on the columns ``order`` -> file boundaries at key quantiles), from a sample of <= 100,000 rows."""
    names = [f"c{j}" for j in order]
    table = pa.table({f"c{j}": rows[:, j] for j in range(rows.shape[1])})
    rng = np.random.default_rng(seed)
    sample = table.take(rng.choice(rows.shape[0], min(rows.shape[0], 100_000), replace=False))
    plan = curve_keys.build_plan(sample, names, "hilbert", k, salt_bits=0)
    keys = curve_keys.compute_keys(plan, [table.column(c).combine_chunks() for c in names], None)
    fid = curve_keys.file_ids(plan, keys)
    order_ = np.argsort(fid, kind="stable")
    cuts = np.searchsorted(fid[order_], np.arange(1, k))
    return [part for part in np.split(rows[order_], cuts) if part.shape[0]]


COLS = ("a", "b", "c")


def stats_rows(files: list[File]):
    """FILE_STATS_SCHEMA rows (one per file and column) plus the path -> run mapping."""
    cols: dict[str, list] = {k: [] for k in ("path", "file_size", "file_rows", "column_name", "min_value", "max_value")}
    for f in files:
        lo, hi = f.rows.min(axis=0), f.rows.max(axis=0)
        for j, c in enumerate(COLS):
            for k, v in zip(cols, (f.path, f.bytes, f.rows.shape[0], c, str(lo[j]), str(hi[j]))):
                cols[k].append(v)
    n = len(cols["path"])
    cols.update(snapshot_id=[1] * n, table_name=["sim"] * n, arrow_type=["int64"] * n)
    cols.update(has_stats=[True] * n, collected_at=[_NOW] * n)
    return file_stats_table(cols, n), {f.path: f.run for f in files}


_UNIT_MEMO: dict[tuple[str, ...], tuple[float, float, np.ndarray]] = {}


def unit_metrics(files: list[File], target: int) -> tuple[float, float, np.ndarray, float]:
    """``(worst files-read ratio, worst bytes-read ratio, files read per column, score)`` of one unit.

    Both are the sensor's numbers (:func:`metrics.partition_clustering`, d = 3): ``ratio_to_ideal`` and
    ``bytes_ratio_to_ideal`` (the same point-query model weighted by file bytes, against a grid of files of the
    target size); last, the sensor's score: the larger of ``ratio_to_ideal`` and ``sized_ratio_to_ideal`` (files
    over 1.25x the target counted as several)."""
    key = tuple(sorted(f.path for f in files))
    if key not in _UNIT_MEMO:
        stats, _ = stats_rows(files)
        per_col = next(
            iter(metrics.partition_clustering(stats, COLS, num_clustering_columns=D, target_file_size=target).values())
        )
        ratio = max(cc.ratio_to_ideal for cc in per_col.values())
        bratio = max(cc.bytes_ratio_to_ideal for cc in per_col.values())
        score = max(ratio, *(cc.sized_ratio_to_ideal for cc in per_col.values()))
        read = np.array([per_col[c].expected_files_read for c in COLS])
        _UNIT_MEMO[key] = (ratio, bratio, read, score)
    return _UNIT_MEMO[key]


def units(files: list[File]) -> dict[int | None, list[File]]:
    """Files by partition (one unit, None, when unpartitioned)."""
    out: dict[int | None, list[File]] = {}
    for f in files:
        out.setdefault(f.part, []).append(f)
    return out


@dataclass
class World:
    """One scenario's base, appends per day and its model of groups (for the optimum)."""

    scenario: str
    days: int  # the horizon: the totals, the optimum and the calibration end there
    base: list[File]
    target: int
    appends: list[list[File]]  # per day (index 0 = day 1), past the horizon too with --extra-days
    quantum_rows: int  # the model's size unit
    tq: float  # target files per quantum
    date: bool  # whether column 2 is the ingestion date
    units0: dict[int | None, tuple]  # the base model group of each unit
    born: dict[int | None, int] = field(default_factory=dict)  # unit -> day it appears (0: base)


def make_world(args: argparse.Namespace) -> World:
    """Generate the base and every day's appends (the same for every policy)."""
    rng = np.random.default_rng(args.seed)
    days, s = args.days, args.scenario
    last = days + args.extra_days  # appends go on at the same rate after the horizon (--extra-days)
    if s in ("uniform", "date"):
        per_day = args.rows // days
        base_rows = np.floor(rng.random((per_day * days, 3)) * DOMAIN).astype(np.int64)
        if s == "date":
            base_rows[:, 2] = np.floor(rng.random(base_rows.shape[0]) * days * SLAB).astype(np.int64)
        gid = (2 * days, 64, 0, days - 1 if s == "date" else 0, "r0")
        base = [File(f"base-{i}", r, "base", None, gid) for i, r in enumerate(cluster(base_rows, 64))]
        appends = []
        for t in range(1, last + 1):
            new = np.floor(rng.random((per_day, 3)) * DOMAIN).astype(np.int64)
            if s == "date":
                new[:, 2] = (days + t - 1) * SLAB + np.floor(rng.random(per_day) * SLAB).astype(np.int64)
            appends.append([File(f"day{t}-{i}", h, None) for i, h in enumerate(np.array_split(new, 2))])
        target = base[0].bytes
        return World(s, days, base, target, appends, per_day // 2, 64 / (2 * days), s == "date", {None: gid})
    part_rows = args.rows // days
    target_rows = part_rows // args.part_files
    q_main = part_rows // args.late_rows

    def partition(p: int) -> list[File]:
        rows = np.floor(rng.random((part_rows, 3)) * DOMAIN).astype(np.int64)
        gid = (q_main, args.part_files, 0, 0, "r0")
        return [
            File(f"p{p}-ingest-{i}", r, f"ingest-p{p}", p, gid) for i, r in enumerate(cluster(rows, args.part_files))
        ]

    base = [f for p in range(1 - days, 1) for f in partition(p)]
    appends = []
    for t in range(1, last + 1):
        late = []
        for i in range(args.late_files):
            p = t - int(rng.integers(1, args.late_days + 1))
            rows = np.floor(rng.random((args.late_rows, 3)) * DOMAIN).astype(np.int64)
            late.append(File(f"late{t}-{i}", rows, None, max(p, 1 - days)))
        appends.append(partition(t) + late)
    units0 = {p: (q_main, args.part_files, 0, 0, "r0") for p in range(1 - days, last + 1)}
    born = {p: max(p, 0) for p in units0}
    return World(
        s,
        days,
        base,
        target_rows * ROW_BYTES,
        appends,
        args.late_rows,
        args.late_rows / target_rows,
        False,
        units0,
        born,
    )


class Table:
    """One policy's copy of the table."""

    def __init__(self, name: str, base: list[File], target: int) -> None:
        self.name, self.files, self.runs, self.target = name, list(base), 0, target
        self.rewritten: list[int] = []
        self.runs_by_day: list[int] = []  # runs made each day (the optimum's replay: one per merge)
        self.largest_by_day: list[float] = []  # largest file written so far / target, after each day
        self.ratios: list[float] = []
        self.bytes_ratios: list[float] = []
        self.largest = 0.0  # largest file written / target
        self.reasons: tuple[str, ...] = ()
        self.state: dict = {}

    def rewrite(self, groups: list[tuple[list[File], int, tuple[int, ...], tuple]]) -> int:
        """Cluster each group of files (files, k, curve column order, model gid) among itself; bytes rewritten."""
        if not groups:
            return 0
        self.runs += 1
        gone = {f.path for g in groups for f in g[0]}
        out = [f for f in self.files if f.path not in gone]
        for b, (g, k, order, gid) in enumerate(groups):
            run = f"{self.name}-r{self.runs}-b{b}"
            for i, part in enumerate(cluster(np.concatenate([f.rows for f in g]), k, order)):
                out.append(File(f"{run}-{i}", part, run, g[0].part, gid))
                self.largest = max(self.largest, part.shape[0] * ROW_BYTES / self.target)
        self.files = out
        return sum(f.bytes for g in groups for f in g[0])

    def metrics(self) -> tuple[float, float, dict]:
        """Worst files ratio and bytes ratio over units, and each unit's score (as the sensor has it)."""
        per = {u: unit_metrics(fs, self.target) for u, fs in units(self.files).items()}
        return (
            max(v[0] for v in per.values()),
            max(v[1] for v in per.values()),
            {u: v[3] for u, v in per.items()},
        )


def _whole(fs: list[File], target: int) -> int:
    return _round(sum(f.bytes for f in fs) / target)


def full_policy(t: Table, degraded: list, ctx: dict) -> list:
    """Every file of each degraded unit, clustered into ``round(bytes / target)`` files."""
    by = units(t.files)
    return [(by[u], _whole(by[u], t.target), (0, 1, 2), ()) for u in degraded]


def _order(columns: tuple[str, ...] | None) -> tuple[int, ...]:
    """The curve's column order of a plan bin clustered on ``columns`` (None: all three)."""
    return (0, 1, 2) if columns is None else tuple(COLS.index(c) for c in columns)


def incremental_policy(t: Table, degraded: list, ctx: dict) -> list:
    """The real rule (:func:`incremental_stats.plan_from_stats`) on each degraded unit."""
    by, out, reasons = units(t.files), [], []
    for u in degraded:
        stats, runs = stats_rows(by[u])
        plan = incremental_stats.plan_from_stats(stats, runs, params=ctx["params"], num_clustering_columns=D)
        reasons += plan.reasons
        path = {f.path: f for f in by[u]}
        out += [([path[p] for p in b.paths], b.num_output_files, _order(b.columns), ()) for b in plan.bins]
    t.reasons = tuple(reasons)
    return out


def liquid_policy(t: Table, degraded: list, ctx: dict) -> list:
    """Delta Liquid-like (daily, sensor ignored): once ``liquid_min`` target files of new data accumulate in a
    unit, they and the unit's unsealed cubes (below ``liquid_seal`` target files) become one new cube."""
    a, out = ctx["args"], []
    for fs in units(t.files).values():
        new = [f for f in fs if f.run is None]
        if sum(f.bytes for f in new) < a.liquid_min * t.target:
            continue
        cubes: dict[str, list[File]] = {}
        for f in fs:
            if f.run is not None and f.run.startswith(t.name):
                cubes.setdefault(f.run, []).append(f)
        open_ = [f for c in cubes.values() if sum(f.bytes for f in c) < a.liquid_seal * t.target for f in c]
        out.append((new + open_, _whole(new + open_, t.target), (0, 1, 2), ()))
    return out


def hudi_policy(t: Table, degraded: list, ctx: dict) -> list:
    """Hudi size-based (every ``hudi_every`` days, sensor ignored): the files below ``hudi_small`` x target of
    each unit, binned up to ``hudi_group`` target sizes, each bin of >= 2 files clustered among itself."""
    a, out = ctx["args"], []
    if ctx["day"] % a.hudi_every:
        return out
    for fs in units(t.files).values():
        small = sorted((f for f in fs if f.bytes < a.hudi_small * t.target), key=lambda f: f.bytes)
        bin_: list[File] = []
        for f in small + [None]:
            if f is None or (bin_ and sum(x.bytes for x in bin_) + f.bytes > a.hudi_group * t.target):
                if len(bin_) >= 2:
                    out.append((bin_, _whole(bin_, t.target), (0, 1, 2), ()))
                bin_ = []
            if f is not None:
                bin_.append(f)
    return out


# ---------------------------------------------------------------------------------------------------------------
# The optimum: dynamic programming over group states
# ---------------------------------------------------------------------------------------------------------------

_MEASURED: dict[tuple[int, str, int], np.ndarray] = {}


def measured_cost(k: int, orient: str, rows_per_file: int) -> np.ndarray:
    """Files a point query on each column reads in one group of ``k`` files spanning the whole range, clustered
    by :func:`cluster` on the orientation's columns (``sum_f P_c(f)`` as the sensor computes it), measured on
    uniform rows; rotations reuse the ``r0`` measurement (the data is symmetric in the columns)."""
    base = "w" if orient == "w" else "r0"
    if (k, base, rows_per_file) not in _MEASURED:
        n = k * min(rows_per_file, max(200, 300_000 // k))
        rows = np.floor(np.random.default_rng(1000 + k).random((n, 3)) * DOMAIN).astype(np.int64)
        parts = cluster(rows, k, ORDERS[base]) if k > 1 else [rows]
        lo = np.array([p.min(axis=0) for p in parts], dtype=np.float64)
        hi = np.array([p.max(axis=0) for p in parts], dtype=np.float64)
        _MEASURED[(k, base, rows_per_file)] = ((hi - lo + 1) / (hi.max(axis=0) - lo.min(axis=0) + 1)).sum(axis=0)
    m = _MEASURED[(k, base, rows_per_file)]
    if orient not in ("r0", "w"):
        out = np.empty(3)
        out[list(ORDERS[orient])] = m
        return out
    return m


def ideal_cost(k: int, orient: str, rows_per_file: int = 0) -> np.ndarray:
    """A perfect grid: ``k ** (2/3)`` per column; on two columns ``sqrt(k)`` each and ``k`` on the third."""
    if orient == "w":
        return np.array([k**0.5, k**0.5, float(k)])
    return np.full(3, k ** (2.0 / 3.0))


@dataclass
class Model:
    """The DP's model of one unit: groups are ``(quanta, files, date lo, date hi, orientation)``; orientation
    ``raw`` is unsorted append files (each spans the whole range of every column but the date)."""

    tq: float  # target files per quantum
    date: bool
    days_base: int  # date slabs in the base (date scenario)
    cap: float
    cost: Callable[[int, str, int], np.ndarray]
    rows_per_file: int
    orients: tuple[str, ...]
    merges: int = 1
    new_first: bool = False  # a day may cluster its unsorted files alone before its merges (the rule's first step)
    relax: bool = False  # date spans summed on merge, positions dropped (see merged)
    best_count: bool = False  # a merge writes the count its curve cuts best (as the rule does), not round(size)
    truncated: bool = False  # a beam dropped states (optimum)
    _vec: dict = field(default_factory=dict)
    _count: dict = field(default_factory=dict)  # (quanta, orientation) -> count (best_count's search is slow)

    def vec(self, g: tuple, t: int) -> np.ndarray:
        """Expected files read per column of group ``g`` on day ``t`` (date widths shrink as the table grows)."""
        key = (g, t if self.date else 0)
        if key not in self._vec:
            q, nf, lo, hi, o = g
            v = np.full(3, float(nf)) if o == "raw" else self.cost(nf, o, self.rows_per_file).astype(np.float64)
            if self.date:
                v = v.copy()
                v[2] *= (hi - lo + 1) / (self.days_base + t)
            self._vec[key] = v
        return self._vec[key]

    def ratio(self, state: tuple, t: int) -> float:
        """The modelled worst ratio: ``max_c sum_g E_c(g) / N ** (1 - 1/d)``."""
        n = sum(g[1] for g in state)
        return float(np.sum([self.vec(g, t) for g in state], axis=0).max() / n ** (1 - 1 / D))

    def merged(self, members: list[tuple], o: str) -> tuple:
        """The group ``members`` become once clustered together with orientation ``o``.  With ``relax`` the date
        span is the sum of the members' spans (as if they were adjacent), never more than their hull: the DP
        then needs no positions and its minimum stays a lower bound."""
        q = sum(g[0] for g in members)
        k = self.count(q, o)
        if self.relax:
            return (q, k, 0, sum(g[3] - g[2] + 1 for g in members) - 1, o)
        return (q, k, min(g[2] for g in members), max(g[3] for g in members), o)

    def count(self, q: int, o: str) -> int:
        """Files a merge of ``q`` quanta writes: ``round(size)``, or with ``best_count`` the count of
        :func:`curve_cost.preferred_counts` whose wide columns the curve reads least of (the rule's choice)."""
        exact = q * self.tq
        if not self.best_count:
            return _round(exact)
        if (q, o) not in self._count:
            wide = slice(0, 2) if o == "w" else slice(0, 3)
            cost = self.cost
            self._count[(q, o)] = curve_cost.best_count(
                exact, lambda k: cost(k, o, self.rows_per_file)[wide].max() / k ** (2 / 3)
            )
        return self._count[(q, o)]

    def add(self, state: tuple, raw: list[tuple]) -> tuple:
        """Add a day's events.  Unsorted files without a date span join the unit's one raw group; with ``relax``
        a day's unsorted files form one raw group of one slab, placed at 0 (positions are not kept)."""
        gs = list(state)
        if self.relax and raw:
            raw = [(sum(r[0] for r in raw), sum(r[1] for r in raw), 0, 0, "raw")]
        for r in raw:
            if r[4] == "raw" and not self.date:
                old = [g for g in gs if g[4] == "raw"]
                if old:
                    gs.remove(old[0])
                    r = (old[0][0] + r[0], old[0][1] + r[1], 0, 0, "raw")
            gs.append(r)
        return tuple(sorted(gs))

    def new_moves(self, state: tuple) -> list[tuple[tuple, int, tuple]]:
        """``(state after, quanta rewritten, actions)`` for clustering every unsorted group together, alone, in
        each orientation: the rule's first step ("cluster the new files") before a merge the same day."""
        raw = [g for g in state if g[4] == "raw"]
        rest = [g for g in state if g[4] != "raw"]
        return [self._move(raw, rest, o) for o in self.orients] if raw else []

    def _move(self, members: list[tuple], rest: list[tuple], o: str) -> tuple[tuple, float, tuple]:
        """``members`` merged in orientation ``o`` beside ``rest``: the state after, the quanta paid (unsorted ones
        at ``RAW_WEIGHT``) and the action."""
        g = self.merged(members, o)
        paid = sum(m[0] * (RAW_WEIGHT[0] if m[4] == "raw" else 1.0) for m in members)
        return tuple(sorted(rest + [g])), paid, ((tuple(members), o, g),)

    def moves(self, state: tuple) -> list[tuple[tuple, int, tuple]]:
        """``(state after, quanta rewritten, actions)`` for every single merge of a sub-multiset of groups."""
        kinds = sorted(set(state))
        counts = [state.count(g) for g in kinds]
        out = []
        for take in itertools.product(*(range(c + 1) for c in counts)):
            if not any(take):
                continue
            members = [g for g, n in zip(kinds, take) for _ in range(n)]
            rest = [g for g, c, n in zip(kinds, counts, take) for _ in range(c - n)]
            for o in self.orients:
                if len(members) == 1 and members[0][4] == o:
                    continue
                out.append(self._move(members, rest, o))
        return out


def optimum(model: Model, start: int, init: tuple, events: dict[int, list[tuple]], days: int, beam: int = 0):
    """Exact minimum of quanta rewritten over all schedules of the model (one unit) keeping the modelled worst
    ratio <= cap after every day from ``start`` to ``days``, and one schedule reaching it.

    ``beam`` > 0 keeps only the ``beam`` cheapest states after each day: the result is then a schedule (an upper
    bound), exact only if no day had more states (``model.truncated`` says whether any had).
    Returns ``(quanta, {day: actions})``, or ``(inf, {})`` when no schedule keeps the cap."""
    layers: list[dict[tuple, tuple[int, tuple | None, tuple]]] = []
    states: dict[tuple, tuple[int, tuple | None, tuple]] = {init: (0, None, ())}
    for t in range(max(start, 1), days + 1):
        nxt: dict[tuple, tuple[int, tuple | None, tuple]] = {}
        for s, (c, _, _) in states.items():
            s1 = model.add(s, events.get(t, []))
            frontier = [(s1, 0, ())]
            if model.new_first:
                frontier += model.new_moves(s1)
            for _ in range(model.merges):
                frontier += [(s3, dq + dq2, acts + a2) for s2, dq, acts in frontier for s3, dq2, a2 in model.moves(s2)]
            for s2, dq, acts in frontier:
                if (model.ratio(s2, t) <= model.cap + 1e-12) and (s2 not in nxt or c + dq < nxt[s2][0]):
                    nxt[s2] = (c + dq, s, acts)
        if beam and len(nxt) > beam:
            model.truncated = True
            nxt = dict(sorted(nxt.items(), key=lambda kv: kv[1][0])[:beam])
        layers.append(nxt)
        states = nxt
        if not states:
            return math.inf, {}
    best = min(states, key=lambda s: states[s][0])
    cost, sched, s = states[best][0], {}, best
    for i in range(len(layers) - 1, -1, -1):
        c, prev, acts = layers[i][s]
        if acts:
            sched[max(start, 1) + i] = acts
        s = prev
    return cost, sched


def unit_events(world: World) -> dict[int | None, tuple[int, tuple, dict[int, list[tuple]]]]:
    """Per unit: the day it appears, its initial model state and its events ``{day: [group]}``."""
    out: dict[int | None, tuple[int, tuple, dict[int, list[tuple]]]] = {}
    for u, g in world.units0.items():
        out[u] = (world.born.get(u, 0), (g,), {})
    for t, fs in enumerate(world.appends[: world.days], start=1):
        for f in fs:
            if f.run is not None:  # a new partition's ingest files: its initial state
                continue
            q = max(1, round(f.rows.shape[0] / world.quantum_rows))
            s = int(f.rows[:, 2].min() // SLAB) if world.date else 0
            out[f.part][2].setdefault(t, []).append((q, 1, s, s, "raw"))
    return out


def solve_bound(world: World, args: argparse.Namespace, cost: Callable) -> tuple[float, dict, bool]:
    """The DP over every unit: ``(bytes, {unit: {day: actions}}, exact)``; ``exact`` is False when a beam
    (``--dp-beam``, the date scenario's state space is too large for an exact search here) dropped states."""
    rows_per_file = world.target // ROW_BYTES
    rotate = args.rotations and cost is not ideal_cost  # a perfect grid is the same in every column order
    orients = ("r0", "w") if world.date else ("r0", "r1", "r2") if rotate else ("r0",)
    if rotate and args.dp_permutations and not world.date:
        orients += ("p0", "p1", "p2")
    total, scheds, exact = 0.0, {}, True
    for u, (born, init, ev) in unit_events(world).items():
        days_base = world.days if world.date else 0
        model = Model(
            world.tq,
            world.date,
            days_base,
            args.threshold,
            cost,
            rows_per_file,
            orients,
            args.dp_merges,
            args.dp_new_first,
            world.date,
            best_count=args.best_count,
        )
        q, sched = optimum(model, born, init, ev, world.days, args.dp_beam if world.date else 0)
        total += q * world.quantum_rows * ROW_BYTES
        scheds[u] = sched
        exact = exact and not model.truncated
    return total, scheds, exact


def pay_once_bound(world: World, args: argparse.Namespace, cost: Callable) -> float:
    """A lower bound for an unpartitioned table that needs no search over group sizes: every appended byte
    pays once, when it is first clustered; after that all clustered appended data is one group, merged for free,
    in the cheapest orientation per column (both relaxations only lower the cost).  Exact DP over (pending
    unsorted days, clustered appended quanta); the base is never rewritten (it could only cost more)."""
    rows_per_file = world.target // ROW_BYTES
    model = Model(world.tq, world.date, world.days if world.date else 0, args.threshold, cost, rows_per_file, ())
    ev, base = unit_events(world)[None][2], world.units0[None]
    day_q = sum(e[0] for e in ev[1])
    day_f = sum(e[1] for e in ev[1])
    orients = ("r0", "w") if world.date else ("r0", "r1", "r2")
    states = {(0, 0): 0}  # (pending days, clustered appended quanta) -> quanta spent
    for t in range(1, world.days + 1):
        nxt: dict[tuple[int, int], int] = {}
        for (r, q), c in states.items():
            r += 1
            for j in range(r + 1):
                q2, c2 = q + j * day_q, c + j * day_q * RAW_WEIGHT[0]
                v = model.vec(base, t) + np.full(3, float((r - j) * day_f))
                if world.date:
                    v[2] = model.vec(base, t)[2] + (r - j) * day_f / (world.days + t)
                n = base[1] + (r - j) * day_f
                if q2:
                    g = [model.vec((q2, _round(q2 * world.tq), 0, q2 // day_q - 1, o), t) for o in orients]
                    v, n = v + np.min(g, axis=0), n + _round(q2 * world.tq)
                if v.max() / n ** (1 - 1 / D) <= args.threshold + 1e-12 and nxt.get((r - j, q2), math.inf) > c2:
                    nxt[(r - j, q2)] = c2
        states = nxt
    return min(states.values()) * world.quantum_rows * ROW_BYTES if states else math.inf


def _pick(fs: list[File], g: tuple, taken: set[str], date: bool) -> list[File]:
    """The unit's files of model group ``g`` (raw: the unsorted files of its date span; else one run's files)."""
    if g[4] == "raw":
        out = [f for f in fs if f.run is None and f.path not in taken]
        if date:  # the day's slab; a relaxed group (no position): the oldest raw day left
            slab = {f.path: int(f.rows[:, 2].min() // SLAB) for f in out}
            day = g[2] if g[2] in slab.values() else min(slab.values(), default=-1)
            out = [f for f in out if slab[f.path] == day]
    else:
        runs = sorted({f.run for f in fs if f.gid == g and f.path not in taken})
        out = [f for f in fs if f.run == runs[0] and f.path not in taken] if runs else []
    if not out:
        raise RuntimeError(f"bound replay: no files for model group {g}")
    taken.update(f.path for f in out)
    return out


def bound_policy(t: Table, degraded: list, ctx: dict) -> int | list:
    """Replay the optimum's schedule (offline: it knows the future); each merge is one run.  Past its horizon
    (``--extra-days``) the real rule takes over, as the sensor triggers it."""
    if ctx["day"] > ctx["world"].days:
        return incremental_policy(t, degraded, ctx)
    spent = 0
    for u, sched in ctx["sched"].items():
        for members, o, g in sched.get(ctx["day"], ()):
            fs, taken = units(t.files).get(u, []), set()
            picked = [f for m in members for f in _pick(fs, m, taken, ctx["world"].date)]
            spent += t.rewrite([(picked, g[1], ORDERS[o], g)])
    return spent


def online_policy(t: Table, degraded: list, ctx: dict) -> list:
    """Prototype online rule (simulator only); see :func:`_online_unit`."""
    by = units(t.files)
    return [grp for u in degraded for grp in _online_unit(t, by[u], ctx)]


def gamed_policy(t: Table, degraded: list, ctx: dict) -> list:
    """The metric gamed by file size (not in the default list): when the sensor triggers, the unsorted files,
    together with the earlier groups written this way while fewer than ``--gamed-merge`` of them, are clustered
    into files of ``--gamed-size`` x target.  Few big files pass a files-read threshold; the bytes ratio shows
    what a query pays."""
    a, out = ctx["args"], []
    for u in degraded:
        fs = units(t.files)[u]
        groups: dict[str | None, list[File]] = {}
        for f in fs:
            if f.run is None or f.run.startswith(t.name):
                groups.setdefault(f.run, []).append(f)
        if None not in groups:
            continue
        take = [f for r, g in groups.items() for f in g if r is None or len(groups) > a.gamed_merge]
        out.append((take, _round(sum(f.bytes for f in take) / (a.gamed_size * t.target)), (0, 1, 2), ()))
    return out


POLICIES: dict[str, Callable] = {
    "gamed": gamed_policy,
    "never": lambda t, degraded, ctx: [],
    "full": full_policy,
    "incremental": incremental_policy,
    "liquid": liquid_policy,
    "hudi": hudi_policy,
    "online": online_policy,
    "bound": bound_policy,
}
ALWAYS = ("liquid", "hudi", "bound")  # run every day whatever the sensor says


def simulate(world: World, args: argparse.Namespace, names: list[str], ctx: dict) -> dict[str, Table]:
    """Run the days for every policy; return the tables with their per-day figures."""
    tables = {n: Table(n, world.base, world.target) for n in names}
    for day, new in enumerate(world.appends, start=1):
        ctx["day"] = day
        for name, t in tables.items():
            t.files += new
            ratio, bratio, per = t.metrics()
            degraded = [u for u, r in per.items() if r > args.threshold]
            spent, runs = 0, t.runs
            if degraded or name in ALWAYS:
                res = POLICIES[name](t, degraded, ctx)
                spent = res if isinstance(res, int) else t.rewrite(res)
            if spent:
                ratio, bratio, _ = t.metrics()
            t.rewritten.append(spent)
            t.runs_by_day.append(t.runs - runs)
            t.largest_by_day.append(t.largest)
            t.ratios.append(ratio)
            t.bytes_ratios.append(bratio)
        if not args.quiet:
            cells = [
                f"{t.rewritten[-1] / 1e6:5.1f}MB {t.ratios[-1]:.2f}/{t.bytes_ratios[-1]:.2f}" for t in tables.values()
            ]
            print(f"day {day:2d} " + " | ".join(cells))
    return tables


def report(world: World, tables: dict[str, Table], bounds: dict[str, float]) -> dict:
    """Print the totals per policy up to the horizon (``--days``) and the optimum beside them; return them."""
    h = world.days
    appended = sum(f.bytes for fs in world.appends[:h] for f in fs)
    full = sum(tables["full"].rewritten[:h]) if "full" in tables else 0
    print(
        f"\n[{world.scenario}] appended {appended / 1e6:.1f} MB, target file {world.target / 1e6:.3f} MB\n"
        f"{'policy':26s} {'runs':>4s} {'rewritten MB':>12s} {'WA':>6s} {'vs full':>7s} {'mean':>5s} {'max':>5s}"
        f" {'bytes mean':>10s} {'bytes max':>9s} {'largest':>7s}"
    )
    out = {}
    for t in tables.values():
        b = sum(t.rewritten[:h])
        row = {
            "runs": sum(t.runs_by_day[:h]),
            "bytes": b,
            "wa": b / appended,
            "vs_full": b / full if full else None,
            "mean_ratio": float(np.mean(t.ratios[:h])),
            "max_ratio": float(max(t.ratios[:h])),
            "mean_bytes_ratio": float(np.mean(t.bytes_ratios[:h])),
            "max_bytes_ratio": float(max(t.bytes_ratios[:h])),
            "largest_file": t.largest_by_day[h - 1],
        }
        out[t.name] = row
        vs = f"{row['vs_full']:7.3f}" if full else "      -"
        print(
            f"{t.name:26s} {row['runs']:4d} {b / 1e6:12.2f} {row['wa']:6.3f} {vs} {row['mean_ratio']:5.2f} "
            f"{row['max_ratio']:5.2f} {row['mean_bytes_ratio']:10.2f} {row['max_bytes_ratio']:9.2f} "
            f"{row['largest_file']:7.2f}"
        )
    for name, b in bounds.items():
        vs = f"{b / full:7.3f}" if full else "      -"
        out[name] = {"bytes": b, "wa": b / appended, "vs_full": b / full if full else None}
        print(f"{name:26s} {'':4s} {b / 1e6:12.2f} {b / appended:6.3f} {vs}")
    return out


def horizons(world: World, tables: dict[str, Table], out: dict) -> None:
    """Each policy's bytes over full's, cumulative, on every day past the first run (``--extra-days``): the
    figure at the horizon depends on where it falls in the policies' cycles (a whole merge, a full rewrite)."""
    if "full" not in tables:
        return
    full = np.cumsum(tables["full"].rewritten)
    every = max(1, world.days // 6)
    days = [d for d in range(every, len(full) + 1, every) if full[d - 1]]
    print(f"\n[{world.scenario}] bytes over full's, cumulative, by day (horizon {world.days}: the totals above)")
    print(f"{'policy':26s} " + " ".join(f"{d:>5d}" for d in days) + f"  {'min':>5s} {'mean':>5s} {'max':>5s}")
    for t in tables.values():
        ratio = np.cumsum(t.rewritten) / np.where(full > 0, full, np.nan)
        late = ratio[world.days - 1 :]  # from the horizon on
        out[t.name]["vs_full_by_day"] = [None if np.isnan(r) else round(float(r), 4) for r in ratio]
        print(
            f"{t.name:26s} "
            + " ".join(f"{ratio[d - 1]:5.3f}" for d in days)
            + f"  {np.nanmin(late):5.3f} {np.nanmean(late):5.3f} {np.nanmax(late):5.3f}"
        )


def read_schedule(path: Path, world: World, args: argparse.Namespace) -> tuple[dict, float]:
    """A schedule written by ``--schedule-out`` for the bound policy to replay, and the bytes it was solved at;
    refused unless made for this scenario, seed, horizon and raw weight (its groups name this world's files)."""
    doc = json.loads(Path(path).read_text())
    want = {"scenario": world.scenario, "seed": args.seed, "days": world.days, "raw_weight": RAW_WEIGHT[0]}
    if (got := {k: doc.get(k) for k in want}) != want:
        raise SystemExit(f"--schedule-in {path}: made for {got}, not {want}; solve one with --schedule-out")
    sched = {
        json.loads(u): {
            int(day): [([tuple(m) for m in members], o, tuple(g)) for members, o, g in acts]
            for day, acts in unit["days"].items()
        }
        for u, unit in doc["units"].items()
    }
    return sched, float(doc["optimum_bytes"])


def calibrate(world: World, tables: dict[str, Table]) -> None:
    """Per-day worst ratio and bytes (over the base's bytes) of never/full/incremental against the SF1 Spark run."""
    spark = json.loads(RESULTS.read_text())["incremental"]
    spark = spark.get("scenarios", {}).get("uniform", spark)  # three scenarios since #37; before, uniform alone
    base = spark["base"]["bytes"]
    sim_base = sum(f.bytes for f in world.base)
    print(f"\ncalibration against {RESULTS.name} (SF1 Spark run): per day, worst ratio after the day and bytes / base")
    for name in ("never", "full", "incremental"):
        days = spark["policies"][name]["days"]
        t, h = tables[name], world.days
        dr = np.array([t.ratios[i] - d["worst"] for i, d in enumerate(days)])
        sb = np.cumsum(t.rewritten[:h]) / sim_base
        kb = np.cumsum([d["bytes_rewritten"] for d in days]) / base
        trig_s = [i + 1 for i, b in enumerate(t.rewritten[:h]) if b]
        trig_k = [d["day"] for d in days if d["bytes_rewritten"]]
        print(
            f"  {name:12s} ratio error: mean |d| {np.abs(dr).mean():.3f}, max |d| {np.abs(dr).max():.3f} (day "
            f"{int(np.abs(dr).argmax()) + 1}), mean d {dr.mean():+.3f};  cumulative bytes/base after 30 days: sim "
            f"{sb[-1]:.2f}, Spark {kb[-1]:.2f}\n  {'':12s} runs on days sim {trig_s} Spark {trig_k}"
        )
    sf = sum(tables["incremental"].rewritten[: world.days]) / max(1, sum(tables["full"].rewritten[: world.days]))
    kf = spark["comparison"]["bytes_ratio"]
    print(f"  incremental / full bytes: sim {sf:.3f}, Spark {kf:.3f}")


def _online_model(world: World, args: argparse.Namespace) -> Model:
    """The prototype's model: the measured curve, the same cap as the sensor."""
    orients = ("r0", "w") if world.date else ("r0", "r1", "r2") if args.rotations else ("r0",)
    return Model(world.tq, world.date, world.days, args.threshold, measured_cost, world.target // ROW_BYTES, orients)


def _model_state(fs: list[File], world: World) -> tuple[tuple, list[tuple]]:
    """A unit's model state from what the stats show (runs, sizes, date spans), and today's raw groups."""
    groups: dict[object, list[File]] = {}
    for f in fs:
        key = ("raw", int(f.rows[:, 2].min() // SLAB) if world.date else 0) if f.run is None else f.run
        groups.setdefault(key, []).append(f)
    state = []
    for key, g in groups.items():
        q = max(1, round(sum(f.rows.shape[0] for f in g) / world.quantum_rows))
        if key[0] == "raw":
            state.append((q, len(g), key[1], key[1], "raw"))
        elif g[0].gid:
            state.append(g[0].gid)
        else:  # a run's files without a model id (another policy's): clustered on all columns
            lo = int(min(f.rows[:, 2].min() for f in g) // SLAB) if world.date else 0
            hi = int(max(f.rows[:, 2].max() for f in g) // SLAB) if world.date else 0
            state.append((q, len(g), lo, hi, "r0"))
    return tuple(sorted(state)), [s for s in state if s[4] == "raw"]


def _days_bought(model: Model, state: tuple, day: int, daily: list[tuple], horizon: int) -> int:
    """Days the state stays within the cap if nothing is done and each day brings ``daily`` (the forecast)."""
    for h in range(1, horizon + 1):
        step = [(q, nf, lo + h * model.date, hi + h * model.date, o) for q, nf, lo, hi, o in daily]
        state = model.add(state, step)
        if model.ratio(state, day + h) > model.cap:
            return h - 1
    return horizon


def _online_unit(t: Table, fs: list[File], ctx: dict) -> list:
    """Prototype online rule (simulator only): amortised merges.

    Sees only the unit's stats (runs, sizes, min/max) and the past appends.  Forecast: every future day brings
    what the last day brought.  Candidates: any subset of the unit's groups merged into one, clustered on all
    columns in any column order or, for a group narrow in the date column, on the wide columns only.  Among the
    candidates that bring the modelled worst ratio within ``--online-target``, it takes the one with the least
    bytes per day the table then stays within the cap without further work (``--online-horizon`` days ahead).
    Output files stay at the target size (``round(bytes / target)``), so the files-read ratio cannot be gamed."""
    args, world, day = ctx["args"], ctx["world"], ctx["day"]
    model = ctx.setdefault("online_model", _online_model(world, args))
    state, raws = _model_state(fs, world)
    last = max((r[2] for r in raws), default=0)
    if world.date:
        daily = [r for r in raws if r[2] == last]
    else:  # partitioned: late files come about once a week per partition: forecast none
        daily = [] if world.scenario == "partitioned" else [(2, 2, 0, 0, "raw")]
    best = None
    for after, dq, acts in model.moves(state):
        if model.ratio(after, day) > min(args.online_target, model.cap):
            continue
        bought = _days_bought(model, after, day, daily, args.online_horizon)
        score = dq / (bought + 1)
        if best is None or score < best[0] - 1e-12:
            best = (score, acts)
    if best is None:  # nothing reaches the target: the whole unit
        return [(fs, _whole(fs, t.target), (0, 1, 2), ())]
    out, taken = [], set()
    for members, o, g in best[1]:
        picked = [f for m in members for f in _pick_state(fs, m, taken, world)]
        out.append((picked, g[1], ORDERS[o], g))
    return out


def _pick_state(fs: list[File], g: tuple, taken: set[str], world: World) -> list[File]:
    """The files of model group ``g`` as :func:`_model_state` built it."""
    if g[4] == "raw":
        return _pick(fs, g, taken, world.date)
    by_run: dict[str, list[File]] = {}
    for f in fs:
        if f.run is not None and f.path not in taken:
            by_run.setdefault(f.run, []).append(f)
    for _run, g_files in sorted(by_run.items()):
        st, _ = _model_state(g_files, world)
        if st == (g,):
            taken.update(f.path for f in g_files)
            return g_files
    raise RuntimeError(f"online: no files for model group {g}")


def write_schedule(path: Path, world: World, args: argparse.Namespace, sched: dict, spent: float) -> None:
    """The optimum's schedule as JSON, for ``bench_incremental.py --replay`` to run with the Spark job: per unit
    (``"null"``: the unpartitioned table), its base model group and ``{day: [[members], orientation, group]}``
    with groups ``[quanta, files, date lo, date hi, orientation]`` (``raw``: the never-clustered files)."""
    doc = {
        "scenario": world.scenario,
        "seed": args.seed,
        "raw_weight": RAW_WEIGHT[0],
        "days": world.days,
        "orders": {o: list(v) for o, v in ORDERS.items()},
        "optimum_bytes": spent,
        "flags": {k: getattr(args, k) for k in ("dp_merges", "dp_new_first", "dp_permutations", "best_count")},
        "units": {
            json.dumps(u): {
                "base": list(world.units0[u]),
                "days": {
                    str(day): [[[list(m) for m in members], o, list(g)] for members, o, g in acts]
                    for day, acts in sorted(s.items())
                },
            }
            for u, s in sched.items()
        },
    }
    path.write_text(json.dumps(doc, indent=1) + "\n")


def run_scenario(args: argparse.Namespace) -> dict:
    """One scenario: the optimum (unless ``--no-bound``), every policy, the report."""
    t0 = time.perf_counter()
    _UNIT_MEMO.clear()  # keyed by paths, which the scenarios share
    world = make_world(args)
    target = world.target
    params = incremental.IncrementalParams(
        target_ratio=args.target_ratio,
        target_file_size=target,
        min_new_files=args.min_new_files,
        min_new_bytes=int(args.min_new_target_files * target),
        seal_bytes=int(args.seal_target_files * target) if args.seal_target_files else None,
        trigger_ratio=args.threshold if args.amortised else None,
        lookahead_runs=args.lookahead_runs,
        curve="hilbert",  # cluster() cuts along the Hilbert curve, as the Spark benchmark does
    )
    ctx: dict = {"args": args, "world": world, "params": params, "sched": {}}
    names = [n for n in args.policies.split(",") if n != "bound" or not args.no_bound or args.schedule_in]
    bounds: dict[str, float] = {}
    timings = {}
    if args.schedule_in:  # the bound policy replays it; no DP is solved
        ctx["sched"], bounds[f"schedule {Path(args.schedule_in).name}"] = read_schedule(args.schedule_in, world, args)
    elif not args.no_bound:
        for label, cost in (("DP, measured curve", measured_cost), ("DP, ideal grid", ideal_cost)):
            t1 = time.perf_counter()
            b, sched, exact = solve_bound(world, args, cost)
            label = f"optimum ({label})" if exact else f"schedule ({label}, beam)"
            timings[label] = time.perf_counter() - t1
            bounds[label] = b
            if cost is measured_cost:
                ctx["sched"] = sched
                if args.schedule_out:
                    write_schedule(Path(args.schedule_out), world, args, sched, b)
                acts = [
                    (u, d, [(tuple(m[:2] + (m[4],) for m in a[0]), a[1]) for a in acts])
                    for u, s in sched.items()
                    for d, acts in sorted(s.items())
                ]
                if not args.quiet:
                    print(f"DP schedule (unit, day, merges of (quanta, files, orientation) groups): {acts[:40]}")
        if world.scenario != "partitioned":
            for label, cost in (("pay-once bound, measured", measured_cost), ("pay-once bound, ideal", ideal_cost)):
                t1 = time.perf_counter()
                bounds[label] = pay_once_bound(world, args, cost)
                timings[label] = time.perf_counter() - t1
    tables = simulate(world, args, names, ctx)
    out = report(world, tables, bounds)
    if args.extra_days:
        horizons(world, tables, out)
    for label, s in timings.items():
        print(f"  {label}: solved in {s:.1f} s")
    if args.calibrate and world.scenario == "uniform":
        calibrate(world, tables)
    print(f"({world.scenario}: {time.perf_counter() - t0:.1f} s)")
    return out


def main(argv: list[str] | None = None) -> dict:
    """Parse flags, simulate every scenario asked for, print the totals."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scenario", default="uniform", choices=(*SCENARIOS, "all"))
    ap.add_argument("--rows", type=int, default=300_000, help="base rows (the appends add as many over the days)")
    ap.add_argument("--days", type=int, default=30)
    ap.add_argument("--threshold", type=float, default=1.5, help="the sensor's worst ratio to ideal (and the cap)")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--quiet", action="store_true", help="totals only")
    ap.add_argument("--calibrate", action="store_true", help="uniform: compare with the SF1 Spark run")
    ap.add_argument("--policies", default="never,full,incremental,liquid,hudi,online,bound")
    ap.add_argument("--no-bound", action="store_true", help="skip the optimum")
    ap.add_argument("--dp-merges", type=int, default=1, help="merges per day the optimum may make")
    ap.add_argument(
        "--dp-new-first",
        action="store_true",
        help="optimum: a day may cluster its unsorted files alone before its merge (the rule's two steps)",
    )
    ap.add_argument(
        "--dp-permutations", action="store_true", help="optimum: all 6 column orders (default: the 3 rotations)"
    )
    ap.add_argument("--schedule-out", help="write the optimum's schedule (measured curve) to this JSON file")
    ap.add_argument(
        "--schedule-in",
        help="the bound policy replays this --schedule-out file instead of solving the DP (implies no other bound)",
    )
    ap.add_argument(
        "--extra-days",
        type=int,
        default=0,
        help="appends go on this many days past --days (totals stay at --days); prints bytes over full's by day, "
        "the bound policy handing over to the rule after its schedule",
    )
    ap.add_argument("--dp-beam", type=int, default=400, help="date scenario: states kept per day by the DP")
    ap.add_argument("--no-rotations", dest="rotations", action="store_false", help="optimum: one column order only")
    ap.add_argument(
        "--best-count",
        action="store_true",
        help="optimum: each merge writes the count its curve cuts best (the rule's)",
    )
    ap.add_argument("--online-target", type=float, default=1.45, help="online: worst ratio a run must reach")
    ap.add_argument("--online-horizon", type=int, default=30, help="online: days looked ahead (forecast)")
    ap.add_argument("--gamed-size", type=float, default=4.0, help="gamed: output file size (x target)")
    ap.add_argument("--gamed-merge", type=int, default=4, help="gamed: groups kept before they are merged")
    ap.add_argument("--part-files", type=int, default=8, help="partitioned: files per daily partition")
    ap.add_argument("--late-files", type=int, default=2, help="partitioned: late files a day")
    ap.add_argument("--late-rows", type=int, default=125, help="partitioned: rows per late file")
    ap.add_argument("--late-days", type=int, default=7, help="partitioned: late files land 1..this many days back")
    ap.add_argument("--liquid-min", type=float, default=4.0, help="liquid: new data (target files) to cluster")
    ap.add_argument("--liquid-seal", type=float, default=8.0, help="liquid: cube size (target files) that seals")
    ap.add_argument("--hudi-every", type=int, default=4, help="hudi: run every this many days (inline.max.commits)")
    ap.add_argument("--hudi-small", type=float, default=0.3, help="hudi: small-file limit (x target)")
    ap.add_argument("--hudi-group", type=float, default=2.0, help="hudi: max bytes per group (x target)")
    d = incremental.IncrementalParams()
    ap.add_argument("--target-ratio", type=float, default=d.target_ratio)
    ap.add_argument(
        "--greedy", dest="amortised", action="store_false", help="incremental: the greedy alone (no trigger_ratio)"
    )
    ap.add_argument("--min-new-files", type=int, default=d.min_new_files)
    ap.add_argument("--lookahead-runs", type=int, default=d.lookahead_runs, help="incremental: later runs scored")
    ap.add_argument("--min-new-target-files", type=float, default=d.min_new_bytes / d.target_file_size)
    ap.add_argument("--seal-target-files", type=float, default=200.0, help="0: never seal (Spark benchmark: 200)")
    ap.add_argument(
        "--raw-weight",
        type=float,
        default=1.0,
        help="bytes per row of never-clustered files over clustered ones (Spark's SF1 lineitem appends: 1.11)",
    )
    args = ap.parse_args(argv)
    if args.extra_days < 0:
        ap.error(f"--extra-days must be 0 or more, not {args.extra_days}")
    RAW_WEIGHT[0] = args.raw_weight
    out = {}
    for s in SCENARIOS if args.scenario == "all" else (args.scenario,):
        args.scenario = s
        out[s] = run_scenario(args)
    return out


if __name__ == "__main__":
    main()
