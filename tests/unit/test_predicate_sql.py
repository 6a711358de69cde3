"""Tests for airflow_zorder.core.skipping.predicate_sql: SQL text (sqlglot's tree) to predicates, and back."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest

from airflow_zorder.core.errors import ParseError
from airflow_zorder.core.skipping.predicate_sql import parse, where_predicate
from airflow_zorder.core.skipping.predicates import And, Compare, Const, In, IsNull, Like, Not, Opaque, Or, col
from airflow_zorder.core.skipping.sql_dialect import quote_identifier


def test_parser() -> None:
    e = parse("a = 5 AND (b < 'x' OR s LIKE 'ab%') AND NOT c IN (1,2)")
    assert e == And(
        (
            Compare("a", "=", 5),
            Or((Compare("b", "<", "x"), Like("s", "ab%"))),
            Not(In("c", (1, 2))),
        )
    )
    assert parse("d >= DATE '2024-01-01'") == Compare("d", ">=", dt.date(2024, 1, 1))
    assert parse("t < TIMESTAMP '2024-01-01 10:00:00.5'") == Compare(
        "t", "<", dt.datetime(2024, 1, 1, 10, 0, 0, 500000)
    )
    assert parse("t = TIMESTAMP '2024-01-01T10:00:00Z'").value.tzinfo is not None
    assert parse("x = -1.5e3") == Compare("x", "=", -1500.0)
    assert parse("x = 1.50") == Compare("x", "=", Decimal("1.50"))
    assert parse("x <> -7") == Compare("x", "!=", -7)
    assert parse("x == 'it''s'") == Compare("x", "=", "it's")
    assert parse('"weird col" = 1') == Compare("weird col", "=", 1)
    assert parse("`and` = 1") == Compare("and", "=", 1)
    assert parse("date = DATE '2024-01-01'") == Compare("date", "=", dt.date(2024, 1, 1))
    assert parse("x = 18446744073709551615") == Compare("x", "=", 2**64 - 1)
    assert parse("a IS NOT NULL") == Not(IsNull("a"))
    assert parse("a NOT LIKE 'x!%%' ESCAPE '!'") == Not(Like("a", "x!%%", "!"))
    assert parse("NOT a BETWEEN 1 AND 2 OR b") == Or(
        (Not(And((Compare("a", ">=", 1), Compare("a", "<=", 2)))), Compare("b", "=", True))
    )
    assert parse("a = 1 OR b = 2 AND c = 3") == Or(
        (Compare("a", "=", 1), And((Compare("b", "=", 2), Compare("c", "=", 3))))
    )
    assert isinstance(parse("a < b"), Opaque)
    assert isinstance(parse("a ILIKE 'x%'"), Opaque)
    assert isinstance(parse("1 = 1"), Opaque)
    for bad in ["a =", "a = 5 AND", "(a = 5", "a IN ()", "a @ 5", "a = DATE 'x'", "a IS 5", "f(a) = 1"]:
        with pytest.raises(ParseError):
            parse(bad)


@pytest.mark.parametrize(
    ("bad", "named"),
    [
        ("f(a) = 1", "f(a)"),
        ("a IN (SELECT b FROM t)", "IN needs a list of literals"),
        ("a IN ()", "IN needs at least one value"),
        ("a IS 5", "after IS"),
        ("a = DATE 'x'", "bad DATE literal"),
        ("a = CAST(1 AS INT)", "unsupported CAST type INT"),
        ("a LIKE 'x' ESCAPE 'ab'", "one-character"),
        ("a = 1; b = 2", "2 statements"),
        ("a = 5 AND", "a = 5 AND"),
    ],
)
def test_parse_errors_name_the_problem(bad: str, named: str) -> None:
    with pytest.raises(ParseError, match=named.replace("(", r"\(").replace(")", r"\)")):
        parse(bad)


def test_where_predicate_reads_a_select_statement() -> None:
    assert where_predicate("SELECT a, b FROM t WHERE a = 5 AND b IS NOT NULL") == And(
        (Compare("a", "=", 5), Not(IsNull("b")))
    )
    assert where_predicate("SELECT * FROM t") == Const(True)
    with pytest.raises(ParseError, match="SELECT"):
        where_predicate("a = 5")


def test_keywords_are_quoted_so_that_to_sql_reads_back() -> None:
    for name in ["a", "date", "select", "from", "and", "null", "weird col", 'q"uote', "a.b"]:
        e = col(name) == 1
        assert parse(e.to_sql()) == e, e.to_sql()
    assert quote_identifier("l_shipdate") == "l_shipdate"
    assert quote_identifier("select") == '"select"'
