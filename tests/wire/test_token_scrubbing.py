"""A platform (or a proxy) that repeats the caller's token: it reaches no exception, log line, event or XCom."""

from __future__ import annotations

import json
import logging

import pytest

from airflow_provider_analytics.hooks.analytics import AnalyticsHook
from airflow_provider_analytics.operators.errors import RemoteJobFailed, RemoteWaitError
from airflow_provider_analytics.operators.workflows import ExecuteWorkflowOperator
from airflow_provider_analytics.sandbox.faults import Fault
from airflow_provider_analytics.sandbox.server import SandboxServer
from airflow_provider_analytics.triggers.executions import ExecutionTrigger
from airflow_provider_analytics.wire._redaction import scrub_text
from airflow_provider_analytics.wire.errors import NotFoundError, ServerError
from tests.support.context import make_context
from tests.support.names import JSON_HEADERS, POLL, WORKFLOW
from tests.support.triggers import only_event, soon

OTHER_CREDENTIAL = "Bearer sk_live_someone_elses_0123456789"


def echo(sandbox: SandboxServer) -> str:
    """A message that quotes the request's Authorization header, as a careless platform or proxy might."""
    return f"no access for Authorization: Bearer {sandbox.token} (key {sandbox.token}); also tried {OTHER_CREDENTIAL}"


def error_body(sandbox: SandboxServer, status_type: str = "not_found") -> str:
    return json.dumps(
        {
            "error": {
                "type": status_type,
                "message": echo(sandbox),
                "details": {"authorization": f"Bearer {sandbox.token}", "token": sandbox.token},
            }
        }
    )


def assert_clean(sandbox: SandboxServer, *texts: object) -> None:
    for text in texts:
        assert sandbox.token not in str(text)
        assert "sk_live_someone_elses" not in str(text)


def test_an_error_that_echoes_the_token_does_not_carry_it(
    sandbox: SandboxServer, hook: AnalyticsHook, caplog: pytest.LogCaptureFixture
) -> None:
    sandbox.state.inject(Fault.respond(404, headers=JSON_HEADERS, body=error_body(sandbox), path="/reports/rp_x$"))
    with caplog.at_level(logging.DEBUG), pytest.raises(NotFoundError) as caught:
        hook.get_report("rp_x")
    error = caught.value
    assert_clean(sandbox, error, repr(error), error.message, error.details, caplog.text)
    assert "Authorization: Bearer ***" in str(error)  # what was hidden stays legible
    assert error.details == {"authorization": "Bearer ***", "token": "***"}


def test_a_retried_server_error_that_echoes_the_token_logs_none(
    sandbox: SandboxServer, hook: AnalyticsHook, caplog: pytest.LogCaptureFixture
) -> None:
    body = error_body(sandbox, "internal")
    sandbox.state.inject(Fault.respond(500, headers=JSON_HEADERS, body=body, path="/workflows$", times=10))
    with caplog.at_level(logging.DEBUG), pytest.raises(ServerError) as caught:
        list(hook.list_workflows())
    assert_clean(sandbox, caught.value, caplog.text)


def test_a_json_answer_that_echoes_the_token_is_handed_on_without_it(
    sandbox: SandboxServer, hook: AnalyticsHook
) -> None:
    # Once plainly, once with "/" escaped and once behind \u escapes, which only the decoded value shows.
    escaped = "".join(f"\\u{ord(char):04x}" for char in sandbox.token)
    raw = (
        '{"id": "ex_1", "workflow_id": "' + WORKFLOW + '", "status": "running", "error": null, "parameters": '
        '{"plain": "' + sandbox.token + '", "slashes": "' + sandbox.token.replace("/", "\\/") + '", '
        '"escaped": "' + escaped + '", "header": ["Bearer ' + sandbox.token + '"]}}'
    )  # fmt: skip
    sandbox.state.inject(Fault.respond(200, headers=JSON_HEADERS, body=raw, path="/executions/ex_1$"))
    answer = hook.get_execution(WORKFLOW, "ex_1")
    assert_clean(sandbox, json.dumps(answer))
    assert dict(answer)["parameters"] == {"plain": "***", "slashes": "***", "escaped": "***", "header": ["Bearer ***"]}


def test_a_failed_execution_whose_error_echoes_the_token(sandbox: SandboxServer) -> None:
    failed = {
        "id": "ex_1",
        "workflow_id": WORKFLOW,
        "status": "failed",
        "error": {"type": "x", "message": echo(sandbox)},
    }
    sandbox.state.inject(
        Fault.respond(200, headers=JSON_HEADERS, body=json.dumps(failed), path="/executions/ex_1$", times=5),
        Fault.respond(
            202,
            headers=JSON_HEADERS,
            body=json.dumps({**failed, "status": "queued", "error": None}),
            path=f"/v1/workflows/{WORKFLOW}/execute$",
        ),
    )
    context = make_context()
    with pytest.raises(RemoteJobFailed) as caught:
        ExecuteWorkflowOperator(task_id="run", workflow_id=WORKFLOW, poll_interval=POLL).execute(context)
    assert_clean(sandbox, caught.value, json.dumps(context["ti"].xcom, default=str))


def test_a_trigger_event_carries_no_token(sandbox: SandboxServer) -> None:
    sandbox.state.inject(
        Fault.respond(404, headers=JSON_HEADERS, body=error_body(sandbox), path="/executions/ex_gone$", times=5)
    )
    trigger = ExecutionTrigger(workflow_id=WORKFLOW, execution_id="ex_gone", poll_interval=POLL, deadline=soon())
    event = only_event(trigger)
    assert event["status"] == "error"
    assert_clean(sandbox, json.dumps(event))
    assert_clean(sandbox, RemoteWaitError.from_event(event["message"], event.get("api_error")))


def test_prose_about_bearer_tokens_is_left_as_written() -> None:
    assert scrub_text("send a Bearer token in the Authorization header") == (
        "send a Bearer token in the Authorization header"
    )
