"""One target file size from the DAG to the driver: the sensor decides with the size its plan cuts files to and the job
writes (issue #49's bug: the example DAGs passed the DAG's size to the plan only, so the decision used 512 MB)."""

from __future__ import annotations

import pytest
from test_dags import load_dagbag

from airflow_zorder.core.policy.file_sizing import parse_size
from airflow_zorder.core.policy.recluster_policy import HealthPolicy
from airflow_zorder.operators import SparkClusterTableOperator
from airflow_zorder.sensors import FileOverlapSensor

MB = 2**20


def test_example_dags_hand_the_sensor_and_the_job_one_size(airflow_db):
    from airflow_zorder.fleet_dag import recluster_kwargs

    bag, _ = load_dagbag()
    for dag_id, dag in sorted(bag.dags.items()):
        if dag_id == "zorder_fleet":  # no sensor: FleetHook plans each table with its entry's size, the job gets it
            spec = {"table": "/t", "curve": "hilbert", "stats_location": "", "target_file_size": "64MB"}
            decision = {"spec": spec, "plan": {"columns": ["a"]}, "partitions": []}
            assert recluster_kwargs(decision)["target_file_size"] == "64MB"
            continue
        sensors = [t for t in dag.tasks if isinstance(t, FileOverlapSensor)]
        jobs = [t for t in dag.tasks if isinstance(t, SparkClusterTableOperator)]
        assert sensors and jobs, dag_id
        for sensor in sensors:
            plan = sensor.incremental_plan if isinstance(sensor.incremental_plan, dict) else {}
            assert not {"target_file_size", "target_file_bytes"} & set(plan), f"{dag_id}: a second size in the plan"
            for job in jobs:
                # the same template (or the same mapped argument) on both: rendered, the same value
                assert repr(sensor.target_file_size) == repr(job.target_file_size), dag_id


def _sensor(**kw) -> FileOverlapSensor:
    return FileOverlapSensor(task_id="check", table="/t", columns="a,b", **kw)


def test_the_rendered_size_is_the_decisions_and_the_plans():
    sensor = _sensor(target_file_size="{{ params.target_file_size }}")
    sensor.target_file_size = "64MB"  # as rendered
    policy, plan = sensor.sized()
    assert policy.target_file_size == plan.target_file_size == parse_size("64MB") == 64 * MB
    sensor.target_file_size = ""  # a DAG param left empty: the default for both, as the job does
    policy, plan = sensor.sized()
    assert policy.target_file_size == plan.target_file_size == HealthPolicy().target_file_size


def test_a_plan_size_alone_is_the_one_size_and_two_sizes_are_refused():
    sensor = _sensor(incremental_plan={"target_file_bytes": "{{ params.size }}"})
    sensor.incremental_plan = {"target_file_bytes": "128MB"}  # as rendered: the DAGs written before #49
    policy, plan = sensor.sized()
    assert policy.target_file_size == plan.target_file_size == 128 * MB, "the decision no longer uses 512 MB"
    with pytest.raises(ValueError, match=r"differs from target_file_size='64MB'.*one file size"):
        _sensor(target_file_size="64MB", incremental_plan={"target_file_bytes": "128MB"})  # at DAG parse time
    assert _sensor(target_file_size="64MB", incremental_plan=False).sized()[1] is None
