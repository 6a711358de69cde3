"""Load a test DAG file the way ``dag.test()`` needs it: from a DAG bundle of its own (Airflow 3 only runs
DAGs that were parsed from a bundle)."""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType

import pytest


@contextmanager
def dag_module(dag_file: Path, bundle_name: str) -> Iterator[ModuleType]:
    """The DAG file imported as a module while its folder is registered as the bundle ``bundle_name``."""
    bundles = [
        {
            "name": bundle_name,
            "classpath": "airflow.dag_processing.bundles.local.LocalDagBundle",
            "kwargs": {"path": str(dag_file.parent), "refresh_interval": 0},
        },
        {"name": "dags-folder", "classpath": "airflow.dag_processing.bundles.local.LocalDagBundle", "kwargs": {}},
    ]
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("AIRFLOW__DAG_PROCESSOR__DAG_BUNDLE_CONFIG_LIST", json.dumps(bundles))
        spec = importlib.util.spec_from_file_location(dag_file.stem, dag_file)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        yield module
