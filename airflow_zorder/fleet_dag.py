"""``fleet_dag``: one DAG that keeps a fleet of tables clustered under one budget per run.

    plan -> recluster[i] (SparkClusterTableOperator, mapped over the chosen tables; a pool bounds them)
         -> to_collect -> collect_stats[j] (the rewritten tables whose statistics the stats job keeps) -> record

``plan`` reads the fleet's tables (a JSON/YAML spec file, an Airflow Variable, and/or ``[zorder] tables``; discovery
rules expanded), evaluates each with the sensor's rules and its incremental plan (:class:`~airflow_zorder.hooks.fleet.
FleetHook`: pyarrow, no Spark, several tables at a time), ranks the degraded ones by read savings per byte rewritten
and spends the budget on their plans' partitions by weighted savings per byte (``core.fleet.selection``).
``recluster`` runs each chosen table's (possibly trimmed) plan; ``collect_stats`` refreshes the statistics of the
rewritten Parquet tables (Delta and Iceberg tables keep theirs in their metadata), so that the next run judges them on
their new files. ``record`` writes the run's record (every table's decision and reason, the budget spent, each
rewrite's outcome) and the state the next run starts from, where the UI's fleet page reads them
(:mod:`airflow_zorder.fleet_records`). docs/fleet.md.
"""

from __future__ import annotations

import datetime as dt
import posixpath
from collections.abc import Mapping, Sequence
from typing import Any

from airflow_zorder.core.fleet.selection import DEFAULT_STARVATION_RUNS

__all__ = ["collect_kwargs", "fleet_dag", "load_entries", "record_outcomes", "recluster_kwargs"]


def load_entries(
    spec: str | None = None, variable: str | None = None, config_tables: bool = False
) -> tuple[list[dict[str, Any]], str]:
    """``(entries, where they came from)``: the Variable's when set (JSON/YAML text), else the spec file's, plus the
    ``[zorder] tables`` option's tables when ``config_tables``."""
    from airflow.sdk import Variable

    from airflow_zorder.core.fleet.spec import parse_spec_text, read_spec

    entries: list[dict[str, Any]] = []
    sources = []
    text = Variable.get(variable, default=None) if variable else None
    if text:
        entries += parse_spec_text(text, f"Variable {variable}")
        sources.append(f"Variable {variable}")
    elif spec:
        entries += read_spec(spec)
        sources.append(spec)
    if config_tables:
        from airflow.configuration import conf

        from airflow_zorder.plugins.discovery import parse_tables_option  # the one reader of that option

        for ref in parse_tables_option(conf.get("zorder", "tables", fallback="") or ""):
            given = {
                "stats_location": ref.stats_location,
                "conn_id": ref.conn_id,
                "iceberg_catalog": ref.iceberg_catalog,
            }
            given["iceberg_conn_id"] = ref.iceberg_conn_id
            entries.append({"table": ref.table, **{k: v for k, v in given.items() if v}})
        sources.append("[zorder] tables")
    return entries, " + ".join(sources) or "nothing"


def recluster_kwargs(decision: Mapping[str, Any]) -> dict[str, Any]:
    """The re-cluster task's arguments for one chosen table: its (trimmed) plan, the plan's columns and partitions, and
    its own storage connection when it names one (``storage_conn_id``)."""
    spec, plan = decision["spec"], decision["plan"]
    kwargs: dict[str, Any] = {
        "table": spec["table"],
        "columns": list(plan["columns"]),
        "curve": spec["curve"],
        "plan": plan,
        "partitions": list(decision["partitions"]),
        "stats_location": spec["stats_location"] or (decision.get("health") or {}).get("stats_location") or "",
    }
    for key in ("target_file_size", "iceberg_catalog", "iceberg_conn_id"):
        if spec.get(key):
            kwargs[key] = spec[key]
    if spec.get("conn_id"):
        kwargs["storage_conn_id"] = spec["conn_id"]
    return kwargs


def collect_kwargs(decision: Mapping[str, Any]) -> dict[str, Any] | None:
    """The stats task's arguments for a chosen table whose statistics live in the stats store (a Parquet table: its
    next evaluation needs them fresh); None for a format whose metadata keeps them (Delta, Iceberg)."""
    if (decision.get("health") or {}).get("stats_source") != "store":
        return None
    kwargs = recluster_kwargs(decision)
    out = {
        "table": kwargs["table"],
        "clustering_columns": kwargs["columns"],
        "stats_location": kwargs["stats_location"],
    }
    if kwargs.get("storage_conn_id"):
        out["storage_conn_id"] = kwargs["storage_conn_id"]
    return out


def _outcome(result: Mapping[str, Any]) -> dict[str, Any]:
    rewritten = result.get("rewritten") or {}
    return {
        "status": result.get("status"),
        "run_id": result.get("run_id"),
        "files": rewritten.get("files"),
        "bytes": rewritten.get("bytes"),
        "duration_s": result.get("duration_s"),
    }


def record_outcomes(planned: Mapping[str, Any], results: Any) -> dict[str, Any]:
    """The run record with each chosen table's rewrite outcome (``results``: the re-cluster tasks' XComs, one or a
    list; a chosen table without a result -- its task failed or was skipped -- is ``failed``) and the totals."""
    if isinstance(results, Mapping):
        results = [results]
    done = {r.get("table"): _outcome(r) for r in results or [] if isinstance(r, Mapping)}
    rec = dict(planned)
    rec["decisions"] = [
        {**d, "outcome": done.get(d["table"]) or {"status": "failed", "bytes": 0}} if d["reason"] == "chosen" else d
        for d in rec["decisions"]
    ]
    rec["totals"] = {
        **rec["totals"],
        "bytes_rewritten": sum(int(o.get("bytes") or 0) for o in done.values()),
        "rewrites_failed": sum(
            1 for d in rec["decisions"] if d["reason"] == "chosen" and d["outcome"]["status"] != "clustered"
        ),
    }
    rec["recorded_at"] = dt.datetime.now(dt.UTC).isoformat()
    return rec


def fleet_dag(
    dag_id: str,
    *,
    spec: str | None = None,
    variable: str | None = None,
    config_tables: bool = False,
    budget_bytes: str | int | None = None,
    budget_spark_time: str | float | None = None,
    bytes_per_second: str | int | None = None,
    starvation_runs: int = DEFAULT_STARVATION_RUNS,
    records_home: str | None = None,
    pool: str | None = None,
    max_parallel: int = 2,
    conn_id: str | None = None,
    spark_conn_id: str = "spark_default",
    spark_conf: Mapping[str, str] | None = None,
    max_workers: int = 8,
    processes: int | None = 1,
    policy: Any = None,
    collect_stats: bool = True,
    schedule: Any = "@daily",
    start_date: dt.datetime | None = None,
    tags: Sequence[str] = ("zorder", "fleet"),
    **dag_kwargs: Any,
) -> Any:
    """Build the fleet DAG (module doc).

    :param spec: a JSON/YAML file of the fleet's entries (``core.fleet.spec``), any store
    :param variable: an Airflow Variable holding the entries (wins over ``spec`` when set)
    :param config_tables: add the tables of ``[zorder] tables``
    :param budget_bytes: bytes rewritten per run (``2TB``; None: unbounded); a run parameter overrides it
    :param budget_spark_time: estimated Spark time per run (seconds, or ``20h``); a run parameter overrides it
    :param bytes_per_second: the rewrite throughput the Spark time is estimated with (``core.fleet.budget``)
    :param starvation_runs: a degraded table skipped for budget this many runs in a row is served first
    :param records_home: where the run records live (default ``fleet_records.fleet_records_home(dag_id)``)
    :param pool: the Airflow pool the re-cluster tasks take a slot of (create it with its size: ``airflow pools set``)
    :param max_parallel: re-cluster tasks running at once within a run
    :param conn_id: the connection opening the tables' stores (``FileStatsHook``'s; a table's own ``conn_id`` wins, and
        is the re-cluster and stats tasks' ``storage_conn_id``); ``spark_conn_id``, ``spark_conf``:
        the re-cluster tasks' spark-submit
    :param max_workers: tables evaluated at a time by ``plan``; ``processes``: the processes they are spread over
        (``FleetHook``'s: default 1, threads only; None: one per core unless a table needs an Airflow connection)
    :param policy: the sensor's thresholds (``HealthPolicy``; default its defaults)
    :param collect_stats: refresh the statistics of the rewritten tables that keep them in the stats store
    """
    import pendulum
    from airflow.sdk import DAG, Param, get_current_context, task

    from airflow_zorder.operators import SparkClusterTableOperator, SparkCollectFileStatsOperator

    params = {
        "budget_bytes": Param(None if budget_bytes is None else str(budget_bytes), type=["null", "string"]),
        "budget_spark_time": Param(
            None if budget_spark_time is None else str(budget_spark_time), type=["null", "string"]
        ),
    }
    with DAG(
        dag_id=dag_id,
        description="Re-cluster the tables of a fleet where it buys the most read savings, under one budget",
        schedule=schedule,
        start_date=start_date or pendulum.datetime(2026, 1, 1, tz="UTC"),
        catchup=False,
        max_active_runs=1,
        tags=list(tags),
        params=params,
        doc_md=__doc__,
        **dag_kwargs,
    ) as dag:

        @task
        def plan() -> list[dict[str, Any]]:
            """Evaluate every table (no Spark), rank, fit the budget; log the table of decisions. Returns the chosen
            tables' re-cluster arguments (mapped over); the run record goes to the XCom ``record``."""
            from airflow_zorder.core.fleet import records
            from airflow_zorder.core.fleet.budget import Budget
            from airflow_zorder.core.fleet.report import format_run
            from airflow_zorder.core.fleet.spec import expand
            from airflow_zorder.fleet_records import fleet_records_home
            from airflow_zorder.hooks.fleet import FleetHook

            ctx = get_current_context()
            p = ctx["params"]
            entries, source = load_entries(spec, variable, config_tables)
            base = posixpath.dirname(spec) if spec and not variable else None  # relative tables: beside the spec
            tables, errors = expand(entries, base=base)
            home = records_home or fleet_records_home(dag_id)
            state = records.load_state(home)
            budget = Budget.of(p.get("budget_bytes"), p.get("budget_spark_time"), bytes_per_second)
            hook = FleetHook(conn_id, policy, max_workers=max_workers, processes=processes)
            fleet = hook.plan(
                tables,
                budget,
                skipped_runs=state.get("skipped_runs"),
                starvation_runs=starvation_runs,
                run_id=ctx["run_id"],
            )
            fleet.errors = errors
            record = {**fleet.to_dict(), "source": source, "records_home": home}
            print(format_run(record))
            ctx["ti"].xcom_push(key="record", value=record)
            return [recluster_kwargs(d) for d in fleet.chosen]

        planned = plan()
        extra = {"pool": pool} if pool else {}
        recluster = SparkClusterTableOperator.partial(
            task_id="recluster",
            conn_id=spark_conn_id,
            conf=dict(spark_conf or {"spark.sql.shuffle.partitions": "8"}),
            incremental=True,
            max_active_tis_per_dagrun=max_parallel,
            **extra,
        ).expand_kwargs(planned)

        @task(trigger_rule="all_done")
        def record() -> dict[str, Any]:
            """Write the run record (decisions, budget spent, each rewrite's outcome) and the next run's state."""
            from airflow_zorder.core.fleet import records
            from airflow_zorder.core.fleet.report import format_run

            ti = get_current_context()["ti"]
            planned_record = ti.xcom_pull(task_ids="plan", key="record")
            results = ti.xcom_pull(task_ids="recluster", key="return_value", default=None)
            rec = record_outcomes(planned_record, results)
            where = records.write_run(rec["records_home"], rec)
            print(format_run(rec))
            print(f"recorded at {where}")
            return {"record": where, "totals": rec["totals"]}

        if not collect_stats:
            planned >> recluster >> record()
            return dag

        @task(trigger_rule="all_done")
        def to_collect() -> list[dict[str, Any]]:
            """The rewritten tables whose statistics the stats job keeps (collected again whatever the rewrite did)."""
            ti = get_current_context()["ti"]
            chosen = (ti.xcom_pull(task_ids="plan", key="record") or {}).get("decisions") or []
            return [k for k in (collect_kwargs(d) for d in chosen if d["reason"] == "chosen") if k]

        collecting = to_collect()
        collect = SparkCollectFileStatsOperator.partial(
            task_id="collect_stats",
            conn_id=spark_conn_id,
            conf=dict(spark_conf or {"spark.sql.shuffle.partitions": "8"}),
            max_active_tis_per_dagrun=max_parallel,
            **extra,
        ).expand_kwargs(collecting)
        planned >> recluster >> collecting >> collect >> record()
    return dag
