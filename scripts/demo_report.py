"""Print the before/after table a DAG run's ``compare`` task returned (its XCom), for ``make demo``.

    python scripts/demo_report.py DAG_ID TASK_ID

Reads the newest run of DAG_ID from the Airflow metadata DB of ``$AIRFLOW_HOME``; fails with the
task states when the task did not succeed (e.g. the sensor found the table healthy and skipped it).
"""

from __future__ import annotations

import sys

from airflow.models.dagrun import DagRun
from airflow.models.xcom import XComModel
from airflow.utils.session import create_session
from sqlalchemy import select

from airflow_zorder.evaluation.before_after import format_before_after


def main(dag_id: str, task_id: str) -> int:
    with create_session() as session:
        run = session.scalars(select(DagRun).where(DagRun.dag_id == dag_id).order_by(DagRun.id.desc())).first()
        if run is None:
            print(f"no run of {dag_id} found in the metadata DB", file=sys.stderr)
            return 1
        states = {ti.task_id: ti.state for ti in run.get_task_instances(session=session)}
        row = session.scalars(
            select(XComModel).where(
                XComModel.dag_id == dag_id,
                XComModel.run_id == run.run_id,
                XComModel.task_id == task_id,
                XComModel.key == "return_value",
            )
        ).first()
        if row is None:
            print(
                f"{dag_id} run {run.run_id} ({run.state}) has no result from {task_id}; task states: {states}",
                file=sys.stderr,
            )
            return 1
        report = XComModel.deserialize_value(row)
    print(format_before_after(report))
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:3]))
