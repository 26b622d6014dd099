"""Test DAGs for the sensors under the platform's rate limit, in poke, reschedule and deferrable modes.

``test_paused_<sensor>_<mode>`` waits up to 30 s, longer than the pauses the tests script; ``test_paused_execution_
<mode>_short[_soft]`` waits 3 s, shorter than them. ``DataSourceSyncedSensor``'s short waits are ``sync_gates.py``'s.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from airflow.providers.common.compat.sdk import DAG

from airflow_provider_analytics.sensors.data_sources import DataSourceSyncedSensor
from airflow_provider_analytics.sensors.workflows import WorkflowExecutionSensor

START = datetime(2026, 1, 1)

for mode in ("poke", "reschedule", "defer"):
    waiting: dict[str, Any] = {"mode": "reschedule" if mode == "reschedule" else "poke", "deferrable": mode == "defer"}

    with DAG(f"test_paused_sync_{mode}", schedule=None, start_date=START, catchup=False):
        DataSourceSyncedSensor(
            task_id="wait",
            data_source_id="{{ dag_run.conf['data_source_id'] }}",
            synced_after="{{ dag_run.conf['synced_after'] }}",
            poke_interval=0.1,
            timeout=30,
            **waiting,
        )

    with DAG(f"test_paused_execution_{mode}", schedule=None, start_date=START, catchup=False):
        WorkflowExecutionSensor(
            task_id="wait",
            workflow_id="{{ dag_run.conf['workflow_id'] }}",
            execution_id="{{ dag_run.conf['execution_id'] }}",
            poke_interval=0.1,
            timeout=30,
            **waiting,
        )

    for soft_fail in (False, True):
        suffix = "_soft" if soft_fail else ""
        with DAG(f"test_paused_execution_{mode}_short{suffix}", schedule=None, start_date=START, catchup=False):
            WorkflowExecutionSensor(
                task_id="wait",
                workflow_id="{{ dag_run.conf['workflow_id'] }}",
                execution_id="{{ dag_run.conf['execution_id'] }}",
                poke_interval=0.1,
                timeout=3,
                soft_fail=soft_fail,
                **waiting,
            )
