"""airflow-zorder: keep Parquet tables clustered along space-filling curves, from Airflow.

The ``core`` subpackage is Airflow-free and is what the Spark jobs import; hooks,
operators, sensors and triggers (Airflow) build on top of it.
"""

__version__ = "0.1.0"
