"""The table seam: one module per table format behind one protocol (:mod:`.protocol`), picked by :mod:`.registry`."""

from airflow_zorder.core.tables.registry import open_table

__all__ = ["open_table"]
