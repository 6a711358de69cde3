"""Hooks: the stats store read with pyarrow (``file_stats``) and spark-submit with the application's links (``spark_job``)."""
