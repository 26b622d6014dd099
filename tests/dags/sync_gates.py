"""Test DAGs for DataSourceSyncedSensor in poke, reschedule and deferrable modes."""

from __future__ import annotations

from datetime import datetime

from airflow.providers.common.compat.sdk import DAG

from airflow_provider_analytics.sensors.data_sources import DataSourceSyncedSensor

for mode in ("poke", "reschedule", "defer"):
    for soft_fail in (False, True):
        suffix = "_soft" if soft_fail else ""
        with DAG(f"test_sync_{mode}{suffix}", schedule=None, start_date=datetime(2026, 1, 1), catchup=False):
            DataSourceSyncedSensor(
                task_id="wait_for_sync",
                data_source_id="{{ dag_run.conf['data_source_id'] }}",
                synced_after="{{ dag_run.conf['synced_after'] }}",
                mode="reschedule" if mode == "reschedule" else "poke",
                deferrable=mode == "defer",
                poke_interval=0.1,
                timeout=3,
                soft_fail=soft_fail,
            )
