"""A task that fails without retries: its error's text once in the task log, and why no retry on a line of its own.

Airflow's task log prints every exception of a chain with its message and frames (``traceback`` on 2.x, the
same chain as structured frames on 3.x), so a ``FinalFailure`` chained to its error showed that error twice.
"""

from __future__ import annotations

import traceback
from collections.abc import Callable
from typing import Any

import pytest

from airflow_provider_analytics.operators._common import AnalyticsBaseOperator
from airflow_provider_analytics.operators.definitions import ApplyDefinitionsOperator
from airflow_provider_analytics.operators.workflows import ExecuteWorkflowOperator
from airflow_provider_analytics.sandbox.server import SandboxServer
from airflow_provider_analytics.wire.errors import AnalyticsInputError
from tests.support.context import make_context
from tests.support.final import raises_final

FAILING: list[Any] = [
    pytest.param(lambda: ExecuteWorkflowOperator(task_id="t", workflow_id="wf nightly!", retries=2), id="one-line"),
    pytest.param(
        # Two problems: the error lists them as bullets, the last of which the "(not retried" was glued to.
        lambda: ApplyDefinitionsOperator(
            task_id="t", definitions={"charts": [{"name": "Revenue", "colour": "red"}]}, retries=2
        ),
        id="bullets",
    ),
]


@pytest.mark.parametrize("build", FAILING)
def test_the_log_shows_the_errors_text_once_and_why_not_retried_on_its_own_line(
    sandbox: SandboxServer, build: Callable[[], AnalyticsBaseOperator]
) -> None:
    with raises_final(AnalyticsInputError) as caught:
        build().execute(make_context())
    final = caught.final
    logged = "".join(traceback.format_exception(type(final), final, final.__traceback__))
    first_line = str(caught.value).splitlines()[0]
    assert logged.count(first_line) == 1, logged
    assert "direct cause" not in logged
    assert "During handling" not in logged
    *error_lines, why = str(final).splitlines()
    assert error_lines == str(caught.value).splitlines()
    assert why.startswith("(not retried: the task's input is invalid")
