"""The two Spark jobs' contract: their typed options and command lines, one name-list parser, one stats-location rule.

The operators build spark-submit's application arguments with ``to_args()``; the entry scripts
(``spark_jobs/cluster_table.py``, ``spark_jobs/collect_stats.py``) parse their argv with ``from_args()``.
Imported at DAG parse time and shipped to executors: standard library and Airflow-free core only.
"""

from __future__ import annotations

import argparse
import ast
import json
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import MISSING, dataclass, field, fields
from typing import Any, Literal, get_args

from airflow_zorder.core.errors import InvalidInputError
from airflow_zorder.core.jobs.file_sizing import DEFAULT_TARGET_FILE_SIZE, parse_size
from airflow_zorder.core.stats.stats_location import default_stats_location
from airflow_zorder.core.storage.locations import is_path_table

__all__ = [
    "CLUSTER_ACTIONS",
    "CURVES",
    "STATS_DELTA_KEYS",
    "STATS_RESULT_COUNTS",
    "DEFAULT_NUM_RANGES",
    "DEFAULT_SALT_BITS",
    "KEY_ENGINES",
    "STATS_METHODS",
    "VERIFY_MODES",
    "ClusterAction",
    "ClusterOptions",
    "CollectOptions",
    "Curve",
    "KeyEngine",
    "StatsMethod",
    "VerifyMode",
    "check_choice",
    "check_cluster_modes",
    "new_run_id",
    "parse_name_args",
    "parse_names",
    "plan_file_bytes",
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
DEFAULT_CURVE = "zorder"  # the jobs' and operators' curve unless one is given
DEFAULT_TARGET_RATIO = 1.35  # incremental runs stop once every column is within this of the ideal
DEFAULT_RETENTION_HOURS = 168.0  # replaced files are kept this long (7 days)


def check_choice(what: str, value: Any, choices: Sequence[str]) -> None:
    """Refuse a value outside ``choices`` (None means unset) with a message naming the parameter."""
    if value is not None and value not in choices:
        raise InvalidInputError(f"{what}={value!r} is not one of {', '.join(choices)}")


def new_run_id() -> str:
    """A run id: ``YYYYmmddTHHMMSS-<8 hex>`` (the operators choose it, so the task knows it before the run)."""
    return time.strftime("%Y%m%dT%H%M%S") + "-" + uuid.uuid4().hex[:8]


# --------------------------------------------------------------------------- names and locations


def parse_names(value: Any, what: str = "names") -> list[str] | None:
    """Names from a list/tuple, a JSON or Python list literal (e.g. a rendered XCom), or ``a,b`` / lines.

    ``None`` and ``""`` give ``None``; list items that are dicts (``{"day": "2026-01-01"}``) become
    Hive paths ``day=2026-01-01``. The one parser for columns and partitions, in operators and jobs.
    """
    if value is None:
        return None
    if isinstance(value, str):
        text = value.strip()
        if not text:
            return None
        if not text.startswith("["):
            return [x.strip() for x in text.replace("\n", ",").split(",") if x.strip()]
        try:
            value = json.loads(text)
        except ValueError:
            try:
                value = ast.literal_eval(text)
            except (ValueError, SyntaxError) as exc:
                raise InvalidInputError(
                    f"{what}: cannot read {text[:80]!r} as a list; pass a list, a JSON list or comma-separated names"
                ) from exc
    if isinstance(value, (list, tuple, set)):
        out = []
        for item in value:
            if isinstance(item, dict):
                out.append("/".join(f"{k}={v}" for k, v in item.items()))
            elif item is not None and str(item).strip():
                out.append(str(item).strip())
        return out
    raise InvalidInputError(f"{what}: expected a list or a comma-separated string, got {type(value).__name__}")


def parse_name_args(values: Sequence[str] | None, what: str = "names") -> list[str] | None:
    """Names from a repeatable command-line flag: each value parsed by :func:`parse_names`, in order."""
    if values is None:
        return None
    return [n for v in values for n in parse_names(v, what) or []]


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


# --------------------------------------------------------------------------- command-line helpers


class _CommandLine:
    """``to_args`` for a job's options dataclass: ``_FLAGS`` lists its (field, flag) pairs after --table/--columns."""

    _FLAGS: tuple[tuple[str, str], ...] = ()
    table: str  # the dataclass's fields (annotations only: the subclasses declare them)
    columns: list[str] | None

    def to_args(self) -> list[str]:
        """The job's command line: ``--table`` and ``--columns``, then every option that is not the default.

        Booleans are the flag alone, lists a JSON list (a comma inside a name survives).
        """
        args = ["--table", self.table, *(["--columns", ",".join(self.columns)] if self.columns else [])]
        defaults = {f.name: f.default for f in fields(self) if f.default is not MISSING}  # type: ignore[arg-type]
        for name, flag in self._FLAGS:
            value = getattr(self, name)
            if value is None or (name in defaults and value == defaults[name]):
                continue
            if isinstance(value, bool):
                args += [flag] if value else []
            elif isinstance(value, list):
                args += [flag, json.dumps(value)]
            else:
                args += [flag, str(value)]
        return args


def check_iceberg_catalog(catalog: str | None, catalog_file: str | None) -> None:
    """A catalog's properties file names no catalog by itself: refuse it without ``--iceberg-catalog``."""
    if catalog_file and not catalog:
        raise ValueError("--iceberg-catalog-file needs --iceberg-catalog (the catalog those properties are for)")


def _job_parser(prog: str, description: str) -> argparse.ArgumentParser:
    """An argument parser with the ``--table`` every job takes."""
    p = argparse.ArgumentParser(prog=prog, description=description)
    p.add_argument("--table", required=True, help="Parquet directory (path or URI) or catalog table name db.table")
    p.add_argument(
        "--iceberg-catalog",
        default=None,
        help="--table is namespace.table of this pyiceberg catalog (its properties: .pyiceberg.yaml or "
        "PYICEBERG_CATALOG__<NAME>__<KEY> variables where the driver runs)",
    )
    p.add_argument(
        "--iceberg-catalog-file",
        default=None,
        help="a JSON file of the catalog's properties (an Airflow iceberg connection's, shipped by the operator with "
        "--files so that no secret is on the command line); a bare name is looked up among the job's files",
    )
    return p


# --------------------------------------------------------------------------- the clustering job


_ACTION_DOES = {
    "recover": "only finishes or rolls back interrupted runs",
    "cleanup": "only deletes what finished runs replaced once their retention passed",
}


def check_cluster_modes(
    *,
    action: str = "cluster",
    incremental: bool | None = None,
    plan: bool = False,
    num_files: int | None = None,
    target_file_size: int | None = None,
    target_ratio: float | None = None,
    max_rewrite_bytes: int | None = None,
    partitions: Sequence[str] | None = None,
    retention_hours: float | None = None,
) -> None:
    """The one rule for the clustering parameters whose effect depends on the run's mode: refuse, naming the fix,
    a value the run would not use.  None means unset; ``plan`` says whether a plan is given.

    :class:`ClusterOptions` applies it (so the operators at execution, ``spark_job_spec`` and the job's command
    line all refuse alike), and ``core.jobs.params.check_cluster_params`` to literal operator arguments at DAG
    parse time.  A given plan's file size is checked against ``target_file_size`` by
    :meth:`ClusterOptions.check_given_plan`, where the document is read.
    """
    if action != "cluster":
        given = [
            name
            for name, value in (
                ("partitions", partitions),
                ("incremental", incremental or None),
                ("plan", plan or None),
                ("num_files", num_files),
                ("target_file_size", target_file_size),
                ("target_ratio", target_ratio),
                ("max_rewrite_bytes", max_rewrite_bytes),
                ("retention_hours", retention_hours if action == "recover" else None),
            )
            if value is not None
        ]
        if given:
            raise InvalidInputError(
                f"action={action!r} (--action {action}) {_ACTION_DOES.get(action, 'rewrites nothing')}, so "
                f"{', '.join(given)} would do nothing: drop {'it' if len(given) == 1 else 'them'}, or run "
                "action='cluster'"
            )
        return
    if plan and incremental is False:
        raise InvalidInputError(
            "plan (--plan) runs an incremental plan, but incremental=False (--full) asks for a full rewrite: drop "
            "plan to rewrite every file, or leave incremental unset (a plan implies it)"
        )
    if num_files is not None and (incremental or plan):
        raise InvalidInputError(
            "num_files (--num-files) fixes the number of output files of a full rewrite; an incremental run sizes "
            "its files by target_file_size (--target-file-size; a given plan: by the sensor's incremental_plan "
            "target_file_bytes): drop num_files and set target_file_size, or run a full rewrite "
            "(incremental=False, --full)"
        )
    knobs = [n for n, v in (("target_ratio", target_ratio), ("max_rewrite_bytes", max_rewrite_bytes)) if v is not None]
    if knobs and plan:
        raise InvalidInputError(
            f"{' and '.join(knobs)} steer the plan the job makes, but a plan is given (--plan), made with the "
            "sensor's incremental_plan settings (target_ratio, max_bytes): set them there, or drop plan to let "
            "the job plan"
        )
    if knobs and not incremental:
        raise InvalidInputError(
            f"{' and '.join(knobs)} steer the plan an incremental run makes, and this is a full rewrite: drop "
            f"{'it' if len(knobs) == 1 else 'them'}, or run incrementally (incremental=True, --incremental)"
        )


def plan_file_bytes(doc: Mapping[str, Any]) -> int | None:
    """The output file size a plan document was made for (the sensor's ``incremental_plan`` ``target_file_bytes``;
    None when the document does not say)."""
    value = (doc.get("params") or {}).get("target_file_bytes")
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


@dataclass
class ClusterOptions(_CommandLine):
    """What to cluster and how (``spark_jobs/cluster_table.py``); ``to_args``/``from_args`` are its command line.

    Options whose effect depends on the mode are None when unset (the job's default applies), so that
    :func:`check_cluster_modes` can refuse a given value the run would not use.
    """

    table: str
    columns: list[str] = field(default_factory=list)
    curve: str = DEFAULT_CURVE  # one of CURVES
    target_file_size: int | None = None  # output file size in bytes; unset: DEFAULT_TARGET_FILE_SIZE (file_bytes)
    num_files: int | None = None  # full rewrites: exact output files per unit
    partitions: list[str] | None = None
    num_ranges: int = DEFAULT_NUM_RANGES
    salt_bits: int = DEFAULT_SALT_BITS
    verify: str = "observe"  # one of VERIFY_MODES
    compression: str = "snappy"
    retention_hours: float | None = None  # unset: DEFAULT_RETENTION_HOURS (retention_s)
    lock_ttl_s: int = 600
    key_engine: str = "auto"  # one of KEY_ENGINES
    seed: int = 42  # not a flag: the sampling seed of benchmarks and tests
    run_id: str = field(default_factory=new_run_id)
    stats_location: str | None = None  # where the run's event is recorded; default <table home>/_zorder/stats
    iceberg_catalog: str | None = None  # the table is namespace.table of this pyiceberg catalog
    iceberg_catalog_file: str | None = None  # that catalog's properties as JSON (shipped by the operators)
    action: str = "cluster"  # one of CLUSTER_ACTIONS
    result_json: str | None = (
        None  # write the JSON result here: a local path, or a URI written through the stats store's IO
    )
    # rewrite only the files an incremental plan picks; False (--full) or unset: every file of each unit.
    # After __post_init__ a bool: True whenever a plan is given
    incremental: bool | None = None
    plan: str | None = None  # the plan document to run (path or URI of its JSON); implies incremental
    target_ratio: float | None = None  # incremental, job's plan: stop once every column is within this of ideal
    max_rewrite_bytes: int | None = None  # incremental, job's plan: the run's budget of bytes rewritten

    _FLAGS = (
        ("incremental", "--incremental"),
        ("plan", "--plan"),
        ("target_ratio", "--target-ratio"),
        ("max_rewrite_bytes", "--max-rewrite-bytes"),
        ("curve", "--curve"),
        ("target_file_size", "--target-file-size"),
        ("num_files", "--num-files"),
        ("partitions", "--partitions"),
        ("num_ranges", "--num-ranges"),
        ("salt_bits", "--salt-bits"),
        ("verify", "--verify"),
        ("compression", "--compression"),
        ("retention_hours", "--retention-hours"),
        ("lock_ttl_s", "--lock-ttl"),
        ("key_engine", "--key-engine"),
        ("stats_location", "--stats-location"),
        ("iceberg_catalog", "--iceberg-catalog"),
        ("iceberg_catalog_file", "--iceberg-catalog-file"),
        ("action", "--action"),
        ("run_id", "--run-id"),
        ("result_json", "--result-json"),
    )

    def __post_init__(self) -> None:
        for what, value, choices in (
            ("curve", self.curve, CURVES),
            ("verify", self.verify, VERIFY_MODES),
            ("action", self.action, CLUSTER_ACTIONS),
            ("key_engine", self.key_engine, KEY_ENGINES),
        ):
            check_choice(what, value, choices)
        check_iceberg_catalog(self.iceberg_catalog, self.iceberg_catalog_file)
        if self.target_ratio is not None and not (
            isinstance(self.target_ratio, (int, float)) and 1.0 <= self.target_ratio < float("inf")
        ):
            raise InvalidInputError(
                f"target_ratio must be a number >= 1 (1 = a perfect grid), not {self.target_ratio!r}"
            )
        if self.max_rewrite_bytes is not None and self.max_rewrite_bytes < 1:
            raise InvalidInputError(
                f"max_rewrite_bytes must be a positive number of bytes, not {self.max_rewrite_bytes!r}"
            )
        check_cluster_modes(
            action=self.action,
            incremental=self.incremental,
            plan=bool(self.plan),
            num_files=self.num_files,
            target_file_size=self.target_file_size,
            target_ratio=self.target_ratio,
            max_rewrite_bytes=self.max_rewrite_bytes,
            partitions=self.partitions or None,
            retention_hours=self.retention_hours,
        )
        self.incremental = bool(self.incremental or self.plan)

    @property
    def file_bytes(self) -> int:
        """The output file size target in bytes: ``target_file_size``, else the job's default (512 MiB)."""
        return self.target_file_size or DEFAULT_TARGET_FILE_SIZE

    @property
    def retention_s(self) -> float:
        """How long replaced files are kept, in seconds: ``retention_hours``, else 7 days."""
        hours = DEFAULT_RETENTION_HOURS if self.retention_hours is None else self.retention_hours
        return hours * 3600.0

    def check_given_plan(self, doc: Mapping[str, Any]) -> None:
        """Refuse a given plan made for another file size than ``target_file_size``: the plan's bins carry their
        output file counts, sized by the sensor's ``incremental_plan`` ``target_file_bytes``."""
        planned = plan_file_bytes(doc)
        if self.target_file_size is not None and planned is not None and planned != self.target_file_size:
            raise InvalidInputError(
                f"target_file_size (--target-file-size) is {self.target_file_size} bytes, but the given plan sized "
                f"its files for {planned} bytes (the sensor's incremental_plan target_file_bytes): give the sensor "
                "the same size (incremental_plan={'target_file_bytes': ...}), or leave target_file_size unset to "
                "run the plan as it was made"
            )

    @staticmethod
    def parser() -> argparse.ArgumentParser:
        """The job's argument parser (``--help`` lists every flag)."""
        p = _job_parser("cluster_table.py", "re-cluster a Parquet table along a Z-order or Hilbert curve (or linearly)")
        p.add_argument("--columns", default="", help="comma-separated clustering columns (1 to 16)")
        mode = p.add_mutually_exclusive_group()
        mode.add_argument(
            "--incremental",
            action="store_const",
            const=True,
            default=None,
            help="rewrite only the files whose rewrite lowers the expected files read the most per byte "
            "(new files, LSM merges of earlier runs' files); the job plans from the table's stats store",
        )
        mode.add_argument(
            "--full",
            dest="incremental",
            action="store_const",
            const=False,
            help="rewrite every file of each unit (the default)",
        )
        p.add_argument(
            "--plan",
            default=None,
            help="run this incremental plan (path or URI of the sensor's plan JSON) instead of planning; "
            "implies --incremental",
        )
        p.add_argument(
            "--target-ratio",
            type=float,
            default=None,
            help="incremental, planned by the job (not with --plan): stop once every column's files read / ideal is "
            f"at most this (default {DEFAULT_TARGET_RATIO})",
        )
        p.add_argument(
            "--max-rewrite-bytes",
            default=None,
            help="incremental, planned by the job (not with --plan): at most this many bytes rewritten per run, "
            "e.g. 200GB (default no limit)",
        )
        p.add_argument("--curve", default="zorder", choices=CURVES)
        p.add_argument(
            "--target-file-size",
            default=None,
            help="output file size target, e.g. 128MB, 1g (default 512MB); with --plan, the plan's size must match",
        )
        p.add_argument(
            "--num-files",
            type=int,
            default=None,
            help="full rewrites: exact number of output files per unit (instead of the target size)",
        )
        p.add_argument(
            "--partitions",
            action="append",
            default=None,
            help="partition(s) to re-cluster, as k=v[/k2=v2]; repeat, comma-separate or pass a JSON list; default all",
        )
        p.add_argument("--num-ranges", type=int, default=DEFAULT_NUM_RANGES, help="range ids per column (default 1024)")
        p.add_argument(
            "--salt-bits",
            type=int,
            default=DEFAULT_SALT_BITS,
            help="bits of row-hash salt below the key against skew; 0 disables",
        )
        p.add_argument(
            "--verify",
            default="observe",
            choices=VERIFY_MODES,
            help="observe: count+checksum of the rows read and of the rows reaching the writer (carried "
            "hashes; 1 row in 16 re-hashed), and staged footers; full: also re-read and re-hash the "
            "staged files",
        )
        p.add_argument("--compression", default="snappy")
        p.add_argument(
            "--retention-hours",
            type=float,
            default=None,
            help="cluster and cleanup: keep replaced files this long (default 168, 7 days)",
        )
        p.add_argument(
            "--lock-ttl", type=int, default=600, help="seconds after which a silent lock owner is presumed dead"
        )
        p.add_argument(
            "--stats-location",
            default=None,
            help="the table's stats store, where the run's event is recorded (path or URI); "
            "default <table home>/_zorder/stats",
        )
        p.add_argument(
            "--result-json",
            default=None,
            help="write the JSON result here: a local path, or a URI (e.g. <stats>/results/<run id>.json) written through the stats store's IO",
        )
        p.add_argument(
            "--action",
            default="cluster",
            choices=CLUSTER_ACTIONS,
            help="cluster (default); recover: finish/roll back an interrupted run only; "
            "cleanup: purge expired files only",
        )
        p.add_argument("--run-id", default=None)
        p.add_argument(
            "--key-engine",
            default="auto",
            choices=KEY_ENGINES,
            help="where curve keys are computed: JVM expressions (auto picks them whenever the key fits "
            "8 bytes and no column is binary/timestamp_ntz/collated) or an Arrow UDF (default auto)",
        )
        return p

    @classmethod
    def from_args(cls, argv: Sequence[str] | None = None) -> ClusterOptions:
        """Parse the job's argv; bad values exit 2 naming the flag, before any SparkSession starts."""
        p = cls.parser()
        a = p.parse_args(argv)
        try:
            cols = parse_names(a.columns, "--columns") or []
        except ValueError as exc:
            p.error(str(exc))
        if a.action == "cluster" and not cols:
            p.error("--columns is required: name 1 to 16 clustering columns, comma-separated")
        if a.num_files is not None and a.num_files < 1:
            p.error(
                f"--num-files must be at least 1, got {a.num_files} (leave it out to size files by --target-file-size)"
            )
        if not 1 <= a.num_ranges <= 2**31:
            p.error(f"--num-ranges must be between 1 and 2**31, got {a.num_ranges}")
        if not 0 <= a.salt_bits <= 32:
            p.error(f"--salt-bits must be between 0 and 32, got {a.salt_bits}")
        if a.lock_ttl < 1:
            p.error(f"--lock-ttl must be at least 1 second, got {a.lock_ttl}")
        if a.retention_hours is not None and not 0 <= a.retention_hours < float("inf"):
            p.error(f"--retention-hours must be a number of hours >= 0, got {a.retention_hours}")
        try:
            target = parse_size(a.target_file_size) if a.target_file_size is not None else None
        except ValueError as exc:
            p.error(f"--target-file-size: {exc}")
        try:
            partitions = parse_name_args(a.partitions, "--partitions") or None
        except ValueError as exc:  # a malformed JSON list
            p.error(f"--partitions: cannot read {a.partitions!r} as k=v[/k2=v2] values or a JSON list: {exc}")
        if a.target_ratio is not None and a.target_ratio < 1.0:
            p.error(f"--target-ratio must be at least 1 (1 = a perfect grid), got {a.target_ratio}")
        try:
            budget = parse_size(a.max_rewrite_bytes) if a.max_rewrite_bytes is not None else None
        except ValueError as exc:
            p.error(f"--max-rewrite-bytes: {exc}")
        try:  # the rules of check_cluster_modes: a flag the run would not use exits 2, naming the fix
            opts = cls(
                table=a.table,
                columns=cols,
                incremental=a.incremental,
                plan=a.plan,
                target_ratio=a.target_ratio,
                max_rewrite_bytes=budget,
                curve=a.curve,
                target_file_size=target,
                num_files=a.num_files,
                partitions=partitions,
                num_ranges=a.num_ranges,
                salt_bits=a.salt_bits,
                verify=a.verify,
                compression=a.compression,
                retention_hours=a.retention_hours,
                lock_ttl_s=a.lock_ttl,
                key_engine=a.key_engine,
                stats_location=a.stats_location,
                iceberg_catalog=a.iceberg_catalog,
                iceberg_catalog_file=a.iceberg_catalog_file,
                action=a.action,
                result_json=a.result_json,
            )
        except ValueError as exc:
            p.error(str(exc))
        if a.run_id:
            opts.run_id = a.run_id
        return opts


# --------------------------------------------------------------------------- the stats job


def _collect_columns(names: list[str] | None) -> list[str] | None:
    """Columns to collect: ``all`` / ``*`` (or none) means every column (None)."""
    if not names or (len(names) == 1 and names[0].lower() in ("all", "*")):
        return None
    return names


@dataclass
class CollectOptions(_CommandLine):
    """What statistics to collect and where (``spark_jobs/collect_stats.py``); ``to_args``/``from_args`` are its command line."""

    table: str
    columns: list[str] | None = None  # None (or ["all"]): all columns
    method: str = "auto"  # one of STATS_METHODS
    stats_location: str | None = None  # default: <table home>/_zorder/stats
    iceberg_catalog: str | None = None  # the table is namespace.table of this pyiceberg catalog
    iceberg_catalog_file: str | None = None  # that catalog's properties as JSON (shipped by the operators)
    stats_table: str | None = None  # also register the stats as this catalog table
    full: bool = False  # ignore the previous snapshot
    keep_snapshots: int | None = None  # keep only the newest N snapshot files (runs are always kept)
    parallelism: int | None = None  # footer tasks (default: the cluster's default parallelism)
    run_id: str = field(default_factory=new_run_id)
    allow_errors: bool = False  # exit 0 even when some files could not be read
    result_json: str | None = (
        None  # write the JSON result here: a local path, or a URI written through the stats store's IO
    )

    _FLAGS = (
        ("method", "--method"),
        ("stats_location", "--stats-location"),
        ("iceberg_catalog", "--iceberg-catalog"),
        ("iceberg_catalog_file", "--iceberg-catalog-file"),
        ("stats_table", "--stats-table"),
        ("full", "--full"),
        ("keep_snapshots", "--keep-snapshots"),
        ("parallelism", "--parallelism"),
        ("allow_errors", "--allow-errors"),
        ("run_id", "--run-id"),
        ("result_json", "--result-json"),
    )

    def __post_init__(self) -> None:
        self.columns = _collect_columns(self.columns)
        check_iceberg_catalog(self.iceberg_catalog, self.iceberg_catalog_file)

    @staticmethod
    def parser() -> argparse.ArgumentParser:
        """The job's argument parser (``--help`` lists every flag)."""
        p = _job_parser(
            "collect_stats.py", "collect per-file, per-column statistics of a Parquet table into its stats table"
        )
        p.add_argument(
            "--columns",
            action="append",
            default=None,
            help="columns to collect: 'all' (default) or comma-separated names (repeatable, or a JSON list)",
        )
        p.add_argument(
            "--method",
            default="auto",
            choices=STATS_METHODS,
            help="footer: Parquet footers only; scan: compute from the data; "
            "auto (default): footers, scan only where footer stats are missing, INT96 or truncated",
        )
        p.add_argument(
            "--stats-location",
            default=None,
            help="where the stats table lives (path or URI); default <table home>/_zorder/stats",
        )
        p.add_argument(
            "--stats-table",
            default=None,
            help="also register the stats as catalog tables NAME (file stats) and NAME_runs (run records)",
        )
        p.add_argument("--full", action="store_true", help="read every file again, ignoring the previous snapshot")
        p.add_argument(
            "--keep-snapshots",
            type=int,
            default=None,
            help="keep only the newest N snapshot files (run records are always kept); default all",
        )
        p.add_argument(
            "--parallelism", type=int, default=None, help="footer-reading tasks (default: default parallelism)"
        )
        p.add_argument(
            "--allow-errors",
            action="store_true",
            help="exit 0 even when some files could not be read (their rows carry the error)",
        )
        p.add_argument(
            "--result-json",
            default=None,
            help="write the JSON result here: a local path, or a URI (e.g. <stats>/results/<run id>.json) written through the stats store's IO",
        )
        p.add_argument("--run-id", default=None)
        return p

    @classmethod
    def from_args(cls, argv: Sequence[str] | None = None) -> CollectOptions:
        """Parse the job's argv; bad values exit 2 naming the flag, before any SparkSession starts."""
        p = cls.parser()
        a = p.parse_args(argv)
        if a.keep_snapshots is not None and a.keep_snapshots < 0:
            p.error(f"--keep-snapshots must be >= 1 (0 keeps every snapshot), got {a.keep_snapshots}")
        if a.parallelism is not None and a.parallelism < 1:
            p.error(f"--parallelism must be at least 1, got {a.parallelism}")
        try:
            opts = cls(
                table=a.table,
                columns=parse_name_args(a.columns, "--columns"),
                method=a.method,
                stats_location=a.stats_location,
                iceberg_catalog=a.iceberg_catalog,
                iceberg_catalog_file=a.iceberg_catalog_file,
                stats_table=a.stats_table,
                full=a.full,
                keep_snapshots=a.keep_snapshots,
                parallelism=a.parallelism,
                allow_errors=a.allow_errors,
                result_json=a.result_json,
            )
        except ValueError as exc:
            p.error(str(exc))
        if a.run_id:
            opts.run_id = a.run_id
        return opts
