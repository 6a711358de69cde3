"""What the operators ship to Spark: the job scripts and a ``--py-files`` zip of the Airflow-free code.

The zip holds the core sub-packages the jobs import (``CORE_PACKAGES``: layout, jobs, stats, storage, delta, hudi,
iceberg, tables (the table seam), policy: the driver plans incremental runs with the same rule as the sensor), the
core's own modules they import (``CORE_MODULES``: errors, the one error hierarchy; names, the one name parser) and
``spark_jobs``, plus minimal ``__init__`` files (executors have no Airflow).  The demo/benchmark evaluation code
never runs on Spark and stays out. It is built once per content: its name carries a hash of the files it
holds, so a cached zip is reused until the code changes, and concurrent builders write the same bytes.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import zipfile
from pathlib import Path

import spark_jobs
from airflow_zorder.core.errors import InvalidInputError
from airflow_zorder.version import __version__

PACKAGE_DIR = Path(__file__).resolve().parent
JOBS_DIR = Path(spark_jobs.__file__).resolve().parent
JOB_SCRIPTS = ("cluster_table.py", "collect_stats.py")
# The parts of airflow_zorder.core that the Spark jobs import; a test checks the jobs import nothing else.
CORE_PACKAGES = ("layout", "jobs", "stats", "storage", "delta", "iceberg", "hudi", "tables", "policy")
CORE_MODULES = ("errors.py", "names.py")  # modules directly in airflow_zorder/core that the jobs import
CACHE_ENV = "AIRFLOW_ZORDER_CACHE_DIR"
# Executors import only the core: this __init__ replaces the provider's own (which may grow Airflow imports).
MINIMAL_INIT = (
    '"""airflow-zorder\'s Airflow-free code, shipped to Spark by the operators (see airflow_zorder.packaging)."""\n'
    f"__version__ = {__version__!r}\n"
)
_ZIP_DATE = (1980, 1, 1, 0, 0, 0)  # fixed timestamps: the same sources always give the same bytes


def job_script(name: str) -> str:
    """Absolute path of a spark-submit entry point (``cluster_table.py`` or ``collect_stats.py``)."""
    if name not in JOB_SCRIPTS:
        raise InvalidInputError(f"unknown job script {name!r}; expected one of {', '.join(JOB_SCRIPTS)}")
    return str(JOBS_DIR / name)


def zip_members() -> list[tuple[str, bytes]]:
    """(archive name, bytes) of every file the jobs import, sorted by name."""
    members = [
        ("airflow_zorder/__init__.py", MINIMAL_INIT.encode()),
        ("airflow_zorder/core/__init__.py", (PACKAGE_DIR / "core" / "__init__.py").read_bytes()),
        *((f"airflow_zorder/core/{name}", (PACKAGE_DIR / "core" / name).read_bytes()) for name in CORE_MODULES),
    ]
    roots = [(PACKAGE_DIR / "core" / pkg, f"airflow_zorder/core/{pkg}") for pkg in CORE_PACKAGES]
    for root, prefix in (*roots, (JOBS_DIR, "spark_jobs")):
        for path in sorted(root.rglob("*.py")):
            if "__pycache__" in path.parts:
                continue
            members.append((f"{prefix}/{path.relative_to(root).as_posix()}", path.read_bytes()))
    return sorted(members)


def content_hash(members: list[tuple[str, bytes]]) -> str:
    """A short hash of the members' names and contents: the zip's cache key."""
    h = hashlib.sha256()
    for name, data in members:
        h.update(name.encode() + b"\0" + hashlib.sha256(data).digest())
    return h.hexdigest()[:16]


def cache_dir() -> Path:
    """Where built zips are kept: ``$AIRFLOW_ZORDER_CACHE_DIR`` or ``<tmp>/airflow-zorder-<uid>``."""
    configured = os.environ.get(CACHE_ENV)
    uid = os.getuid() if hasattr(os, "getuid") else "user"
    return Path(configured) if configured else Path(tempfile.gettempdir()) / f"airflow-zorder-{uid}"


def py_files_zip(directory: str | os.PathLike[str] | None = None) -> str:
    """Path of the py-files zip for the current sources, building it only when no zip of that content exists."""
    members = zip_members()
    target_dir = Path(directory) if directory is not None else cache_dir()
    target = target_dir / f"airflow_zorder_jobs-{content_hash(members)}.zip"
    if target.is_file():
        return str(target)
    target_dir.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".building-", suffix=".zip", dir=target_dir)
    try:
        with os.fdopen(fd, "wb") as fh, zipfile.ZipFile(fh, "w", zipfile.ZIP_DEFLATED) as zf:
            for name, data in members:
                info = zipfile.ZipInfo(name, date_time=_ZIP_DATE)
                info.compress_type = zipfile.ZIP_DEFLATED
                info.external_attr = 0o644 << 16
                zf.writestr(info, data)
        os.replace(tmp, target)  # atomic: readers see no zip or a whole one
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return str(target)
