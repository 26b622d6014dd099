"""Test DAGs for AnalyticsRetryPolicy: tasks that call the hook themselves (Airflow 3.3 and later only)."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from airflow.providers.common.compat.sdk import DAG, task

from airflow_provider_analytics.version_compat import HAS_TASK_RETRY_POLICIES

if HAS_TASK_RETRY_POLICIES:
    from airflow_provider_analytics.hooks.analytics import AnalyticsHook
    from airflow_provider_analytics.operators.retry_policy import AnalyticsRetryPolicy

    for with_policy in (True, False):
        name = "with" if with_policy else "without"
        with DAG(f"test_retry_policy_{name}", schedule=None, start_date=datetime(2026, 1, 1), catchup=False):

            @task(retries=2, retry_delay=timedelta(0), retry_policy=AnalyticsRetryPolicy() if with_policy else None)
            def start(workflow_id: str) -> dict[str, Any]:
                hook = AnalyticsHook()
                try:
                    return dict(hook.execute_workflow(workflow_id))
                finally:
                    hook.close()

            start("{{ dag_run.conf['workflow_id'] }}")
