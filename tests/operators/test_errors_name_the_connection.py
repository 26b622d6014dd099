"""A task's 401, 403 and unknown-route 404 say what to change, as ``test_connection()`` does, naming the connection."""

from __future__ import annotations

import pytest

from airflow_provider_analytics.hooks.analytics import AnalyticsHook
from airflow_provider_analytics.operators.workflows import ExecuteWorkflowOperator
from airflow_provider_analytics.sandbox.faults import Fault
from airflow_provider_analytics.sandbox.server import SandboxServer
from airflow_provider_analytics.wire import _endpoints as endpoints
from airflow_provider_analytics.wire.errors import (
    ADVICE_NO_API,
    ADVICE_TOKEN_REJECTED,
    ADVICE_WORKSPACE_FORBIDDEN,
    AnalyticsAPIError,
    ForbiddenError,
    NotFoundError,
    UnauthenticatedError,
)
from tests.support.connections import BOGUS_TOKEN, LIMITED_TOKEN, api_requests, set_json_connection
from tests.support.context import make_context
from tests.support.final import raises_final
from tests.support.names import WORKFLOW

NAMED = "(connection 'analytics_default')."


def run_workflow() -> AnalyticsAPIError:
    op = ExecuteWorkflowOperator(task_id="run", workflow_id=WORKFLOW, wait_for_completion=False)
    with pytest.raises(AnalyticsAPIError) as caught:
        op.execute(make_context())
    return caught.value


def test_a_rejected_token_fails_the_task_with_the_connection_tests_advice(
    sandbox: SandboxServer, hook: AnalyticsHook, monkeypatch: pytest.MonkeyPatch
) -> None:
    set_json_connection(monkeypatch, host=sandbox.base_url, password=BOGUS_TOKEN)
    error = run_workflow()
    assert isinstance(error, UnauthenticatedError)
    assert (error.status, error.error_type, error.connection_id) == (401, "unauthenticated", "analytics_default")
    assert str(error) == f"{error.summary}. {ADVICE_TOKEN_REJECTED.rstrip('.')} {NAMED}"
    assert str(error).startswith(f"401 unauthenticated on POST /v1/workflows/{WORKFLOW}/execute: ")
    ok, message = hook.test_connection()  # read after the connection was set
    assert not ok
    assert message.startswith(ADVICE_TOKEN_REJECTED)  # one sentence, said by both
    assert message.count(ADVICE_TOKEN_REJECTED.rstrip(".")) == 1


def test_a_refused_workspace_fails_the_task_with_the_advice(
    sandbox: SandboxServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    set_json_connection(
        monkeypatch, host=sandbox.base_url, password=LIMITED_TOKEN, extra={"workspace_id": "ws_marketing"}
    )
    error = run_workflow()
    assert isinstance(error, ForbiddenError)
    assert str(error).endswith(f"{ADVICE_WORKSPACE_FORBIDDEN.rstrip('.')} {NAMED}")


def test_a_wrong_path_prefix_is_told_apart_from_a_missing_workflow(
    sandbox: SandboxServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    set_json_connection(monkeypatch, host=f"{sandbox.base_url}/not-the-api", password=sandbox.token)
    error = run_workflow()
    assert isinstance(error, NotFoundError)
    assert (error.status, error.error_type) == (404, "not_found")
    assert str(error).endswith(f"{ADVICE_NO_API.rstrip('.')} {NAMED}")
    # The execute route's 404 alone cannot say which; the route test_connection() probes answered 404 too.


def test_a_missing_workflow_is_not_blamed_on_the_connection(sandbox: SandboxServer) -> None:
    op = ExecuteWorkflowOperator(task_id="run", workflow_id="wf_missing", wait_for_completion=False)
    with raises_final(NotFoundError) as caught:
        op.execute(make_context())
    assert caught.value.advice is None
    assert str(caught.value) == caught.value.summary
    assert "wf_missing" in str(caught.value)
    # One probe of the route test_connection() uses showed the API is there.
    assert [(r.method, r.path, r.status) for r in sandbox.state.requests] == [
        ("POST", "/v1/workflows/wf_missing/execute", 404),
        ("GET", "/v1/workflows", 200),
    ]


def test_a_404_after_the_api_answered_asks_nothing_more(hook: AnalyticsHook, sandbox: SandboxServer) -> None:
    hook.list_charts()
    with pytest.raises(NotFoundError) as caught:
        hook.get_execution(WORKFLOW, "ex_missing")
    assert caught.value.advice is None
    assert [r.path for r in sandbox.state.requests] == ["/v1/charts", f"/v1/workflows/{WORKFLOW}/executions/ex_missing"]


def test_a_404_page_that_is_not_the_platforms_is_an_unknown_route_without_a_probe(
    hook: AnalyticsHook, sandbox: SandboxServer
) -> None:
    # A proxy or web server in front, at the wrong prefix, answers its own page: not the contract's body.
    page = Fault.status(404, body="<html>Not Found</html>", content_type="text/html", path="/executions/")
    sandbox.state.inject(page)
    with pytest.raises(NotFoundError) as caught:
        hook.get_execution(WORKFLOW, "ex_1")
    assert caught.value.advice == ADVICE_NO_API
    assert len(api_requests(sandbox)) == 1


def test_a_404_on_a_route_without_ids_needs_no_probe(hook: AnalyticsHook, sandbox: SandboxServer) -> None:
    sandbox.state.inject(Fault.status(404, path="^/v1/charts$"))
    with pytest.raises(NotFoundError) as caught:
        hook.client.call(endpoints.list_charts())
    assert caught.value.advice == ADVICE_NO_API
    assert len(api_requests(sandbox)) == 1


def test_a_405_with_another_servers_json_says_no_api_and_names_the_connection(sandbox: SandboxServer) -> None:
    # Airflow's own API server as the host answers a POST to /v1/... with FastAPI's {"detail": ...}.
    body = '{"detail":"Method Not Allowed"}'
    sandbox.state.inject(Fault.status(405, body=body, content_type="application/json", path="/execute"))
    error = run_workflow()
    assert error.status == 405
    assert error.advice == ADVICE_NO_API
    text = str(error)
    assert "HTTP 405 with JSON that is not the API's error object (application/json, 31 bytes)" in text
    assert text.endswith(f"{ADVICE_NO_API.rstrip('.')} {NAMED}")
    assert "non-JSON" not in text


def test_a_405_in_the_contracts_shape_is_the_platforms_answer_without_connection_advice(sandbox: SandboxServer) -> None:
    sandbox.state.inject(Fault.status(405, path="/execute"))
    error = run_workflow()
    assert error.status == 405
    assert error.advice is None
