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


def forget_xcoms(module: ModuleType) -> None:
    """Delete the XComs of the runs of ``module``'s DAGs from the session's metadata DB.

    For modules whose runs name tables in a moto bucket and an ``aws`` connection that both end with the module:
    the UI lists every table a provider task named in an XCom, and a later module's pages would try each such
    table's connection, no longer defined, on every request (~6 s each through Airflow's connection lookup).
    """
    from airflow.models.xcom import XComModel
    from airflow.sdk import DAG
    from airflow.utils.session import create_session

    dag_ids = sorted({v.dag_id for v in vars(module).values() if isinstance(v, DAG)})
    with create_session() as session:
        session.query(XComModel).filter(XComModel.dag_id.in_(dag_ids)).delete(synchronize_session=False)


def run_watch(dag, task_id: str = "watch", **run_conf: str) -> tuple[str, dict | None]:
    """``dag.test()`` with ``run_conf``; returns (the state of ``task_id``, its return value or None)."""
    from airflow.models.xcom import XComModel
    from airflow.utils.session import create_session

    dr = dag.test(run_conf=run_conf)
    with create_session() as s:
        state = str(dr.get_task_instance(task_id, session=s).state)
        row = (
            s.query(XComModel.value)
            .filter(XComModel.dag_id == dag.dag_id, XComModel.run_id == dr.run_id, XComModel.key == "return_value")
            .one_or_none()
        )
    return state, None if row is None else (json.loads(row[0]) if isinstance(row[0], str) else row[0])
