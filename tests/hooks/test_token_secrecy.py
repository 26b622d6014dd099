"""The API token never shows: not in reprs, error messages, retry logs, transport errors or test_connection."""

from __future__ import annotations

import logging

import pytest

from airflow_provider_analytics.hooks.analytics import AnalyticsAsyncHook, AnalyticsHook
from airflow_provider_analytics.sandbox.server import SandboxServer
from airflow_provider_analytics.wire.errors import AnalyticsConnectionError, ForbiddenError, UnauthenticatedError
from tests.support.connections import (
    BOGUS_TOKEN,
    LIMITED_TOKEN,
    api_requests,
    closed_loopback_port,
    new_hook,
    set_json_connection,
    whole_text,
)


def test_token_not_in_reprs(sandbox: SandboxServer, hooks: list[AnalyticsHook]) -> None:
    hook = new_hook(hooks)
    config = hook.client.config
    assert config.token == sandbox.token
    for text in (repr(config), str(config), repr(hook.client), repr(hook.get_conn())):
        assert sandbox.token not in text, text
    assert sandbox.base_url in repr(hook.client)


@pytest.mark.anyio
async def test_token_not_in_async_client_repr(sandbox: SandboxServer) -> None:
    async with AnalyticsAsyncHook() as hook:
        client = await hook.get_client()
        assert sandbox.token not in repr(client)
        assert sandbox.base_url in repr(client)


def test_token_not_in_a_401_error(
    sandbox: SandboxServer,
    hooks: list[AnalyticsHook],
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    set_json_connection(monkeypatch, host=sandbox.base_url, password=BOGUS_TOKEN)
    caplog.set_level(logging.DEBUG)
    with pytest.raises(UnauthenticatedError) as caught:
        new_hook(hooks).list_charts()
    assert caught.value.status == 401
    assert BOGUS_TOKEN not in whole_text(caught.value)
    assert BOGUS_TOKEN not in caplog.text
    (recorded,) = api_requests(sandbox, "/v1/charts")
    # It was really sent (and refused); the sandbox's log keeps only the scheme.
    assert (recorded.headers["authorization"], recorded.status) == ("Bearer [redacted]", 401)


def test_token_not_in_a_403_error(
    sandbox: SandboxServer, hooks: list[AnalyticsHook], monkeypatch: pytest.MonkeyPatch
) -> None:
    set_json_connection(
        monkeypatch, host=sandbox.base_url, password=LIMITED_TOKEN, extra={"workspace_id": "ws_marketing"}
    )
    with pytest.raises(ForbiddenError) as caught:
        new_hook(hooks).get_report("rp_anything")
    assert caught.value.status == 403
    assert caught.value.request_id
    assert LIMITED_TOKEN not in whole_text(caught.value)


def test_token_not_in_retry_logs_or_transport_errors(
    sandbox: SandboxServer,
    hooks: list[AnalyticsHook],
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    port = closed_loopback_port()
    set_json_connection(monkeypatch, host=f"http://127.0.0.1:{port}", password=BOGUS_TOKEN, extra={"max_retries": 1})
    caplog.set_level(logging.DEBUG)
    with pytest.raises(AnalyticsConnectionError) as caught:
        new_hook(hooks).list_charts()
    assert f"127.0.0.1:{port}" in str(caught.value)
    assert BOGUS_TOKEN not in whole_text(caught.value)
    assert "retry 1 of 1" in caplog.text
    assert BOGUS_TOKEN not in caplog.text


def test_token_not_in_test_connection_messages(
    sandbox: SandboxServer, hooks: list[AnalyticsHook], monkeypatch: pytest.MonkeyPatch
) -> None:
    set_json_connection(monkeypatch, host=sandbox.base_url, password=BOGUS_TOKEN)
    ok, message = new_hook(hooks).test_connection()
    assert ok is False
    assert BOGUS_TOKEN not in message
