"""Where the fleet DAGs keep their records, shared by the DAG factory and the UI's fleet page: the ``[zorder]
fleet_home`` option (any store; env ``AIRFLOW__ZORDER__FLEET_HOME``), default ``$AIRFLOW_HOME/zorder_fleet``."""

from __future__ import annotations

import os

from airflow_zorder.core.fleet.records import fleet_home
from airflow_zorder.core.storage.io import filesystem_for

__all__ = ["fleet_base", "fleet_names", "fleet_records_home"]


def fleet_base() -> str:
    """The ``[zorder] fleet_home`` option, else ``$AIRFLOW_HOME/zorder_fleet``."""
    from airflow.configuration import conf

    default = os.path.join(os.environ.get("AIRFLOW_HOME") or os.path.expanduser("~/airflow"), "zorder_fleet")
    return conf.get("zorder", "fleet_home", fallback="") or default


def fleet_records_home(name: str, base: str | None = None) -> str:
    """Where fleet ``name`` (its DAG id) keeps its run records and state."""
    return fleet_home(base or fleet_base(), name)


def fleet_names(base: str | None = None) -> list[str]:
    """The fleets that recorded a run under the base, sorted."""
    root = fleet_records_home("", base).rstrip("/")
    fs = filesystem_for(root)
    if not fs.exists(root):
        return []
    names = set()
    for f in fs.list_files(root, recursive=True):
        rel = f.path[len(root) :].lstrip("/")
        name, _, rest = rel.partition("/")
        if rest.startswith("runs/"):
            names.add(name)
    return sorted(names)
