"""(b) Gate on a data source's sync, then generate a report from dashboards and download it.

The sensor waits until ``ds_warehouse`` has synced *after* the run's data interval ended (freshness,
not status). The report file lands in a local folder; for object storage use a URI instead, e.g.
``destination="s3://analytics-exports/sales/" + DAY + "/"`` with an ``aws_default`` connection.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from airflow.providers.common.compat.sdk import DAG, Asset

from airflow_provider_analytics.operators.reports import DownloadReportOperator, GenerateReportOperator
from airflow_provider_analytics.sensors.data_sources import DataSourceSyncedSensor

EXPORT_DIR = "{{ var.value.get('analytics_export_dir', '/tmp/analytics-exports') }}"
# The run's day, however it was triggered: Airflow 3 gives every run a run_after ({{ ds }} is undefined when a
# run has no logical date); Airflow 2 has no run_after but gives every run a logical date.
DAY = "{{ (dag_run.run_after | default(dag_run.logical_date)) | ds }}"
sales_report_file = Asset("analytics-sales-report")

with DAG(
    dag_id="analytics_sync_report_download",
    schedule="@daily",
    start_date=datetime(2026, 11, 1),
    catchup=False,
    tags=["analytics", "example"],
):
    # [START howto_sensor_analytics_data_source_synced]
    warehouse_fresh = DataSourceSyncedSensor(
        task_id="warehouse_fresh",
        data_source_id="ds_warehouse",
        # synced_after defaults to the run's data interval end (or its run_after when it has none)
        deferrable=True,
        poke_interval=5,
        timeout=3600,
        # A sensor only reads: a retry waits for the same sync again. Retries also cover Airflow failing a
        # task that resumes very quickly (docs/deployment.md).
        retries=2,
        retry_delay=timedelta(seconds=15),
    )
    # [END howto_sensor_analytics_data_source_synced]
    # [START howto_operator_analytics_generate_report]
    generate = GenerateReportOperator(
        task_id="generate",
        dashboard_ids=["db_sales", "db_product"],
        format="pdf",
        name="sales-" + DAY,
        parameters={"period": DAY},
        deferrable=True,
        poll_interval=2,
        timeout=1800,
        # A retry reattaches to the report this task started (it never generates a second one), so retrying
        # soon is safe; it also covers Airflow failing a task that resumes very quickly (docs/deployment.md).
        retries=2,
        retry_delay=timedelta(seconds=15),
    )
    # [END howto_operator_analytics_generate_report]
    # [START howto_operator_analytics_download_report]
    download = DownloadReportOperator(
        task_id="download",
        report_id="{{ ti.xcom_pull(task_ids='generate')['id'] }}",
        destination=EXPORT_DIR + "/" + DAY + "/",
        overwrite=True,
        outlets=[sales_report_file],
        retries=2,
        retry_delay=timedelta(seconds=15),
    )
    # [END howto_operator_analytics_download_report]
    warehouse_fresh >> generate >> download
