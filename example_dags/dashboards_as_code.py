"""(c) Dashboards as code: charts and a dashboard kept in step with a JSON file in the DAG folder.

The first run creates the charts and the dashboard; later runs reuse the charts and replace the
dashboard's layout, guarded by If-Match so an edit made in the UI meanwhile is not overwritten silently.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

from airflow.providers.common.compat.sdk import DAG

from airflow_provider_analytics.operators.charts import CreateChartOperator
from airflow_provider_analytics.operators.dashboards import CreateDashboardOperator

DEFINITION = json.loads((Path(__file__).parent / "definitions" / "sales_overview.json").read_text())

with DAG(
    dag_id="analytics_dashboards_as_code",
    schedule="@daily",
    start_date=datetime(2026, 11, 1),
    catchup=False,
    # One run at a time: the platform does not keep names unique, so two runs that both find no dashboard (or
    # chart) by its name would both create one, and the next run would refuse to guess between them.
    max_active_runs=1,
    tags=["analytics", "example"],
):
    # [START howto_operator_analytics_create_chart]
    charts = {
        chart["key"]: CreateChartOperator(
            task_id=f"chart_{chart['key']}",
            name=chart["name"],
            type=chart["type"],
            data_source_id=DEFINITION["data_source_id"],
            query=chart["query"],
            reuse_existing=True,
        )
        for chart in DEFINITION["charts"]
    }
    # [END howto_operator_analytics_create_chart]
    # [START howto_operator_analytics_create_dashboard]
    dashboard = CreateDashboardOperator(
        task_id="dashboard",
        **DEFINITION["dashboard"],
        layout=[
            {"chart_id": f"{{{{ ti.xcom_pull(task_ids='chart_{chart['key']}')['id'] }}}}", **chart["place"]}
            for chart in DEFINITION["charts"]
        ],
        update_existing=True,
    )
    # [END howto_operator_analytics_create_dashboard]
    list(charts.values()) >> dashboard
