"""The one error hierarchy of airflow-zorder: every refusal or failure the package raises on purpose.

Each error's message says what went wrong and names the fix. :class:`ZorderError` is the base; a handful
of categories below it say what kind of problem it is, and every concrete error is declared here, under its
category (the raisers import it from here; tests/unit/test_errors.py checks this tree against the classes)::

    ZorderError                                   category            builtin it also is
    ├── InvalidInputError                         invalid_input       ValueError
    │   ├── TableError
    │   ├── ForeignTableFormatError
    │   ├── DeltaRewriteRefusedError
    │   ├── IcebergRewriteRefusedError
    │   ├── HudiRewriteRefusedError
    │   ├── UnsupportedColumnType
    │   ├── IncrementalError
    │   ├── StorageConnectionError
    │   ├── IcebergConnectionError
    │   └── ParseError
    ├── ConcurrentChangeError                     concurrent_change   RuntimeError
    ├── LockError                                 lock                RuntimeError
    │   ├── TableLockedError
    │   └── LockNotOwnedError
    ├── CommitError                               commit              RuntimeError
    │   ├── RecoveryError
    │   └── PendingRunsError
    ├── VerificationError                         verification        RuntimeError
    ├── JobError                                  job                 RuntimeError
    │   ├── ClusteringError
    │   └── StatsCollectionError
    ├── StorageError                              storage             OSError
    │   ├── DeltaLogError
    │   └── ExclusiveCreateUnavailable
    ├── StatsNotFoundError                        stats_not_found     FileNotFoundError
    └── MissingDependencyError                    missing_dependency  ImportError
        └── JarsNotFetchedError

Every class carries three class attributes, which is all the jobs need to report it
(``spark_jobs.cli.run_job``):

- ``error_type``: the class's own name, the result JSON's ``error_type`` (what docs/troubleshooting.md is keyed on);
- ``category``: its category's name, the result JSON's ``error_category``;
- ``exit_code``: the job's exit code when it ends the run (:data:`EXIT_FAILED` for every category).

A category also derives from the builtin exception it replaced, so ``except ValueError`` (or ``OSError``, ...)
written against the earlier classes keeps working. Anything that is not a ``ZorderError`` is a bug or an
environment failure: the jobs report it as ``unexpected``, with its traceback. So a refusal of the caller's
input (a parameter, an option, a column, a plan, a connection field) raises :class:`InvalidInputError` (or one of
its subclasses); a plain ``ValueError`` is left for internal invariants (a bug if it fires) and for values
rejected on purpose to be caught and reworded nearby.

Fault injection's ``SimulatedCrash`` (``core.storage.faults``) stays outside on purpose: it stands in for a
SIGKILL, so it is a ``BaseException`` that nothing may catch. The operators' ``SparkJobFailed`` is an
``AirflowException`` (Airflow side) that carries the job's ``error_type`` and ``error_category``.

This module imports nothing beyond the standard library: it ships to the executors with the jobs.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from typing import Any, ClassVar

__all__ = [
    "EXIT_FAILED",
    "EXIT_OK",
    "EXIT_PARTIAL",
    "EXIT_USAGE",
    "UNEXPECTED",
    "ClusteringError",
    "CommitError",
    "ConcurrentChangeError",
    "DeltaLogError",
    "DeltaRewriteRefusedError",
    "ExclusiveCreateUnavailable",
    "ForeignTableFormatError",
    "HudiRewriteRefusedError",
    "IcebergConnectionError",
    "IcebergRewriteRefusedError",
    "IncrementalError",
    "InvalidInputError",
    "JarsNotFetchedError",
    "JobError",
    "LockError",
    "LockNotOwnedError",
    "MissingDependencyError",
    "ParseError",
    "PendingRunsError",
    "RecoveryError",
    "StatsCollectionError",
    "StatsNotFoundError",
    "StorageConnectionError",
    "StorageError",
    "TableError",
    "TableLockedError",
    "UnsupportedColumnType",
    "VerificationError",
    "ZorderError",
    "categories",
    "deprecated_aliases",
    "describe",
]

# The jobs' exit codes (spark_jobs/cluster_table.py, spark_jobs/collect_stats.py).
EXIT_OK = 0
EXIT_FAILED = 1  # the run failed or was refused; its result JSON says why (a ZorderError, or an unexpected error)
EXIT_USAGE = 2  # a bad flag, refused by the command line before a SparkSession starts (argparse's own code)
EXIT_PARTIAL = 2  # the stats job: committed, but some files could not be read (0 with --allow-errors)

UNEXPECTED = "unexpected"  # error_category of a failure that is not a ZorderError


class ZorderError(Exception):
    """Base of every error airflow-zorder raises on purpose; the message names the fix."""

    category: ClassVar[str] = "error"
    exit_code: ClassVar[int] = EXIT_FAILED
    error_type: ClassVar[str] = "ZorderError"

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "error_type" not in cls.__dict__:
            cls.error_type = cls.__name__


# --------------------------------------------------------------------------- invalid_input


class InvalidInputError(ZorderError, ValueError):
    """The request cannot work as given: an option, a parameter, a column, a plan, or a table or column type the
    job does not support. Nothing was changed; fix the input the message names."""

    category = "invalid_input"


class TableError(InvalidInputError):
    """The table cannot be used as given (missing, not Parquet, bad partition selection, not in its catalog)."""


class ForeignTableFormatError(InvalidInputError):
    """A Delta Lake, Hudi or Iceberg table was given where a plain Parquet table is expected.

    Raised before anything is locked, staged, listed or written: the table is untouched. The
    message names the format, the table, why it is refused and what to use instead. The parts
    stay available: ``format``, ``table`` (as named by the caller), ``evidence`` (what was found)
    and ``enclosing`` (the foreign table's root when ``table`` only lies inside it, else None).
    """

    def __init__(self, format: str, table: str, evidence: str, enclosing: str | None = None) -> None:
        self.format = format
        self.table = table
        self.evidence = evidence
        self.enclosing = enclosing
        super().__init__(_foreign_format_message(format, table, evidence, enclosing))

    def __reduce__(self):  # keep the parts when pickled (a worker or a trigger may ship the error)
        return (type(self), (self.format, self.table, self.evidence, self.enclosing))


# The refusal's words per format (keys: core.storage.table_formats' DELTA, HUDI, ICEBERG).
_FOREIGN_NAMES = {"delta": "Delta Lake", "hudi": "Apache Hudi", "iceberg": "Apache Iceberg"}

_FOREIGN_WHY = {
    "delta": (
        "its truth is _delta_log/, not the files in the directory: rewriting the directory would break "
        "Delta readers (the log names every data file) and bring back deleted rows (files removed by a "
        "delete or an overwrite stay in the directory until VACUUM)"
    ),
    "hudi": (
        "its truth is the .hoodie/ timeline, not the files in the directory: rewriting the directory would "
        "break Hudi readers (file names carry file-group ids and commit times) and bring back updated or "
        "deleted rows (older file slices stay in the directory until the cleaner removes them)"
    ),
    "iceberg": (
        "its truth is metadata/ (table metadata, snapshots and manifests), not the files in the directory: "
        "rewriting the directory would break Iceberg readers (manifests name every data file by path) and "
        "bring back deleted rows (files of older snapshots stay until the snapshots are expired)"
    ),
}

_FOREIGN_INSTEAD = {
    "delta": (
        "point the job (or the sensor) at the Delta table's root directory, the one holding _delta_log/, by "
        "its path: both jobs read a Delta table's files from its log and the clustering commits through it "
        "(a catalog table over Delta is not resolved yet: give its location)"
    ),
    "hudi": (
        "point the task at the Hudi table's base path, the directory holding .hoodie/: the provider reads a Hudi "
        "table's latest file slices from its timeline and re-clusters it through Hudi's own clustering (docs/hudi.md)"
    ),
    "iceberg": (
        "name the table through its catalog, not its path: table='namespace.table' with iceberg_catalog='<catalog>' "
        "(the jobs: --iceberg-catalog), and the provider reads its manifests and commits through its metadata "
        "(docs/iceberg.md); or use Iceberg's own rewrite_data_files procedure"
    ),
}


def _foreign_format_message(fmt: str, table: str, evidence: str, enclosing: str | None) -> str:
    name = _FOREIGN_NAMES.get(fmt, fmt)
    kind = f"{'an' if name[0] in 'AEIOU' else 'a'} {name} table"
    if enclosing:
        what = f"table {table} lies inside {kind}, {enclosing} (found: {evidence}), so it is not"
    else:
        what = f"table {table} is {kind} (found: {evidence}), not"
    return (
        f"{what} a plain Parquet directory. Refused: {_FOREIGN_WHY.get(fmt, 'its own metadata is its truth')}. "
        "The table was left untouched (nothing was locked, moved or written). "
        f"What to do: {_FOREIGN_INSTEAD.get(fmt, 'use its own maintenance')}."
    )


class DeltaRewriteRefusedError(InvalidInputError):
    """The Delta table uses a feature a clustering rewrite cannot keep correct; nothing was written."""


class IcebergRewriteRefusedError(InvalidInputError):
    """The Iceberg table uses something a rewrite of whole files cannot keep correct; nothing was written."""


class HudiRewriteRefusedError(InvalidInputError):
    """The Hudi table (or the file groups a run would replace) cannot be re-clustered now; nothing was written."""


class UnsupportedColumnType(InvalidInputError):
    """A clustering column whose type has no usable order for range ids (e.g. array, map)."""


class IncrementalError(InvalidInputError):
    """The plan cannot be run as given (unreadable, another table's, other columns)."""


class StorageConnectionError(InvalidInputError):
    """The connection cannot open the location: missing, of an unsupported type, or for another store."""


class IcebergConnectionError(InvalidInputError):
    """The ``iceberg`` connection is missing, of another type, or its catalog cannot be opened."""


class ParseError(InvalidInputError):
    """A predicate the pruning evaluator cannot read; the message names the offending text."""


# --------------------------------------------------------------------------- concurrent_change


class ConcurrentChangeError(ZorderError, RuntimeError):
    """Another writer changed the table (or its stats store) while the run worked on it; the run committed nothing
    and the other writer's change stands. Run again.

    The one name for this, whatever the table: a path table's journaled swap, a Delta table's commit, a stats
    snapshot. ``files``: the input files found modified or deleted, when known.
    """

    category = "concurrent_change"

    def __init__(self, message: str, files: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.files = list(files)


# --------------------------------------------------------------------------- lock


class LockError(ZorderError, RuntimeError):
    """The table's clustering lock: held by another run, or lost by this one."""

    category = "lock"


class TableLockedError(LockError):
    """Another live clustering run holds the table's lock."""


class LockNotOwnedError(LockError):
    """We do not (or no longer) hold the lock we are trying to renew, verify or release."""


# --------------------------------------------------------------------------- commit


class CommitError(ZorderError, RuntimeError):
    """The commit protocol refused or failed (a swap, a recovery); the message says whether the table changed."""

    category = "commit"


class RecoveryError(CommitError):
    """Recovery found a state it cannot resolve without guessing; an operator must look."""


class PendingRunsError(CommitError):
    """Unfinished runs exist: ``recover`` must run (under the table lock) before a new run begins."""


# --------------------------------------------------------------------------- verification


class VerificationError(ZorderError, RuntimeError):
    """The staged data does not hold exactly the input's rows; nothing was replaced."""

    category = "verification"


# --------------------------------------------------------------------------- job


class JobError(ZorderError, RuntimeError):
    """A job refused or failed for the reason its message gives (a column, a Spark failure, a stats location)."""

    category = "job"


class ClusteringError(JobError):
    """A clear, user-facing reason the clustering job refused or failed; the table is left as it was."""


class StatsCollectionError(JobError):
    """A clear, user-facing reason the stats collection refused or failed; nothing was committed."""


# --------------------------------------------------------------------------- storage


class StorageError(ZorderError, OSError):
    """A location could not be read or written; the message names the location, the cause and the fix."""

    category = "storage"


class DeltaLogError(StorageError):
    """The Delta log could not be read (the message names the table and delta-rs's error)."""


class ExclusiveCreateUnavailable(StorageError):
    """The store cannot create a file only-if-absent in one step, so a lock or a snapshot would not be exclusive."""


# --------------------------------------------------------------------------- stats_not_found


class StatsNotFoundError(ZorderError, FileNotFoundError):
    """No committed snapshot at the stats location (stats never collected, or a wrong location)."""

    category = "stats_not_found"


# --------------------------------------------------------------------------- missing_dependency


class MissingDependencyError(ZorderError, ImportError):
    """An optional package the task needs is not installed where it runs; the message says which extra adds it."""

    category = "missing_dependency"


class JarsNotFetchedError(MissingDependencyError):
    """A store's connector jars are not in the local cache: ``make jars`` (or ``airflow_zorder.spark_jars.fetch``)
    brings them."""


def categories() -> tuple[type[ZorderError], ...]:
    """The categories: the direct subclasses of :class:`ZorderError`, in the order above."""
    return tuple(ZorderError.__subclasses__())


def describe(exc: BaseException) -> tuple[str, str, int]:
    """``(error_type, error_category, exit_code)`` of a failure: the class's attributes for a ZorderError,
    else the exception's class name, :data:`UNEXPECTED` and :data:`EXIT_FAILED`."""
    if isinstance(exc, ZorderError):
        return exc.error_type, exc.category, exc.exit_code
    return type(exc).__name__, UNEXPECTED, EXIT_FAILED


def deprecated_aliases(module: str, aliases: dict[str, type[BaseException]]) -> Callable[[str], Any]:
    """A module ``__getattr__`` that still answers the old names of renamed errors, with a DeprecationWarning."""

    def __getattr__(name: str) -> Any:
        new = aliases.get(name)
        if new is None:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        warnings.warn(
            f"{module}.{name} is deprecated: it is {new.__module__}.{new.__qualname__} (one name for the error)",
            DeprecationWarning,
            stacklevel=2,
        )
        return new

    return __getattr__
