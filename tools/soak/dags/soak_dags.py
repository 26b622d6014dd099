"""The DAGs ``make soak`` keeps in flight: every operator and the sensor, deferred and worker-side waits,
downloads to a local folder and to S3 (moto), and (soak_events.py) the event-driven DAG fed by syncs.

Every piece of platform work names its run and task (``inputs`` of an execution, ``parameters`` of a
report), so the soak's accounting can group the sandbox's records into attempt chains, one per task
instance. The harness sets ``SOAK_POLL_SECONDS`` and ``SOAK_EXPORTS`` for every component.
"""

from __future__ import annotations

import os
from datetime import datetime, timedelta
from typing import Any

from airflow.sdk import DAG, task

from airflow_provider_analytics.operators.charts import CreateChartOperator, GetChartDataOperator
from airflow_provider_analytics.operators.dashboards import CreateDashboardOperator, UpdateDashboardOperator
from airflow_provider_analytics.operators.data_sources import ConnectDataSourceOperator
from airflow_provider_analytics.operators.reports import DownloadReportOperator, GenerateReportOperator
from airflow_provider_analytics.operators.workflows import CreateWorkflowOperator, ExecuteWorkflowOperator
from airflow_provider_analytics.sensors.data_sources import DataSourceSyncedSensor

POLL = float(os.environ.get("SOAK_POLL_SECONDS", "5"))
EXPORTS = os.environ.get("SOAK_EXPORTS", "/tmp/soak-exports")
S3_BUCKET = "soak-exports"
S3_CONN = "soak_s3"
# A run id (manual__2026-11-25T20:30:00.123456+00:00) as a folder or key name.
SLUG = "{{ run_id | replace(':', '-') | replace('+', '-') }}"
# Names the run and the task in the platform's record of the work it starts.
WHO = {"run": "{{ run_id }}", "task": "{{ ti.task_id }}"}
# Platform work fails on purpose now and then (chaos): a retry starts fresh work, so three tries let a run
# through two genuine failures. The short delay keeps the soak's drain short.
RETRYING: dict[str, Any] = {"retries": 3, "retry_delay": timedelta(seconds=5)}
WAITING: dict[str, Any] = {"poll_interval": POLL, "timeout": 1800, "deferrable": True, **RETRYING}


def soak_dag(dag_id: str) -> DAG:
    return DAG(
        dag_id=dag_id,
        schedule=None,
        start_date=datetime(2026, 11, 1),
        catchup=False,
        max_active_runs=200,  # the soak decides how many runs are in flight, not a per-DAG cap
        tags=["soak"],
    )


with soak_dag("soak_workflow"):
    execute = ExecuteWorkflowOperator(task_id="execute", workflow_id="wf_churn_scoring", inputs=WHO, **WAITING)

    # The soak SIGKILLs a busy worker: any task may be on it, and only a retry brings it back.
    @task(retries=3, retry_delay=timedelta(seconds=5))
    def check_outputs(execution: dict[str, Any], run_id: str | None = None) -> int:
        """The execution's outputs are this run's: the platform echoes the inputs."""
        if execution["outputs"]["inputs"]["run"] != run_id:
            raise ValueError(f"execution {execution['id']} is not this run's: {execution['outputs']['inputs']}")
        return int(execution["outputs"]["rows_processed"])

    check_outputs(execute.output)  # type: ignore[arg-type]  # resolved to the execution at run time


# Only the event-driven DAG's watcher reads ds_warehouse: the soak tells its polls from the sandbox's request log.
for where, destination, data_source in (
    ("local", EXPORTS + "/" + SLUG + "/", "ds_crm"),
    ("s3", f"s3://{S3_CONN}@{S3_BUCKET}/" + SLUG + "/", "ds_crm"),
):
    with soak_dag(f"soak_report_{where}"):
        fresh = DataSourceSyncedSensor(
            task_id="fresh", data_source_id=data_source, deferrable=True, poke_interval=POLL, timeout=1800, **RETRYING
        )
        generate = GenerateReportOperator(
            task_id="generate",
            dashboard_ids=["db_sales", "db_product"],
            format="csv" if where == "local" else "pdf",
            parameters=WHO,
            **WAITING,
        )
        download = DownloadReportOperator(
            task_id="download",
            report_id="{{ ti.xcom_pull(task_ids='generate')['id'] }}",
            destination=destination,
            **WAITING,
        )
        fresh >> generate >> download


with soak_dag("soak_fire_and_forget"):
    start = ExecuteWorkflowOperator(
        task_id="start", workflow_id="wf_sessionize_events", inputs=WHO, wait_for_completion=False, **RETRYING
    )
    events_fresh = DataSourceSyncedSensor(
        task_id="events_fresh",
        data_source_id="ds_events",
        synced_after="{{ ti.xcom_pull(task_ids='start')['created_at'] }}",
        deferrable=True,
        poke_interval=POLL,
        timeout=1800,
        **RETRYING,
    )
    start >> events_fresh


with soak_dag("soak_as_code"):
    workflow = CreateWorkflowOperator(
        task_id="create_workflow",
        name="soak-" + SLUG,
        configuration={"steps": [{"name": "load", "image": "acme/load:1"}], "run": "{{ run_id }}"},
        **RETRYING,
    )
    source = ConnectDataSourceOperator(
        task_id="connect_source",
        name="soak-source-" + SLUG,
        type="postgres",
        connection={"host": "db.internal", "port": 5432, "database": "sales", "user": "svc", "password": "soak-pw"},
        **RETRYING,
    )
    chart = CreateChartOperator(
        task_id="create_chart",
        name="soak-chart-" + SLUG,
        type="line",
        data_source_id="{{ ti.xcom_pull(task_ids='connect_source')['id'] }}",
        query="select day, revenue from sales_daily",
        **RETRYING,
    )
    rows = GetChartDataOperator(
        task_id="chart_data", chart_id="{{ ti.xcom_pull(task_ids='create_chart')['id'] }}", **RETRYING
    )
    layout = [{"chart_id": "{{ ti.xcom_pull(task_ids='create_chart')['id'] }}", "x": 0, "y": 0, "w": 6, "h": 4}]
    dashboard = CreateDashboardOperator(
        task_id="create_dashboard", name="soak-dashboard-" + SLUG, layout=layout, **RETRYING
    )
    update = UpdateDashboardOperator(
        task_id="update_dashboard",
        dashboard_id="{{ ti.xcom_pull(task_ids='create_dashboard')['id'] }}",
        if_match="{{ ti.xcom_pull(task_ids='create_dashboard')['version'] }}",
        name="soak-dashboard-" + SLUG,
        tags=["soak", "updated"],
        layout=layout,
        **RETRYING,
    )
    # The one wait held on the worker (a slot for its whole length): rare in the load mix for that reason.
    run_it = ExecuteWorkflowOperator(
        task_id="run_workflow",
        workflow_id="{{ ti.xcom_pull(task_ids='create_workflow')['id'] }}",
        inputs=WHO,
        poll_interval=POLL,
        timeout=1800,
        deferrable=False,
        **RETRYING,
    )
    workflow >> run_it
    source >> chart >> [rows, dashboard]
    dashboard >> update
