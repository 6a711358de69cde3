"""Tests for the workload advisor (airflow_zorder.core.advisor): real statements parsed by sqlglot, a real
Parquet table's footer statistics, and the project's pruning evaluator as the judge of files read."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from airflow_zorder.core.advisor import query_history, spark_events
from airflow_zorder.core.advisor.extraction import Extractor, TableName, extract
from airflow_zorder.core.advisor.recommend import advise, partition_columns
from airflow_zorder.core.advisor.selectivity import profiles, restriction
from airflow_zorder.core.advisor.sources import read_workload
from airflow_zorder.core.advisor.workload import Statement, read_sql, split_statements
from airflow_zorder.core.skipping import pruning
from airflow_zorder.core.skipping.predicates import And, Compare, In, Like, col
from airflow_zorder.core.stats import footer_stats

COLUMNS = ["k", "day", "amount", "name", "flag"]
T = TableName.of("sales")


def _extract(sql: str, engine: str = "trino", partitions: tuple[str, ...] = ()):
    return extract(Statement(sql, engine), T, COLUMNS, partitions)


# ------------------------------------------------------------------------------------------------ extraction


def test_aliases_ctes_subqueries_and_joins_resolve_to_the_table() -> None:
    out = _extract(
        "WITH recent AS (SELECT s.k AS key, s.day, s.name FROM shop.sales s WHERE s.amount BETWEEN 10 AND 20) "
        "SELECT * FROM recent r JOIN customers c ON r.key = c.id AND r.day >= DATE '2024-03-01' "
        "WHERE c.region = 'EU' AND r.key IN (1, 2, 3) AND r.name LIKE 'ab%'"
    )
    assert out.status == "ok" and len(out.scans) == 1
    f = out.scans[0].filters
    assert f["amount"] == And((Compare("amount", ">=", 10), Compare("amount", "<=", 20)))
    assert f["k"] == In("k", (1, 2, 3))  # through the CTE's alias `key`
    assert f["day"] == Compare("day", ">=", dt.date(2024, 3, 1))  # from the JOIN's ON
    assert f["name"] == Like("name", "ab%")
    assert set(f) == {"amount", "k", "day", "name"}  # c.region is the other table's


def test_unqualified_columns_in_a_join_and_a_self_join() -> None:
    out = _extract(
        "SELECT * FROM sales, customers WHERE k = id AND amount < 5 AND region = 'EU' "
        "AND day < DATE '2024-01-01' + INTERVAL '1' MONTH"
    )
    f = out.scans[0].filters
    assert f == {"amount": Compare("amount", "<", 5), "day": Compare("day", "<", dt.date(2024, 2, 1))}
    self_join = _extract("SELECT * FROM sales a JOIN sales b ON a.k = b.k WHERE a.amount = 1 AND b.flag = TRUE")
    assert [s.filters for s in self_join.scans] == [
        {"amount": Compare("amount", "=", 1)},
        {"flag": Compare("flag", "=", True)},
    ]


def test_subquery_passes_columns_and_computed_columns_do_not() -> None:
    out = _extract("SELECT * FROM (SELECT k, amount * 2 AS amount FROM sales) t WHERE t.k = 4 AND t.amount > 3")
    assert out.scans[0].filters == {"k": Compare("k", "=", 4)}


def test_partition_columns_apart_and_multi_column_conditions_counted() -> None:
    out = _extract(
        "SELECT * FROM sales WHERE dt = '2024-01-01' AND (k = 1 OR amount = 2) AND k < 9", partitions=("dt",)
    )
    scan = out.scans[0]
    assert scan.partition_filters == {"dt": Compare("dt", "=", "2024-01-01")}
    assert scan.filters == {"k": Compare("k", "<", 9)}
    assert scan.skipped == 1


@pytest.mark.parametrize(
    ("sql", "status"),
    [
        ("SELEC k FROM sales WHERE", "unparsed"),
        ("SELECT * FROM sales WHERE k = 'unterminated", "unparsed"),
        ("SELECT * FROM orders WHERE k = 1", "other_table"),
        ("SELECT 1", "other_table"),
    ],
)
def test_statements_it_cannot_use_are_counted_not_raised(sql: str, status: str) -> None:
    assert _extract(sql).status == status


def test_dialects_and_locations() -> None:
    spark = extract(
        Statement("SELECT * FROM parquet.`/data/sales/` WHERE `k` = 5", "spark"),
        TableName.of("file:/data/sales"),
        COLUMNS,
    )
    assert spark.scans[0].filters == {"k": Compare("k", "=", 5)}
    athena = extract(Statement('SELECT * FROM "db"."sales" WHERE "day" = DATE \'2024-01-02\'', "athena"), T, COLUMNS)
    assert athena.scans[0].filters == {"day": Compare("day", "=", dt.date(2024, 1, 2))}


def test_shared_shapes_rebind_their_literals() -> None:
    x = Extractor(T, COLUMNS)
    a = x.extract(Statement("SELECT * FROM sales WHERE k = 1 AND day < DATE '2024-01-01' + INTERVAL '1' YEAR"))
    b = x.extract(Statement("SELECT * FROM sales WHERE k = 7 AND day < DATE '2020-05-01' + INTERVAL '1' YEAR"))
    assert len(x.cache) == 1
    assert a.scans[0].filters == {"k": Compare("k", "=", 1), "day": Compare("day", "<", dt.date(2025, 1, 1))}
    assert b.scans[0].filters == {"k": Compare("k", "=", 7), "day": Compare("day", "<", dt.date(2021, 5, 1))}


# ------------------------------------------------------------------------------------------------ sources


def test_sql_files_split_by_the_tokenizer(tmp_path: Path) -> None:
    assert split_statements("SELECT ';' FROM sales; -- a; comment\nSELECT 2;;") == [
        "SELECT ';' FROM sales",
        "-- a; comment\nSELECT 2",
    ]
    (tmp_path / "b").mkdir()
    (tmp_path / "a.sql").write_text("SELECT 1; SELECT 2")
    (tmp_path / "b" / "c.sql").write_text("SELECT 3")
    assert [s.sql for s in read_sql(tmp_path)] == ["SELECT 1", "SELECT 2", "SELECT 3"]
    assert [s.sql for s in read_workload(tmp_path / "a.sql", "spark")][1] == "SELECT 2"


def test_trino_and_athena_exports(tmp_path: Path) -> None:
    rows = [
        {"query_id": "q1", "state": "FINISHED", "query": "SELECT * FROM sales WHERE k = 1"},
        {"query_id": "q2", "state": "FAILED", "query": "SELECT * FROM sales WHERE k = 2"},
    ]
    (tmp_path / "q.jsonl").write_text("\n".join(json.dumps(r) for r in rows))
    (tmp_path / "q.csv").write_text('query_id,state,query\nq1,FINISHED,"SELECT * FROM sales WHERE k = 3"\n')
    athena = {
        "QueryExecutions": [
            {"QueryExecutionId": "a", "Query": "SELECT 1", "StatementType": "DML", "Status": {"State": "SUCCEEDED"}},
            {
                "QueryExecutionId": "b",
                "Query": "DROP TABLE x",
                "StatementType": "DDL",
                "Status": {"State": "SUCCEEDED"},
            },
            {"QueryExecutionId": "c", "Query": "SELECT 2", "StatementType": "DML", "Status": {"State": "FAILED"}},
        ]
    }
    (tmp_path / "a.json").write_text(json.dumps(athena))
    assert [s.sql for s in read_workload(tmp_path / "q.jsonl")] == ["SELECT * FROM sales WHERE k = 1"]
    assert [s.sql for s in read_workload(tmp_path / "q.csv")] == ["SELECT * FROM sales WHERE k = 3"]
    assert [(s.sql, s.engine) for s in read_workload(tmp_path / "a.json")] == [("SELECT 1", "athena")]
    assert list(query_history.trino_statements([{"query": "SELECT 5"}]))[0].engine == "trino"


def test_spark_plan_scans_and_pushed_filters() -> None:
    plan = (
        "(1) Scan parquet spark_catalog.default.sales\n"
        "Output [2]: [k#1L, day#2]\n"
        "Location: InMemoryFileIndex [file:/data/sales]\n"
        "PushedFilters: [IsNotNull(k), EqualTo(k,5), Or(LessThan(day,2024-01-01),GreaterThan(day,2024-06-01)),"
        " In(name, [a,b'c]), StringStartsWith(name,ab)]\n"
        "ReadSchema: struct<k:bigint,day:date,name:string>\n\n"
        "(2) Scan parquet \nLocation: InMemoryFileIndex [file:/data/other]\nPushedFilters: []\nReadSchema: struct<>\n"
    )
    sqls = spark_events.scan_statements(plan)
    assert sqls[1] == "SELECT * FROM `file:/data/other`"
    f = extract(Statement(sqls[0], "spark"), T, COLUMNS).scans[0].filters
    assert f["k"] == Compare("k", "=", 5)
    assert f["name"] == And((In("name", ("a", "b'c")), Like("name", "ab%")))
    assert f["day"].to_sql() == "(day < DATE '2024-01-01' OR day > DATE '2024-06-01')"


# ------------------------------------------------------------------------------------------------ recommendation


@pytest.fixture(scope="module")
def table(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, pa.Table]:
    """64 files of 500 rows written in `k` order: narrow on k, every file spans all of day, amount and name."""
    rng = np.random.default_rng(3)
    n = 32_000
    data = pa.table(
        {
            "k": np.sort(rng.integers(0, 1_000_000, n)),
            "day": pa.array(dt.date(2024, 1, 1) + dt.timedelta(days=int(d)) for d in rng.integers(0, 366, n)),
            "amount": rng.integers(0, 10_000, n),
            "name": pa.array([f"n{v:05d}" for v in rng.integers(0, 50_000, n)]),
            "flag": rng.integers(0, 2, n).astype(bool),
        }
    )
    root = tmp_path_factory.mktemp("sales")
    for i in range(64):
        pq.write_table(data.slice(i * 500, 500), root / f"part-{i:03d}.parquet")
    stats = footer_stats.read_footers_parallel(footer_stats.list_parquet_files(str(root)), COLUMNS, 4, None)
    return root, stats, data


def test_selectivity_from_bounds(table) -> None:
    _, stats, data = table
    prof = profiles(stats)
    share, pieces = restriction(prof["k"], And((Compare("k", ">=", 100_000), Compare("k", "<", 300_000))))
    truth = np.mean((data["k"].to_numpy() >= 100_000) & (data["k"].to_numpy() < 300_000))
    assert pieces == 1 and abs(share - truth) < 0.02
    share, _ = restriction(prof["day"], Compare("day", "<", dt.date(2024, 4, 1)))
    assert abs(share - 91 / 366) < 0.03  # uniform over the range: every file spans the year
    assert restriction(prof["amount"], In("amount", (1, 2, 3)))[1] == 3
    assert restriction(prof["amount"], Compare("amount", "!=", 1)) == (1.0, 0.0)


def test_kept_fractions_equal_prune(table) -> None:
    _, stats, _ = table
    preds = [col("k") < 5000, col("day") == dt.date(2024, 2, 1), col("k").isin([7, 500_000]), col("name") >= "n4"]
    got = pruning.kept_fractions(stats, preds)
    assert list(got) == [pruning.prune(stats, p).fraction_kept for p in preds]


def test_recommends_the_filtered_columns_and_predicts_fewer_files(table) -> None:
    root, stats, _ = table
    rng = np.random.default_rng(5)
    workload = []
    for _ in range(300):
        d = dt.date(2024, 1, 1) + dt.timedelta(days=int(rng.integers(0, 330)))
        workload.append(
            Statement(
                f"SELECT sum(amount) FROM sales WHERE day BETWEEN DATE '{d}' AND DATE '{d + dt.timedelta(days=7)}'"
            )
        )
        workload.append(Statement(f"SELECT * FROM sales s WHERE s.amount = {int(rng.integers(0, 10_000))}", "spark"))
    workload += [Statement("SELECT * FROM sales WHERE k = 5")] * 10 + [Statement("SELECT nonsense FROM (")] * 3
    rec = advise(workload, stats, "sales", curve="hilbert")
    assert set(rec.columns) == {"day", "amount"}
    assert rec.status == {"ok": 610, "unparsed": 3} and rec.statements == 613 and rec.scans == 610
    assert rec.column_use == {"day": 300, "amount": 300, "k": 10}
    assert rec.served == pytest.approx(600 / 610)
    assert rec.total_files == 64 and rec.files_before > 60  # the table is clustered on k only
    assert rec.files_after < rec.files_before / 3
    q = next(q for q in rec.queries if q["filter"] == "(k = 5)")
    assert q["files_before"] == pruning.prune(stats, "k = 5").num_kept
    json.dumps(rec.to_dict())  # the XCom
    assert rec.failures and rec.failures[0]["status"] == "unparsed"


def test_max_columns_and_no_filters(table) -> None:
    _, stats, _ = table
    workload = [
        Statement(f"SELECT * FROM sales WHERE amount = {i} AND name = 'n{i:05d}' AND day = DATE '2024-02-0{i % 9 + 1}'")
        for i in range(50)
    ]
    assert len(advise(workload, stats, "sales", max_columns=1).columns) == 1
    none = advise([Statement("SELECT count(*) FROM sales")], stats, "sales")
    assert none.columns == [] and none.scans == 1 and none.files_after == none.files_before == 64


def test_partition_columns_of_a_hive_table(tmp_path: Path) -> None:
    for d in ("2024-01-01", "2024-01-02"):
        (tmp_path / f"dt={d}").mkdir()
        pq.write_table(pa.table({"k": [1, 2]}), tmp_path / f"dt={d}" / "f.parquet")
    stats = footer_stats.read_footers(footer_stats.list_parquet_files(str(tmp_path)), ["k"])
    assert partition_columns(stats) == ["dt"]
    rec = advise([Statement("SELECT * FROM sales WHERE dt = '2024-01-01' AND k = 1")], stats, "sales")
    assert rec.partition_use == {"dt": 1} and rec.columns == ["k"] and rec.num_files == 1


def test_command_line(table, tmp_path: Path, capsys) -> None:
    from airflow_zorder.core.advisor.cli import main

    root, _, _ = table
    (tmp_path / "w.sql").write_text(
        "SELECT * FROM sales WHERE amount = 7; SELECT * FROM sales WHERE amount IN (1, 2); SELECT ("
    )
    assert main(["sales", str(tmp_path / "w.sql"), "--table-dir", str(root), "--json", "--current", "k"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["columns"] == ["amount"] and out["status"] == {"ok": 2, "unparsed": 1}
    assert out["current_columns"] == ["k"] and out["current_files_after"] == pytest.approx(64.0)
    assert main(["sales", str(tmp_path / "w.sql"), "--table-dir", str(root)]) == 0
    text = capsys.readouterr().out
    assert "recommended: zorder on amount" in text and "unparsed" in text
    assert main(["sales", str(tmp_path / "nothing.sql"), "--table-dir", str(root)]) == 2


def test_a_sample_sees_correlated_columns(tmp_path: Path) -> None:
    """`receipt` follows `ship`: clustering on one serves the other, which the statistics cannot show (every file
    spans both ranges); laid out on a sample, the advisor's figure follows the real layout's, and its pick is no
    worse there."""
    from airflow_zorder.core.advisor import sample_layout

    rng = np.random.default_rng(9)
    n = 40_000
    ship = rng.integers(0, 2000, n)
    data = pa.table({"ship": ship, "receipt": ship + rng.integers(0, 2, n), "part": rng.integers(0, 50_000, n)})
    for i in range(32):
        pq.write_table(data.slice(i * 1250, 1250), tmp_path / f"f{i:02d}.parquet")
    paths = footer_stats.list_parquet_files(str(tmp_path))
    stats = footer_stats.read_footers(paths, ["ship", "receipt", "part"])
    r = np.random.default_rng(2)
    workload = []
    for i in range(300):
        d = int(r.integers(0, 1900))
        kind = i % 10
        if kind < 4:
            workload.append(Statement(f"SELECT * FROM t WHERE ship BETWEEN {d} AND {d + 60}"))
        elif kind < 7:
            workload.append(Statement(f"SELECT * FROM t WHERE receipt BETWEEN {d} AND {d + 60}"))
        else:
            workload.append(Statement(f"SELECT * FROM t WHERE part IN ({int(r.integers(0, 50_000))}, {d})"))
    plain = advise(workload, stats, "t", num_files=32)
    sampled = advise(
        workload, stats, "t", num_files=32, sample=lambda cols: sample_layout.read_sample(paths, cols, 8000, seed=1)
    )
    assert plain.estimate == "statistics" and sampled.estimate == "sample" and sampled.sample_rows == 8000

    def real(columns: list[str]) -> float:  # all rows laid out, judged by the pruning evaluator
        layout = sample_layout.layout_stats(data.select(columns), columns, "zorder", 32)
        preds = [predicate_of(s) for s in workload]
        return float(pruning.kept_fractions(layout, preds).mean() * 32)

    def predicate_of(s: Statement):
        return extract(s, TableName.of("t"), ["ship", "receipt", "part"]).scans[0].filters.popitem()[1]

    got, plain_got = real(sampled.columns), real(plain.columns)
    assert got <= plain_got
    assert abs(sampled.files_after - got) < 0.5 * abs(plain.files_after - plain_got)  # independence overestimates


def test_any_statement_is_counted_never_raised(table) -> None:
    _, stats, _ = table
    odd = [
        "INSERT INTO out SELECT * FROM sales WHERE k = 1",
        "SELECT k FROM sales WHERE amount = 2 UNION ALL SELECT k FROM sales WHERE amount = 3",
        "CREATE TABLE x AS SELECT * FROM sales WHERE day > DATE '2024-01-01'",
        "SELECT k, row_number() OVER (PARTITION BY name ORDER BY day) FROM sales WHERE amount IN (SELECT 1)",
        "MERGE INTO sales USING upd ON sales.k = upd.k WHEN MATCHED THEN UPDATE SET amount = upd.amount",
        "DROP TABLE sales",
        "SELECT * FROM sales WHERE day < DATE 'not a date' AND k = 1 / 0",
        "SELECT * FROM sales WHERE amount > (SELECT max(amount) FROM sales WHERE k = 4)",
        "EXPLAIN SELECT 1",
        "",
        "-- only a comment",
    ]
    rec = advise([Statement(s, e) for s in odd for e in ("trino", "spark", "athena")], stats, "sales")
    assert sum(rec.status.values()) == rec.statements == 3 * len(odd)
    assert rec.column_use["amount"] == 2 * 3  # the UNION's two blocks, in each dialect (not a subquery's value)
    assert rec.status["unparsed"] == 3  # EXPLAIN: sqlglot's fallback
