"""Test DAGs for input the definitions refuse, each task with retries that an input error must not spend.

Each failure here used to be a bare Python exception (``RecursionError``, ``TypeError``, ``UnicodeEncodeError``),
which Airflow took for a transient one and retried.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from airflow.providers.common.compat.sdk import DAG

from airflow_provider_analytics.operators.definitions import ApplyDefinitionsOperator, ExportDefinitionsOperator

START = datetime(2026, 1, 1)
RETRIES: dict[str, Any] = {"retries": 2, "retry_delay": timedelta(0)}


def nested_plan(depth: int) -> dict[str, Any]:
    """A plan whose one row's ``fields`` nest ``depth`` levels deep: what a broken or hostile upstream could push."""
    fields: Any = "bottom"
    for _ in range(depth):
        fields = [fields]
    return {"changes": [{"kind": "dashboard", "name": "Sales", "action": "create", "fields": fields}]}


with DAG("test_definitions_file", schedule=None, start_date=START, catchup=False):
    ApplyDefinitionsOperator(task_id="apply", definitions="{{ dag_run.conf['path'] }}", **RETRIES)

# The plan comes from a template rendered to a native object, as "{{ ti.xcom_pull(...) }}" would give it.
with DAG(
    "test_definitions_reviewed_input",
    schedule=None,
    start_date=START,
    catchup=False,
    render_template_as_native_obj=True,
    user_defined_macros={"nested_plan": nested_plan},
):
    ApplyDefinitionsOperator(
        task_id="apply",
        definitions={"dashboards": [{"name": "Sales"}]},
        reviewed_plan="{{ nested_plan(dag_run.conf['depth']) }}",
        **RETRIES,
    )

with DAG("test_definitions_export_input", schedule=None, start_date=START, catchup=False):
    ExportDefinitionsOperator(
        task_id="export", destination="{{ dag_run.conf['folder'] }}/", kinds=["workflows"], **RETRIES
    )
