"""(f) Set up platform objects from Airflow: a data source, a workflow, a chart's data, a dashboard's layout.

No schedule: trigger it when the platform needs these objects. Each task returns the platform's object, and a
retried task gets its first creation back instead of a duplicate (the operators send deterministic
``Idempotency-Key`` headers). The dashboard update is guarded by the version read just before it, so an edit
made in the platform's UI in between fails the task instead of being overwritten.
"""

from __future__ import annotations

from datetime import datetime

from airflow.providers.common.compat.sdk import DAG, task

from airflow_provider_analytics.operators.charts import GetChartDataOperator
from airflow_provider_analytics.operators.dashboards import UpdateDashboardOperator
from airflow_provider_analytics.operators.data_sources import ConnectDataSourceOperator
from airflow_provider_analytics.operators.workflows import CreateWorkflowOperator

EXPORT_DIR = "{{ var.value.get('analytics_export_dir', '/tmp/analytics-exports') }}"
# The run's day: run_after on Airflow 3 (a run may have no logical date there), the logical date on Airflow 2.
DAY = "{{ (dag_run.run_after | default(dag_run.logical_date)) | ds }}"

with DAG(
    dag_id="analytics_platform_objects",
    schedule=None,
    start_date=datetime(2026, 11, 1),
    catchup=False,
    max_active_runs=1,  # two runs at once would read the same dashboard version; the second update would fail (412)
    tags=["analytics", "example"],
):
    # [START howto_operator_analytics_connect_data_source]
    replica = ConnectDataSourceOperator(
        task_id="connect_replica",
        name="sales-replica",
        type="postgres",
        connection={
            "host": "replica.db.internal",
            "port": 5432,
            "database": "sales",
            "user": "svc_analytics",
            # A template from an Airflow variable (or "{{ conn.<id>.password }}"): Airflow masks it in logs and in
            # the rendered-fields view, and the platform never returns it. Drop the default in a real deployment.
            "password": "{{ var.value.get('analytics_replica_password', 'demo-only-password') }}",
        },
    )
    # [END howto_operator_analytics_connect_data_source]

    # [START howto_operator_analytics_create_workflow]
    refresh_workflow = CreateWorkflowOperator(
        task_id="create_refresh_workflow",
        name="sales-replica-refresh",
        description="Reload the sales replica's tables",
        configuration={
            "steps": [
                {"name": "load", "data_source_id": "{{ ti.xcom_pull(task_ids='connect_replica')['id'] }}"},
                {"name": "aggregate", "tables": ["orders", "refunds"]},
            ]
        },
    )
    # [END howto_operator_analytics_create_workflow]
    replica >> refresh_workflow

    # [START howto_operator_analytics_get_chart_data]
    revenue_rows = GetChartDataOperator(
        task_id="revenue_rows",
        chart_id="ch_revenue",
        max_xcom_rows=500,  # the rows come back through XCom; a larger chart fails and asks for a destination
    )
    revenue_file = GetChartDataOperator(
        task_id="revenue_file",
        chart_id="ch_revenue",
        destination=EXPORT_DIR + "/revenue-" + DAY + ".csv",  # or an object storage URI: s3://bucket/key.csv
        file_format="csv",
        overwrite=True,
    )
    # [END howto_operator_analytics_get_chart_data]

    # [START howto_operator_analytics_update_dashboard]
    @task
    def sales_dashboard_version() -> int:
        """The version the dashboard is at now: the update below must replace exactly this one."""
        from airflow_provider_analytics.hooks.analytics import AnalyticsHook

        with AnalyticsHook() as hook:
            return next(board["version"] for board in hook.list_dashboards() if board["id"] == "db_sales")

    update_sales = UpdateDashboardOperator(
        task_id="update_sales_dashboard",
        dashboard_id="db_sales",
        if_match="{{ ti.xcom_pull(task_ids='sales_dashboard_version') }}",  # stale: fails, overwrites nothing
        name="Sales",
        description="Revenue first; laid out by Airflow on " + DAY,
        tags=["finance", "airflow"],
        layout=[
            {"chart_id": "ch_revenue", "x": 0, "y": 0, "w": 12, "h": 4},
            {"chart_id": "ch_orders_by_region", "x": 0, "y": 4, "w": 6, "h": 4},
        ],
    )
    sales_dashboard_version() >> update_sales
    # [END howto_operator_analytics_update_dashboard]
    [revenue_rows, revenue_file] >> update_sales
