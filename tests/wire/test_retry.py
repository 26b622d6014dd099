"""The retry policy: pure decisions, and the same decisions carried out by both transports."""

from __future__ import annotations

import logging
from typing import Any

import httpx
import pytest

from airflow_provider_analytics.sandbox.faults import Fault
from airflow_provider_analytics.sandbox.server import SandboxServer
from airflow_provider_analytics.wire import _endpoints as endpoints
from airflow_provider_analytics.wire._learning import MIN_PAUSE
from airflow_provider_analytics.wire.client import AnalyticsClient
from airflow_provider_analytics.wire.config import ClientConfig
from airflow_provider_analytics.wire.errors import AnalyticsConnectionError, RateLimitedError, ServerError
from airflow_provider_analytics.wire.retry import RetryPolicy, parse_retry_after
from tests.support.fixtures import Api, ApiFactory

# Pure policy ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "transport_error", "idempotent", "retried"),
    [
        (429, False, False, True),
        (429, False, True, True),
        (503, False, True, True),
        (500, False, True, True),
        (503, False, False, False),
        (None, True, True, True),
        (None, True, False, False),
        (400, False, True, False),
        (404, False, True, False),
        (409, False, True, False),
    ],
)
def test_retry_reason_matrix(status: Any, transport_error: Any, idempotent: Any, retried: Any) -> None:
    reason = RetryPolicy().retry_reason(
        retries_done=0, idempotent=idempotent, status=status, transport_error=transport_error
    )
    assert (reason is not None) is retried


def test_retries_are_bounded() -> None:
    policy = RetryPolicy(max_retries=2)
    assert policy.retry_reason(retries_done=1, idempotent=True, status=503)
    assert policy.retry_reason(retries_done=2, idempotent=True, status=503) is None


def test_backoff_doubles_is_capped_and_jittered_downwards() -> None:
    policy = RetryPolicy(backoff_initial=0.5, backoff_max=4.0, jitter=0.5)
    assert [policy.backoff(n, 0.0) for n in range(5)] == [0.5, 1.0, 2.0, 4.0, 4.0]
    assert policy.backoff(1, 0.999) == pytest.approx(0.5, rel=0.01)


def test_backoff_after_a_thousand_refusals_is_the_cap_not_an_overflow() -> None:
    """Refusals that said "Retry-After: 0" do not use up retries: a thousand of them, then one that said nothing,
    asked for 2.0 ** 1000 (an OverflowError out of the client, untyped)."""
    policy = RetryPolicy()
    assert policy.backoff(1_100, 0.0) == policy.backoff_max
    assert policy.backoff(10**9, 0.5) == pytest.approx(policy.backoff_max * (1 - policy.jitter * 0.5))


def test_retry_after_is_honoured_unless_longer_than_allowed() -> None:
    policy = RetryPolicy(max_retry_after=30)
    assert policy.wait_before_retry(0, 7.0, 0.5) == 7.0
    assert policy.wait_before_retry(0, 3600.0, 0.5) is None
    assert policy.wait_before_retry(0, None, 0.0) == policy.backoff_initial


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("3", 3.0),
        (" 120 ", 120.0),
        ("Sat, 21 Nov 2026 10:00:30 GMT", 30.0),
        ("Sat, 21 Nov 2026 09:00:00 GMT", 0.0),
        ("soon", None),
        (None, None),
        ("", None),
    ],
)
def test_parse_retry_after(value: Any, expected: Any) -> None:
    now = 1795255200.0  # 2026-11-21T10:00:00Z
    assert parse_retry_after(value, now=now) == expected


# Carried out by both transports, against the sandbox ------------------------------------------------------


def test_429_waits_for_retry_after_seconds(api: Api, sandbox: SandboxServer) -> None:
    sandbox.state.inject(Fault.status(429, path="/v1/charts$", retry_after=2))
    assert api.call(endpoints.list_charts())
    assert api.sleeps == [pytest.approx(2.0, abs=0.5)]
    assert [r.status for r in sandbox.state.requests] == [429, 200]


def test_429_with_an_http_date(api: Api, sandbox: SandboxServer) -> None:
    sandbox.state.inject(Fault.status(429, path="/v1/charts$", retry_after="Wed, 21 Oct 2015 07:28:00 GMT"))
    api.call(endpoints.list_charts())
    assert len(api.sleeps) == 1
    assert api.sleeps[0] <= MIN_PAUSE, "a date in the past means: retry now (after the shortest pause)"


def test_retry_after_longer_than_allowed_stops_at_once(api_factory: ApiFactory, sandbox: SandboxServer) -> None:
    api = api_factory(retry=RetryPolicy(max_retry_after=10))
    sandbox.state.inject(Fault.status(429, path="/v1/charts$", retry_after=3600))
    with pytest.raises(RateLimitedError) as caught:
        api.call(endpoints.list_charts())
    assert caught.value.retry_after == 3600
    assert api.sleeps == []


def test_a_burst_of_503s_is_ridden_out_with_growing_backoff(
    api_factory: ApiFactory, sandbox: SandboxServer, caplog: pytest.LogCaptureFixture
) -> None:
    api = api_factory(retry=RetryPolicy(max_retries=4, backoff_initial=0.01, backoff_max=1.0, jitter=0))
    sandbox.state.inject(Fault.status(503, path="/v1/data-sources$", times=3))
    with caplog.at_level(logging.WARNING, logger="airflow_provider_analytics.wire"):
        assert api.call(endpoints.list_data_sources())
    assert api.sleeps == [0.01, 0.02, 0.04]
    retries = [r.getMessage() for r in caplog.records if "retry" in r.getMessage()]
    assert len(retries) == 3
    assert "server error (503)" in retries[0]
    assert "retry 1 of 4 in 0.01 s" in retries[0]
    assert "request id req_" in retries[0]


def test_a_dropped_post_with_an_idempotency_key_starts_exactly_one_execution(api: Api, sandbox: SandboxServer) -> None:
    workflow_id = api.items(endpoints.list_workflows(), limit=1)[0]["id"]
    sandbox.state.inject(Fault.drop(method="POST", path="/execute$", after_processing=True))
    execution = api.call(endpoints.execute_workflow(workflow_id, {"day": "2026-11-20"}))
    posts = [r for r in sandbox.state.requests if r.method == "POST"]
    assert len(posts) == 2
    assert posts[0].headers["idempotency-key"] == posts[1].headers["idempotency-key"]
    started = [e for e in sandbox.state.executions() if e["workflow_id"] == workflow_id]
    assert [e["id"] for e in started] == [execution["id"]]


def test_503_on_a_post_without_idempotency_key_is_not_retried(sandbox: SandboxServer) -> None:
    spec = endpoints.RequestSpec("POST", "/v1/workflows", "/v1/workflows", json_body={"name": "w", "configuration": {}})
    sandbox.state.inject(Fault.status(503, method="POST", path="/v1/workflows$"))
    sleeps: list[float] = []
    config = ClientConfig(base_url=sandbox.base_url, token=sandbox.token)
    with AnalyticsClient(config, sleep=sleeps.append) as client, pytest.raises(ServerError):
        client.call(endpoints.Call(spec, lambda body: body))
    assert sleeps == []
    assert len(sandbox.state.requests) == 1


def test_a_connection_error_on_a_post_without_key_is_not_retried() -> None:
    attempts: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        attempts.append(request)
        raise httpx.ConnectError("connection reset by peer", request=request)

    spec = endpoints.RequestSpec("POST", "/v1/workflows", "/v1/workflows", json_body={})
    config = ClientConfig(base_url="https://api.example.com", token="t0ken-value")
    with AnalyticsClient(config, transport=httpx.MockTransport(handler), sleep=lambda s: None) as client:
        with pytest.raises(AnalyticsConnectionError):
            client.call(endpoints.Call(spec, lambda body: body))
        assert len(attempts) == 1
        with pytest.raises(AnalyticsConnectionError):
            client.call(endpoints.create_workflow("w", {}))
        assert len(attempts) == 1 + 1 + RetryPolicy().max_retries


def test_no_retries_when_disabled(api_factory: ApiFactory, sandbox: SandboxServer) -> None:
    api = api_factory(retry=RetryPolicy(max_retries=0))
    sandbox.state.inject(Fault.status(503, path="/v1/charts$"))
    with pytest.raises(ServerError):
        api.call(endpoints.list_charts())
    assert api.sleeps == []
