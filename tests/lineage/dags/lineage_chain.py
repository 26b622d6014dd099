"""A DAG through every kind of platform object, for the OpenLineage listener test (tests/lineage).

``LINEAGE_TEST_HOST`` names the sandbox (``127.0.0.1:<port>``) so the declared outlet is on that platform.
"""

from __future__ import annotations

import os
from datetime import datetime
from typing import Any

from airflow.providers.common.compat.sdk import DAG, Asset

from airflow_provider_analytics.operators.charts import CreateChartOperator, GetChartDataOperator
from airflow_provider_analytics.operators.dashboards import CreateDashboardOperator
from airflow_provider_analytics.operators.reports import DownloadReportOperator, GenerateReportOperator
from airflow_provider_analytics.operators.workflows import ExecuteWorkflowOperator

HOST = os.environ.get("LINEAGE_TEST_HOST", "platform.invalid")
FAST: dict[str, Any] = {"poll_interval": 0.1, "deferrable": False}

with DAG("lineage_chain", schedule=None, start_date=datetime(2026, 1, 1), catchup=False):
    refresh = ExecuteWorkflowOperator(
        task_id="refresh",
        workflow_id="wf_nightly_enrichment",
        outlets=[Asset(f"analytics://{HOST}/data_source/ds_warehouse")],
        **FAST,
    )
    chart = CreateChartOperator(
        task_id="chart", name="Orders", type="line", data_source_id="ds_warehouse", query="select day, n from o"
    )
    dashboard = CreateDashboardOperator(
        task_id="dashboard",
        name="Orders",
        layout=[{"chart_id": "{{ ti.xcom_pull(task_ids='chart')['id'] }}", "x": 0, "y": 0, "w": 12, "h": 4}],
    )
    report = GenerateReportOperator(
        task_id="report", dashboard_ids=["{{ ti.xcom_pull(task_ids='dashboard')['id'] }}"], format="csv", **FAST
    )
    download = DownloadReportOperator(
        task_id="download",
        report_id="{{ ti.xcom_pull(task_ids='report')['id'] }}",
        destination="{{ dag_run.conf['folder'] }}/",
        **FAST,
    )
    rows = GetChartDataOperator(task_id="rows", chart_id="ch_revenue", destination="{{ dag_run.conf['folder'] }}/r.csv")
    refresh >> chart >> dashboard >> report >> download
