"""DAGs only ``make e2e`` runs: a wait held on the worker (to SIGKILL its task runner) and one deferred."""

from __future__ import annotations

from datetime import datetime, timedelta

from airflow.providers.common.compat.sdk import DAG

from airflow_provider_analytics.operators.workflows import ExecuteWorkflowOperator

for dag_id, deferrable in (("analytics_e2e_worker_wait", False), ("analytics_e2e_deferred_wait", True)):
    with DAG(dag_id=dag_id, schedule=None, start_date=datetime(2026, 11, 1), catchup=False, tags=["e2e"]):
        ExecuteWorkflowOperator(
            task_id="wait",
            workflow_id="wf_sessionize_events",
            inputs={"run": "{{ run_id }}"},
            deferrable=deferrable,
            poll_interval=1,
            timeout=600,
            retries=2,
            retry_delay=timedelta(seconds=2),
        )
