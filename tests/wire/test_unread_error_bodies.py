"""An error answer whose body is over ``max_response_bytes`` is not read, and its error says so: it keeps the
status's own class, and its message names the limit instead of calling the body empty."""

from __future__ import annotations

import zlib

import pytest

from airflow_provider_analytics.sandbox.faults import Fault
from airflow_provider_analytics.sandbox.server import SandboxServer
from airflow_provider_analytics.wire import _endpoints as endpoints
from airflow_provider_analytics.wire.client import AnalyticsClient
from airflow_provider_analytics.wire.config import DEFAULT_MAX_RESPONSE_BYTES, ClientConfig
from airflow_provider_analytics.wire.errors import NotFoundError, RateLimitedError, ServerError
from airflow_provider_analytics.wire.retry import RetryPolicy
from tests.support.fixtures import ApiFactory
from tests.support.hostile import HostileServer, Script, chunked
from tests.support.names import JSON_HEADERS

NO_RETRY = RetryPolicy(max_retries=0)


def test_a_500_over_the_default_limit_says_so(api_factory: ApiFactory, sandbox: SandboxServer) -> None:
    api = api_factory(retry=NO_RETRY)
    assert api.config.max_response_bytes == DEFAULT_MAX_RESPONSE_BYTES
    sandbox.state.inject(
        Fault.stream(500, headers=JSON_HEADERS, prefix=b'{"error": "', chunk=b"x" * 65536, chunk_count=64,
                     path="/v1/charts")
    )  # fmt: skip
    with pytest.raises(ServerError, match=r"HTTP 500 with a body over the 3 MiB limit \(not read\)") as caught:
        api.call(endpoints.list_charts())
    assert "empty body" not in str(caught.value)
    assert caught.value.status == 500


def test_a_compressed_404_over_the_limit_says_so(api_factory: ApiFactory, sandbox: SandboxServer) -> None:
    api = api_factory(retry=NO_RETRY, max_response_bytes=1500)
    bomb = zlib.compress(b'{"error": "' + b"y" * 100_000 + b'"}')
    headers = {**JSON_HEADERS, "Content-Encoding": "deflate"}
    sandbox.state.inject(Fault.respond(404, headers=headers, body=bomb, path="/v1/reports/rp_1$"))
    with pytest.raises(NotFoundError, match=r"HTTP 404 with a body over the 1500 B limit \(not read\)"):
        api.call(endpoints.get_report("rp_1"))


def test_an_empty_error_body_is_still_called_empty(api_factory: ApiFactory, sandbox: SandboxServer) -> None:
    api = api_factory(retry=NO_RETRY)
    sandbox.state.inject(Fault.status(502, path="/v1/charts$", body=""))
    with pytest.raises(ServerError, match="HTTP 502 with an empty body"):
        api.call(endpoints.list_charts())


def test_a_429_over_the_limit_keeps_its_retry_after() -> None:
    # A raw socket: a chunked body with no end in sight, after a Retry-After past the policy's cap.
    endless = Script(
        b"HTTP/1.1 429 Too Many Requests",
        (b"Content-Type: application/json", b"Retry-After: 600", b"Transfer-Encoding: chunked"),
        body=lambda: chunked(b"z" * 65536 for _ in range(1000)),
    )
    with HostileServer([endless]) as server:
        config = ClientConfig(base_url=server.url, token="t0ken-value", max_response_bytes=64 * 1024, retry=NO_RETRY)
        with AnalyticsClient(config) as client, pytest.raises(RateLimitedError) as caught:
            client.call(endpoints.list_charts())
    assert "HTTP 429 with a body over the 64 KiB limit (not read)" in str(caught.value)
    assert caught.value.retry_after == 600
