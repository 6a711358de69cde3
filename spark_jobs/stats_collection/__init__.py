"""The statistics job (``spark_jobs/collect_stats.py``) in named steps.

Per data file and column it collects min, max, null count, NaN count and value count:

* ``footer``: read the Parquet footers, distributed over the executors (:mod:`.footers`). Fast, but
  footer statistics can be missing (INT96 timestamps, writers that skip them, all-NaN row groups) or
  truncated (long strings, parquet-rs); such (file, column) pairs are left without statistics
  (``has_stats`` false: never pruned).
* ``scan``: compute from the data with Spark (:mod:`.scan`). Always correct; reads every column
  chunk. The footers are still read (cheaply) for row counts and types.
* ``auto`` (default): footers first, then the scan for exactly the (file, column) pairs whose footer
  statistics are missing, INT96 or truncated. Every row records the method that produced it
  (``method``) and why the scan was needed (``reason = "scanned:<why>"``).

Incremental (:mod:`.plan`): the latest snapshot of the stats location is read first; files with the
same path, size and modification time are not read again (their rows are carried forward), new and
changed files are read, files that disappeared are dropped from the new snapshot and listed in the run
record (``gone_paths``). When nothing changed, no new snapshot is written (the run is still
recorded, :mod:`.commit`). ``--full`` ignores the previous snapshot.

NaN: both methods store float min/max *without* NaN (the Parquet rule, also what footers hold), and
the scan counts NaN in ``nan_count`` (footer rows: null, unknown). Spark itself orders NaN above
+inf, so a Spark predicate ``c > v`` can match NaN rows: a pruning evaluator must keep files whose
``nan_count`` is non-zero or unknown for such predicates.

Tables whose format keeps statistics (Delta Lake; :mod:`.metadata`): the files of the latest version and every
statistic the log keeps come from the table seam (``_delta_log/``, ``method = "delta_log"``); the method above applies only to the (file, column) pairs the log
lacks (columns beyond ``delta.dataSkippingNumIndexedCols``, files without stats), and the run record names the
``delta_version`` the snapshot describes.

Failures: a file that cannot be read (corrupt footer or data) is named in the result's ``errors``;
its rows have ``has_stats`` false and ``error`` set (it is retried on the next run), every other
file's stats are committed, and the job exits with code 2 (``status: partial``; 0 with
``--allow-errors``). A missing table, an unknown column or an unwritable stats location fail before
anything is committed (exit code 1). Readers never see a partial snapshot (see
:mod:`airflow_zorder.core.stats.stats_store`).

Steps: :mod:`.listing` (the table's live files), :mod:`.plan` (what to read), :mod:`.footers`,
:mod:`.scan`, :mod:`.assemble` (the new snapshot's rows), :mod:`.commit`; :mod:`.run` chains them
(:mod:`.metadata` for a table whose format keeps statistics).
"""
