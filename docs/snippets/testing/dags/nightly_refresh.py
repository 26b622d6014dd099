# [START testing_dag]
from datetime import datetime

from airflow.providers.common.compat.sdk import DAG, task

from airflow_provider_analytics.operators.workflows import ExecuteWorkflowOperator

with DAG(dag_id="nightly_refresh", schedule="@daily", start_date=datetime(2026, 11, 1), catchup=False):
    enrich = ExecuteWorkflowOperator(
        task_id="enrich",
        workflow_id="wf_nightly_enrichment",
        inputs={"mode": "incremental"},
        deferrable=True,  # dag.test() runs the trigger inline
        poll_interval=0.2,
    )

    @task
    def rows_processed(execution: dict) -> int:
        return int(execution["outputs"]["rows_processed"])

    rows_processed(enrich.output)
# [END testing_dag]
