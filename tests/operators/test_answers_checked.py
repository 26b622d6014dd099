"""Answers are checked against the question (issue 33): a listing entry without an id, an answer about another
object, platform text of any size inside a successful answer.

Against the sandbox over real sockets; its fault injection gives the wrong answers.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from typing import Any

import pytest
from airflow.providers.common.compat.sdk import AirflowSensorTimeout

from airflow_provider_analytics.hooks.analytics import AnalyticsHook
from airflow_provider_analytics.operators.errors import RemoteJobFailed, RemoteWaitError
from airflow_provider_analytics.operators.workflows import ExecuteWorkflowOperator
from airflow_provider_analytics.sandbox.faults import Fault
from airflow_provider_analytics.sandbox.server import SandboxServer
from airflow_provider_analytics.sensors.data_sources import DataSourceSyncedSensor
from airflow_provider_analytics.sensors.workflows import WorkflowExecutionSensor
from airflow_provider_analytics.triggers.base import AnalyticsPollTrigger
from airflow_provider_analytics.triggers.data_sources import DataSourceSyncTrigger
from airflow_provider_analytics.triggers.executions import ExecutionTrigger
from airflow_provider_analytics.triggers.reports import ReportTrigger
from airflow_provider_analytics.wire._names import ids_for_names
from airflow_provider_analytics.wire.errors import AnswerMismatchError, UnexpectedResponseError
from tests.support.context import make_context
from tests.support.final import raises_final
from tests.support.names import DATA_SOURCE, JSON_HEADERS, POLL, WORKFLOW
from tests.support.task_log import task_log
from tests.support.triggers import soon, triggerer_event

WORKFLOW_NAME = "nightly-enrichment"  # WORKFLOW's name in the seed
NOW = datetime.now(UTC).isoformat()
# What a hostile platform puts in a failed execution's error: 200,045 characters with ESC and BEL.
HUGE_MESSAGE = "\x1b[31mboom\x07 " + "x" * 200_034


def answer(sandbox: SandboxServer, body: dict[str, Any], path: str, status: int = 200, times: int = 50) -> None:
    sandbox.state.inject(Fault.respond(status, headers=JSON_HEADERS, body=json.dumps(body), path=path, times=times))


def writes(sandbox: SandboxServer) -> list[tuple[str, str]]:
    return [(r.method, r.path) for r in sandbox.state.requests if r.method != "GET"]


def sensor(execution_id: str) -> WorkflowExecutionSensor:
    return WorkflowExecutionSensor(
        task_id="sense", workflow_id=WORKFLOW, execution_id=execution_id, poke_interval=POLL, timeout=60
    )


# --- names: the listing is checked before any name is matched ---------------------------------------------


@pytest.mark.parametrize("entry", [{}, {"id": None}, {"id": 7}], ids=["missing", "null", "integer"])
def test_a_listed_workflow_without_a_string_id_is_refused_before_any_write(
    sandbox: SandboxServer, entry: dict[str, Any]
) -> None:
    listing = {"data": [{**entry, "name": WORKFLOW_NAME}], "next_cursor": None}
    answer(sandbox, listing, "/v1/workflows$")
    op = ExecuteWorkflowOperator(task_id="run", workflow_name=WORKFLOW_NAME, poll_interval=POLL)
    with pytest.raises(UnexpectedResponseError, match="listed a workflow without a valid id") as caught:
        op.execute(make_context())
    assert repr({**entry, "name": WORKFLOW_NAME}) in str(caught.value)
    assert writes(sandbox) == []  # never POST /v1/workflows/None/execute


def test_an_object_listed_twice_is_one_object() -> None:
    listed = [{"id": "da_9", "name": "Sales"}, {"id": "da_9", "name": "Sales"}, {"id": "da_1", "name": "Ops"}]
    assert ids_for_names("dashboard", listed, ["Sales", "Ops"]) == ["da_9", "da_1"]


# --- every wait checks that the answer is about what it asked ---------------------------------------------


def test_a_poke_refuses_an_answer_about_another_execution(sandbox: SandboxServer, hook: AnalyticsHook) -> None:
    execution = hook.execute_workflow(WORKFLOW)
    other = {"id": "ex_OTHER", "workflow_id": "wf_OTHER", "status": "succeeded", "error": None}
    answer(sandbox, other, f"/executions/{execution['id']}$")
    with pytest.raises(AnswerMismatchError) as caught:
        sensor(execution["id"]).execute(make_context())
    message = str(caught.value)
    assert f"asked about execution {execution['id']} of workflow {WORKFLOW}" in message
    assert "id 'ex_OTHER', workflow_id 'wf_OTHER'" in message
    assert "request id" in message  # raised where the client reads the answer, so it names the request


def test_the_worker_loop_refuses_an_answer_about_another_execution(sandbox: SandboxServer) -> None:
    answer(sandbox, {"id": "ex_OTHER", "workflow_id": WORKFLOW, "status": "succeeded"}, "/executions/ex_")
    op = ExecuteWorkflowOperator(task_id="run", workflow_id=WORKFLOW, poll_interval=POLL)
    with pytest.raises(RemoteWaitError, match="answered about another object") as caught:
        op.execute(make_context())
    assert isinstance(caught.value.__cause__, AnswerMismatchError)
    assert caught.value.request_id  # the wait's error names the request that got the wrong answer


def test_a_start_that_answers_with_another_workflows_execution_is_refused(sandbox: SandboxServer) -> None:
    queued = {"id": "ex_1", "workflow_id": "wf_OTHER", "status": "queued", "error": None}
    answer(sandbox, queued, f"/v1/workflows/{WORKFLOW}/execute$", status=202, times=1)
    op = ExecuteWorkflowOperator(task_id="run", workflow_id=WORKFLOW, poll_interval=POLL)
    with pytest.raises(AnswerMismatchError, match=f"asked to execute workflow '{WORKFLOW}'.*'wf_OTHER'"):
        op.execute(make_context())
    assert [r.method for r in sandbox.state.requests] == ["POST"]  # it did not wait on wf_OTHER's execution


WRONG_ANSWERS = [
    (
        lambda: ExecutionTrigger(workflow_id=WORKFLOW, execution_id="ex_1", poll_interval=POLL, deadline=soon()),
        {"id": "ex_OTHER", "workflow_id": "wf_OTHER", "status": "succeeded"},
        "/executions/ex_1$",
    ),
    (
        lambda: ReportTrigger(report_id="rp_1", poll_interval=POLL, deadline=soon()),
        {"id": "rp_OTHER", "status": "ready"},
        "/reports/rp_1$",
    ),
    (
        lambda: DataSourceSyncTrigger(
            data_source_id=DATA_SOURCE, synced_after="2020-01-01T00:00:00Z", poll_interval=POLL, deadline=soon()
        ),
        {"data_source_id": "ds_OTHER", "status": "synced", "last_synced_at": NOW},
        "/sync$",
    ),
]


@pytest.mark.parametrize(("build", "other", "path"), WRONG_ANSWERS, ids=["execution", "report", "sync"])
def test_every_trigger_ends_on_an_answer_about_another_object(
    sandbox: SandboxServer, build: Any, other: dict[str, Any], path: str
) -> None:
    trigger: AnalyticsPollTrigger = build()
    answer(sandbox, other, path)
    event = triggerer_event(trigger)
    assert event["status"] == "error"  # not the other object's success
    assert event["resource"] is None
    assert "answered about another object" in event["message"]
    assert re.search(r"_OTHER'", event["message"])
    assert event["api_error"]["request_id"]
    assert len(sandbox.state.requests) == 1  # a wrong answer is not polled past


# --- platform text inside a successful answer is folded and capped ----------------------------------------


def failed_with_huge_text(sandbox: SandboxServer, execution_id: str) -> None:
    error = {"type": "\x1b]0;pwned\x07" + "t" * 5_000, "message": HUGE_MESSAGE}
    failed = {"id": execution_id, "workflow_id": WORKFLOW, "status": "failed", "error": error}
    answer(sandbox, failed, f"/executions/{execution_id}$")


def assert_folded(text: str) -> None:
    assert not re.search(r"[\x00-\x1f\x7f]", text), text[:200]
    assert len(text) < 2_000
    assert "boom" in text
    assert "more characters" in text  # cut short, and it says so


def test_a_huge_error_message_is_folded_and_capped_in_the_failure(sandbox: SandboxServer, hook: AnalyticsHook) -> None:
    execution = hook.execute_workflow(WORKFLOW)
    failed_with_huge_text(sandbox, execution["id"])
    with raises_final(RemoteJobFailed) as caught:
        sensor(execution["id"]).execute(make_context())
    assert_folded(str(caught.value))


def test_a_huge_error_message_is_folded_and_capped_in_the_event(sandbox: SandboxServer) -> None:
    failed_with_huge_text(sandbox, "ex_1")
    event = triggerer_event(
        ExecutionTrigger(workflow_id=WORKFLOW, execution_id="ex_1", poll_interval=POLL, deadline=soon())
    )
    assert event["status"] == "failure"
    assert len(json.dumps(event)) < 5_000  # what Airflow stores in its database
    assert_folded(event["resource"]["error"]["message"])
    assert not re.search(r"[\x00-\x1f\x7f]", event["resource"]["error"]["type"])


def test_a_status_the_contract_does_not_know_is_folded_and_capped_in_a_sync_poke_line(
    sandbox: SandboxServer, caplog: pytest.LogCaptureFixture
) -> None:
    status = {"data_source_id": DATA_SOURCE, "status": HUGE_MESSAGE, "last_synced_at": None, "error": None}
    answer(sandbox, status, f"/data-sources/{DATA_SOURCE}/sync$")
    gate = DataSourceSyncedSensor(task_id="gate", data_source_id=DATA_SOURCE, synced_after=NOW, poke_interval=POLL)
    try:
        with task_log(caplog) as lines:
            assert not gate.poke(make_context())
    finally:
        gate.hook.close()  # a poke outside execute: nothing else closes its connection pool
    (said,) = [message for _, message in lines if DATA_SOURCE in message and "boom" in message]
    assert_folded(said)


def test_a_status_the_contract_does_not_know_is_folded_and_capped_in_a_sensor_timeout(sandbox: SandboxServer) -> None:
    answer(sandbox, {"id": "ex_1", "workflow_id": WORKFLOW, "status": HUGE_MESSAGE}, "/executions/ex_1$")
    waiting = WorkflowExecutionSensor(
        task_id="sense", workflow_id=WORKFLOW, execution_id="ex_1", poke_interval=POLL, timeout=0.5, mode="poke"
    )
    with pytest.raises(AirflowSensorTimeout) as caught:
        waiting.execute(make_context())
    assert_folded(str(caught.value))
