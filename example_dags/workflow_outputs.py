"""(a) Run a platform workflow and use its outputs downstream.

The execution is started with inputs from the run, waited for in the triggerer (no worker slot held),
and its ``outputs`` feed the next task. A retry of ``enrich`` never starts a second execution.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from airflow.providers.common.compat.sdk import DAG, task

from airflow_provider_analytics.operators.workflows import ExecuteWorkflowOperator

with DAG(
    dag_id="analytics_workflow_outputs",
    schedule="@daily",
    start_date=datetime(2026, 11, 1),
    catchup=False,
    tags=["analytics", "example"],
):
    # [START howto_operator_analytics_execute_workflow]
    enrich = ExecuteWorkflowOperator(
        task_id="enrich",
        workflow_id="wf_nightly_enrichment",
        # The run's day, however it was triggered: run_after on Airflow 3 (a run may have no logical date
        # there, and then no {{ ds }}), the logical date on Airflow 2 (which has no run_after).
        inputs={"day": "{{ (dag_run.run_after | default(dag_run.logical_date)) | ds }}", "mode": "incremental"},
        deferrable=True,
        poll_interval=2,
        timeout=600,  # then the execution is cancelled and the task fails saying so
        retries=2,  # a retry reattaches to the running execution instead of starting another
        retry_delay=timedelta(seconds=15),
    )
    # [END howto_operator_analytics_execute_workflow]

    @task
    def check_volume(execution: dict) -> str:
        outputs = execution["outputs"]
        rows = int(outputs["rows_processed"])
        if rows == 0:
            raise ValueError(f"execution {execution['id']} processed no rows")
        return f"{rows} rows written to {outputs.get('output_table', 'the warehouse')}"

    check_volume(enrich.output)
