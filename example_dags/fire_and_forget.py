"""(d) Fire and forget, then gate on the result: start a refresh without holding a task, sense freshness.

``start_refresh`` returns as soon as the platform has queued the execution. Other work runs meanwhile;
``events_fresh`` then waits, in the triggerer, until the events source has synced after the refresh began.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from airflow.providers.common.compat.sdk import DAG, task

from airflow_provider_analytics.operators.workflows import ExecuteWorkflowOperator
from airflow_provider_analytics.sensors.data_sources import DataSourceSyncedSensor

with DAG(
    dag_id="analytics_fire_and_forget",
    schedule="@hourly",
    start_date=datetime(2026, 11, 1),
    catchup=False,
    tags=["analytics", "example"],
):
    # [START howto_operator_analytics_execute_workflow_no_wait]
    start_refresh = ExecuteWorkflowOperator(
        task_id="start_refresh",
        workflow_id="wf_sessionize_events",
        # run_after on Airflow 3 (defined however the run was triggered), the logical date on Airflow 2
        inputs={"hour": "{{ (dag_run.run_after | default(dag_run.logical_date)) | ts }}"},
        wait_for_completion=False,
    )
    # [END howto_operator_analytics_execute_workflow_no_wait]

    @task
    def unrelated_work() -> str:
        return "done while the platform works"

    # [START howto_sensor_analytics_data_source_synced_after_start]
    events_fresh = DataSourceSyncedSensor(
        task_id="events_fresh",
        data_source_id="ds_events",
        synced_after="{{ ti.xcom_pull(task_ids='start_refresh')['created_at'] }}",
        deferrable=True,
        poke_interval=5,
        timeout=1800,
        # A sensor only reads: a retry waits for the same sync again. Retries also cover Airflow failing a
        # task that resumes very quickly (docs/deployment.md).
        retries=2,
        retry_delay=timedelta(seconds=15),
    )
    # [END howto_sensor_analytics_data_source_synced_after_start]
    start_refresh >> [unrelated_work(), events_fresh]
