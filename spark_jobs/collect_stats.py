"""spark-submit entry point: collect per-file, per-column statistics of a Parquet table into its stats table.

    spark-submit spark_jobs/collect_stats.py --table PATH_OR_DB.TABLE
        [--columns all | a,b,c] [--method auto|footer|scan]
        [--stats-location PATH_OR_URI] [--stats-table DB.NAME]
        [--result-json PATH] [--full] [--keep-snapshots N] [--parallelism N] [--allow-errors]

A Delta Lake table (its root holds ``_delta_log/``) is listed from its log, and only the statistics the log
lacks are read from its files (:mod:`spark_jobs.stats_collection.metadata`; needs ``deltalake`` on the driver).

The options: :class:`airflow_zorder.core.jobs.options.CollectOptions`. The job's steps (listing, plan,
footers, scan, assembly, commit) and its methods: :mod:`spark_jobs.stats_collection`. The stats
table's layout and schema: :mod:`airflow_zorder.core.stats.stats_store`, :mod:`airflow_zorder.core.stats.stats_schema`.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from airflow_zorder.core.errors import EXIT_OK, EXIT_PARTIAL
from airflow_zorder.core.jobs.options import CollectOptions
from spark_jobs.cli import run_job
from spark_jobs.stats_collection.run import run_collect


def _log(msg: str) -> None:
    print(f"[collect_stats] {msg}", file=sys.stderr, flush=True)


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry: run, print the JSON result, write it to --result-json.

    Exit codes: 0 ok; 1 failed (nothing committed; the result's ``error_type`` and ``error_category`` come
    from the error, ``spark_jobs.cli.run_job``); 2 committed but some files could not be read (0 with
    --allow-errors).
    """
    opts = CollectOptions.from_args(argv)

    def work(spark) -> tuple[dict, int]:
        result = run_collect(spark, opts)
        if result["status"] != "partial":
            return result, EXIT_OK
        _log(
            f"{result['files_failed']} file(s) could not be read: "
            + "; ".join(f"{e['path']}: {e['error']}" for e in result["errors"][:5])
        )
        return result, EXIT_OK if opts.allow_errors else EXIT_PARTIAL

    return run_job(
        "airflow-zorder-collect-stats",
        opts.table,
        opts.run_id,
        opts.result_json,
        work,
        _log,
        opts.stats_location,
    )


if __name__ == "__main__":
    sys.exit(main())
