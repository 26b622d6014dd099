"""``NaN``, ``Infinity`` and ``-Infinity`` are not JSON (RFC 8259), though Python's parser takes them: an answer
with one is malformed, and so is a number no float holds (``1e999``, which would read as infinity). Either
ends the call with ``UnexpectedResponseError`` naming the request, on both transports."""

from __future__ import annotations

import pytest

from airflow_provider_analytics.sandbox.faults import Fault
from airflow_provider_analytics.sandbox.server import SandboxServer
from airflow_provider_analytics.wire import _endpoints as endpoints
from airflow_provider_analytics.wire.errors import UnexpectedResponseError
from tests.support.fixtures import Api
from tests.support.names import JSON_HEADERS

NUMBERS = ["NaN", "Infinity", "-Infinity", "1e999", "-1E+400"]


@pytest.mark.parametrize("number", NUMBERS)
def test_a_non_finite_number_in_a_list_is_refused(api: Api, sandbox: SandboxServer, number: str) -> None:
    body = f'{{"data": [{{"id": "ch_1", "name": "Revenue", "options": {{"scale": {number}}}}}]}}'
    headers = {**JSON_HEADERS, "X-Request-Id": "req_nan"}
    sandbox.state.inject(Fault.respond(200, headers=headers, body=body, path="/v1/charts$"))
    with pytest.raises(UnexpectedResponseError, match=r"GET /v1/charts answered 200 with a body that is not JSON"):
        api.call(endpoints.list_charts())
    assert [entry.status for entry in sandbox.state.requests if entry.path == "/v1/charts"] == [200]


def test_a_non_finite_number_in_an_object_names_the_request_and_its_id(api: Api, sandbox: SandboxServer) -> None:
    body = '{"id": "rp_1", "status": "ready", "size_bytes": Infinity}'
    headers = {**JSON_HEADERS, "X-Request-Id": "req_inf"}
    sandbox.state.inject(Fault.respond(200, headers=headers, body=body, path="/v1/reports/rp_1$"))
    with pytest.raises(UnexpectedResponseError, match="GET /v1/reports/rp_1 answered 200") as caught:
        api.call(endpoints.get_report("rp_1"))
    assert caught.value.request_id == "req_inf"


def test_finite_numbers_and_the_words_in_strings_still_read(api: Api, sandbox: SandboxServer) -> None:
    body = '{"data": [{"id": "ch_1", "name": "NaN Infinity", "options": {"a": 1.5e300, "b": -0.0, "c": 10}}]}'
    sandbox.state.inject(Fault.respond(200, headers=JSON_HEADERS, body=body, path="/v1/charts$"))
    [chart] = api.call(endpoints.list_charts())
    assert chart["name"] == "NaN Infinity"
    assert chart["options"] == {"a": 1.5e300, "b": -0.0, "c": 10}
