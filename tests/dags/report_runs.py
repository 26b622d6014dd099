"""Test DAGs for report generation and download, one per waiting mode. Ids come from ``dag_run.conf``."""

from __future__ import annotations

from datetime import datetime

from airflow.providers.common.compat.sdk import DAG

from airflow_provider_analytics.operators.reports import DownloadReportOperator, GenerateReportOperator

for mode in ("poll", "defer"):
    with DAG(f"test_report_{mode}", schedule=None, start_date=datetime(2026, 1, 1), catchup=False):
        generate = GenerateReportOperator(
            task_id="generate",
            dashboard_ids=["{{ dag_run.conf['dashboard_id'] }}"],
            format="{{ dag_run.conf.get('format', 'pdf') }}",
            name="weekly-{{ ds }}",
            deferrable=mode == "defer",
            poll_interval=0.1,
            timeout=60,
        )
        download = DownloadReportOperator(
            task_id="download",
            report_id="{{ ti.xcom_pull(task_ids='generate')['id'] }}",
            destination="{{ dag_run.conf['folder'] }}/",
            deferrable=mode == "defer",
            poll_interval=0.1,
        )
        generate >> download

    with DAG(f"test_download_wait_{mode}", schedule=None, start_date=datetime(2026, 1, 1), catchup=False):
        # Downloads a report that is still being generated: the operator must wait, not fail.
        DownloadReportOperator(
            task_id="download",
            report_id="{{ dag_run.conf['report_id'] }}",
            destination="{{ dag_run.conf['destination'] }}",
            deferrable=mode == "defer",
            poll_interval=0.1,
            timeout=30,
        )
