"""The one error hierarchy of airflow-zorder: every refusal or failure the package raises on purpose.

Each error's message says what went wrong and names the fix. :class:`ZorderError` is the base; a handful
of categories below it say what kind of problem it is, and the concrete errors (``TableLockedError``, ...)
live in the modules that raise them (``TableError``, raised by two packages, lives here)::

    ZorderError                                   category       builtin it also is
    ├── InvalidInputError                         invalid_input  ValueError
    │     (TableError, ForeignTableFormatError, DeltaRewriteRefusedError, UnsupportedColumnType,
    │      IncrementalError, StorageConnectionError, ParseError; option and parameter checks)
    ├── ConcurrentChangeError                     concurrent_change  RuntimeError
    ├── LockError                                 lock           RuntimeError
    │     (TableLockedError, LockNotOwnedError)
    ├── CommitError                               commit         RuntimeError
    │     (RecoveryError, PendingRunsError)
    ├── VerificationError                         verification   RuntimeError
    ├── JobError                                  job            RuntimeError
    │     (ClusteringError, StatsCollectionError)
    ├── StorageError                              storage        OSError
    │     (DeltaLogError, ExclusiveCreateUnavailable)
    ├── StatsNotFoundError                        stats_not_found  FileNotFoundError
    └── MissingDependencyError                    missing_dependency  ImportError
          (JarsNotFetchedError)

Every class carries three class attributes, which is all the jobs need to report it
(``spark_jobs.cli.run_job``):

- ``error_type``: the class's own name, the result JSON's ``error_type`` (what docs/troubleshooting.md is keyed on);
- ``category``: its category's name, the result JSON's ``error_category``;
- ``exit_code``: the job's exit code when it ends the run (:data:`EXIT_FAILED` for every category).

A category also derives from the builtin exception it replaced, so ``except ValueError`` (or ``OSError``, ...)
written against the earlier classes keeps working. Anything that is not a ``ZorderError`` is a bug or an
environment failure: the jobs report it as ``unexpected``, with its traceback.

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
    "CommitError",
    "ConcurrentChangeError",
    "InvalidInputError",
    "JobError",
    "LockError",
    "MissingDependencyError",
    "StatsNotFoundError",
    "StorageError",
    "TableError",
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


class InvalidInputError(ZorderError, ValueError):
    """The request cannot work as given: an option, a parameter, a column, a plan, or a table or column type the
    job does not support. Nothing was changed; fix the input the message names."""

    category = "invalid_input"


class TableError(InvalidInputError):
    """The table cannot be used as given (missing, not Parquet, bad partition selection, not in its catalog).

    Here rather than with its raisers: the table formats (``core.tables``) and the Iceberg catalogs below them
    (``core.iceberg``) both raise it."""


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


class LockError(ZorderError, RuntimeError):
    """The table's clustering lock: held by another run, or lost by this one."""

    category = "lock"


class CommitError(ZorderError, RuntimeError):
    """The commit protocol refused or failed (a swap, a recovery); the message says whether the table changed."""

    category = "commit"


class VerificationError(ZorderError, RuntimeError):
    """The staged data does not hold exactly the input's rows; nothing was replaced."""

    category = "verification"


class JobError(ZorderError, RuntimeError):
    """A job refused or failed for the reason its message gives (a column, a Spark failure, a stats location)."""

    category = "job"


class StorageError(ZorderError, OSError):
    """A location could not be read or written; the message names the location, the cause and the fix."""

    category = "storage"


class StatsNotFoundError(ZorderError, FileNotFoundError):
    """No committed snapshot at the stats location (stats never collected, or a wrong location)."""

    category = "stats_not_found"


class MissingDependencyError(ZorderError, ImportError):
    """An optional package the task needs is not installed where it runs; the message says which extra adds it."""

    category = "missing_dependency"


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
