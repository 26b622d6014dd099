"""A call may read its successful answer as the platform sent it (``Call.unmasked``), against the sandbox: the
answer is data the caller compares or writes, so a remembered secret inside it stays as it was; an error answer is
masked either way, since it becomes an exception's text."""

from __future__ import annotations

import json
from typing import Any

import pytest

from airflow_provider_analytics.hooks.analytics import AnalyticsHook
from airflow_provider_analytics.sandbox.faults import Fault
from airflow_provider_analytics.sandbox.server import SandboxServer
from airflow_provider_analytics.wire import _endpoints as endpoints
from airflow_provider_analytics.wire.errors import NotFoundError
from tests.support.names import JSON_HEADERS


def a_listing_holding(sandbox: SandboxServer, text: str, status: int = 200) -> None:
    body: dict[str, Any] = {"data": [{"id": "ch_1", "name": f"{text}-revenue", "query": f"select '{text}'"}]}
    if status != 200:
        body = {"error": {"type": "not_found", "message": f"no chart {text}", "details": {"name": text}}}
    sandbox.state.inject(Fault.respond(status, headers=JSON_HEADERS, body=json.dumps(body), path="/charts$"))


def test_an_unmasked_listing_keeps_the_remembered_secret_a_masked_one_hides(
    sandbox: SandboxServer, hook: AnalyticsHook
) -> None:
    a_listing_holding(sandbox, sandbox.token)
    a_listing_holding(sandbox, sandbox.token)

    as_data = hook.client.call(endpoints.list_charts().unmasked())
    as_text = hook.client.call(endpoints.list_charts())

    assert as_data[0]["name"] == f"{sandbox.token}-revenue"
    assert as_text[0]["name"] == "***-revenue"
    assert sandbox.token not in json.dumps(as_text)


def test_an_unmasked_listing_behind_json_escapes_is_kept_as_sent(sandbox: SandboxServer, hook: AnalyticsHook) -> None:
    escaped = "".join(f"\\u{ord(char):04x}" for char in sandbox.token)
    body = '{"data": [{"id": "ch_1", "name": "' + escaped + '"}]}'
    sandbox.state.inject(Fault.respond(200, headers=JSON_HEADERS, body=body, path="/charts$"))

    (chart,) = hook.client.call(endpoints.list_charts().unmasked())

    assert chart["name"] == sandbox.token


def test_an_error_answer_of_an_unmasked_call_is_masked(sandbox: SandboxServer, hook: AnalyticsHook) -> None:
    a_listing_holding(sandbox, sandbox.token, status=404)

    with pytest.raises(NotFoundError) as caught:
        hook.client.call(endpoints.list_charts().unmasked())

    assert sandbox.token not in str(caught.value)
    assert sandbox.token not in json.dumps(caught.value.details)


def test_unmasked_pages_are_read_as_sent(sandbox: SandboxServer, hook: AnalyticsHook) -> None:
    body = {"data": [{"id": "wf_1", "name": f"{sandbox.token}-nightly"}], "next_cursor": None}
    sandbox.state.inject(Fault.respond(200, headers=JSON_HEADERS, body=json.dumps(body), path="/workflows$"))

    page = hook.client.call(endpoints.list_workflows().unmasked().page(None))

    assert page.items[0]["name"] == f"{sandbox.token}-nightly"
