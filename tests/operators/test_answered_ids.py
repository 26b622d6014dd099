"""An id the platform answers with is checked before anything keeps it (issue 44, finding 10).

A start answered with the id ``../../admin`` used to reach XCom, ``task_state_store``, the link into the platform's
UI and the log, and the task then failed blaming a poll it never sent. Now the start itself fails, named, and
nothing of the id is kept anywhere; so does a create whose answered id would be pushed, linked or logged. Against
the sandbox over real sockets; its fault injection gives the answers.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from airflow_provider_analytics.operators.charts import CreateChartOperator
from airflow_provider_analytics.operators.dashboards import CreateDashboardOperator
from airflow_provider_analytics.operators.data_sources import ConnectDataSourceOperator
from airflow_provider_analytics.operators.reports import GenerateReportOperator
from airflow_provider_analytics.operators.workflows import CreateWorkflowOperator, ExecuteWorkflowOperator
from airflow_provider_analytics.sandbox.faults import Fault
from airflow_provider_analytics.sandbox.server import SandboxServer
from airflow_provider_analytics.wire.errors import UnexpectedResponseError
from tests.support.context import TaskContext, make_context, retry_context
from tests.support.names import JSON_HEADERS, POLL, WORKFLOW
from tests.support.task_log import task_log

BAD_IDS = ["../../admin", "ex 1", "x" * 65, "ex_1\nINFO forged line"]
EXECUTE = f"/v1/workflows/{WORKFLOW}/execute"


def answer(sandbox: SandboxServer, path: str, status: int, body: dict[str, Any]) -> None:
    # Twice: a retry's walk replays the start's key and gets the same answer.
    sandbox.state.inject(
        Fault.respond(status, headers=JSON_HEADERS, body=json.dumps(body), method="POST", path=f"^{path}$", times=2)
    )


def execution(bad_id: str) -> dict[str, Any]:
    return {"id": bad_id, "workflow_id": WORKFLOW, "status": "queued", "error": None}


def report(bad_id: str) -> dict[str, Any]:
    return {"id": bad_id, "dashboard_ids": ["db_sales"], "format": "pdf", "status": "pending", "error": None}


STARTS: list[Any] = [
    pytest.param(
        lambda deferrable: ExecuteWorkflowOperator(
            task_id="run", workflow_id=WORKFLOW, poll_interval=POLL, deferrable=deferrable
        ),
        EXECUTE,
        execution,
        id="execution",
    ),
    pytest.param(
        lambda deferrable: GenerateReportOperator(
            task_id="report", dashboard_ids=["db_sales"], poll_interval=POLL, deferrable=deferrable
        ),
        "/v1/reports",
        report,
        id="report",
    ),
]
TRIES: list[Any] = [
    pytest.param(make_context, id="first try"),
    pytest.param(lambda: retry_context(2), id="retry without task_state_store"),
]


def kept_nothing(context: TaskContext, sandbox: SandboxServer, path: str, lines: list[tuple[str, str]]) -> None:
    assert context["ti"].xcom == {}, "no id, no link"
    store = context.get("task_state_store")
    assert store is None or store.values == {}
    assert [(r.method, r.path) for r in sandbox.state.requests] == [("POST", path)], "nothing read by that id"
    assert not [line for line in lines if "admin" in line[1] or "forged" in line[1] or "ex 1" in line[1]]


@pytest.mark.parametrize("bad_id", BAD_IDS)
@pytest.mark.parametrize("deferrable", [False, True], ids=["poll", "defer"])
@pytest.mark.parametrize("try_context", TRIES)
@pytest.mark.parametrize(("make", "path", "body"), STARTS)
def test_a_start_answered_with_an_id_of_another_shape_fails_the_start_and_keeps_nothing(
    sandbox: SandboxServer,
    caplog: pytest.LogCaptureFixture,
    make: Callable[[bool], Any],
    path: str,
    body: Callable[[str], dict[str, Any]],
    try_context: Callable[[], TaskContext],
    deferrable: bool,
    bad_id: str,
) -> None:
    answer(sandbox, path, 202, body(bad_id))
    context = try_context()
    with task_log(caplog) as lines, pytest.raises(UnexpectedResponseError) as caught:
        make(deferrable).execute(context)
    message = str(caught.value)
    assert message.startswith(f"POST {path}: the platform answered with the "), message  # the start, not a poll
    assert "which is not an id" in message
    assert "polling" not in message
    assert "\n" not in message  # the id is shown as its repr: it forges no line
    assert caught.value.request_id  # the answer's request id, for the platform's support
    kept_nothing(context, sandbox, path, lines)


CREATES: list[Any] = [
    pytest.param(
        lambda: CreateDashboardOperator(task_id="create", name="Ops"),
        "/v1/dashboards",
        {"name": "Ops", "description": "", "tags": [], "layout": [], "version": 1},
        "dashboard 'Ops'",
        id="dashboard",
    ),
    pytest.param(
        lambda: CreateChartOperator(
            task_id="create", name="Ops", type="line", data_source_id="ds_warehouse", query="select 1"
        ),
        "/v1/charts",
        {"name": "Ops", "type": "line", "data_source_id": "ds_warehouse", "query": "select 1", "options": {}},
        "chart 'Ops'",
        id="chart",
    ),
    pytest.param(
        lambda: ConnectDataSourceOperator(task_id="create", name="Ops", type="postgres", connection={"host": "db"}),
        "/v1/data-sources",
        {"name": "Ops", "type": "postgres", "connection": {"host": "db"}},
        "data source 'Ops'",
        id="data source",
    ),
    pytest.param(
        lambda: CreateWorkflowOperator(task_id="create", name="Ops", configuration={"steps": []}),
        "/v1/workflows",
        {"name": "Ops", "description": "", "configuration": {"steps": []}},
        "workflow 'Ops'",
        id="workflow",
    ),
]


@pytest.mark.parametrize("bad_id", BAD_IDS)
@pytest.mark.parametrize(("make", "path", "created", "named"), CREATES)
def test_a_create_answered_with_an_id_of_another_shape_is_neither_pushed_linked_nor_logged(
    sandbox: SandboxServer,
    caplog: pytest.LogCaptureFixture,
    make: Callable[[], Any],
    path: str,
    created: dict[str, Any],
    named: str,
    bad_id: str,
) -> None:
    answer(sandbox, path, 201, {"id": bad_id, **created})
    context = make_context()
    with task_log(caplog) as lines, pytest.raises(UnexpectedResponseError, match=f"id of {named}"):
        make().execute(context)
    kept_nothing(context, sandbox, path, lines)
