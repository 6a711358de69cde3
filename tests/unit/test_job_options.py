"""The jobs' contract (core.jobs.options): the command line round-trips, one name parser, one stats-location rule."""

from __future__ import annotations

import pytest

from airflow_zorder.core.jobs.options import (
    ClusterOptions,
    CollectOptions,
    default_stats_location,
    parse_name_args,
    parse_names,
    stats_location_for,
)


def test_cluster_options_round_trip_through_the_command_line():
    opts = ClusterOptions(
        table="s3a://lake/events",
        columns=["a", "b"],
        curve="hilbert",
        target_file_size=64 << 20,
        num_files=3,
        partitions=["day=1", "k=a,b"],
        num_ranges=512,
        salt_bits=0,
        verify="full",
        compression="zstd",
        retention_hours=2.5,
        lock_ttl_s=30,
        key_engine="arrow",
        stats_location="s3a://stats/events",
        action="recover",
        result_json="/tmp/r.json",
        run_id="20260101T000000-abcdef01",
    )
    back = ClusterOptions.from_args(opts.to_args())
    assert back == opts
    assert back.partitions == ["day=1", "k=a,b"]  # a comma inside a partition value survives (JSON list)
    inc = ClusterOptions(
        table="/t", columns=["a"], plan="s3a://stats/plans/r.json", target_ratio=1.2, max_rewrite_bytes=1 << 30
    )
    assert inc.incremental and ClusterOptions.from_args(inc.to_args()) == inc


def test_incremental_and_full_flags(capsys):
    base = ["--table", "/t", "--columns", "a"]
    assert ClusterOptions.from_args(base).incremental is False
    assert ClusterOptions.from_args([*base, "--full"]).incremental is False
    inc = ClusterOptions.from_args([*base, "--incremental", "--max-rewrite-bytes", "2GB", "--target-ratio", "1.5"])
    assert inc.incremental and inc.max_rewrite_bytes == 2 << 30 and inc.target_ratio == 1.5
    assert ClusterOptions.from_args([*base, "--plan", "/p.json"]).incremental is True
    for bad, said in (
        (["--incremental", "--full"], "not allowed with argument"),
        (["--full", "--plan", "/p.json"], "leave out --full"),
        (["--target-ratio", "0.9"], "--target-ratio must be at least 1"),
        (["--max-rewrite-bytes", "lots"], "--max-rewrite-bytes"),
    ):
        with pytest.raises(SystemExit):
            ClusterOptions.from_args([*base, *bad])
        assert said in capsys.readouterr().err
    with pytest.raises(ValueError, match="target_ratio must be a number >= 1"):
        ClusterOptions(table="/t", columns=["a"], target_ratio=0.5)


def test_defaults_are_not_restated_on_the_command_line():
    args = ClusterOptions(table="/t", columns=["a"], run_id="r").to_args()
    assert args == ["--table", "/t", "--columns", "a", "--run-id", "r"]
    args = CollectOptions(table="/t", run_id="r").to_args()
    assert args == ["--table", "/t", "--run-id", "r"]
    assert ClusterOptions.from_args(["--table", "/t", "--columns", "a"]).stats_location is None


def test_collect_options_round_trip_through_the_command_line():
    opts = CollectOptions(
        table="db.events",
        columns=["a", "b"],
        method="scan",
        stats_location="s3://stats/e",
        stats_table="db.e_stats",
        full=True,
        keep_snapshots=3,
        parallelism=16,
        allow_errors=True,
        result_json="/tmp/r.json",
        run_id="r1",
    )
    assert CollectOptions.from_args(opts.to_args()) == opts
    assert CollectOptions(table="/t", columns=["ALL"]).columns is None
    assert CollectOptions.from_args(["--table", "/t", "--columns", "a,b", "--columns", '["c"]']).columns == [
        "a",
        "b",
        "c",
    ]


def test_bad_choices_are_refused_with_the_parameter_named():
    with pytest.raises(ValueError, match="curve='peano' is not one of zorder, hilbert, linear"):
        ClusterOptions(table="/t", columns=["a"], curve="peano")
    with pytest.raises(ValueError, match="key_engine='gpu' is not one of auto, jvm, arrow"):
        ClusterOptions(table="/t", columns=["a"], key_engine="gpu")


def test_one_name_parser_for_values_and_repeated_flags():
    assert parse_names("a,\nb, ,c") == ["a", "b", "c"]
    assert parse_names(("x", {"day": 1})) == ["x", "day=1"]
    assert parse_name_args(["a,b", '["k=1/j=2"]', "[{'d': 2}]"]) == ["a", "b", "k=1/j=2", "d=2"]
    assert parse_name_args(None) is None and parse_name_args([" "]) == []
    with pytest.raises(ValueError, match="expected a list"):
        parse_names(3, "columns")


def test_one_stats_location_rule():
    assert default_stats_location("s3://b/t/") == "s3://b/t/_zorder/stats"
    assert stats_location_for("/lake/t") == "/lake/t/_zorder/stats"
    assert stats_location_for("/lake/t", " s3://stats/t ") == "s3://stats/t"
    assert stats_location_for("db.t") is None  # a catalog table's home is only known to the metastore
    assert stats_location_for("db.t", home="/wh/t") == "/wh/t/_zorder/stats"
    assert stats_location_for("db.t", "", home="/wh/t") == "/wh/t/_zorder/stats"


def test_name_list_forms_the_operators_accept():
    """The forms the operators took before the job contract (formerly ``as_name_list``), unchanged."""
    assert parse_names(None, "x") is None and parse_names(" ", "x") is None
    assert parse_names("a, b,,c", "x") == ["a", "b", "c"]
    assert parse_names('["k=1/j=2"]', "x") == ["k=1/j=2"]
    assert parse_names("['a', 'b']", "x") == ["a", "b"]
    assert parse_names([{"k": 1, "j": "x"}], "x") == ["k=1/j=x"]
    assert parse_names([], "x") == []
    with pytest.raises(ValueError, match="cannot read"):
        parse_names("[not a list", "partitions")
