"""Files read by point/range queries per layout: counted by the pruning evaluator, checked with DuckDB.

Used by ``run_all.py``; no Spark. One query set per data set (:func:`build_queries`, values drawn
from the data with a seed), evaluated on every layout of that data set (:func:`evaluate_layout`):

* the project's pruning evaluator (``airflow_zorder.core.skipping.pruning.prune``) over the layout's footer
  statistics (``footer_stats.read_footers_parallel``) says which files a query must read;
* DuckDB counts the matching rows of every file (``filename``), on the rows loaded into a native
  DuckDB table first -- not through ``read_parquet``'s own row-group pruning, which would check the
  footers against themselves. A file the evaluator pruned that holds a matching row is a
  *violation* (must be 0); files holding a match are the floor no min/max pruning can go under.

Query families (``family`` key, label):

* ``point:<c>`` -- ``c = v``, ``v`` drawn uniformly over the rows (frequent values more often);
* ``range<w>:<c>`` -- ``c BETWEEN lo AND hi`` covering a fraction ``w`` of the rows (``lo``, ``hi``
  quantiles of a sample at a random position);
* ``point:<c1>&<c2>[&<c3>]`` -- equality on 2 or 3 columns with the values of one drawn row;
* ``range<w>:<c1>&<c2>[&<c3>]`` -- ``BETWEEN`` on each column, ``w`` of the rows per column.

:func:`time_queries`: median wall time of DuckDB ``read_parquet`` over a layout's files for some
families (here DuckDB's own min/max pruning of row groups is what is measured).
"""

from __future__ import annotations

import itertools
import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from airflow_zorder.core.skipping import predicates, pruning
from airflow_zorder.core.stats import footer_stats
from airflow_zorder.evaluation import layout_report

RANGE_WIDTHS = (0.001, 0.01, 0.1)
MULTI_RANGE_WIDTH = {2: 0.1, 3: 0.2}  # per column: about 1% of rows jointly if independent


@dataclass(frozen=True)
class Query:
    family: str
    columns: tuple[str, ...]
    expr: predicates.Expr

    @property
    def sql(self) -> str:
        return self.expr.to_sql()


def _pct(w: float) -> str:
    return f"{w * 100:g}%"


def family_name(kind: str, columns: Sequence[str], width: float | None = None) -> str:
    head = "point" if kind == "point" else f"range{_pct(width)}"
    return f"{head}:{'&'.join(columns)}"


def build_queries(
    files: Sequence[str],
    columns: Sequence[str],
    *,
    n_point: int = 40,
    n_range: int = 20,
    n_multi: int = 20,
    widths: Sequence[float] = RANGE_WIDTHS,
    sample_rows: int = 20000,
    seed: int = 1,
) -> list[Query]:
    """The query set of a data set: values from ``files`` (the input layout), reproducible by ``seed``."""
    cols = list(columns)
    rng = np.random.default_rng(seed)
    rows = layout_report.sample_values(files, cols, max(n_point, n_multi), seed)
    lens = {len(rows[c]) for c in cols}
    if len(lens) != 1:
        raise ValueError("clustering columns with nulls are not supported by the benchmark query set")
    drawn = {c: rows[c].to_pylist() for c in cols}
    sample = layout_report.sample_values(files, cols, sample_rows, seed + 1)
    sorted_vals = {c: pc.array_sort_indices(sample[c]) for c in cols}
    sorted_vals = {c: sample[c].take(sorted_vals[c]).to_pylist() for c in cols}

    def rng_range(c: str, w: float) -> predicates.Expr:
        s = sorted_vals[c]
        m = len(s)
        q = rng.random() * (1.0 - w)
        lo, hi = s[int(q * m)], s[min(m - 1, int((q + w) * m))]
        return predicates.col(c).between(lo, hi)

    out: list[Query] = []
    for c in cols:
        fam = family_name("point", [c])
        out += [Query(fam, (c,), predicates.col(c) == v) for v in drawn[c][:n_point]]
        for w in widths:
            fam = family_name("range", [c], w)
            out += [Query(fam, (c,), rng_range(c, w)) for _ in range(n_range)]
    for d in (2, 3):
        if len(cols) < d:
            continue
        for combo in itertools.combinations(cols, d):
            if d == 3 and combo != tuple(cols[:3]):
                continue
            fam = family_name("point", combo)
            for i in range(n_multi):
                e = predicates.col(combo[0]) == drawn[combo[0]][i]
                for c in combo[1:]:
                    e = e & (predicates.col(c) == drawn[c][i])
                out.append(Query(fam, combo, e))
            w = MULTI_RANGE_WIDTH[d]
            fam = family_name("range", combo, w)
            for _ in range(n_multi):
                e = rng_range(combo[0], w)
                for c in combo[1:]:
                    e = e & rng_range(c, w)
                out.append(Query(fam, combo, e))
    return out


def families(queries: Sequence[Query]) -> list[str]:
    return list(dict.fromkeys(q.family for q in queries))


def _sql_list(files: Sequence[str]) -> str:
    return "[" + ", ".join("'" + f.replace("'", "''") + "'" for f in files) + "]"


def load_rows(con: Any, files: Sequence[str], columns: Sequence[str], name: str = "rows") -> int:
    """Load ``columns`` and a file index ``fid`` (position in ``files``) of every row into a DuckDB table."""
    con.execute("DROP TABLE IF EXISTS _files")
    con.execute("CREATE TEMP TABLE _files (fid INTEGER, filename VARCHAR)")
    con.executemany("INSERT INTO _files VALUES (?, ?)", [(i, f) for i, f in enumerate(files)])
    cols = ", ".join(f'r."{c}"' for c in columns)
    con.execute(f"DROP TABLE IF EXISTS {name}")
    con.execute(
        f"CREATE TEMP TABLE {name} AS SELECT f.fid, {cols} FROM read_parquet({_sql_list(files)}, "
        f"filename=true) r JOIN _files f USING (filename)"
    )
    return con.execute(f"SELECT count(*) FROM {name}").fetchone()[0]


def duckdb_file_matches(con: Any, sql: str, name: str = "rows") -> dict[int, int]:
    """File index -> number of rows matching ``sql`` in the loaded table."""
    return dict(con.execute(f"SELECT fid, count(*) FROM {name} WHERE {sql} GROUP BY fid").fetchall())


def evaluate_layout(
    files: Sequence[str], columns: Sequence[str], queries: Sequence[Query], *, check: bool = True, con: Any = None
) -> dict[str, Any]:
    """Per family: mean files kept by the evaluator, files holding a match and matching rows (DuckDB).

    Returns ``{"files", "rows", "row_groups", "families": {family: {...}}, "violations": [...],
    "evaluator_s", "duckdb_s"}``. ``violations`` lists (query, file, matching rows) for files the
    evaluator pruned although DuckDB found a matching row in them (must be empty).
    """
    import duckdb

    files = list(files)
    t0 = time.perf_counter()
    stats = footer_stats.read_footers_parallel(files, list(columns))
    kept: list[np.ndarray] = []
    for q in queries:
        r = pruning.prune(stats, q.expr)
        if r.files != files:  # same order as given: the evaluator lists the stats' paths
            idx = {f: i for i, f in enumerate(r.files)}
            k = np.zeros(len(files), bool)
            for f, keep in zip(r.files, r.keep):
                k[idx[f]] = keep
            kept.append(k)
        else:
            kept.append(np.asarray(r.keep, bool))
    evaluator_s = time.perf_counter() - t0

    own = con is None
    con = con or duckdb.connect()
    t0 = time.perf_counter()
    matches: list[dict[int, int]] = []
    rows = None
    if check:
        rows = load_rows(con, files, columns)
        matches = [duckdb_file_matches(con, q.sql) for q in queries]
    duckdb_s = time.perf_counter() - t0
    if own:
        con.close()

    violations = []
    per: dict[str, dict[str, list[float]]] = {}
    for i, q in enumerate(queries):
        k = kept[i]
        acc = per.setdefault(q.family, {"kept": [], "matching_files": [], "matching_rows": []})
        acc["kept"].append(int(k.sum()))
        if check:
            m = matches[i]
            acc["matching_files"].append(len(m))
            acc["matching_rows"].append(sum(m.values()))
            for fid, n in m.items():
                if not k[fid]:
                    violations.append({"query": q.sql, "file": files[fid], "matching_rows": n})
    n_files = len(files)
    fams = {}
    for fam, acc in per.items():
        d = {
            "queries": len(acc["kept"]),
            "files_read": round(float(np.mean(acc["kept"])), 3),
            "fraction_read": round(float(np.mean(acc["kept"])) / max(n_files, 1), 4),
        }
        if check:
            d["files_with_match"] = round(float(np.mean(acc["matching_files"])), 3)
            d["matching_rows"] = round(float(np.mean(acc["matching_rows"])), 1)
        fams[fam] = d
    row_groups = sum(pq.ParquetFile(f).metadata.num_row_groups for f in files)
    return {
        "files": n_files,
        "rows": rows,
        "row_groups": row_groups,
        "families": fams,
        "violations": violations,
        "checked": check,
        "queries": len(queries),
        "evaluator_s": round(evaluator_s, 3),
        "duckdb_s": round(duckdb_s, 3),
    }


def time_queries(
    files: Sequence[str],
    queries: Sequence[Query],
    fams: Sequence[str],
    payload: str,
    *,
    per_family: int = 10,
    repeat: int = 5,
    threads: int | None = None,
) -> dict[str, dict[str, float]]:
    """Median (over ``repeat`` rounds) wall ms per query of ``SELECT count(*), sum(payload) FROM
    read_parquet(files) WHERE q`` for the first ``per_family`` queries of each family in ``fams``.

    One untimed warm-up round first (file metadata and pages in the OS cache for every layout).
    """
    import duckdb

    con = duckdb.connect()
    if threads:
        con.execute(f"SET threads = {int(threads)}")
    src = f"read_parquet({_sql_list(files)})"
    out: dict[str, dict[str, float]] = {}
    for fam in fams:
        qs = [q for q in queries if q.family == fam][:per_family]
        sqls = [f'SELECT count(*), sum("{payload}") FROM {src} WHERE {q.sql}' for q in qs]
        for s in sqls:
            con.execute(s).fetchall()
        rounds = []
        for _ in range(repeat):
            t = time.perf_counter()
            for s in sqls:
                con.execute(s).fetchall()
            rounds.append((time.perf_counter() - t) / max(len(sqls), 1))
        out[fam] = {
            "median_ms": round(statistics.median(rounds) * 1000, 2),
            "min_ms": round(min(rounds) * 1000, 2),
            "queries": len(sqls),
            "repeat": repeat,
        }
    con.close()
    return out


def value_type_note(files: Sequence[str], columns: Sequence[str]) -> dict[str, str]:
    """Arrow type of each column (for the doc)."""
    schema = pq.ParquetFile(files[0]).schema_arrow
    return {c: str(schema.field(c).type) for c in columns}


__all__ = [
    "Query",
    "build_queries",
    "families",
    "evaluate_layout",
    "time_queries",
    "load_rows",
    "duckdb_file_matches",
    "family_name",
    "RANGE_WIDTHS",
    "value_type_note",
    "pa",
]
