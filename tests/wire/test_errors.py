"""Every error status maps to its own type, carrying status, type, message and request id."""

from __future__ import annotations

import socket
from typing import Any

import httpx
import pytest

from airflow_provider_analytics.sandbox.config import Timings
from airflow_provider_analytics.sandbox.faults import Fault
from airflow_provider_analytics.sandbox.server import SandboxServer
from airflow_provider_analytics.wire import _endpoints as endpoints
from airflow_provider_analytics.wire.client import AnalyticsClient
from airflow_provider_analytics.wire.config import ClientConfig
from airflow_provider_analytics.wire.errors import (
    AnalyticsAPIError,
    AnalyticsConnectionError,
    AnalyticsTimeoutError,
    ConflictError,
    ForbiddenError,
    GoneError,
    InvalidRequestError,
    NotFoundError,
    PayloadTooLargeError,
    RateLimitedError,
    ServerError,
    UnauthenticatedError,
    UnexpectedResponseError,
)
from airflow_provider_analytics.wire.retry import RetryPolicy
from tests.support.fixtures import Api, ApiFactory


def _assert_carries(error: AnalyticsAPIError, status: int, error_type: str, sandbox: SandboxServer) -> None:
    assert error.status == status
    assert error.error_type == error_type
    assert error.request_id
    assert error.request_id.startswith("req_")
    assert error.request_id == [r for r in sandbox.state.requests if r.path == error.path][-1].request_id
    assert error.request_id in str(error)
    assert sandbox.token not in str(error)


def test_bad_token_is_unauthenticated(api_factory: ApiFactory, sandbox: SandboxServer) -> None:
    api = api_factory(token="not-a-real-token")
    with pytest.raises(UnauthenticatedError) as caught:
        api.call(endpoints.list_charts())
    _assert_carries(caught.value, 401, "unauthenticated", sandbox)
    assert "not-a-real-token" not in str(caught.value)


def test_workspace_without_access_is_forbidden(api_factory: ApiFactory, sandbox: SandboxServer) -> None:
    api = api_factory(token="sandbox-token-limited", workspace_id="ws_marketing")
    with pytest.raises(ForbiddenError) as caught:
        api.call(endpoints.list_charts())
    _assert_carries(caught.value, 403, "forbidden", sandbox)


def test_unknown_id_is_not_found(api: Api, sandbox: SandboxServer) -> None:
    with pytest.raises(NotFoundError) as caught:
        api.call(endpoints.get_report("rp_does_not_exist"))
    _assert_carries(caught.value, 404, "not_found", sandbox)
    assert "rp_does_not_exist" in caught.value.message


def test_semantic_error_is_invalid_request_with_field_details(api: Api, sandbox: SandboxServer) -> None:
    with pytest.raises(InvalidRequestError) as caught:
        api.call(endpoints.create_chart("c", "line", "ds_missing", "select 1"))
    _assert_carries(caught.value, 422, "invalid_request", sandbox)
    assert "data_source_id" in str(caught.value.details)


def test_bad_cursor_is_invalid_request(api: Api, sandbox: SandboxServer) -> None:
    with pytest.raises(InvalidRequestError) as caught:
        api.call(endpoints.list_workflows(10).page("tampered-cursor"))
    assert caught.value.status == 400


def test_downloading_an_unready_report_is_a_conflict_and_an_expired_one_is_gone(
    api: Api, sandbox: SandboxServer
) -> None:
    sandbox.state.set_timings(Timings(report_pending=5, report_generating=5))
    dashboard_id = api.items(endpoints.list_dashboards(), limit=1)[0]["id"]
    report = api.call(endpoints.generate_report([dashboard_id], "csv"))
    spec = endpoints.download_report(report["id"])
    with pytest.raises(ConflictError):
        api.call(endpoints.Call(spec, lambda body: body))
    sandbox.state.advance(60)
    sandbox.state.expire_report(report["id"])
    with pytest.raises(GoneError) as caught:
        api.call(endpoints.Call(spec, lambda body: body))
    _assert_carries(caught.value, 410, "gone", sandbox)


def test_payload_too_large_from_the_platform(api: Api, sandbox: SandboxServer) -> None:
    sandbox.state.inject(Fault.status(413, method="POST", path="/v1/workflows$"))
    with pytest.raises(PayloadTooLargeError):
        api.call(endpoints.create_workflow("w", {"steps": []}))


def test_refusals_do_not_use_up_the_retries(api_factory: ApiFactory, sandbox: SandboxServer) -> None:
    api = api_factory(retry=RetryPolicy(max_retries=1, backoff_initial=0.01))
    sandbox.state.inject(Fault.status(429, path="/v1/charts", times=3, retry_after=1))
    assert isinstance(api.call(endpoints.list_charts()), list)
    assert [r.status for r in sandbox.state.requests] == [429, 429, 429, 200]


def test_rate_limited_once_refused_for_longer_than_allowed(api_factory: ApiFactory, sandbox: SandboxServer) -> None:
    api = api_factory(retry=RetryPolicy(max_retries=1, backoff_initial=0.01, max_rate_limited_seconds=2.5))
    sandbox.state.inject(Fault.status(429, path="/v1/charts", times=10, retry_after=1))
    with pytest.raises(RateLimitedError) as caught:
        api.call(endpoints.list_charts())
    assert caught.value.retry_after == 1
    # Refused at 0 s, then after each pause of at least 1 s: the one refused past 2.5 s of refusals ends it.
    assert [r.status for r in sandbox.state.requests] == [429] * 4


def test_server_error_once_retries_are_used_up(api_factory: ApiFactory, sandbox: SandboxServer) -> None:
    api = api_factory(retry=RetryPolicy(max_retries=2, backoff_initial=0.01))
    sandbox.state.inject(Fault.status(503, path="/v1/charts", times=5))
    with pytest.raises(ServerError) as caught:
        api.call(endpoints.list_charts())
    assert caught.value.status == 503
    assert len(sandbox.state.requests) == 3


@pytest.mark.parametrize(
    ("body", "content_type", "described"),
    [
        ("<html><body><h1>502 Bad Gateway</h1></body></html>", "text/html", "non-JSON body (text/html"),
        ("", None, "empty body"),
    ],
)
def test_non_json_error_bodies_still_name_the_status(
    api_factory: ApiFactory, sandbox: SandboxServer, body: Any, content_type: Any, described: Any
) -> None:
    api = api_factory(retry=RetryPolicy(max_retries=0))
    sandbox.state.inject(Fault.status(502, path="/v1/charts", body=body, content_type=content_type))
    with pytest.raises(ServerError) as caught:
        api.call(endpoints.list_charts())
    assert caught.value.status == 502
    assert described in str(caught.value)
    assert str(caught.value).startswith("502 ")
    assert caught.value.request_id == sandbox.state.requests[-1].request_id


def test_unreachable_platform_is_a_connection_error(api_factory: ApiFactory) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed_port = probe.getsockname()[1]
    api = api_factory(base_url=f"http://127.0.0.1:{closed_port}", retry=RetryPolicy(max_retries=1, backoff_initial=0))
    with pytest.raises(AnalyticsConnectionError) as caught:
        api.call(endpoints.list_charts())
    assert str(caught.value).startswith(f"Could not reach http://127.0.0.1:{closed_port}: ")
    assert "GET /v1/charts failed with ConnectError" in str(caught.value)
    assert len(api.sleeps) == 1, "a GET is retried after a connection failure"


def test_slow_platform_is_a_timeout(api_factory: ApiFactory, sandbox: SandboxServer) -> None:
    api = api_factory(timeout=0.2, retry=RetryPolicy(max_retries=0))
    sandbox.state.inject(Fault.delay(1.0, path="/v1/charts"))
    with pytest.raises(AnalyticsTimeoutError, match=r"timed out after 0\.2 s"):
        api.call(endpoints.list_charts())


def test_a_2xx_body_that_is_not_json_is_unexpected() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, text="<html>login page</html>", headers={"X-Request-Id": "req_proxy"})

    config = ClientConfig(base_url="https://api.example.com", token="t0ken-value")
    transport = httpx.MockTransport(handler)
    with (
        AnalyticsClient(config, transport=transport) as client,
        pytest.raises(UnexpectedResponseError, match="req_proxy"),
    ):
        client.call(endpoints.list_charts())
