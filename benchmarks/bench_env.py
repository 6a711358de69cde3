"""Import first in every benchmark script: Spark's driver and workers use this interpreter and see the repo."""

from __future__ import annotations

import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

os.environ["PYSPARK_PYTHON"] = sys.executable
os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
for _p in (str(REPO), str(REPO / "benchmarks")):
    if _p not in sys.path:
        sys.path.insert(0, _p)
# Spark's Python workers must import airflow_zorder / spark_jobs too.
os.environ["PYTHONPATH"] = os.pathsep.join(
    [str(REPO)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
)
