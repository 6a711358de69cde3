"""The recommendation: the 1 to 4 columns (in their order on the curve) that make a workload read the fewest
files, with what each query reads before (the pruning evaluator on the table's statistics) and after (the
clustered-reads estimate, :mod:`~airflow_zorder.core.policy.clustered_reads`).

Each scan of the table is weighed by how often its statement ran and by how much its filters select
(:mod:`~airflow_zorder.core.advisor.selectivity`); every set of 1 to 3 of the filtered columns is tried in every
order, and the best sets are extended by a fourth column. The smallest set within ``tolerance`` of the best is
recommended: a column that buys almost nothing costs curve resolution on the others. Given a sample of the
table's rows, the best few sets of each size are then laid out on it and judged by the pruning evaluator
(:mod:`~airflow_zorder.core.advisor.sample_layout`), which sees what the statistics cannot: correlated columns.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from airflow_zorder.core.advisor import sample_layout
from airflow_zorder.core.advisor.extraction import Extractor, Scan, TableName
from airflow_zorder.core.advisor.selectivity import profiles, restriction
from airflow_zorder.core.advisor.workload import Statement
from airflow_zorder.core.errors import InvalidInputError
from airflow_zorder.core.layout import curves
from airflow_zorder.core.policy import clustered_reads
from airflow_zorder.core.policy.plan_defaults import DEFAULT_CURVE
from airflow_zorder.core.skipping import pruning
from airflow_zorder.core.skipping.predicates import And, Const, Expr

__all__ = ["Recommendation", "advise", "partition_columns"]

MAX_COLUMNS = 4
_EXHAUSTIVE = 3  # every set up to this many columns is tried in every order
_MAX_CANDIDATES = 24  # the most used filtered columns searched
_EXAMPLES = 10  # failed statements and distinct queries listed
_SHORTLIST = 4  # with a sample: the statistics' best sets of each size laid out on it


@dataclass
class Recommendation:
    """What the advisor says about one table and one workload (JSON-serialisable with :meth:`to_dict`)."""

    table: str
    columns: list[str]  # in their order on the curve; empty when no query filters a column of the table
    curve: str
    num_files: int  # files a clustering unit (the table, or a partition) is cut into by the estimate
    statements: int  # statements read
    status: dict[str, int]  # statements by outcome: ok, other_table, unparsed, unresolved
    scans: int  # scans of the table (a statement may scan it more than once), weighted by runs
    served: float  # share of the scans that filter on at least one recommended column
    files_before: float  # mean files a scan reads now (the pruning evaluator on the statistics)
    files_after: float  # mean files a scan reads after clustering on ``columns`` (estimate)
    total_files: int
    column_use: dict[str, int] = field(default_factory=dict)  # scans filtering each column
    partition_use: dict[str, int] = field(default_factory=dict)  # scans filtering each partition column
    skipped_filters: int = 0  # conditions on the table the advisor could not use (several columns, untranslatable)
    candidates: list[dict[str, Any]] = field(default_factory=list)  # best sets of each size, predicted files
    queries: list[dict[str, Any]] = field(default_factory=list)  # the most run filters: before and after
    failures: list[dict[str, str]] = field(default_factory=list)  # first statements not parsed or resolved
    current_columns: list[str] | None = None  # the columns the table is clustered on now, when given
    current_files_after: float | None = None  # mean files a scan reads clustered on them (same estimate)
    estimate: str = "statistics"  # how ``files_after`` was estimated: from the statistics, or laid out on a sample
    sample_rows: int = 0  # rows of that sample

    @property
    def saving(self) -> float:
        """Share of the files read now that clustering on ``columns`` saves (estimate)."""
        return 1.0 - self.files_after / self.files_before if self.files_before > 0 else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "saving": self.saving}


def partition_columns(stats: pa.Table) -> list[str]:
    """The Hive partition columns of a stats snapshot (the keys of its ``partition_values``)."""
    if "partition_values" not in stats.column_names or stats.num_rows == 0:
        return []
    values = stats["partition_values"].combine_chunks()
    return sorted(k for k in pc.unique(values.keys).to_pylist() if k is not None) if len(values.keys) else []


def advise(
    statements: Iterable[Statement],
    stats: pa.Table,
    table: str,
    *,
    curve: str = DEFAULT_CURVE,
    max_columns: int = MAX_COLUMNS,
    num_files: int | None = None,
    tolerance: float = 0.02,
    current: Sequence[str] | None = None,
    sample: pa.Table | Callable[[list[str]], pa.Table] | None = None,
) -> Recommendation:
    """Recommend clustering columns for ``table`` (its name as the statements write it) from ``statements`` and
    its statistics ``stats`` (FILE_STATS_SCHEMA rows); ``num_files``: files per clustering unit after the
    rewrite (default: the table's files per partition now)."""
    if curve not in curves.CURVES:
        raise InvalidInputError(f"unknown curve {curve!r}: use one of {', '.join(curves.CURVES)}")
    if not 1 <= max_columns <= MAX_COLUMNS:
        raise InvalidInputError(f"max_columns must be 1 to {MAX_COLUMNS}, not {max_columns!r}")
    if stats.num_rows == 0:
        raise InvalidInputError(f"no statistics for {table!r}: collect them first (SparkCollectFileStatsOperator)")
    rows = stats_columns(stats)
    parts = partition_columns(stats)
    extractor = Extractor(TableName.of(table), rows, parts)
    status: Counter[str] = Counter()
    failures: list[dict[str, str]] = []
    scans: Counter[tuple] = Counter()
    texts: Counter[tuple[str, str]] = Counter((s.sql, s.engine) for s in statements)
    for (sql, engine), runs in texts.items():
        out = extractor.extract(Statement(sql, engine))
        status[out.status] += runs
        if out.status in ("unparsed", "unresolved") and len(failures) < _EXAMPLES:
            failures.append({"status": out.status, "error": out.error, "sql": sql[:300]})
        for scan in out.scans:
            scans[_signature(scan)] += runs
    return _Search(stats, table, curve, max_columns, num_files, tolerance, sample).run(
        scans, status, failures, sum(texts.values()), list(current) if current else None
    )


def stats_columns(stats: pa.Table) -> list[str]:
    """The data columns a stats snapshot describes."""
    return sorted(c for c in pc.unique(stats["column_name"]).to_pylist() if c is not None)


def _signature(scan: Scan) -> tuple:
    return (
        tuple(sorted(scan.filters.items())),
        tuple(sorted(scan.partition_filters)),
        scan.skipped,
    )


class _Search:
    def __init__(
        self,
        stats: pa.Table,
        table: str,
        curve: str,
        max_columns: int,
        num_files: int | None,
        tolerance: float,
        sample: Any = None,
    ) -> None:
        self.stats, self.table, self.curve, self.sample = stats, table, curve, sample
        self.by_size: dict[int, list[tuple[float, tuple[int, ...]]]] = {}
        self.max_columns, self.tolerance = max_columns, tolerance
        paths = stats["path"]
        self.total_files = len(pc.unique(paths))
        units = len(pc.unique(stats["partition"])) if "partition" in stats.column_names else 1
        self.num_files = int(num_files or max(1, round(self.total_files / max(units, 1))))

    def run(
        self,
        scans: Counter[tuple],
        status: Counter[str],
        failures: list[dict[str, str]],
        n: int,
        current: list[str] | None,
    ) -> Recommendation:
        keys = list(scans)
        weights = np.array([scans[k] for k in keys], dtype=np.float64)
        filters = [dict(k[0]) for k in keys]
        use: Counter[str] = Counter()
        part_use: Counter[str] = Counter()
        for k, w in zip(keys, weights):
            for c, _ in k[0]:
                use[c] += int(w)
            for c in k[1]:
                part_use[c] += int(w)
        prof = profiles(self.stats, list(use))
        cands = [c for c, _ in use.most_common() if c in prof][:_MAX_CANDIDATES]
        share = np.ones((len(keys), len(cands)))
        pieces = np.zeros((len(keys), len(cands)))
        memo: dict[tuple[str, Expr], tuple[float, float]] = {}
        for i, f in enumerate(filters):
            for j, c in enumerate(cands):
                e = f.get(c)
                if e is not None:
                    if (c, e) not in memo:
                        memo[(c, e)] = restriction(prof[c], e)
                    share[i, j], pieces[i, j] = memo[(c, e)]
        predicates: list[Expr] = [And(tuple(f.values())) if f else Const(True) for f in filters]
        before = pruning.kept_fractions(self.stats, predicates) if keys else np.zeros(0)
        total_w = weights.sum()
        best, ranked = self.search(share, pieces, weights, cands)
        after = (
            clustered_reads.clustered_fraction(share[:, best], pieces[:, best], self.curve, self.num_files)
            if best and keys
            else np.ones(len(keys))
        )
        estimate, sample_rows = "statistics", 0
        if best and self.sample is not None:
            rows = self.sample(cands) if callable(self.sample) else self.sample
            if rows.num_rows:
                best, ranked, after = self.measure(rows, cands, predicates, weights)
                estimate, sample_rows = "sample", rows.num_rows
        chosen = [cands[j] for j in best]
        if not best:
            after = np.asarray(before, dtype=np.float64)
        served = float(weights[(pieces[:, best] > 0).any(axis=1)].sum() / total_w) if best and total_w else 0.0
        per_file = self.total_files
        order = np.argsort(-weights, kind="stable")[:_EXAMPLES]
        current_after = None
        if current and total_w:
            # a current column no query filters still takes its share of the curve: it keeps every slice
            cs = np.column_stack([share[:, cands.index(c)] if c in cands else np.ones(len(keys)) for c in current])
            ks = np.column_stack([pieces[:, cands.index(c)] if c in cands else np.zeros(len(keys)) for c in current])
            f = clustered_reads.clustered_fraction(cs, ks, self.curve, self.num_files)
            current_after = float(np.dot(f, weights) / total_w * per_file)
        return Recommendation(
            table=self.table,
            columns=chosen,
            curve=self.curve,
            num_files=self.num_files,
            statements=n,
            status=dict(status),
            scans=int(total_w),
            served=served,
            files_before=float(np.dot(before, weights) / total_w * per_file) if total_w else 0.0,
            files_after=float(np.dot(np.minimum(after, 1.0), weights) / total_w * per_file) if total_w else 0.0,
            total_files=per_file,
            column_use=dict(use.most_common()),
            partition_use=dict(part_use.most_common()),
            skipped_filters=int(sum(k[2] * scans[k] for k in keys)),
            candidates=[{"columns": [cands[j] for j in s], "files_after": float(c * per_file)} for c, s in ranked],
            queries=[
                {
                    "filter": predicates[i].to_sql(),
                    "runs": int(weights[i]),
                    "files_before": float(before[i] * per_file),
                    "files_after": float(after[i] * per_file),
                }
                for i in order
            ],
            failures=failures,
            current_columns=current,
            current_files_after=current_after,
            estimate=estimate,
            sample_rows=sample_rows,
        )

    def measure(
        self, rows: pa.Table, cands: list[str], predicates: list[Expr], weights: np.ndarray
    ) -> tuple[list[int], list[tuple[float, tuple[int, ...]]], np.ndarray]:
        """The statistics' best sets of each size laid out on the sample rows and judged by the pruning
        evaluator: the set that reads the fewest files there (the smallest within ``tolerance``), the best set
        of each size as measured, and the chosen set's files read per query."""
        have = set(rows.column_names)
        measured: dict[int, list[tuple[float, tuple[int, ...], np.ndarray]]] = {}
        for d, options in self.by_size.items():
            for _, order in options[:_SHORTLIST]:
                names = [cands[j] for j in order]
                if not have.issuperset(names):
                    continue
                stats = sample_layout.layout_stats(rows.select(names), names, self.curve, self.num_files)
                kept = pruning.kept_fractions(stats, predicates)
                measured.setdefault(d, []).append((float(np.dot(kept, weights) / weights.sum()), order, kept))
        if not measured:
            return [], [], np.ones(len(predicates))
        best_of = {d: min(m, key=lambda x: x[0]) for d, m in measured.items()}
        overall = min(b[0] for b in best_of.values())
        pick = next(best_of[d] for d in sorted(best_of) if best_of[d][0] <= overall * (1 + self.tolerance) + 1e-12)
        return list(pick[1]), [(best_of[d][0], best_of[d][1]) for d in sorted(best_of)], pick[2]

    def cost(self, share: np.ndarray, pieces: np.ndarray, weights: np.ndarray, order: tuple[int, ...]) -> float:
        f = clustered_reads.clustered_fraction(share[:, order], pieces[:, order], self.curve, self.num_files)
        return float(np.dot(f, weights) / weights.sum())

    def search(
        self, share: np.ndarray, pieces: np.ndarray, weights: np.ndarray, cands: list[str]
    ) -> tuple[list[int], list[tuple[float, tuple[int, ...]]]]:
        """The recommended order of candidate indexes, and the best set of each size with its cost."""
        if not cands or weights.sum() == 0:
            return [], []
        # queries with the same restrictions on the candidates cost the same: search over the distinct ones
        rows, inverse = np.unique(np.hstack([share, pieces]).round(6), axis=0, return_inverse=True)
        w = np.bincount(inverse.reshape(-1), weights=weights)
        s, k = rows[:, : len(cands)], rows[:, len(cands) :]
        best_of: dict[int, tuple[float, tuple[int, ...]]] = {}
        by_size: dict[int, list[tuple[float, tuple[int, ...]]]] = {}
        for d in range(1, min(_EXHAUSTIVE, self.max_columns, len(cands)) + 1):
            for combo in itertools.combinations(range(len(cands)), d):
                best = min((self.cost(s, k, w, p), p) for p in itertools.permutations(combo))
                by_size.setdefault(d, []).append(best)
        if self.max_columns > _EXHAUSTIVE and len(cands) > _EXHAUSTIVE:
            seeds = sorted(by_size[_EXHAUSTIVE])[:8]
            tried = set()
            for _, order in seeds:
                for extra in range(len(cands)):
                    if extra in order:
                        continue
                    for pos in range(len(order) + 1):
                        p = (*order[:pos], extra, *order[pos:])
                        if p not in tried:
                            tried.add(p)
                            by_size.setdefault(_EXHAUSTIVE + 1, []).append((self.cost(s, k, w, p), p))
        self.by_size = {d: sorted(o) for d, o in by_size.items()}
        for d, options in by_size.items():
            best_of[d] = min(options)
        overall = min(c for c, _ in best_of.values())
        pick = next(best_of[d] for d in sorted(best_of) if best_of[d][0] <= overall * (1 + self.tolerance) + 1e-12)
        return list(pick[1]), [best_of[d] for d in sorted(best_of)]
