"""The workload advisor: which columns to cluster a table on, read from the SQL its users run.

Workload sources (:mod:`.workload`, :mod:`.spark_events`, :mod:`.query_history`) give statements; each is parsed
with sqlglot in its engine's dialect and its filters on the table found (:mod:`.extraction`); the filters are
weighed by frequency and by selectivity from the table's statistics (:mod:`.selectivity`), and the column set
that reads the fewest files is recommended (:mod:`.recommend`). Airflow-free: the hook, the operator, the sensor
and the UI call it.
"""
