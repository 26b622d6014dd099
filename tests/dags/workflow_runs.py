"""Test DAGs for ExecuteWorkflowOperator, one set per waiting mode. Ids come from ``dag_run.conf``."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from airflow.providers.common.compat.sdk import DAG, task

from airflow_provider_analytics.operators.workflows import ExecuteWorkflowOperator

START = datetime(2026, 1, 1)
WORKFLOW = "{{ dag_run.conf['workflow_id'] }}"

for mode in ("poll", "defer"):
    deferrable = mode == "defer"

    with DAG(f"test_workflow_{mode}", schedule=None, start_date=START, catchup=False):

        @task
        def use_outputs(execution: dict[str, Any]) -> int:
            return int(execution["outputs"]["rows_processed"])

        run = ExecuteWorkflowOperator(
            task_id="run",
            workflow_id=WORKFLOW,
            inputs={"day": "{{ ds }}", "source": "{{ dag_run.conf.get('source', 'test') }}"},
            deferrable=deferrable,
            poll_interval=0.1,
            timeout=60,
        )
        use_outputs(run.output)  # type: ignore[arg-type]  # Airflow resolves the XComArg before the call

    with DAG(f"test_workflow_timeout_{mode}", schedule=None, start_date=START, catchup=False):
        ExecuteWorkflowOperator(
            task_id="run", workflow_id=WORKFLOW, deferrable=deferrable, poll_interval=0.1, timeout=1
        )

    with DAG(f"test_workflow_reattach_{mode}", schedule=None, start_date=START, catchup=False):
        # The first try gives up after 2 s without cancelling; the retry must find the same execution.
        ExecuteWorkflowOperator(
            task_id="run",
            workflow_id=WORKFLOW,
            deferrable=deferrable,
            poll_interval=0.1,
            timeout=2,
            cancel_on_kill=False,
            retries=1,
            retry_delay=timedelta(0),
        )

    with DAG(f"test_workflow_nowait_{mode}", schedule=None, start_date=START, catchup=False):
        ExecuteWorkflowOperator(task_id="run", workflow_id=WORKFLOW, wait_for_completion=False, deferrable=deferrable)

    with DAG(f"test_workflow_reattach_late_{mode}", schedule=None, start_date=START, catchup=False):
        # The retry comes after the execution finished: it must return that result, not start another.
        ExecuteWorkflowOperator(
            task_id="run",
            workflow_id=WORKFLOW,
            deferrable=deferrable,
            poll_interval=0.1,
            timeout=1,
            cancel_on_kill=False,
            retries=1,
            retry_delay=timedelta(seconds=3),
        )

    with DAG(f"test_workflow_retry_after_failure_{mode}", schedule=None, start_date=START, catchup=False):
        ExecuteWorkflowOperator(
            task_id="run",
            workflow_id=WORKFLOW,
            deferrable=deferrable,
            poll_interval=0.1,
            retries=1,
            retry_delay=timedelta(0),
        )

    with DAG(f"test_workflow_refused_{mode}", schedule=None, start_date=START, catchup=False):
        # Two retries that a refused request must not spend.
        ExecuteWorkflowOperator(
            task_id="run",
            workflow_id=WORKFLOW,
            deferrable=deferrable,
            poll_interval=0.1,
            retries=2,
            retry_delay=timedelta(0),
        )

    with DAG(f"test_workflow_execution_timeout_{mode}", schedule=None, start_date=START, catchup=False):
        # No `timeout`: the task's own execution_timeout bounds the wait; the execution must be cancelled.
        ExecuteWorkflowOperator(
            task_id="run",
            workflow_id=WORKFLOW,
            deferrable=deferrable,
            poll_interval=0.1,
            execution_timeout=timedelta(seconds=4),
        )
