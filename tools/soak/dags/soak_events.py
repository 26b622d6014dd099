"""The event-driven DAG of ``make soak``: example_dags/analytics_on_source_sync.py, with its work traceable.

An ``AssetWatcher`` runs ``DataSourceSyncedEventTrigger`` on ``ds_warehouse``, whose syncs the soak starts
on the sandbox; each new sync becomes an asset event and starts a run, which generates a report and downloads
it. As in the example, syncs that come while a run goes give one run (``max_active_runs=1``); the soak counts
events against syncs (none repeated, none missed), not runs.
"""

from __future__ import annotations

import os
from datetime import datetime, timedelta
from typing import Any

from airflow.sdk import DAG, Asset, AssetWatcher, task

from airflow_provider_analytics.operators.reports import DownloadReportOperator, GenerateReportOperator
from airflow_provider_analytics.triggers.asset_events import DataSourceSyncedEventTrigger

POLL = float(os.environ.get("SOAK_POLL_SECONDS", "5"))
EXPORTS = os.environ.get("SOAK_EXPORTS", "/tmp/soak-exports")
SLUG = "{{ run_id | replace(':', '-') | replace('+', '-') }}"
warehouse_synced = Asset(
    "soak-warehouse-synced",
    watchers=[
        AssetWatcher(
            name="soak_warehouse_sync_watcher",
            trigger=DataSourceSyncedEventTrigger(data_source_id="ds_warehouse", poll_interval=2),
        )
    ],
)

with DAG(
    dag_id="soak_events",
    schedule=[warehouse_synced],
    start_date=datetime(2026, 11, 1),
    catchup=False,
    max_active_runs=1,
    tags=["soak"],
):

    @task(multiple_outputs=True, retries=3, retry_delay=timedelta(seconds=5))  # it may be on a worker the soak kills
    def synced(triggering_asset_events: Any = None) -> dict[str, Any]:
        """The newest sync among the events that started this run."""
        events = triggering_asset_events.get(warehouse_synced, []) if triggering_asset_events else []
        payloads = [event.extra["payload"] for event in events]
        return max(payloads, key=lambda payload: payload["last_synced_at"])

    sync = synced()
    report = GenerateReportOperator(
        task_id="sales_report",
        dashboard_ids=["db_sales"],
        format="csv",
        parameters={
            "run": "{{ run_id }}",
            "task": "{{ ti.task_id }}",
            "synced_at": sync["last_synced_at"],  # type: ignore[index]  # an XComArg's item, read at run time
        },
        deferrable=True,
        poll_interval=POLL,
        timeout=1800,
        retries=3,
        retry_delay=timedelta(seconds=5),
    )
    download = DownloadReportOperator(
        task_id="download",
        report_id="{{ ti.xcom_pull(task_ids='sales_report')['id'] }}",
        destination=EXPORTS + "/" + SLUG + "/",
        deferrable=True,
        poll_interval=POLL,
        retries=3,
        retry_delay=timedelta(seconds=5),
    )
    sync >> report >> download
