"""Incremental re-clustering: which files of one unit (a partition, or an unpartitioned table) to rewrite.

Airflow-free, Spark-free (numpy).  Input: the unit's stats rows (FILE_STATS_SCHEMA) plus each file's
*membership*, the clustering run that wrote it (None: never clustered).  Output: an :class:`IncrementalPlan`.
:mod:`.incremental_stats` builds the input from stats rows and plans a whole table.

The rule
--------
* Cost: a point query ``c = v`` reads file ``f`` with probability ``P_c(f)``, ``v`` uniform over the unit's range
  of ``c`` (the model of :func:`~airflow_zorder.core.policy.column_clustering.column_clustering`, so "before" is
  the sensor's ``ratio_to_ideal``;
  min/max stats hold no row values).  The expected files read ``E_c = sum_f P_c(f)`` is additive over files;
  the ideal is ``I_c = N ** (1 - 1/d)`` (:func:`point_queries.ideal_point_query_fraction` times N).
* Groups: files by membership; never-clustered files form the *new* group.  A clustered group above
  ``seal_bytes`` is sealed (Delta's ZCubes seal at 100 GiB): only the *full* candidate rewrites it.
* Estimate: clustering a set S into ``k`` files costs ``U_c(S) * min(k, q_c * F_c(k))``, ``U_c(S)`` = ``P_c`` of
  one pseudo-file spanning S (narrow data, e.g. recent dates, is credited), ``F_c(k)`` the files the curve cut into
  ``k`` files reads on column c of evenly spread data (:func:`curve_cost.files_read`, about ``k ** (1 - 1/d)``),
  ``q_c`` = median over clustered groups of >= 4 files of their actual ``E_c`` over this estimate, clipped to
  [0.75, 2] (default 1): the data's distance from evenly spread.  ``k`` is the count the curve cuts best with the
  mean file within 0.8-1.1x ``target_file_size`` (:func:`curve_cost.preferred_counts`; Z-order on 3 columns cuts
  64 files into a grid, 40 into files whose worst column reads 1.7x the ideal), the set's bytes counted as its
  rows weigh in the unit's clustered groups (unsorted appends shrink when clustered).  The curve's column order
  is the bin's own: the one that leaves the unit's worst column lowest given the other groups' files read (a
  curve reads unequal files per column at most counts, and groups oriented apart even out the sums).
  A set may be clustered on a subset of the columns (the bin's ``columns``): a column outside it costs
  ``U_c(S) * k`` and the subset's own get the curve's cost on ``|subset|`` columns; the cheapest subset wins, so a
  set narrow in a column (a day of appends in an ingestion-date column) is clustered on its wide columns only.
* Candidates: the new files alone, once they reach ``min_new_files`` or ``min_new_bytes`` (below that they are
  *pending*: Hudi's size-based plans and ZCubes cluster new data once enough has accumulated); LSM-style merges
  of the j smallest unsealed groups, j = 2..G, the new group included (Databend/Snowflake: levels merge when
  their overlap, i.e. depth, is high; merging small first keeps each byte rewritten about log(G) times); and the
  full rewrite of every file, the last resort for overlap no merge can repair (sealed cubes overlapping each
  other, which Delta never measures), offered only if the unit is degraded without its pending files.
* Amortised (the sensor's ``trigger_ratio`` given): of the plans of one or two candidates reaching the goal, the
  one with the fewest bytes per appended file absorbed before the trigger ratio comes back, new files forecast one
  at a time like the pending ones (:class:`_Forecast`; a column whose new values lie beyond every clustered file's,
  e.g. an ingestion date, widens the range as they come), counting the next ``lookahead_runs`` (2) runs too: the
  state is carried to the day the trigger ratio returns, the best one-step plan of that day joins the score, and so
  on (:func:`_lookahead`), so a plan that buys little now pays for the bigger runs it leads to.  Without a trigger
  ratio, or when no such plan exists:
* Greedy: take the candidate with the largest gain per byte newly rewritten, gain ``sum_c (E_c before - E_c
  after) / I_c``, that fits the run's ``max_bytes`` and lowers the worst ratio; apply it virtually (the merged
  set becomes one planned group with its estimated cost) and repeat until the worst ``E_c / I_c <=
  target_ratio`` or nothing helps.  Merging planned groups costs no extra bytes; the plan's bins are the
  planned groups left at the end, each clustered among itself.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from airflow_zorder.core.errors import InvalidInputError
from airflow_zorder.core.layout import curve_cost, curves
from airflow_zorder.core.policy import file_bounds, point_queries
from airflow_zorder.core.policy.file_sizing import DEFAULT_TARGET_FILE_SIZE
from airflow_zorder.core.policy.formatting import format_bytes
from airflow_zorder.core.policy.plan_defaults import DEFAULT_CURVE, DEFAULT_TARGET_RATIO

__all__ = ["ColumnEstimate", "IncrementalParams", "IncrementalPlan", "PlanBin", "UnitFiles", "plan"]

_Q_RANGE, _Q_DEFAULT, _Q_MIN_FILES = (0.75, 2.0), 1.0, 4  # calibration: clip, default, smallest group measured
_TRIGGER_MARGIN = 0.05  # the default goal's distance below the trigger ratio
_MAX_SUBSET_COLUMNS = 6  # column subsets searched for a bin: every one up to this many columns
_MAX_ORIENTED_COLUMNS = 4  # curve column orders searched for a bin: all of them up to this many columns
_MAX_LOOKAHEAD = 3  # later runs scored: each multiplies the plans compared by the candidates of a run


@dataclass(frozen=True)
class IncrementalParams:
    """The policy's knobs (defaults tuned with ``benchmarks/sim_incremental.py``)."""

    # stop once every column's expected files read / ideal is at most this (None: trigger_ratio - 0.05 when set, else
    # DEFAULT_TARGET_RATIO); see goal
    target_ratio: float | None = None
    target_file_size: int = DEFAULT_TARGET_FILE_SIZE  # output file size (the job's default)
    min_new_files: int = 4  # new files are clustered once there are this many ...
    min_new_bytes: int = 2 * DEFAULT_TARGET_FILE_SIZE  # ... or this many bytes of them
    seal_bytes: int | None = 100 << 30  # clustered groups above this are only rewritten by a full rewrite
    max_bytes: int | None = None  # per-run budget of bytes rewritten (None: unlimited)
    # the ratio at which the sensor re-clusters: when set, plans are compared by bytes per append they absorb
    # before the unit reaches it again (amortised); None: the greedy alone
    trigger_ratio: float | None = None
    horizon: int = 500  # appended files looked ahead by the amortised choice
    lookahead_runs: int = 2  # later runs the amortised choice scores with a plan (0: the plan alone)
    # the job's curve: the estimates use its measured cost and the plan its best file counts (curve_cost); None:
    # the curve of the table's last clustering run when the sensor knows it, else DEFAULT_CURVE
    curve: str | None = None

    @property
    def goal(self) -> float:
        """The worst ratio a plan must reach: ``target_ratio``; unset, just below the sensor's trigger (the
        amortised choice then decides how much further to go) or, without one, :data:`DEFAULT_TARGET_RATIO`."""
        if self.target_ratio is not None:
            return float(self.target_ratio)
        if self.trigger_ratio is not None:
            return max(1.0, self.trigger_ratio - _TRIGGER_MARGIN)
        return DEFAULT_TARGET_RATIO

    @property
    def job_curve(self) -> str:
        """The curve the plan is made for: ``curve``, or the jobs' default."""
        return self.curve or DEFAULT_CURVE

    def __post_init__(self) -> None:
        if self.curve is not None and self.curve not in curves.CURVES:
            raise InvalidInputError(f"curve must be one of {', '.join(curves.CURVES)}, not {self.curve!r}")
        if self.target_ratio is None:
            pass
        elif not (isinstance(self.target_ratio, (int, float)) and math.isfinite(self.target_ratio)):
            raise InvalidInputError(f"target_ratio must be a finite number >= 1, not {self.target_ratio!r}")
        elif self.target_ratio < 1.0:
            raise InvalidInputError(f"target_ratio must be >= 1 (1 = a perfect grid), not {self.target_ratio!r}")
        if self.trigger_ratio is not None and not (
            isinstance(self.trigger_ratio, (int, float)) and 1.0 <= self.trigger_ratio < float("inf")
        ):
            raise InvalidInputError(f"trigger_ratio must be a number >= 1 or None, not {self.trigger_ratio!r}")
        if not (isinstance(self.lookahead_runs, int) and not isinstance(self.lookahead_runs, bool)) or not (
            0 <= self.lookahead_runs <= _MAX_LOOKAHEAD
        ):
            raise InvalidInputError(
                f"lookahead_runs must be an integer in 0..{_MAX_LOOKAHEAD}, not {self.lookahead_runs!r}"
            )
        for name in ("target_file_size", "min_new_files", "min_new_bytes", "seal_bytes", "max_bytes", "horizon"):
            v = getattr(self, name)
            optional = name in ("seal_bytes", "max_bytes")
            if (v is None and optional) or (isinstance(v, int) and not isinstance(v, bool) and v >= 1):
                continue
            raise InvalidInputError(f"{name} must be a positive integer{' or None' if optional else ''}, not {v!r}")


@dataclass(frozen=True)
class UnitFiles:
    """One unit's files: ``bounds[column] = (mins, maxs, has_stats)`` as :func:`file_bounds.prepare_bounds` takes
    them."""

    paths: Sequence[str]
    bytes: Sequence[int]
    membership: Sequence[str | None]  # the clustering run that wrote the file; None = never clustered
    bounds: Mapping[str, tuple[Any, Any, Any]]
    rows: Sequence[int] | None = None  # rows per file (0: unknown): sizes the output by what clustered rows weigh

    def __post_init__(self) -> None:
        n = len(self.paths)
        if len(self.bytes) != n or len(self.membership) != n or (self.rows is not None and len(self.rows) != n):
            raise ValueError(
                f"paths, bytes, membership and rows differ in length: {n}, {len(self.bytes)}, "
                f"{len(self.membership)}, {'-' if self.rows is None else len(self.rows)}"
            )
        if not self.bounds:
            raise ValueError("no clustering columns: bounds is empty")


@dataclass(frozen=True)
class PlanBin:
    """Files clustered together into ``num_output_files`` files, on ``columns`` (None: every clustering column)."""

    paths: tuple[str, ...]
    bytes: int
    num_output_files: int
    columns: tuple[str, ...] | None = None


@dataclass(frozen=True)
class ColumnEstimate:
    """Expected files read by a point query on ``column`` and its ratio to the ideal, before and after the plan."""

    column: str
    files_read_before: float
    files_read_after: float
    ratio_before: float
    ratio_after: float


@dataclass(frozen=True)
class IncrementalPlan:
    """What to rewrite (empty: nothing), what it costs and the estimated gain, with one reason per choice."""

    paths: tuple[str, ...]
    bytes: int
    num_output_files: int
    bins: tuple[PlanBin, ...]
    columns: tuple[ColumnEstimate, ...]
    reasons: tuple[str, ...]
    num_files_before: int
    num_files_after: int

    @property
    def empty(self) -> bool:
        """Whether the plan rewrites nothing."""
        return not self.paths

    @property
    def worst_ratio_before(self) -> float:
        """The worst column's ratio to ideal now."""
        return max(c.ratio_before for c in self.columns)

    @property
    def worst_ratio_after(self) -> float:
        """The worst column's estimated ratio to ideal after the plan."""
        return max(c.ratio_after for c in self.columns)

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable form (the sensor's XCom)."""
        return asdict(self)


@dataclass(frozen=True)
class _Col:
    """One column's bounds as float keys, per-file read probabilities ``p``, and the range they are uniform over."""

    lo: np.ndarray
    hi: np.ndarray
    bounded: np.ndarray
    unknown: np.ndarray
    p: np.ndarray
    total: float  # width of the unit's range (+ one unit for integer-like keys); <= 0: a single float value
    res: float

    def span_p(self, lo: float, hi: float) -> float:
        """``P`` of one file whose bounds are ``[lo, hi]``."""
        return 1.0 if self.total <= 0 else min(1.0, (hi - lo + self.res) / self.total)


def _column(mins: Any, maxs: Any, has: Any) -> _Col:
    """One column through :func:`file_bounds.prepare_bounds` (its rules: unknown files always read, all-null never)."""
    fb, _, _ = file_bounds.prepare_bounds(mins, maxs, has)
    lo, hi, b = fb.lo.astype(np.float64), fb.hi.astype(np.float64), fb.bounded
    res = 1.0 if fb.lo.dtype.kind in "iu" else 0.0  # ints, dates, timestamps, short decimals, string ranks
    total = float(hi[b].max() - lo[b].min()) + res if b.any() else 0.0
    p = np.where(b, 1.0 if total <= 0 else (hi - lo + res) / max(total, 1e-300), 0.0)
    return _Col(lo, hi, b, fb.unknown, np.where(fb.unknown, 1.0, p), total, res)


@dataclass(frozen=True)
class _Group:
    """A set of files with one membership, or a planned (virtual) bin: its cost and span per column."""

    idx: np.ndarray
    bytes: int
    nfiles: int
    files_read: np.ndarray  # E_c per column
    lo: np.ndarray
    hi: np.ndarray
    unknown: np.ndarray
    label: str | None  # membership; None = the new group
    planned: bool = False
    on: tuple[int, ...] | None = None  # planned: the columns it is clustered on, in the curve's order (None: all)
    wread: np.ndarray | None = None  # files read, each file counted as its size weight (None: one output size)
    weight: float | None = None  # the files' size weights summed (point_queries.size_weights)
    out_bytes: float | None = None  # its bytes once clustered (None: its bytes)

    @property
    def output_bytes(self) -> float:
        """Bytes once clustered: rows shrink when clustered finer (Spark's SF1 lineitem: 5-15%)."""
        return float(self.bytes) if self.out_bytes is None else self.out_bytes

    def sized(self, target: int | None) -> tuple[np.ndarray, float]:
        """``(files read, files)`` with files over 1.25x ``target`` counted as several (the sensor's sized ratio)."""
        if self.wread is not None and self.weight is not None:
            return self.wread, self.weight
        w = float(point_queries.size_weights(self.bytes / max(self.nfiles, 1), target))
        return self.files_read * w, self.nfiles * w


def _group(idx: np.ndarray, sizes: np.ndarray, cols: list[_Col], label: str | None, target: int | None) -> _Group:
    """The group of files ``idx`` as they are on disk."""
    lo = np.array([c.lo[idx][c.bounded[idx]].min(initial=np.inf) for c in cols])
    hi = np.array([c.hi[idx][c.bounded[idx]].max(initial=-np.inf) for c in cols])
    unknown = np.array([bool(c.unknown[idx].any()) for c in cols])
    read = np.array([float(c.p[idx].sum()) for c in cols])
    w = point_queries.size_weights(sizes[idx], target)
    wread = np.array([float((c.p[idx] * w).sum()) for c in cols])
    return _Group(
        idx, int(sizes[idx].sum()), int(idx.size), read, lo, hi, unknown, label, wread=wread, weight=float(w.sum())
    )


def _union(groups: Sequence[_Group]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per column: the lowest min, highest max and whether any file has unknown bounds."""
    return (
        np.min([g.lo for g in groups], 0),
        np.max([g.hi for g in groups], 0),
        np.any([g.unknown for g in groups], 0),
    )


def _span(cols: list[_Col], groups: Sequence[_Group]) -> np.ndarray:
    """``U_c`` per column: P of one pseudo-file spanning all files of ``groups``."""
    lo, hi, unk = _union(groups)
    return np.array([1.0 if u else (c.span_p(a, b) if a <= b else 0.0) for c, a, b, u in zip(cols, lo, hi, unk)])


def _clustered_cost(
    span: np.ndarray, k: int, d: int, q: np.ndarray, curve: str, rest: np.ndarray | None = None
) -> tuple[np.ndarray, tuple[int, ...] | None]:
    """Estimated ``E_c`` of a set spanning ``span`` clustered into ``k`` files, and the columns to cluster it on in
    the curve's order (None: all, in the table's order).

    On a subset S of the columns, a column of S costs ``q_c`` times what ``curve`` cut into ``k`` files reads on
    its column (:func:`curve_cost.files_read` on ``d_S`` columns, about ``k ** (1 - 1/d_S)``) and one outside S
    costs ``k`` (every file spans the set's range there), ``d_S = d - (columns - |S|)``.  The subset with the least
    total wins (ties: more columns): a set narrow in a column -- a day of appends in an ingestion-date column --
    is best clustered on its wide columns only (``sqrt(k)`` files instead of ``k ** (2/3)`` for 2 of 3 columns).
    ``rest``: the files read of the other groups per column; the curve's column order is then the one whose
    slower columns land where the others read least (Z-order on 3 columns cut into 32 files reads 1.6x the
    ideal on its last column and 1.0x on its first: groups oriented apart even out the columns' sums).
    """
    m = span.shape[0]
    best: tuple[float, np.ndarray, tuple[int, ...]] | None = None
    for size in range(m, 0, -1):
        dim = max(1, d - (m - size))
        read = curve_cost.files_read(curve, k, dim)
        for sub in itertools.combinations(range(m), size):
            cost = _ordered_cost(span, k, q, read, sub)
            total = float(cost.sum())
            if best is None or total < best[0] - 1e-9:
                best = (total, cost, sub)
        if m > _MAX_SUBSET_COLUMNS:  # 2 ** m subsets: beyond a few columns, all of them or all but one
            break
    assert best is not None
    _, cost, order = best
    if rest is not None and 2 <= len(order) <= _MAX_ORIENTED_COLUMNS:
        read = curve_cost.files_read(curve, k, max(1, d - (m - len(order))))
        top = float(np.max(rest + cost))
        for alt_order in itertools.permutations(order):
            alt = _ordered_cost(span, k, q, read, alt_order)
            if (worst := float(np.max(rest + alt))) < top - 1e-9:
                top, cost, order = worst, alt, tuple(int(i) for i in alt_order)
    return cost, (None if order == tuple(range(m)) else order)


def _ordered_cost(span: np.ndarray, k: int, q: np.ndarray, read: np.ndarray, order: Sequence[int]) -> np.ndarray:
    """``E_c`` of a set spanning ``span`` cut into ``k`` files on the columns ``order``, in that curve order: the
    column in slot i costs ``q_c`` times the curve's ``read[i]`` (at most ``k``), a column outside costs ``k``."""
    cost = span * float(k)
    at = list(order)
    cost[at] = span[at] * np.minimum(k, q[at] * read[: len(at)])
    return cost


def _calibration(cols: list[_Col], groups: Sequence[_Group], d: int, curve: str) -> np.ndarray:
    """``q_c``: median actual / estimated cost over clustered groups of >= 4 files, clipped to [0.75, 2] (the
    data's distance from the curve's cost on evenly spread values).  A group's curve column order is not in its
    stats: each is compared with the order its costs match best (:func:`_oriented`)."""
    ratios: list[list[float]] = [[] for _ in cols]
    for g in groups:
        if g.label is not None and g.nfiles >= _Q_MIN_FILES:
            est = _oriented(_span(cols, [g]), g.nfiles, d, curve, g.files_read)
            for i in np.flatnonzero(est > 0):
                ratios[i].append(g.files_read[i] / est[i])
    return np.array([np.clip(np.median(r), *_Q_RANGE) if r else _Q_DEFAULT for r in ratios])


def _oriented(span: np.ndarray, k: int, d: int, curve: str, actual: np.ndarray) -> np.ndarray:
    """The estimate (``q = 1``) of a group clustered on every column in the curve column order its actual files
    read match best (least squared log ratio); a group clustered on a subset keeps :func:`_clustered_cost`'s."""
    m = span.shape[0]
    est, on = _clustered_cost(span, k, d, np.ones(m), curve)
    if on is not None or not 2 <= m <= _MAX_ORIENTED_COLUMNS:
        return est
    read = curve_cost.files_read(curve, k, d)
    ok = (est > 0) & (actual > 0)
    best, out = math.inf, est
    for order in itertools.permutations(range(m)):
        alt = _ordered_cost(span, k, np.ones(m), read, order)
        good = ok & (alt > 0)
        err = float(np.sum(np.log(actual[good] / alt[good]) ** 2))
        if err < best - 1e-12:
            best, out = err, alt
    return out


def _worst(groups: Sequence[_Group], d: int, ncols: int, target: int | None = None) -> tuple[float, np.ndarray, int]:
    """``(worst ratio, E_c per column, N)`` of a state; the ratio is the larger of the files ratio and the sized one
    (files over 1.25x ``target`` counted as several, :func:`point_queries.size_weights`), as the sensor scores them."""
    n = sum(g.nfiles for g in groups)
    read = np.sum([g.files_read for g in groups], axis=0) if groups else np.zeros(ncols)
    if not n:
        return 0.0, read, n
    wread, weight = _sized_sums(groups, target)
    return float(_ratio(read, float(n), wread, weight, d)), read, n


def _sized_sums(groups: Sequence[_Group], target: int | None) -> tuple[np.ndarray, float]:
    """The state's files read and files, each file counted as its size weight (:meth:`_Group.sized`)."""
    sized = [g.sized(target) for g in groups]
    return np.sum([s[0] for s in sized], axis=0), sum(s[1] for s in sized)


def _ratio(read: np.ndarray, n: Any, wread: np.ndarray, weight: Any, d: int) -> Any:
    """The worst column's ratio: the larger of files read over ``n ** (1 - 1/d)`` and the sized files read over
    ``weight ** (1 - 1/d)``.  ``n`` and ``weight`` may be arrays (one state per row of ``read`` and ``wread``)."""
    e = 1.0 - 1.0 / d
    files = np.max(read / np.power(n, e)[..., None] if np.ndim(n) else read / n**e, axis=-1)
    sized = np.max(wread / np.power(weight, e)[..., None] if np.ndim(weight) else wread / weight**e, axis=-1)
    return np.maximum(files, sized)


def _candidates(groups: list[_Group], p: IncrementalParams, new_ok: bool, full_ok: bool) -> list[tuple[str, list[int]]]:
    """``(kind, group indices)``: the new files alone, the j smallest unsealed groups, everything."""
    out: list[tuple[str, list[int]]] = []
    new = [i for i, g in enumerate(groups) if g.label is None and not g.planned]
    if new and new_ok:
        out.append(("cluster the new files", new))
    sealed = {i for i, g in enumerate(groups) if g.label is not None and p.seal_bytes and g.bytes > p.seal_bytes}
    open_ = sorted(
        (i for i in range(len(groups)) if i not in sealed and (new_ok or i not in new)),
        key=lambda i: (groups[i].bytes, i),
    )
    out += [(f"merge the {j} smallest groups", open_[:j]) for j in range(2, len(open_) + 1)]
    if full_ok:
        out.append(("full rewrite", list(range(len(groups)))))
    return out


def _merge(
    members: list[_Group], cols: list[_Col], p: IncrementalParams, d: int, q: np.ndarray, rest: np.ndarray | None = None
) -> _Group:
    """The planned group ``members`` become once clustered together, into the file count the curve cuts best
    of :func:`curve_cost.preferred_counts` (mean file within 0.8-1.1x the target): the least worst-column
    files read over ``k ** (1 - 1/d)``.  ``rest``: the other groups' files read per column, for the curve's
    column order (:func:`_clustered_cost`)."""
    size = sum(g.bytes for g in members)
    out = sum(g.output_bytes for g in members)
    span = _span(cols, members)

    costs: dict[int, tuple[np.ndarray, tuple[int, ...] | None]] = {}

    def cost(k: int) -> tuple[np.ndarray, tuple[int, ...] | None]:  # the chosen count's is not computed twice
        if k not in costs:
            costs[k] = _clustered_cost(span, k, d, q, p.job_curve, rest)
        return costs[k]

    k = curve_cost.best_count(out / p.target_file_size, lambda k: float(cost(k)[0].max()) / k ** (1 - 1 / d))
    read, on = cost(k)
    return _Group(
        np.concatenate([g.idx for g in members]), size, k, read, *_union(members), "planned", True, on, out_bytes=out
    )


def _step_line(kind: str, m: int, merged: _Group, names: list[str], before: float, after: float) -> str:
    """One step of a plan as its reason line."""
    on = ""
    if merged.on is not None and len(merged.on) < len(names):
        on = f" on {', '.join(names[i] for i in merged.on)} (narrow in the others)"
    elif merged.on is not None:
        on = f" in the curve order {', '.join(names[i] for i in merged.on)}"
    return (
        f"{kind} ({m} groups, {merged.idx.size} files, {format_bytes(merged.bytes)}) into {merged.nfiles} "
        f"files{on}: worst ratio {before:.2f} -> {after:.2f}"
    )


def _greedy(
    groups: list[_Group], cols: list[_Col], p: IncrementalParams, d: int, gates: tuple[bool, bool], names: list[str]
) -> tuple[list[_Group], list[str]]:
    """Apply the best candidate by gain per byte until the target is met or nothing helps (module doc)."""
    q, reasons, spent = _calibration(cols, groups, d, p.job_curve), [], 0
    while (now := _worst(groups, d, len(cols), p.target_file_size))[0] > p.goal:
        best = None
        for kind, ids in _candidates(groups, p, *gates):
            after, cost, merged = _apply(groups, ids, cols, p, d, q)
            if p.max_bytes is not None and spent + cost > p.max_bytes:
                continue
            gain = float(np.sum(sum(groups[i].files_read for i in ids) - merged.files_read)) / now[2] ** (1 - 1 / d)
            ratio = _worst(after, d, len(cols), p.target_file_size)[0]
            if gain > 1e-9 and ratio < now[0] - 1e-12 and (best is None or gain / max(cost, 1) > best[0]):
                best = (gain / max(cost, 1), kind, after, cost, merged, len(ids), ratio)
        if best is None:
            budget = " within the byte budget" if p.max_bytes else ""
            reasons.append(f"stop at worst ratio {now[0]:.2f}: no candidate lowers it{budget}")
            break
        _, kind, groups, cost, merged, m, ratio = best
        spent += cost
        reasons.append(_step_line(kind, m, merged, names, now[0], ratio))
    return groups, reasons


@dataclass(frozen=True)
class _Forecast:
    """Future appends, one file at a time, each like a file of the pending new ones: the files read and files it
    adds, and the range it adds to each column (a column whose new values lie beyond every clustered file's, e.g.
    an ingestion date)."""

    read: np.ndarray
    wread: np.ndarray
    weight: float
    nfiles: int
    grow: np.ndarray
    total: np.ndarray
    target: int | None
    bytes: float = 0.0  # bytes per appended file
    shrink: float = 1.0  # its bytes once clustered over its bytes
    lo: np.ndarray | None = None  # the pending files' span (an appended file's, outside a growing column)
    hi: np.ndarray | None = None
    unknown: np.ndarray | None = None

    @classmethod
    def of(cls, new: _Group | None, others: Sequence[_Group], cols: list[_Col], target: int | None) -> _Forecast:
        total = np.array([c.total if c.total > 0 else 1.0 for c in cols])
        if new is None:
            zero = np.zeros(len(cols))
            return cls(zero, zero, 0.0, 0, zero, total, target)
        top = np.max([g.hi for g in others], axis=0) if others else np.full(len(cols), -np.inf)
        beyond = (new.lo > top) & ~new.unknown & np.isfinite(new.lo)
        width = np.array([c.res + (b - a) for c, a, b in zip(cols, new.lo, new.hi)])
        k = max(new.nfiles, 1)  # one file at a time: a fine enough step to compare plans by
        wread, weight = new.sized(target)
        grow = np.where(beyond, width, 0.0) / k
        return cls(
            new.files_read / k,
            wread / k,
            weight / k,
            1,
            grow,
            total,
            target,
            new.bytes / k,
            new.output_bytes / max(new.bytes, 1),
            new.lo,
            new.hi,
            new.unknown,
        )

    def advance(self, groups: Sequence[_Group], cols: list[_Col], h: int) -> tuple[list[_Group], list[_Col], _Forecast]:
        """The state once ``h`` more files are appended, the columns (a growing one's range widened by them) and
        the forecast from there: clustered groups read fewer files of a wider range, the ``h`` files are one new
        group beyond every file in a growing column."""
        total = self.total + h * self.grow
        shrink = self.total / total
        fcols = [dataclasses.replace(c, total=float(t)) if c.total > 0 else c for c, t in zip(cols, total)]
        moved = [
            dataclasses.replace(
                g,
                files_read=g.files_read * shrink,
                wread=None if g.wread is None else g.wread * shrink,
                planned=False,
                label=g.label if g.label is not None or not g.planned else "planned",
            )
            for g in groups
        ]
        if not self.nfiles or self.lo is None or self.hi is None or self.unknown is None:
            return moved, fcols, dataclasses.replace(self, total=total)
        top = np.max([g.hi for g in groups], axis=0)
        growing = self.grow > 0
        new = _Group(
            np.zeros(0, dtype=np.int64),
            int(h * self.bytes),
            h * self.nfiles,
            h * self.read * shrink,
            np.where(growing, top, self.lo),
            np.where(growing, top + h * self.grow, self.hi),
            self.unknown,
            None,
            wread=h * self.wread * shrink,
            weight=h * self.weight,
            out_bytes=h * self.bytes * self.shrink,
        )
        return (
            moved + [new],
            fcols,
            dataclasses.replace(self, read=self.read * shrink, wread=self.wread * shrink, total=total),
        )

    def appends_absorbed(self, groups: Sequence[_Group], d: int, cap: float, horizon: int) -> int:
        """How many more such appends the state takes before its worst ratio exceeds ``cap`` (at most ``horizon``)."""
        _, read, n = _worst(groups, d, self.read.shape[0])
        wread, weight = _sized_sums(groups, self.target)
        h = np.arange(1, horizon + 1, dtype=np.float64)[:, None]
        shrink = self.total / (self.total + h * self.grow)
        ratio = _ratio(
            (read + h * self.read) * shrink,
            n + h[:, 0] * self.nfiles,
            (wread + h * self.wread) * shrink,
            weight + h[:, 0] * self.weight,
            d,
        )
        over = np.flatnonzero(ratio > cap)
        return int(over[0]) if over.size else horizon


def _apply(
    groups: list[_Group], ids: list[int], cols: list[_Col], p: IncrementalParams, d: int, q: np.ndarray
) -> tuple[list[_Group], int, _Group]:
    """``(state after, bytes newly rewritten, the merged group)`` of merging ``groups[ids]``."""
    members = [groups[i] for i in ids]
    others = [g for i, g in enumerate(groups) if i not in ids]
    rest = np.sum([g.files_read for g in others], axis=0) if others else None
    merged = _merge(members, cols, p, d, q, rest)
    cost = sum(g.bytes for g in members if not g.planned)  # planned bins merge for free
    return others + [merged], cost, merged


def _lookahead(
    after: list[_Group], cost: int, cols: list[_Col], p: IncrementalParams, d: int, q: np.ndarray, forecast: _Forecast
) -> float:
    """Bytes per appended file of a plan and the next ``lookahead_runs`` runs, each the best one-step plan of its
    day: the state is carried to the day the trigger ratio comes back (:meth:`_Forecast.advance`), and the runs are
    scored by their bytes over the files they absorb.  A plan that buys little now is charged for the bigger runs
    it leads to."""
    assert p.trigger_ratio is not None
    cap = p.trigger_ratio

    def score(state: list[_Group], spent: int, absorbed: int, fc: _Forecast, fcols: list[_Col], runs: int) -> float:
        first = fc.appends_absorbed(state, d, cap, p.horizon)
        best = spent / (absorbed + first + 1)
        if runs == 0 or first >= p.horizon or not fc.nfiles:
            return best
        future, fcols2, fc2 = fc.advance(state, fcols, first + 1)
        out = None
        for _, ids in _candidates(future, p, True, False):  # later runs reach the goal, as this one does
            after2, cost2, _ = _apply(future, ids, fcols2, p, d, q)
            if _worst(after2, d, len(cols), p.target_file_size)[0] > p.goal:
                continue
            s = score(after2, spent + cost2, absorbed + first + 1, fc2, fcols2, runs - 1)
            out = s if out is None else min(out, s)
        return best if out is None else out

    return score(after, cost, 0, forecast, cols, p.lookahead_runs)


def _amortised(
    groups: list[_Group],
    cols: list[_Col],
    p: IncrementalParams,
    d: int,
    gates: tuple[bool, bool],
    names: list[str],
    forecast: _Forecast,
) -> tuple[list[_Group], list[str]] | None:
    """The plan of one or two candidates (the second after clustering the new files, or after any first step)
    that reaches the target with the fewest bytes per append absorbed before the sensor's trigger ratio comes
    back, this run and the next ``lookahead_runs`` (:func:`_lookahead`).  Rewriting a little now can cost more
    later: merging groups a query must visit one by one buys more appends per byte.  None: no such plan (the
    greedy then decides)."""
    assert p.trigger_ratio is not None
    cap, q, m = p.trigger_ratio, _calibration(cols, groups, d, p.job_curve), len(cols)
    best: tuple[float, int, list[_Group], list[tuple[str, _Group, float, int]]] | None = None
    now = _worst(groups, d, m, p.target_file_size)[0]

    def consider(after: list[_Group], cost: int, steps: list[tuple[str, _Group, float, int]]) -> None:
        nonlocal best
        if p.max_bytes is not None and cost > p.max_bytes:
            return
        ratio = steps[-1][2]
        if ratio > p.goal:
            return
        score = _lookahead(after, cost, cols, p, d, q, forecast)
        if best is None or score < best[0] - 1e-9 or (abs(score - best[0]) <= 1e-9 and cost < best[1]):
            best = (score, cost, after, steps)

    for full in (False, True) if gates[1] else (False,):  # the full rewrite: only if nothing else reaches the goal
        if best is not None:
            break
        for kind, ids in _candidates(groups, p, gates[0], full):
            if full and kind != "full rewrite":
                continue
            after, cost, merged = _apply(groups, ids, cols, p, d, q)
            r1 = _worst(after, d, m, p.target_file_size)[0]
            if r1 >= now - 1e-12:
                continue
            consider(after, cost, [(kind, merged, r1, len(ids))])
            for kind2, ids2 in _candidates(after, p, gates[0], False):
                if kind2 == "cluster the new files":
                    continue
                after2, cost2, merged2 = _apply(after, ids2, cols, p, d, q)
                r2 = _worst(after2, d, m, p.target_file_size)[0]
                if r2 < r1 - 1e-12:
                    consider(after2, cost + cost2, [(kind, merged, r1, len(ids)), (kind2, merged2, r2, len(ids2))])
    if best is None:
        return None
    score, cost, after, steps = best
    reasons, before = [], now
    for kind, merged, ratio, m in steps:
        reasons.append(_step_line(kind, m, merged, names, before, ratio))
        before = ratio
    absorbed = forecast.appends_absorbed(after, d, cap, p.horizon)
    reasons.append(
        f"amortised: {format_bytes(cost)} rewritten for ~{absorbed}{'+' if absorbed >= p.horizon else ''} more "
        f"files appended like the pending ones before the ratio passes {cap:.2f}"
    )
    return after, reasons


def _clustered_bytes_per_row(groups: Sequence[_Group], rows: np.ndarray) -> float | None:
    """The fewest bytes per row of the unit's clustered groups of >= 4 files (None: no such group with rows known):
    what clustered rows weigh, so that output files come out at the target (finer clustering compresses better)."""
    known = [g for g in groups if g.label is not None and g.nfiles >= _Q_MIN_FILES and (rows[g.idx] > 0).all()]
    return min((g.bytes / float(rows[g.idx].sum()) for g in known), default=None)


def plan(
    unit: UnitFiles, params: IncrementalParams | None = None, *, num_clustering_columns: int | None = None
) -> IncrementalPlan:
    """The files of one unit to rewrite, chosen greedily by estimated files-read gain per byte (module doc)."""
    p = params or IncrementalParams()
    names = list(unit.bounds)
    d = num_clustering_columns or len(names)
    if d < 1:
        raise InvalidInputError(f"num_clustering_columns must be >= 1, not {d!r}")
    cols = [_column(*unit.bounds[c]) for c in names]
    sizes = np.asarray(unit.bytes, dtype=np.int64)
    labels = sorted({m for m in unit.membership if m is not None})
    member = np.array([labels.index(m) if m is not None else -1 for m in unit.membership], dtype=np.int64)
    t = p.target_file_size
    groups = [_group(np.flatnonzero(member == i), sizes, cols, lab, t) for i, lab in enumerate(labels)]
    new_idx = np.flatnonzero(member < 0)
    new_ok = new_idx.size >= p.min_new_files or int(sizes[new_idx].sum()) >= p.min_new_bytes
    groups += [_group(new_idx, sizes, cols, None, t)] if new_idx.size else []
    if unit.rows is not None:
        rows = np.asarray(unit.rows, dtype=np.float64)
        per_row = _clustered_bytes_per_row(groups, rows)
        if per_row is not None:
            groups = [
                g
                if not (rows[g.idx] > 0).all()
                else dataclasses.replace(g, out_bytes=min(g.bytes, per_row * rows[g.idx].sum()))
                for g in groups
            ]
    forecast = None
    if p.trigger_ratio is not None:
        new = next((g for g in groups if g.label is None), None)
        others = [g for g in groups if g.label is not None]
        forecast = _Forecast.of(new if new_ok else None, others, cols, p.target_file_size)
    start, read0, n0 = _worst(groups, d, len(cols), p.target_file_size)
    settled = [g for g in groups if g.label is not None or new_ok]
    full_ok = bool(settled) and _worst(settled, d, len(cols), p.target_file_size)[0] > p.goal
    reasons = []
    if start <= p.goal:
        reasons.append(f"healthy: worst ratio to ideal {start:.2f} <= target {p.goal:.2f}")
    elif new_idx.size and not new_ok:
        reasons.append(
            f"{new_idx.size} new files ({format_bytes(sizes[new_idx].sum())}) wait for {p.min_new_files} files or {format_bytes(p.min_new_bytes)}"
        )
    chosen = None
    if forecast is not None and start > p.goal:
        chosen = _amortised(groups, cols, p, d, (new_ok, full_ok), names, forecast)
    groups, steps = chosen or _greedy(groups, cols, p, d, (new_ok, full_ok), names)
    _, read1, n1 = _worst(groups, d, len(cols), p.target_file_size)
    bins = tuple(
        PlanBin(
            tuple(unit.paths[i] for i in sorted(g.idx)),
            g.bytes,
            g.nfiles,
            None if g.on is None else tuple(names[i] for i in g.on),
        )
        for g in groups
        if g.planned
    )
    ideal0, ideal1 = max(n0, 1) ** (1 - 1 / d), max(n1, 1) ** (1 - 1 / d)
    est = tuple(
        ColumnEstimate(c, float(a), float(b), float(a / ideal0), float(b / ideal1))
        for c, a, b in zip(names, read0, read1)
    )
    paths = tuple(x for b in bins for x in b.paths)
    total = sum(b.bytes for b in bins)
    return IncrementalPlan(
        paths, total, sum(b.num_output_files for b in bins), bins, est, tuple(reasons + steps), n0, n1
    )
