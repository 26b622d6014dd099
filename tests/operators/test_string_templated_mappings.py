"""A mapping parameter that rendered to a string names the DAG setting that fixes it, before any request."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from airflow_provider_analytics.operators.charts import CreateChartOperator
from airflow_provider_analytics.operators.dashboards import CreateDashboardOperator, UpdateDashboardOperator
from airflow_provider_analytics.operators.data_sources import ConnectDataSourceOperator
from airflow_provider_analytics.operators.reports import GenerateReportOperator
from airflow_provider_analytics.operators.workflows import CreateWorkflowOperator, ExecuteWorkflowOperator
from airflow_provider_analytics.sandbox.server import SandboxServer
from airflow_provider_analytics.wire.errors import AnalyticsInputError
from tests.support.context import make_context
from tests.support.final import raises_final
from tests.support.names import DATA_SOURCE, WORKFLOW

# What "{{ dag_run.conf.get('inputs', {}) }}" renders to without render_template_as_native_obj.
RENDERED = "{'day': '2026-11-20', 'token': 'secret-from-conf'}"

CASES: list[tuple[str, str, Callable[[], Any]]] = [
    ("inputs", "a mapping (dict)", lambda: ExecuteWorkflowOperator(task_id="t", workflow_id=WORKFLOW, inputs=RENDERED)),  # type: ignore[arg-type]  # what a template renders
    (
        "configuration",
        "a mapping (dict)",
        lambda: CreateWorkflowOperator(task_id="t", name="w", configuration=RENDERED),  # type: ignore[arg-type]  # what a template renders
    ),
    (
        "parameters",
        "a mapping (dict)",
        lambda: GenerateReportOperator(task_id="t", dashboard_ids=["db_sales"], parameters=RENDERED),  # type: ignore[arg-type]  # what a template renders
    ),
    (
        "connection",
        "a mapping (dict)",
        lambda: ConnectDataSourceOperator(task_id="t", name="wh", type="postgres", connection=RENDERED),  # type: ignore[arg-type]  # what a template renders
    ),
    (
        "options",
        "a mapping (dict)",
        lambda: CreateChartOperator(
            task_id="t",
            name="c",
            type="line",
            data_source_id=DATA_SOURCE,
            query="select 1",
            options=RENDERED,  # type: ignore[arg-type]  # what a template renders
        ),
    ),
    ("layout", "a list", lambda: CreateDashboardOperator(task_id="t", name="Sales", layout=RENDERED)),
    (
        "layout",
        "a list",
        lambda: UpdateDashboardOperator(task_id="t", dashboard_id="db_sales", name="S", layout=RENDERED),
    ),
]


@pytest.mark.parametrize(("what", "noun", "make"), CASES, ids=[f"{case[0]}-{i}" for i, case in enumerate(CASES)])
def test_a_string_names_render_template_as_native_obj(
    sandbox: SandboxServer, what: str, noun: str, make: Callable[[], Any]
) -> None:
    with raises_final(AnalyticsInputError) as caught:
        make().execute(make_context())
    message = str(caught.value)
    assert message.startswith(f"{what} must be {noun}, got str: ")
    assert "render_template_as_native_obj=True" in message
    assert f"{{{{ params.{what} }}}}" in message
    assert "secret-from-conf" not in message  # the rendered text is never echoed: it may hold secrets
    assert sandbox.state.requests == []


def test_another_type_keeps_the_short_message(sandbox: SandboxServer) -> None:
    op = ExecuteWorkflowOperator(task_id="t", workflow_id=WORKFLOW, inputs=("day", 1))  # type: ignore[arg-type]  # what a template renders
    with raises_final(AnalyticsInputError, match=r"^inputs must be a mapping \(dict\), got tuple$"):
        op.execute(make_context())
    assert sandbox.state.requests == []
