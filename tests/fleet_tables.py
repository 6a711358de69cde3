"""A real fleet of small tables for the fleet tests: Parquet (stats collected without Spark), Delta (delta-rs) and
Iceberg (a pyiceberg SQL catalog on SQLite), scrambled or clustered, with one table never collected and one missing."""

from __future__ import annotations

import json
import os
from pathlib import Path

import overlap_tables

from airflow_zorder.core.iceberg.catalogs import embedded_properties
from airflow_zorder.evaluation.sample_data import write_delta_table, write_iceberg_table, write_table

CATALOG = "fleettests"  # pyiceberg spells "_" in variable names as "-": a name without either
COLUMNS = ["user_id", "product_id"]


def catalog_env(props: dict[str, str]) -> dict[str, str]:
    """The variables that configure the fleet's pyiceberg catalog for this process and the Spark driver alike."""
    return {f"PYICEBERG_CATALOG__{CATALOG.upper()}__{k.upper()}": v for k, v in props.items()}


def write_fleet(root: Path) -> tuple[list[dict], dict[str, str]]:
    """Nine tables under ``root``: ``(the fleet spec's entries, the Iceberg catalog's variables)``."""
    root.mkdir(parents=True, exist_ok=True)
    props = embedded_properties(str(root / "lake"))
    os.environ.update(catalog_env(props))
    write_table(str(root / "p_events"), rows=6000, files_per_partition=8)
    overlap_tables.collect(root / "p_events", columns=COLUMNS)
    write_table(str(root / "p_small"), rows=2000, files_per_partition=8, partitioned=False, seed=11)
    overlap_tables.collect(root / "p_small", columns=COLUMNS)
    overlap_tables.write_table(root / "p_grid", {"": "clustered"})
    overlap_tables.collect(root / "p_grid")
    write_table(str(root / "p_nostats"), rows=2000, files_per_partition=8, partitioned=False, seed=12)
    write_delta_table(str(root / "d_events"), rows=6000, files_per_partition=8, seed=13)
    write_delta_table(str(root / "d_small"), rows=2000, files_per_partition=8, partitioned=False, seed=14)
    write_iceberg_table(CATALOG, "fleet.i_events", props, rows=6000, files_per_partition=8, seed=15)
    write_iceberg_table(CATALOG, "fleet.i_small", props, rows=2000, files_per_partition=8, partitioned=False, seed=16)
    p = {"columns": COLUMNS, "curve": "hilbert", "target_file_size": "9KB"}
    d = {**p, "target_file_size": "36KB"}
    entries = [
        {"table": str(root / "p_events"), **p, "read_weight": 3},
        {"table": str(root / "p_small"), **p},
        {"table": str(root / "p_grid"), "columns": ["a", "b"], "target_file_size": "9KB"},
        {"table": str(root / "p_nostats"), **p},
        {"table": str(root / "p_missing"), **p},
        {"table": str(root / "d_events"), **d},
        {"table": str(root / "d_small"), **d, "read_weight": 0.5},
        {"table": "fleet.i_events", "iceberg_catalog": CATALOG, **d, "read_weight": 2},
        {"table": "fleet.i_small", "iceberg_catalog": CATALOG, **d},
    ]
    (root / "fleet.json").write_text(json.dumps(entries, indent=1))
    return entries, catalog_env(props)
