"""One error hierarchy (airflow_zorder.core.errors): every error class of the package derives from ZorderError,
the concurrent change has one name, and a job's exit code, error_type and error_category come from the error."""

from __future__ import annotations

import ast
import builtins
import importlib
import json
import re
from pathlib import Path

import pytest

from airflow_zorder.core import errors
from airflow_zorder.core.errors import ConcurrentChangeError, InvalidInputError, ZorderError
from spark_jobs import cli

REPO = Path(__file__).resolve().parents[2]
PACKAGES = ("airflow_zorder", "spark_jobs")
# Outside the hierarchy on purpose: fault injection's stand-in for SIGKILL (nothing may catch it), and the
# operators' Airflow exception (it carries the job's error_type instead).
OUTSIDE = {
    ("airflow_zorder.core.storage.faults", "SimulatedCrash"),  # a BaseException
    ("airflow_zorder.operators.spark_job", "SparkJobFailed"),  # an AirflowException
}
_EXC_SUFFIXES = ("Error", "Exception", "Failed", "Crash", "Warning", "Exit", "Interrupt")


def _base_name(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return ""


def _is_builtin_exception(name: str) -> bool:
    obj = getattr(builtins, name, None)
    return isinstance(obj, type) and issubclass(obj, BaseException)


def _exception_classes_in_source() -> dict[str, list[str]]:
    """module -> names of the classes it defines whose bases look like exceptions (found without importing)."""
    found: dict[str, list[str]] = {}
    for pkg in PACKAGES:
        for path in sorted((REPO / pkg).rglob("*.py")):
            module = ".".join(path.relative_to(REPO).with_suffix("").parts).removesuffix(".__init__")
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if not isinstance(node, ast.ClassDef):
                    continue
                names = [_base_name(b) for b in node.bases]
                if any(n.endswith(_EXC_SUFFIXES) or _is_builtin_exception(n) for n in names):
                    found.setdefault(module, []).append(node.name)
    return found


def _package_error_classes() -> list[type[BaseException]]:
    classes = []
    for module, names in _exception_classes_in_source().items():
        if all((module, n) in OUTSIDE for n in names):
            continue  # e.g. the operators' module: imports Airflow for nothing the hierarchy owns
        mod = importlib.import_module(module)
        for name in names:
            if (module, name) not in OUTSIDE:
                classes.append(getattr(mod, name))
    return classes


ERROR_CLASSES = _package_error_classes()


def test_the_source_scan_finds_the_known_errors() -> None:
    names = {c.__name__ for c in ERROR_CLASSES}
    assert {
        "ZorderError",
        "TableError",
        "ClusteringError",
        "StatsCollectionError",
        "TableLockedError",
        "RecoveryError",
        "ForeignTableFormatError",
        "DeltaLogError",
        "IncrementalError",
    } <= names
    assert ("airflow_zorder.core.storage.faults", "SimulatedCrash") in {
        (m, n) for m, ns in _exception_classes_in_source().items() for n in ns
    }


@pytest.mark.parametrize("cls", ERROR_CLASSES, ids=lambda c: f"{c.__module__}.{c.__name__}")
def test_every_error_class_of_the_package_is_a_zorder_error(cls: type[BaseException]) -> None:
    assert issubclass(cls, ZorderError), f"{cls.__module__}.{cls.__name__} is outside airflow_zorder.core.errors"
    assert cls.__module__ == errors.__name__, f"{cls.__name__} is declared in {cls.__module__}, not with the others"
    assert cls.error_type == cls.__name__  # the result JSON's error_type: the name troubleshooting.md lists
    assert cls.category in {c.category for c in errors.categories()} | {ZorderError.category}


def test_the_errors_outside_stay_outside() -> None:
    from airflow_zorder.core.storage.faults import SimulatedCrash

    assert not issubclass(SimulatedCrash, Exception)  # a stand-in for SIGKILL: no `except Exception` catches it
    assert not issubclass(SimulatedCrash, ZorderError)


def test_categories_have_unique_names_and_keep_their_builtin() -> None:
    cats = errors.categories()
    assert len({c.category for c in cats}) == len(cats) == 9
    assert len({c.error_type for c in ERROR_CLASSES}) == len(ERROR_CLASSES)
    for cat in cats:
        # `except ValueError` (OSError, ...) written against the classes before the hierarchy still catches them
        builtin = [b for b in cat.__mro__[1:] if b.__module__ == "builtins" and b not in (Exception, BaseException)]
        assert builtin, cat
        assert cat.exit_code == errors.EXIT_FAILED  # docs/operators.md: a failed run exits with 1
    assert issubclass(InvalidInputError, ValueError) and issubclass(errors.StorageError, OSError)
    assert issubclass(errors.StatsNotFoundError, FileNotFoundError)
    assert issubclass(errors.MissingDependencyError, ImportError)


def _subclasses_in_order(cls: type[ZorderError]) -> list[type[ZorderError]]:
    return [c for c in cls.__subclasses__() if c.__module__ == errors.__name__]


def _render_tree() -> list[str]:
    """The class tree of errors.py's docstring, drawn from the classes: categories with their category name and
    builtin, each concrete error under its category."""
    lines = [f"{'ZorderError':46}{'category':20}builtin it also is"]

    def walk(cls: type[ZorderError], prefix: str) -> None:
        children = _subclasses_in_order(cls)
        for i, child in enumerate(children):
            last = i == len(children) - 1
            label = f"{prefix}{'└── ' if last else '├── '}{child.__name__}"
            if cls is ZorderError:  # a category: its name and the builtin it also is
                builtin = next(b for b in child.__mro__[1:] if b.__module__ == "builtins")
                label = f"{label:46}{child.category:20}{builtin.__name__}"
            lines.append(label)
            walk(child, prefix + ("    " if last else "│   "))

    walk(ZorderError, "")
    return lines


def _docstring_tree() -> list[str]:
    doc = errors.__doc__ or ""
    block = doc.split("::\n\n", 1)[1].split("\n\n", 1)[0]
    return [line.removeprefix("    ").rstrip() for line in block.splitlines()]


def test_the_docstring_tree_names_every_error_under_its_category() -> None:
    assert _docstring_tree() == _render_tree()
    declared = {name for name, obj in vars(errors).items() if isinstance(obj, type) and issubclass(obj, ZorderError)}
    assert declared == {c.__name__ for c in ERROR_CLASSES}  # the source scan finds no error declared elsewhere
    assert declared <= set(errors.__all__)


def test_troubleshooting_lists_every_error_under_its_category() -> None:
    """docs/troubleshooting.md's table of categories (keyed on error_type names) names each concrete error in its
    category's row, and nothing else."""
    text = (REPO / "docs" / "troubleshooting.md").read_text(encoding="utf-8")
    rows = {}
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if (
            len(cells) == 4
            and cells[0].startswith("`")
            and cells[0].strip("`") in {c.category for c in errors.categories()}
        ):
            rows[cells[0].strip("`")] = set(re.findall(r"`(\w+)`", cells[2]))
    for cat in errors.categories():
        concrete = {c.__name__ for c in _subclasses_in_order(cat)}
        assert concrete <= rows[cat.category], (cat.category, concrete - rows[cat.category])
        assert rows[cat.category] <= concrete | {cat.__name__}, (cat.category, rows[cat.category] - concrete)


def test_another_writer_changing_the_table_has_one_name() -> None:
    from airflow_zorder.core.delta import delta_commit
    from airflow_zorder.core.stats import stats_store
    from airflow_zorder.core.storage import commit

    concurrent = [c for c in ERROR_CLASSES if "Concurrent" in c.__name__ or "Conflict" in c.__name__]
    assert concurrent == [ConcurrentChangeError]
    assert commit.ConcurrentChangeError is stats_store.ConcurrentChangeError is ConcurrentChangeError
    for module, old in (
        (commit, "ConcurrentModificationError"),
        (delta_commit, "DeltaConcurrentChangeError"),
        (stats_store, "StatsConflictError"),
    ):
        with pytest.warns(DeprecationWarning, match="ConcurrentChangeError"):
            assert getattr(module, old) is ConcurrentChangeError
    with pytest.raises(AttributeError):
        commit.NoSuchError  # noqa: B018
    err = ConcurrentChangeError("table t changed since run r read it; run again", ["/t/a.parquet"])
    assert err.files == ["/t/a.parquet"] and isinstance(err, RuntimeError)


# --------------------------------------------------------------------------- what a job reports


class _Session:
    def stop(self) -> None:
        pass


def _run(monkeypatch, tmp_path, raised: BaseException) -> tuple[int, dict]:
    monkeypatch.setattr(cli, "build_session", lambda app_name: _Session())
    out = tmp_path / "result.json"

    def work(spark):
        raise raised

    code = cli.run_job("test-job", str(tmp_path / "t"), "r-1", str(out), work, lambda msg: None)
    return code, json.loads(out.read_text())


def _one_of_each_category() -> list[ZorderError]:
    from airflow_zorder.core.errors import ForeignTableFormatError, TableLockedError

    made = [
        ForeignTableFormatError("iceberg", "/t", "metadata/"),
        TableLockedError("table /t is locked by clustering run 'x'; wait for it and retry"),
    ]
    made += [cat("a message naming the fix") for cat in errors.categories()]
    return made


@pytest.mark.parametrize("exc", _one_of_each_category(), ids=lambda e: type(e).__name__)
def test_a_failed_job_reports_the_errors_class(monkeypatch, tmp_path, capsys, exc: ZorderError) -> None:
    code, result = _run(monkeypatch, tmp_path, exc)
    assert code == type(exc).exit_code == 1
    assert result["status"] == "failed" and result["error"] == str(exc).strip()
    assert result["error_type"] == type(exc).__name__ and result["error_category"] == type(exc).category
    assert "Traceback" not in capsys.readouterr().err  # an explained failure, not a crash


def test_an_unexpected_failure_is_reported_with_its_traceback(monkeypatch, tmp_path, capsys) -> None:
    code, result = _run(monkeypatch, tmp_path, KeyError("boom"))
    assert code == errors.EXIT_FAILED
    assert result["error_type"] == "KeyError" and result["error_category"] == errors.UNEXPECTED
    assert "Traceback" in capsys.readouterr().err


def test_a_simulated_crash_passes_through(monkeypatch, tmp_path) -> None:
    from airflow_zorder.core.storage.faults import SimulatedCrash

    with pytest.raises(SimulatedCrash):
        _run(monkeypatch, tmp_path, SimulatedCrash("fault injected at 'mid_swap'"))


def test_the_operators_failure_carries_the_jobs_error_type() -> None:
    pytest.importorskip("airflow")
    from airflow.sdk.exceptions import AirflowException

    from airflow_zorder.operators.spark_job import SparkJobFailed

    result = {
        "status": "failed",
        "error": "unknown column 'x'",
        "error_type": "ClusteringError",
        "error_category": "job",
    }
    exc = SparkJobFailed("cluster job failed for table t: unknown column 'x' (ClusteringError)", result)
    assert isinstance(exc, AirflowException) and not isinstance(exc, ZorderError)
    assert (exc.error_type, exc.error_category, exc.result) == ("ClusteringError", "job", result)
    assert SparkJobFailed("stats collected but 1 file(s) could not be read").error_type is None


def test_the_py_files_zip_ships_the_hierarchy() -> None:
    from airflow_zorder import packaging

    assert "airflow_zorder/core/errors.py" in {name for name, _ in packaging.zip_members()}
