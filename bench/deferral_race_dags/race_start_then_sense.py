"""The guide's DAG (example_dags/start_then_sense.py) as bench/deferral_race.py runs it: no retries, no schedule.

Kept apart from the example so that the example may get ``retries`` (a retry reattaches and hides the race)
while the bench still counts every try Airflow fails; the sensor's settings are the guide's. ``start`` also
sends the run id as an input, so that each execution on the sandbox names its run.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from airflow.providers.common.compat.sdk import DAG, task

from airflow_provider_analytics.operators.workflows import ExecuteWorkflowOperator
from airflow_provider_analytics.sensors.workflows import WorkflowExecutionSensor

with DAG(
    dag_id="race_start_then_sense",
    schedule=None,
    start_date=datetime(2026, 11, 1),
    catchup=False,
    default_args={"retries": 0},
    tags=["bench"],
):
    start = ExecuteWorkflowOperator(
        task_id="start",
        workflow_id="wf_revenue_rollup",
        inputs={"day": "{{ (dag_run.run_after | default(dag_run.logical_date)) | ds }}", "run": "{{ run_id }}"},
        wait_for_completion=False,
    )

    @task
    def unrelated_work() -> str:
        return "done while the platform works"

    wait = WorkflowExecutionSensor(
        task_id="wait",
        workflow_id="wf_revenue_rollup",
        execution_id="{{ ti.xcom_pull(task_ids='start', key='execution_id') }}",
        deferrable=True,
        poke_interval=5,
        timeout=1800,
    )

    @task
    def rows(execution: Any) -> int:  # the sensor's XCom: the final execution
        return int(execution["outputs"]["rows_processed"])

    start >> [unrelated_work(), wait]
    rows(wait.output)
