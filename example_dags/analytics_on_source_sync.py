"""(e) Event-driven: refresh the sales report whenever the warehouse data source finishes a sync.

Needs Airflow 3.0 or later (``AssetWatcher``); on Airflow 2.11 this file does not import (docs/compatibility.md).

No schedule and no sensor: an ``AssetWatcher`` runs ``DataSourceSyncedEventTrigger`` in the triggerer, and
every new successful sync of ``ds_warehouse`` becomes an event of the ``analytics-warehouse-synced`` asset,
which starts a run. The event's payload is the sync status; the first task reads it. Syncs that come faster
than runs are not lost: the next run gets all their events and works from the newest.

The asset has a plain name; ``analytics://<host>/data_source/ds_warehouse`` (the provider's URI scheme) works
too, when the DAG may name the platform's host. See docs/events.md for what the watcher guarantees.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from airflow.sdk import DAG, Asset, AssetWatcher, task

from airflow_provider_analytics.operators.reports import GenerateReportOperator
from airflow_provider_analytics.triggers.asset_events import DataSourceSyncedEventTrigger

# [START howto_event_trigger_analytics_data_source_synced]
DATA_SOURCE = "ds_warehouse"
warehouse_synced = Asset(
    "analytics-warehouse-synced",
    watchers=[
        AssetWatcher(
            name="analytics_warehouse_sync_watcher",
            # 2 s keeps the demo brisk; a minute or more suits a real platform (one poll per source anyway)
            trigger=DataSourceSyncedEventTrigger(data_source_id=DATA_SOURCE, poll_interval=2),
        )
    ],
)
# [END howto_event_trigger_analytics_data_source_synced]

with DAG(
    dag_id="analytics_on_source_sync",
    schedule=[warehouse_synced],
    start_date=datetime(2026, 11, 1),
    catchup=False,
    max_active_runs=1,  # syncs during a run wait for it, then start one run together
    tags=["analytics", "example"],
):
    # [START howto_event_trigger_analytics_read_the_event]
    @task(multiple_outputs=True)
    def synced(triggering_asset_events: Any = None) -> dict[str, Any]:
        """The sync this run is for: the newest among the events that started it."""
        events = triggering_asset_events.get(warehouse_synced, []) if triggering_asset_events else []
        if not events:  # a manual run has no event: the source's current sync status stands in for one
            from airflow_provider_analytics.hooks.analytics import AnalyticsHook

            with AnalyticsHook() as hook:
                return dict(hook.get_sync_status(DATA_SOURCE))
        payloads = [event.extra["payload"] for event in events]
        return max(payloads, key=lambda payload: payload["last_synced_at"])  # RFC 3339 UTC: sorts by time

    # [END howto_event_trigger_analytics_read_the_event]

    sync = synced()
    report = GenerateReportOperator(
        task_id="sales_report",
        dashboard_ids=["db_sales"],
        format="csv",
        name="sales-after-sync",
        parameters={"synced_at": sync["last_synced_at"], "data_source_id": sync["data_source_id"]},
        deferrable=True,
        poll_interval=2,
        timeout=1800,
        # A retry reattaches to the report this task started (it never generates a second one), so retrying
        # soon is safe; it also covers Airflow failing a task that resumes very quickly (docs/deployment.md).
        retries=2,
        retry_delay=timedelta(seconds=15),
    )
    sync >> report
