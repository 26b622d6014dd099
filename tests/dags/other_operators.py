"""Test DAGs for the operators that create or read platform objects."""

from __future__ import annotations

from datetime import datetime

from airflow.providers.common.compat.sdk import DAG

from airflow_provider_analytics.operators.charts import CreateChartOperator, GetChartDataOperator
from airflow_provider_analytics.operators.dashboards import CreateDashboardOperator, UpdateDashboardOperator
from airflow_provider_analytics.operators.data_sources import ConnectDataSourceOperator
from airflow_provider_analytics.operators.definitions import ApplyDefinitionsOperator, ExportDefinitionsOperator
from airflow_provider_analytics.operators.workflows import CreateWorkflowOperator

START = datetime(2026, 1, 1)

with DAG("test_create_objects", schedule=None, start_date=START, catchup=False):
    source = ConnectDataSourceOperator(
        task_id="source",
        name="orders-db",
        type="postgres",
        connection={"host": "db.internal", "port": 5432, "database": "orders", "user": "svc", "password": "s3cr3t!"},
    )
    chart = CreateChartOperator(
        task_id="chart",
        name="Orders per day",
        type="line",
        data_source_id="{{ ti.xcom_pull(task_ids='source')['id'] }}",
        query="select day, orders from orders_daily",
    )
    dashboard = CreateDashboardOperator(
        task_id="dashboard",
        name="Orders",
        tags=["ops"],
        layout=[{"chart_id": "{{ ti.xcom_pull(task_ids='chart')['id'] }}", "x": 0, "y": 0, "w": 12, "h": 4}],
    )
    update = UpdateDashboardOperator(
        task_id="update",
        dashboard_id="{{ ti.xcom_pull(task_ids='dashboard')['id'] }}",
        if_match="{{ ti.xcom_pull(task_ids='dashboard')['version'] }}",
        name="Orders (renamed)",
        tags=["ops", "renamed"],
        layout=[{"chart_id": "{{ ti.xcom_pull(task_ids='chart')['id'] }}", "x": 0, "y": 0, "w": 6, "h": 4}],
    )
    workflow = CreateWorkflowOperator(
        task_id="workflow", name="orders-rollup", configuration={"steps": [{"name": "rollup"}]}, description="test"
    )
    source >> chart >> dashboard >> update

with DAG("test_stale_update", schedule=None, start_date=START, catchup=False):
    UpdateDashboardOperator(
        task_id="update",
        dashboard_id="{{ dag_run.conf['dashboard_id'] }}",
        if_match="{{ dag_run.conf['version'] }}",
        name="{{ dag_run.conf['name'] }}",
    )

with DAG("test_dashboard_as_code", schedule=None, start_date=START, catchup=False):
    CreateDashboardOperator(
        task_id="dashboard", name="Managed", description="{{ dag_run.conf['description'] }}", update_existing=True
    )


# A plan task, then an apply of that plan through XCom (the approval between them is a person's; here none).
# conf "edited" stands for a definition edited between the review and the apply.
def reviewed_definitions(description: str) -> dict[str, object]:
    return {"dashboards": [{"name": "Reviewed", "description": description, "tags": ["as-code"]}]}


# Adopting definitions: export the workspace, then check the exported files for drift (nothing may differ).
with DAG("test_definitions_exported", schedule=None, start_date=START, catchup=False):
    ExportDefinitionsOperator(
        task_id="export", destination="{{ dag_run.conf['folder'] }}/", split_by="object"
    ) >> ApplyDefinitionsOperator(
        task_id="drift_check",
        definitions="{{ dag_run.conf['folder'] }}/*/*.yaml",
        plan_only=True,
        fail_on_changes=True,
    )


with DAG("test_definitions_reviewed", schedule=None, start_date=START, catchup=False):
    plan = ApplyDefinitionsOperator(
        task_id="plan", definitions=reviewed_definitions("{{ dag_run.conf['description'] }}"), plan_only=True
    )
    ApplyDefinitionsOperator(
        task_id="apply",
        definitions=reviewed_definitions("{{ dag_run.conf.get('edited', dag_run.conf['description']) }}"),
        reviewed_plan=plan.output,
        retries=2,
    )

with DAG("test_chart_data", schedule=None, start_date=START, catchup=False):
    GetChartDataOperator(task_id="to_xcom", chart_id="{{ dag_run.conf['chart_id'] }}", max_xcom_rows=1000)
    GetChartDataOperator(task_id="too_big_for_xcom", chart_id="{{ dag_run.conf['chart_id'] }}", max_xcom_rows=10)
    GetChartDataOperator(
        task_id="to_csv", chart_id="{{ dag_run.conf['chart_id'] }}", destination="{{ dag_run.conf['folder'] }}/rows.csv"
    )
    GetChartDataOperator(
        task_id="to_jsonl",
        chart_id="{{ dag_run.conf['chart_id'] }}",
        destination="{{ dag_run.conf['folder'] }}/rows.jsonl",
        file_format="jsonl",
        page_size=50,
    )
