"""(g) Start, then sense: start a workflow in one task and wait for that execution in another.

``start`` returns as soon as the platform has queued the execution, and pushes its id to XCom under
``execution_id``. Other work runs meanwhile; ``wait`` then waits for that very execution in the triggerer (no
worker slot held), fails if it failed or was cancelled, and returns it, outputs included, to ``rows``.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from airflow.providers.common.compat.sdk import DAG, task

from airflow_provider_analytics.operators.workflows import ExecuteWorkflowOperator
from airflow_provider_analytics.sensors.workflows import WorkflowExecutionSensor

with DAG(
    dag_id="analytics_start_then_sense",
    schedule="@daily",
    start_date=datetime(2026, 11, 1),
    catchup=False,
    tags=["analytics", "example"],
):
    start = ExecuteWorkflowOperator(
        task_id="start",
        workflow_id="wf_revenue_rollup",
        # run_after on Airflow 3 (defined however the run was triggered), the logical date on Airflow 2
        inputs={"day": "{{ (dag_run.run_after | default(dag_run.logical_date)) | ds }}"},
        wait_for_completion=False,
    )

    @task
    def unrelated_work() -> str:
        return "done while the platform works"

    # [START howto_sensor_analytics_workflow_execution]
    wait = WorkflowExecutionSensor(
        task_id="wait",
        workflow_id="wf_revenue_rollup",
        execution_id="{{ ti.xcom_pull(task_ids='start', key='execution_id') }}",
        deferrable=True,
        poke_interval=5,
        timeout=1800,  # then the task fails; the execution is never cancelled by the sensor
        # A sensor only reads: a retry waits for the same execution again. Retries also cover Airflow failing a
        # task that resumes very quickly (docs/deployment.md).
        retries=2,
        retry_delay=timedelta(seconds=15),
    )
    # [END howto_sensor_analytics_workflow_execution]

    @task
    def rows(execution: dict) -> int:
        return int(execution["outputs"]["rows_processed"])

    start >> [unrelated_work(), wait]
    rows(wait.output)
