"""DAGs of definitions whose secrets come from Airflow (tests/airflow/test_definitions_secrets.py): a reviewed plan
pins the secrets its apply reads, and exported files apply the platform's values as the literals they were."""

from __future__ import annotations

from datetime import datetime

from airflow.providers.common.compat.sdk import DAG

from airflow_provider_analytics.operators.definitions import ApplyDefinitionsOperator

START = datetime(2026, 1, 1)


def warehouse_reading(conn_id: str) -> dict[str, object]:
    """A data source whose password is kept in the Airflow connection ``conn_id`` (templated)."""
    connection = {"project": "sales", "password": {"from_connection": conn_id}}
    return {"data_sources": [{"name": "reviewed-warehouse", "type": "bigquery", "connection": connection}]}


# A plan task, then an apply of that plan; conf "edited" stands for the reference edited between review and apply.
with DAG("test_definitions_secret_review", schedule=None, start_date=START, catchup=False):
    plan = ApplyDefinitionsOperator(
        task_id="plan", definitions=warehouse_reading("{{ dag_run.conf['conn'] }}"), plan_only=True
    )
    ApplyDefinitionsOperator(
        task_id="apply",
        definitions=warehouse_reading("{{ dag_run.conf.get('edited', dag_run.conf['conn']) }}"),
        reviewed_plan=plan.output,
        retries=2,
    )

# The files an export wrote, applied (to a workspace where their objects are gone).
with DAG("test_definitions_applied_from_files", schedule=None, start_date=START, catchup=False):
    ApplyDefinitionsOperator(task_id="apply", definitions="{{ dag_run.conf['folder'] }}/*/*.yaml")

# A secret kept in Airflow whose value no request can carry (conf "variable": a variable holding a lone surrogate).
with DAG("test_definitions_odd_secret", schedule=None, start_date=START, catchup=False):
    ApplyDefinitionsOperator(
        task_id="apply",
        definitions={
            "workflows": [
                {"name": "odd-secret", "configuration": {"token": {"from_variable": "{{ dag_run.conf['variable'] }}"}}}
            ]
        },
        retries=2,
    )
