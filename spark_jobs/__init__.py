"""spark-submit entry points. They import only ``airflow_zorder.core`` (no Airflow)."""
