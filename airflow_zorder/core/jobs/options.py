"""The two Spark jobs' options, each declared once: the clustering job's and the statistics job's.

Every field is an :func:`~airflow_zorder.core.jobs.option_spec.option`: its flag, kind, help, the runs it applies
to and its operator parameter.  The operators build spark-submit's application arguments with ``to_args()``; the
entry scripts (``spark_jobs/cluster_table.py``, ``spark_jobs/collect_stats.py``) parse their argv with
``from_args()``; ``core.jobs.params`` converts the operators' parameters; ``core.jobs.options_doc`` renders the
docs' tables.  Imported at DAG parse time and shipped to executors: standard library and Airflow-free core only.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, get_args

from airflow_zorder.core.errors import InvalidInputError
from airflow_zorder.core.jobs.option_spec import (
    JobOptions,
    Option,
    check_values,
    job_options,
    option,
    parse_name_args,
)
from airflow_zorder.core.jobs.run_ids import new_run_id
from airflow_zorder.core.policy.plan_defaults import DEFAULT_CURVE, DEFAULT_TARGET_RATIO
from airflow_zorder.core.stats.stats_location import default_stats_location
from airflow_zorder.core.storage.locations import is_path_table

__all__ = [
    "CLUSTER_ACTIONS",
    "CLUSTER_OPERATOR_ONLY",
    "CURVES",
    "DEFAULT_NUM_RANGES",
    "DEFAULT_SALT_BITS",
    "KEY_ENGINES",
    "STATS_DELTA_KEYS",
    "STATS_METHODS",
    "STATS_OPERATOR_ONLY",
    "STATS_RESULT_COUNTS",
    "VERIFY_MODES",
    "ClusterAction",
    "ClusterOptions",
    "CollectOptions",
    "Curve",
    "KeyEngine",
    "StatsMethod",
    "VerifyMode",
    "check_cluster_modes",
    "parse_partitions",
    "stats_location_for",
]

# --------------------------------------------------------------------------- typed choices

Curve = Literal["zorder", "hilbert", "linear"]
CURVES: tuple[str, ...] = get_args(Curve)  # = airflow_zorder.core.layout.curves.CURVES (tested)
VerifyMode = Literal["observe", "full"]
VERIFY_MODES: tuple[str, ...] = get_args(VerifyMode)
ClusterAction = Literal["cluster", "recover", "cleanup"]
CLUSTER_ACTIONS: tuple[str, ...] = get_args(ClusterAction)
KeyEngine = Literal["auto", "jvm", "arrow"]
KEY_ENGINES: tuple[str, ...] = get_args(KeyEngine)
StatsMethod = Literal["auto", "footer", "scan"]
STATS_METHODS: tuple[str, ...] = get_args(StatsMethod)

#: The stats job's counts, in its result and its run record (``runs/*.json``), where the operator reads them back.
STATS_RESULT_COUNTS: tuple[str, ...] = (
    "files_total",
    "files_read",
    "files_reused",
    "files_new",
    "files_changed",
    "files_gone",
    "files_failed",
    "files_scanned",
    "rows_total",
    "bytes_total",
)
#: What a Delta table's stats run adds to both (``spark_jobs.stats_collection.metadata``).
STATS_DELTA_KEYS: tuple[str, ...] = ("delta_version", "files_from_log", "columns_from_log", "columns_read")

# = core.layout.ranges.DEFAULT_NUM_RANGES and core.layout.curve_keys.DEFAULT_SALT_BITS (tested); restated
# here so that building a command line (at DAG parse time) does not import numpy.
DEFAULT_NUM_RANGES = 1024
DEFAULT_SALT_BITS = 16
DEFAULT_RETENTION_HOURS = 168.0  # replaced files are kept this long (7 days)


# --------------------------------------------------------------------------- names and locations


def parse_partitions(values: Sequence[str] | None) -> list[str] | None:
    """Partitions from repeated values, comma/newline separated lists, or a JSON list (e.g. from XCom); None if none."""
    return parse_name_args(values, "partitions") or None


def stats_location_for(table: str, stats_location: str | None = None, home: str | None = None) -> str | None:
    """The one stats-location rule: a given location wins, else ``<home>/_zorder/stats``.

    A path table is its own home when ``home`` (resolved by a job) is not known; a catalog table's
    home is only known to the metastore, so without ``stats_location`` or ``home`` this is None.
    """
    if stats_location and stats_location.strip():
        return stats_location.strip()
    if home:
        return default_stats_location(home)
    if is_path_table(table):
        return default_stats_location(table)
    return None


# --------------------------------------------------------------------------- the runs each option applies to

FULL, JOB_PLAN, GIVEN_PLAN, RECOVER, CLEANUP = "full", "job plan", "given plan", "recover", "cleanup"
REWRITES = frozenset({FULL, JOB_PLAN, GIVEN_PLAN})  # the runs that rewrite files
_ACTION_DOES = {
    "recover": "only finishes or rolls back interrupted runs",
    "cleanup": "only deletes what finished runs replaced once their retention passed",
}


def _given(opts: Any, names: Sequence[str]) -> list[str]:
    """Which of ``names`` the options give (None, False and [] are unset)."""
    return [n for n in names if (v := getattr(opts, n)) is not None and v is not False and v != []]


def _refused_in(run: str) -> list[str]:
    """The clustering options refused in a ``run`` (one of ``RUN_KINDS``), in declaration order."""
    return [name for name, spec, _ in job_options(ClusterOptions) if run not in spec.runs]


def check_cluster_modes(opts: ClusterOptions) -> None:
    """The one rule for the clustering options whose effect depends on the run (their declared ``runs``): refuse,
    naming the fix, a value the run would not use.  None means unset.

    :class:`ClusterOptions` applies it, so the operators (literal values at DAG parse time, rendered ones at
    execution), ``spark_job_spec`` and the job's command line all refuse alike.  A given plan's file size is
    checked against ``target_file_size`` where the document is read (``core.jobs.plan_file.check_plan_for``).
    """
    if opts.action != "cluster":
        given = _given(opts, _refused_in(opts.action))
        if given:
            raise InvalidInputError(
                f"action={opts.action!r} (--action {opts.action}) {_ACTION_DOES.get(opts.action, 'rewrites nothing')}"
                f", so {', '.join(given)} would do nothing: drop {'it' if len(given) == 1 else 'them'}, or run "
                "action='cluster'"
            )
        return
    if opts.plan and opts.incremental is False:
        raise InvalidInputError(
            "plan (--plan) runs an incremental plan, but incremental=False (--full) asks for a full rewrite: drop "
            "plan to rewrite every file, or leave incremental unset (a plan implies it)"
        )
    if (opts.incremental or opts.plan) and _given(
        opts, [n for n in _refused_in(JOB_PLAN) if n in _refused_in(GIVEN_PLAN)]
    ):
        raise InvalidInputError(
            "num_files (--num-files) fixes the number of output files of a full rewrite; an incremental run sizes "
            "its files by target_file_size (--target-file-size; a given plan: by the sensor's target_file_size): "
            "drop num_files and set target_file_size, or run a full rewrite (incremental=False, --full)"
        )
    knobs = _given(opts, [n for n in _refused_in(GIVEN_PLAN) if n not in _refused_in(JOB_PLAN)])
    if knobs and opts.plan:
        raise InvalidInputError(
            f"{' and '.join(knobs)} steer the plan the job makes, but a plan is given (--plan), made with the "
            "sensor's incremental_plan settings (target_ratio, max_bytes): set them there, or drop plan to let "
            "the job plan"
        )
    if knobs and not opts.incremental:
        raise InvalidInputError(
            f"{' and '.join(knobs)} steer the plan an incremental run makes, and this is a full rewrite: drop "
            f"{'it' if len(knobs) == 1 else 'them'}, or run incrementally (incremental=True, --incremental)"
        )


# --------------------------------------------------------------------------- the clustering job

_STATS_LOCATION_HELP = (
    "the stats store where the job records its clustering event. Use the same value as the stats operator and the "
    "sensor"
)
_RESULT_JSON = Option(
    flag="--result-json",
    kind="text",
    help="write the JSON result here: a local path, or a URI (e.g. `<stats>/results/<run id>.json`) written "
    "through the stats store's IO",
)
_ICEBERG_CATALOG = Option(
    flag="--iceberg-catalog",
    kind="text",
    help="`--table` is `namespace.table` of this pyiceberg catalog (its properties: `.pyiceberg.yaml` or "
    "`PYICEBERG_CATALOG__<NAME>__<KEY>` variables where the driver runs)",
)
_ICEBERG_CATALOG_FILE = Option(
    flag="--iceberg-catalog-file",
    kind="text",
    help="a JSON file of the catalog's properties (an Airflow iceberg connection's, shipped by the operator with "
    "`--files` so that no secret is on the command line); a bare name is looked up among the job's files",
)


def _opt(spec: Option, default: Any = None) -> Any:
    """A field for an :class:`Option` shared by both jobs."""
    return option(default, **{k: getattr(spec, k) for k in ("flag", "kind", "help")})


@dataclass
class ClusterOptions(JobOptions):
    """What to cluster and how (``spark_jobs/cluster_table.py``); ``to_args``/``from_args`` are its command line.

    Options whose effect depends on the run are None when unset (the job's default applies), so that
    :func:`check_cluster_modes` can refuse a given value the run would not use.
    """

    PROG = "cluster_table.py"
    DESCRIPTION = "re-cluster a Parquet table along a Z-order or Hilbert curve (or linearly)"

    table: str = option(
        flag="--table", kind="text", required=True, help="Parquet directory (path or URI) or catalog table db.table"
    )
    columns: list[str] = option(
        default_factory=list,
        flag="--columns",
        kind="names",
        operator="",
        templated=True,
        help="1 to 16 clustering columns of any atomic type: integers, float/double, decimal, date, "
        'timestamp[_ntz], string, boolean, binary. Arrays, maps and structs are refused. A list, `"a,b"` or a '
        "JSON list",
    )
    partitions: list[str] | None = option(
        None,
        flag="--partitions",
        kind="names",
        runs=REWRITES,
        operator="",
        templated=True,
        doc_default="all",
        help='only these Hive partitions (`day=2026-01-01`). Accepts a list, `"k=v,k=v"`, or a JSON or Python '
        "list string, such as the sensor's XCom rendered by Jinja (`\\| tojson`); the flag repeats. `None` or `[]` "
        "means all",
    )
    # rewrite only the files an incremental plan picks; False (--full) or unset: every file of each unit.
    # After __post_init__ a bool: True whenever a plan is given
    incremental: bool | None = option(
        None,
        flag="--incremental",
        kind="mode",
        runs=REWRITES,
        operator="",
        templated=True,
        doc_default="unset (full)",
        help="rewrite only the files an incremental plan picks: the given `plan`, else one the job makes from the "
        "stats store (its latest snapshot, plus footers of files it lacks). `False` or unset rewrites every file of "
        'each partition (`--full`). Accepts `"True"`/`"False"`; `""` and `"None"` mean unset',
    )
    plan: str | None = option(
        None,
        flag="--plan",
        kind="plan",
        runs=REWRITES,
        operator="",
        templated=True,
        help="the plan to run: the [overlap sensor](sensor.md#the-incremental-plan)'s XCom `plan`, as a dict (an "
        "XComArg) or its JSON text (`\"{{ ti.xcom_pull('watch')['plan'] \\| tojson }}\"`); the job takes the path "
        'or URI the operator writes it to. `None`, `"null"` and `""` mean no plan. It implies `incremental`; '
        "see below",
    )
    curve: str = option(
        DEFAULT_CURVE,
        flag="--curve",
        kind="text",
        choices=CURVES,
        operator="",
        templated=True,
        help="`zorder`, `hilbert`, or `linear` (a plain multi-column sort, the baseline)",
    )
    num_files: int | None = option(
        None,
        flag="--num-files",
        kind="int",
        minimum=1,
        bound_note="(leave it out to size files by --target-file-size)",
        runs=frozenset({FULL}),
        operator="",
        templated=True,
        help="full rewrites only: exact number of output files per table or partition, instead of the target",
    )
    target_file_size: int | None = option(
        None,
        flag="--target-file-size",
        kind="size",
        minimum=1,
        runs=REWRITES,
        operator="",
        templated=True,
        doc_default="`512MB`",
        help="output files per table or partition (or per bin of a plan the job makes) = ceil(input bytes / "
        'target), e.g. `128MB`, `1g` or bytes. With a given `plan`: unset, or the size the plan was made for; `""` '
        "means unset",
    )
    target_ratio: float | None = option(
        None,
        flag="--target-ratio",
        kind="float",
        minimum=1,
        bound_note="(1 = a perfect grid)",
        runs=frozenset({JOB_PLAN}),
        operator="",
        templated=True,
        doc_default=f"{DEFAULT_TARGET_RATIO}",
        help="a plan the job makes (incremental, no `plan`) stops once every column's files read is within this "
        "factor of the ideal",
    )
    max_rewrite_bytes: int | None = option(
        None,
        flag="--max-rewrite-bytes",
        kind="size",
        minimum=1,
        runs=frozenset({JOB_PLAN}),
        operator="",
        templated=True,
        doc_default="no limit",
        help='a plan the job makes (incremental, no `plan`) rewrites at most this many bytes, e.g. `"200GB"`',
    )
    num_ranges: int = option(
        DEFAULT_NUM_RANGES,
        flag="--num-ranges",
        kind="int",
        minimum=1,
        maximum=2**31,
        operator="",
        operator_default=None,
        help="range ids per column, from sampled quantiles",
    )
    salt_bits: int = option(
        DEFAULT_SALT_BITS,
        flag="--salt-bits",
        kind="int",
        minimum=0,
        maximum=32,
        operator="",
        operator_default=None,
        help="bits of row-hash salt below the curve key, so one dominant value still spreads over files; 0 disables",
    )
    verify: str = option(
        "observe",
        flag="--verify",
        kind="text",
        choices=VERIFY_MODES,
        operator="",
        operator_default=None,
        help="`observe`: row count and checksum of the rows read and of the rows reaching the writer, plus the "
        "staged footers' row counts. `full`: also re-reads the staged files and hashes every row again",
    )
    compression: str = option(
        "snappy",
        flag="--compression",
        kind="text",
        operator="",
        operator_default=None,
        help="Parquet codec of the rewritten files",
    )
    retention_hours: float | None = option(
        None,
        flag="--retention-hours",
        kind="float",
        minimum=0,
        bound_note="(hours)",
        runs=REWRITES | {CLEANUP},
        operator="",
        doc_default=f"{DEFAULT_RETENTION_HOURS:g}",
        help="how long replaced files are kept in `_zorder/trash/` before a later run or `cleanup` deletes them, "
        "and the stats store's per-run plans and results",
    )
    lock_ttl_s: int = option(
        600,
        flag="--lock-ttl",
        kind="int",
        minimum=1,
        bound_note="(seconds)",
        operator="lock_ttl",
        operator_default=None,
        help="seconds after which a lock whose owner stopped heartbeating is treated as dead",
    )
    action: str = option(
        "cluster",
        flag="--action",
        kind="text",
        choices=CLUSTER_ACTIONS,
        operator="",
        help="`recover`: only finish or roll back an interrupted run. `cleanup`: only delete expired files",
    )
    stats_location: str | None = option(
        None,
        flag="--stats-location",
        kind="text",
        operator="",
        templated=True,
        doc_default="`<table home>/_zorder/stats`",
        help=_STATS_LOCATION_HELP,
    )
    key_engine: str = option(
        "auto",
        flag="--key-engine",
        kind="text",
        choices=KEY_ENGINES,
        help="where curve keys are computed: JVM expressions (auto picks them whenever the key fits 8 bytes and no "
        "column is binary/timestamp_ntz/collated) or an Arrow UDF",
    )
    iceberg_catalog: str | None = _opt(_ICEBERG_CATALOG)
    iceberg_catalog_file: str | None = _opt(_ICEBERG_CATALOG_FILE)
    run_id: str = option(default_factory=new_run_id, flag="--run-id", kind="text", help="the run's id")
    result_json: str | None = _opt(_RESULT_JSON)
    seed: int = 42  # not a flag: the sampling seed of benchmarks and tests

    def __post_init__(self) -> None:
        if self.action == "cluster" and not self.columns:
            raise InvalidInputError("columns (--columns) is required: name 1 to 16 clustering columns, comma-separated")
        check_values(self)
        check_iceberg_catalog(self.iceberg_catalog, self.iceberg_catalog_file)
        check_cluster_modes(self)
        self.incremental = bool(self.incremental or self.plan)

    @property
    def retention_s(self) -> float:
        """How long replaced files are kept, in seconds: ``retention_hours``, else 7 days."""
        hours = DEFAULT_RETENTION_HOURS if self.retention_hours is None else self.retention_hours
        return hours * 3600.0


#: The clustering operator's parameters that are not the job's options.
CLUSTER_OPERATOR_ONLY: dict[str, Option] = {
    "stats_conn_id": Option(
        flag=None,
        kind="text",
        operator="",
        help="a standard connection that opens the stats location to write the plan file and, in deploy mode "
        "`cluster`, to read the job's result back (`aws` for S3, see [connections.md](connections.md)); none: the "
        "store's default credentials",
    ),
}


def check_iceberg_catalog(catalog: str | None, catalog_file: str | None) -> None:
    """A catalog's properties file names no catalog by itself: refuse it without ``--iceberg-catalog``."""
    if catalog_file and not catalog:
        raise InvalidInputError("--iceberg-catalog-file needs --iceberg-catalog (the catalog those properties are for)")


# --------------------------------------------------------------------------- the stats job


def _collect_columns(names: list[str] | None) -> list[str] | None:
    """Columns to collect: ``all`` / ``*`` (or none) means every column (None)."""
    if not names or (len(names) == 1 and names[0].lower() in ("all", "*")):
        return None
    return names


@dataclass
class CollectOptions(JobOptions):
    """What statistics to collect and where (``spark_jobs/collect_stats.py``); ``to_args``/``from_args`` are its
    command line."""

    PROG = "collect_stats.py"
    DESCRIPTION = "collect per-file, per-column statistics of a Parquet table into its stats table"

    table: str = option(
        flag="--table", kind="text", required=True, help="Parquet directory (path or URI) or catalog table db.table"
    )
    columns: list[str] | None = option(
        None,
        flag="--columns",
        kind="names",
        operator="",
        templated=True,
        doc_default="all",
        help='the columns to collect: `all` or names (a list, `"a,b"` or a JSON list; the flag repeats)',
    )
    stats_location: str | None = option(
        None,
        flag="--stats-location",
        kind="text",
        operator="",
        templated=True,
        doc_default="`<table home>/_zorder/stats`",
        help="where the stats store lives",
    )
    method: str = option(
        "auto",
        flag="--method",
        kind="text",
        choices=STATS_METHODS,
        operator="",
        help="`footer`: Parquet footers only. `scan`: computed by Spark, always correct. `auto`: footers, plus a "
        "scan of the (file, column) pairs whose footer statistics are missing, INT96 or truncated",
    )
    stats_table: str | None = option(
        None,
        flag="--stats-table",
        kind="text",
        operator="",
        help="also register the stats as catalog tables `NAME` and `NAME_runs`",
    )
    full: bool = option(
        False,
        flag="--full",
        kind="switch",
        operator="",
        help="read every file again, ignoring the previous snapshot",
    )
    keep_snapshots: int | None = option(
        None,
        flag="--keep-snapshots",
        kind="int",
        minimum=0,
        bound_note="(0 keeps every snapshot)",
        operator="",
        doc_default="all",
        help="keep only the newest N snapshot files (run records are always kept)",
    )
    parallelism: int | None = option(
        None,
        flag="--parallelism",
        kind="int",
        minimum=1,
        operator="",
        doc_default="the cluster's",
        help="number of footer-reading tasks",
    )
    allow_errors: bool = option(
        False,
        flag="--allow-errors",
        kind="switch",
        operator="",
        help="succeed even when some files are unreadable. Without it, a partial run fails the task and names the "
        "files",
    )
    iceberg_catalog: str | None = _opt(_ICEBERG_CATALOG)
    iceberg_catalog_file: str | None = _opt(_ICEBERG_CATALOG_FILE)
    run_id: str = option(default_factory=new_run_id, flag="--run-id", kind="text", help="the run's id")
    result_json: str | None = _opt(_RESULT_JSON)

    def __post_init__(self) -> None:
        self.columns = _collect_columns(self.columns)
        check_values(self)
        check_iceberg_catalog(self.iceberg_catalog, self.iceberg_catalog_file)


#: The stats operator's parameters that are not the job's options.
STATS_OPERATOR_ONLY: dict[str, Option] = {
    "clustering_columns": Option(
        flag=None,
        kind="names",
        operator="",
        templated=True,
        doc_default="`columns`, else the last clustering's",
        help="the columns the XCom's `clustering` summary covers",
    ),
}
