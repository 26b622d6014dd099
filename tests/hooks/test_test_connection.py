"""``test_connection()``: one ``(ok, message)`` answer per way a connection can be right or wrong."""

from __future__ import annotations

import pytest

from airflow_provider_analytics.hooks.analytics import AnalyticsHook
from airflow_provider_analytics.sandbox.faults import Fault
from airflow_provider_analytics.sandbox.server import SandboxServer
from tests.support.connections import (
    BOGUS_TOKEN,
    LIMITED_TOKEN,
    api_requests,
    closed_loopback_port,
    new_hook,
    set_json_connection,
)


def test_test_connection_ok(sandbox: SandboxServer, hooks: list[AnalyticsHook]) -> None:
    ok, message = new_hook(hooks).test_connection()
    assert ok is True, message
    assert sandbox.base_url in message
    (probe,) = api_requests(sandbox, "/v1/workflows")
    assert probe.method == "GET"
    assert probe.query.get("limit") == "1"


def test_test_connection_ok_names_the_workspace(
    sandbox: SandboxServer, hooks: list[AnalyticsHook], monkeypatch: pytest.MonkeyPatch
) -> None:
    set_json_connection(
        monkeypatch, host=sandbox.base_url, password=sandbox.token, extra={"workspace_id": "ws_marketing"}
    )
    ok, message = new_hook(hooks).test_connection()
    assert ok is True, message
    assert "ws_marketing" in message


def test_test_connection_bad_token(
    sandbox: SandboxServer, hooks: list[AnalyticsHook], monkeypatch: pytest.MonkeyPatch
) -> None:
    set_json_connection(monkeypatch, host=sandbox.base_url, password=BOGUS_TOKEN)
    ok, message = new_hook(hooks).test_connection()
    assert ok is False
    assert "401" in message
    assert "token" in message.lower()


def test_test_connection_forbidden_workspace(
    sandbox: SandboxServer, hooks: list[AnalyticsHook], monkeypatch: pytest.MonkeyPatch
) -> None:
    set_json_connection(
        monkeypatch, host=sandbox.base_url, password=LIMITED_TOKEN, extra={"workspace_id": "ws_marketing"}
    )
    ok, message = new_hook(hooks).test_connection()
    assert ok is False
    assert "403" in message
    assert "workspace" in message.lower()


def test_test_connection_limited_token_in_its_own_workspace(
    sandbox: SandboxServer, hooks: list[AnalyticsHook], monkeypatch: pytest.MonkeyPatch
) -> None:
    set_json_connection(monkeypatch, host=sandbox.base_url, password=LIMITED_TOKEN)
    ok, message = new_hook(hooks).test_connection()
    assert ok is True, message


def test_test_connection_unreachable(
    sandbox: SandboxServer, hooks: list[AnalyticsHook], monkeypatch: pytest.MonkeyPatch
) -> None:
    port = closed_loopback_port()
    set_json_connection(monkeypatch, host=f"http://127.0.0.1:{port}", password=sandbox.token)
    ok, message = new_hook(hooks).test_connection()
    assert ok is False
    assert "reach" in message.lower()
    assert f"127.0.0.1:{port}" in message


def test_test_connection_tls_failure(
    sandbox: SandboxServer, hooks: list[AnalyticsHook], monkeypatch: pytest.MonkeyPatch
) -> None:
    # https:// to the sandbox's plain-HTTP port: the TLS handshake fails, and the message says how to fix it.
    set_json_connection(monkeypatch, host=sandbox.base_url.replace("http://", "https://"), password=sandbox.token)
    ok, message = new_hook(hooks).test_connection()
    assert ok is False
    assert message.startswith(f"{sandbox.base_url.replace('http://', 'https://')} speaks plain HTTP, not HTTPS: ")
    assert f"write {sandbox.base_url}" in message


def test_test_connection_https_is_the_default_scheme(
    sandbox: SandboxServer, hooks: list[AnalyticsHook], monkeypatch: pytest.MonkeyPatch
) -> None:
    set_json_connection(monkeypatch, host=sandbox.base_url.removeprefix("http://"), password=sandbox.token)
    hook = new_hook(hooks)
    assert hook.client.config.base_url.startswith("https://")
    ok, message = hook.test_connection()
    assert ok is False
    assert f"speaks plain HTTP, not HTTPS: write {sandbox.base_url}" in message


def test_test_connection_wrong_path_prefix(
    sandbox: SandboxServer, hooks: list[AnalyticsHook], monkeypatch: pytest.MonkeyPatch
) -> None:
    set_json_connection(monkeypatch, host=f"{sandbox.base_url}/not-the-api", password=sandbox.token)
    ok, message = new_hook(hooks).test_connection()
    assert ok is False
    assert "404" in message
    assert "path prefix" in message


def test_test_connection_timeout(
    sandbox: SandboxServer, hooks: list[AnalyticsHook], monkeypatch: pytest.MonkeyPatch
) -> None:
    set_json_connection(monkeypatch, host=sandbox.base_url, password=sandbox.token, extra={"timeout": 0.2})
    sandbox.state.inject(Fault.delay(1.0, path="/v1/workflows$", times=2))
    ok, message = new_hook(hooks).test_connection()
    assert ok is False
    assert "in time" in message


def test_test_connection_server_error(
    sandbox: SandboxServer, hooks: list[AnalyticsHook], monkeypatch: pytest.MonkeyPatch
) -> None:
    sandbox.state.inject(Fault.status(500, path="/v1/workflows$", times=5))
    ok, message = new_hook(hooks).test_connection()
    assert ok is False
    assert "500" in message


def test_test_connection_without_a_connection(sandbox: SandboxServer, hooks: list[AnalyticsHook]) -> None:
    ok, message = new_hook(hooks, "analytics_missing").test_connection()  # an answer, never an exception
    assert not ok
    assert "analytics_missing" in message
