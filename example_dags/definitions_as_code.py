"""(g) Data sources, charts, dashboards and workflows kept as code: a plan you can read, then only what differs.

``apply`` reads the files in ``definitions/as_code/``, reads what the platform has (four listings), logs the plan
as a table and makes the platform match: the first run creates everything in dependency order, every later run
sends only the four reads until a file changes. A dashboard edited in the platform UI shows up in the plan as an
update with the fields that differ.
"""

from __future__ import annotations

from datetime import datetime

from airflow.providers.common.compat.sdk import DAG

from airflow_provider_analytics.operators.definitions import ApplyDefinitionsOperator

with DAG(
    dag_id="analytics_definitions_as_code",
    schedule="@daily",
    start_date=datetime(2026, 11, 1),
    catchup=False,
    # Two runs planning at once would both create what is missing: the platform does not keep names unique.
    max_active_runs=1,
    tags=["analytics", "example"],
):
    # [START howto_operator_analytics_apply_definitions]
    apply = ApplyDefinitionsOperator(
        task_id="apply",
        definitions="definitions/as_code/*.yaml",  # read from this DAG file's folder
    )
    # [END howto_operator_analytics_apply_definitions]
