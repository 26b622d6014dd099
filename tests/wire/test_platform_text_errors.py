"""An ``error`` sent as bare text is kept as the platform's message (docs/api-contract.md); other odd types are not."""

from __future__ import annotations

import json

import pytest

from airflow_provider_analytics.sandbox.faults import Fault
from airflow_provider_analytics.sandbox.server import SandboxServer
from airflow_provider_analytics.wire import _endpoints as endpoints
from airflow_provider_analytics.wire._endpoints import STRING_ERROR_TYPE
from airflow_provider_analytics.wire.errors import MAX_TEXT, UnexpectedResponseError
from tests.support.fixtures import Api
from tests.support.names import JSON_HEADERS, WORKFLOW

EXECUTION_PATH = f"/v1/workflows/{WORKFLOW}/executions/ex_1"


def answer_execution(sandbox: SandboxServer, error: object, times: int = 1) -> None:
    body = {"id": "ex_1", "workflow_id": WORKFLOW, "status": "failed", "error": error}
    answer = Fault.respond(200, headers=JSON_HEADERS, body=json.dumps(body), path=EXECUTION_PATH, times=times)
    sandbox.state.inject(answer)


def test_a_text_error_becomes_the_contracts_shape_on_one_line(api: Api, sandbox: SandboxServer) -> None:
    answer_execution(sandbox, "step 'load' failed:\r\nexit code 1\x1b[0m")
    execution = api.call(endpoints.get_execution(WORKFLOW, "ex_1"))
    assert execution["error"] == {"type": STRING_ERROR_TYPE, "message": "step 'load' failed: exit code 1 [0m"}


def test_a_long_text_error_is_capped_like_other_platform_text(api: Api, sandbox: SandboxServer) -> None:
    answer_execution(sandbox, "x" * (MAX_TEXT + 500))
    message = api.call(endpoints.get_execution(WORKFLOW, "ex_1"))["error"]["message"]
    assert message == "x" * MAX_TEXT + "... (500 more characters)"


def test_a_blank_text_error_is_no_error(api: Api, sandbox: SandboxServer) -> None:
    answer_execution(sandbox, " \n ")
    assert api.call(endpoints.get_execution(WORKFLOW, "ex_1"))["error"] is None


@pytest.mark.parametrize("error", [42, ["boom"], True, {"type": 1, "message": "boom"}])
def test_an_error_of_another_type_is_still_unexpected(api: Api, sandbox: SandboxServer, error: object) -> None:
    answer_execution(sandbox, error)
    with pytest.raises(UnexpectedResponseError, match="'error' must be null or an object"):
        api.call(endpoints.get_execution(WORKFLOW, "ex_1"))
