"""The jobs' contract (core.jobs.options): the command line round-trips, one name parser, one stats-location rule."""

from __future__ import annotations

import json
import re

import pytest

from airflow_zorder.core.jobs import params
from airflow_zorder.core.jobs.option_spec import parse_name_args
from airflow_zorder.core.jobs.options import ClusterOptions, CollectOptions, stats_location_for
from airflow_zorder.core.names import parse_names
from airflow_zorder.core.policy.file_sizing import DEFAULT_TARGET_FILE_SIZE, num_output_files
from airflow_zorder.core.policy.incremental import IncrementalParams
from airflow_zorder.core.policy.incremental_stats import PLAN_FORMAT, PLAN_VERSION
from airflow_zorder.core.stats.stats_location import default_stats_location


def cluster_options(**values):
    """The clustering job's options from the operator's (rendered) parameters."""
    return params.job_options_from(ClusterOptions, values)[0]


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
        result_json="/tmp/r.json",
        run_id="20260101T000000-abcdef01",
    )
    back = ClusterOptions.from_args(opts.to_args())
    assert back == opts
    assert back.partitions == ["day=1", "k=a,b"]  # a comma inside a partition value survives (JSON list)
    inc = ClusterOptions(table="/t", columns=["a"], incremental=True, target_ratio=1.2, max_rewrite_bytes=1 << 30)
    assert inc.incremental and ClusterOptions.from_args(inc.to_args()) == inc
    given = ClusterOptions(table="/t", columns=["a"], plan="s3a://stats/plans/r.json", target_file_size=1 << 20)
    assert given.incremental and ClusterOptions.from_args(given.to_args()) == given
    recover = ClusterOptions(table="db.t", action="recover", lock_ttl_s=30, stats_location="/st", run_id="r")
    assert ClusterOptions.from_args(recover.to_args()) == recover


def test_incremental_and_full_flags(capsys):
    base = ["--table", "/t", "--columns", "a"]
    assert ClusterOptions.from_args(base).incremental is False
    assert ClusterOptions.from_args([*base, "--full"]).incremental is False
    inc = ClusterOptions.from_args([*base, "--incremental", "--max-rewrite-bytes", "2GB", "--target-ratio", "1.5"])
    assert inc.incremental and inc.max_rewrite_bytes == 2 << 30 and inc.target_ratio == 1.5
    assert ClusterOptions.from_args([*base, "--plan", "/p.json"]).incremental is True
    for bad, said in (
        (["--incremental", "--full"], "not allowed with argument"),
        (["--incremental", "--target-ratio", "0.9"], "target_ratio (--target-ratio) must be at least 1"),
        (["--incremental", "--max-rewrite-bytes", "lots"], "--max-rewrite-bytes"),
    ):
        with pytest.raises(SystemExit):
            ClusterOptions.from_args([*base, *bad])
        assert said in capsys.readouterr().err
    with pytest.raises(ValueError, match=re.escape("target_ratio (--target-ratio) must be at least 1")):
        ClusterOptions(table="/t", columns=["a"], incremental=True, target_ratio=0.5)


# --------------------------------------------------------------------------- parameters whose effect depends on the mode

PLAN = {  # a plan document as the sensor handed it before #49 (target_file_bytes), made for 128 MiB files
    "format": PLAN_FORMAT,
    "version": PLAN_VERSION,
    "columns": ["a"],
    "params": {"target_ratio": 1.35, "target_file_bytes": 128 << 20, "max_bytes": None},
    "files": 2,
    "bytes": 200,
    "num_output_files": 1,
    "ratio_before": 2.0,
    "ratio_after": 1.0,
    "partitions": [
        {
            "partition": "day=1",
            "reasons": ["cluster the new files"],
            "bins": [{"paths": ["/t/day=1/x.parquet", "/t/day=1/y.parquet"], "num_output_files": 1}],
        }
    ],
}

#: (what is given: the job's options, its command-line flags, the operator's parameters; what the refusal says)
REFUSED = [
    pytest.param(
        {"num_files": 8, "incremental": True},
        ["--num-files", "8", "--incremental"],
        {"num_files": "8", "incremental": "True"},
        "num_files (--num-files) fixes the number of output files of a full rewrite; an incremental run sizes its "
        "files by target_file_size",
        id="num_files-incremental",
    ),
    pytest.param(
        {"num_files": 8, "plan": "/p.json"},
        ["--num-files", "8", "--plan", "/p.json"],
        {"num_files": 8, "plan": PLAN},
        "drop num_files and set target_file_size, or run a full rewrite (incremental=False, --full)",
        id="num_files-plan",
    ),
    pytest.param(
        {"plan": "/p.json", "incremental": False},
        ["--full", "--plan", "/p.json"],
        {"plan": PLAN, "incremental": "False"},
        "plan (--plan) runs an incremental plan, but incremental=False (--full) asks for a full rewrite",
        id="plan-full",
    ),
    pytest.param(
        {"target_ratio": 1.2},
        ["--target-ratio", "1.2"],
        {"target_ratio": "1.2"},
        "target_ratio steer the plan an incremental run makes, and this is a full rewrite: drop it, or run "
        "incrementally (incremental=True, --incremental)",
        id="target_ratio-full",
    ),
    pytest.param(
        {"max_rewrite_bytes": 1 << 30, "incremental": False},
        ["--full", "--max-rewrite-bytes", "1GB"],
        {"max_rewrite_bytes": "1GB", "incremental": False},
        "max_rewrite_bytes steer the plan an incremental run makes, and this is a full rewrite",
        id="max_rewrite_bytes-full",
    ),
    pytest.param(
        {"plan": "/p.json", "target_ratio": 1.2, "max_rewrite_bytes": 1 << 30},
        ["--plan", "/p.json", "--target-ratio", "1.2", "--max-rewrite-bytes", "1GB"],
        {"plan": PLAN, "target_ratio": 1.2, "max_rewrite_bytes": "1GB", "incremental": True},
        "target_ratio and max_rewrite_bytes steer the plan the job makes, but a plan is given (--plan), made with "
        "the sensor's incremental_plan settings (target_ratio, max_bytes): set them there",
        id="knobs-plan",
    ),
    pytest.param(
        {"action": "recover", "partitions": ["day=1"], "retention_hours": 0.0},
        ["--action", "recover", "--partitions", "day=1", "--retention-hours", "0"],
        {"action": "recover", "partitions": ["day=1"], "retention_hours": 0.0},
        "action='recover' (--action recover) only finishes or rolls back interrupted runs, so partitions, "
        "retention_hours would do nothing: drop them, or run action='cluster'",
        id="recover-partitions-retention",
    ),
    pytest.param(
        {"action": "cleanup", "plan": "/p.json"},
        ["--action", "cleanup", "--plan", "/p.json"],
        {"action": "cleanup", "plan": PLAN, "stats_location": "/st"},
        "action='cleanup' (--action cleanup) only deletes what finished runs replaced once their retention passed, "
        "so plan would do nothing: drop it",
        id="cleanup-plan",
    ),
    pytest.param(
        {"action": "cleanup", "incremental": True, "num_files": 2, "target_file_size": 1 << 20},
        ["--action", "cleanup", "--incremental", "--num-files", "2", "--target-file-size", "1MB"],
        {"action": "cleanup", "incremental": "True", "num_files": 2, "target_file_size": "1MB"},
        "so incremental, num_files, target_file_size would do nothing",
        id="cleanup-sizing",
    ),
]


@pytest.mark.parametrize(("options", "flags", "operator", "said"), REFUSED)
def test_a_parameter_the_mode_does_not_use_is_refused_everywhere(options, flags, operator, said, capsys):
    """The same rule refuses the job's options, its command line (exit 2, before any Spark) and the operator's
    rendered parameters (``params.job_options_from``, which ``spark_job_spec`` uses too)."""
    with pytest.raises(ValueError) as err:
        ClusterOptions(table="/t", columns=["a"], **options)
    assert said in str(err.value)
    with pytest.raises(SystemExit) as exit_:
        ClusterOptions.from_args(["--table", "/t", "--columns", "a", *flags])
    assert exit_.value.code == 2 and said in " ".join(capsys.readouterr().err.split())
    with pytest.raises(ValueError) as err:
        cluster_options(table="/t", columns="a", **operator)
    assert said in str(err.value)


def test_each_mode_dependent_parameter_is_honoured_where_it_applies():
    from spark_jobs.incremental_units import params_of

    full = ClusterOptions.from_args(["--table", "/t", "--columns", "a", "--num-files", "8", "--full"])
    assert (full.num_files, full.incremental) == (8, False)
    assert cluster_options(table="/t", columns="a", num_files="8", incremental="False").num_files == 8
    # a plan the job makes: its knobs and the file size reach the rule
    inc = cluster_options(
        table="/t",
        columns="a",
        incremental="True",
        target_file_size="64MB",
        target_ratio="1.2",
        max_rewrite_bytes="1GB",
    )
    assert params_of(inc) == IncrementalParams(
        target_ratio=1.2, target_file_size=64 << 20, max_bytes=1 << 30, curve="zorder"
    )
    unset = params_of(ClusterOptions(table="/t", columns=["a"], incremental=True, curve="hilbert"))
    assert unset == IncrementalParams(curve="hilbert")  # unset: the rule's defaults, the job's 512 MiB files; its curve
    assert ClusterOptions(table="/t", columns=["a"]).target_file_size is None  # unset: the job's default size
    assert num_output_files(10 * DEFAULT_TARGET_FILE_SIZE, None, 100) == 10
    # cleanup keeps replaced files for retention_hours (the default: 7 days)
    cleanup = ClusterOptions.from_args(["--table", "db.t", "--action", "cleanup", "--retention-hours", "0.5"])
    assert cleanup.retention_s == 1800.0 and ClusterOptions(table="/t", columns=["a"]).retention_s == 168 * 3600.0
    # unset, "", "None", "null" and [] mean unset: the rendered forms of an unused template refuse nothing
    for unset_value in (None, "", "None", "null"):
        opts = cluster_options(
            table="/t",
            columns="a",
            action="cleanup",
            incremental=unset_value,
            plan=unset_value,
            num_files=unset_value,
            target_file_size=unset_value,
            target_ratio=unset_value,
            max_rewrite_bytes=unset_value,
            partitions=unset_value if unset_value is not None else [],
        )
        assert opts.to_args()[-4:-2] == ["--action", "cleanup"] and not opts.incremental


def test_a_given_plan_must_be_sized_like_the_run(tmp_path):
    """The plan's bins carry their file counts: a different target_file_size is refused by the operator's
    conversion and by the job when it reads the plan; unset, the job takes the plan's size."""
    from airflow_zorder.core.errors import IncrementalError
    from airflow_zorder.core.storage.io.local import LocalFileSystem
    from airflow_zorder.core.tables import open_table
    from spark_jobs.incremental_units import incremental_units

    said = "target_file_size (--target-file-size) is 268435456 bytes, but the given plan sized its files for 134217728"
    with pytest.raises(ValueError, match=re.escape(said)):
        cluster_options(table="/t", columns="a", plan=PLAN, target_file_size="256MB")
    same = cluster_options(table="/t", columns="a", plan=json.dumps(PLAN), target_file_size="128MB")
    assert same.plan.endswith(f"/t/_zorder/stats/plans/{same.run_id}.json") and same.target_file_size == 128 << 20
    assert cluster_options(table="/t", columns="a", plan=PLAN).target_file_size is None

    (tmp_path / "plan.json").write_text(json.dumps(PLAN))
    ref = open_table("/t", LocalFileSystem())
    job = ClusterOptions(table="/t", columns=["a"], plan=str(tmp_path / "plan.json"), target_file_size=256 << 20)
    with pytest.raises(IncrementalError, match=re.escape(said)):
        incremental_units(LocalFileSystem(), ref, job, [], ["a"])
    job = ClusterOptions(table="/t", columns=["a"], plan=str(tmp_path / "plan.json"))
    bins, summary, _ = incremental_units(LocalFileSystem(), ref, job, [], ["a"])
    assert (bins, summary["source"], job.target_file_size) == ([], "given", 128 << 20)  # the plan's size, for the run


def test_a_plan_names_its_file_size_once_and_older_plans_are_read():
    """The plan's params name the size as every other part does (``target_file_size``); a plan written before
    #49 says ``target_file_bytes``, and is read the same."""
    from airflow_zorder.core.jobs.plan_file import plan_file_size

    assert "target_file_size" in IncrementalParams.__dataclass_fields__
    assert plan_file_size({"params": {"target_file_size": 64 << 20}}) == 64 << 20
    assert plan_file_size(PLAN) == 128 << 20 and plan_file_size({"params": {}}) is None


def test_the_job_refuses_before_spark_starts(tmp_path, monkeypatch, capsys):
    """``spark_jobs/cluster_table.py`` itself: num_files with an incremental run exits 2 naming the fix, before
    any SparkSession, leaving the table as it was."""
    import spark_jobs.cli
    from spark_jobs import cluster_table

    table = tmp_path / "t"
    table.mkdir()
    (table / "part-0.parquet").write_bytes(b"PAR1 not touched PAR1")
    before = sorted((p.name, p.read_bytes()) for p in table.rglob("*"))
    monkeypatch.setattr(spark_jobs.cli, "build_session", lambda name: pytest.fail("a SparkSession was started"))
    with pytest.raises(SystemExit) as exit_:
        cluster_table.main(["--table", str(table), "--columns", "a", "--incremental", "--num-files", "8"])
    assert exit_.value.code == 2
    assert "drop num_files and set target_file_size, or run a full rewrite" in " ".join(capsys.readouterr().err.split())
    assert sorted((p.name, p.read_bytes()) for p in table.rglob("*")) == before


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
