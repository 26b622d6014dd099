"""A request whose deadline passes fails as a timeout of the step it was in, on both clients.

The call's deadline (0.3 s) is far shorter than the client's own timeout (30 s), so no per-operation timeout of
httpx's can be what ends the request: the total deadline does (asyncio's ``timeout_at`` on the async client,
the deadline backend on the blocking one), and still names the step, as the error texts tell users what to check.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Iterator

import pytest

from airflow_provider_analytics.wire import _endpoints as endpoints
from airflow_provider_analytics.wire._deadline import call_deadline
from airflow_provider_analytics.wire.client import AnalyticsClient, AsyncAnalyticsClient
from airflow_provider_analytics.wire.config import ClientConfig
from airflow_provider_analytics.wire.errors import AnalyticsError, AnalyticsTimeoutError
from airflow_provider_analytics.wire.retry import RetryPolicy


@pytest.fixture
def listener() -> Iterator[socket.socket]:
    """A loopback socket that listens (a queue of one) and never accepts; closed after the test."""
    with socket.create_server(("127.0.0.1", 0), backlog=0) as server:
        yield server


def _fail(url: str, mode: str) -> AnalyticsError:
    config = ClientConfig(base_url=url, token="t0ken-value", timeout=30.0, retry=RetryPolicy(max_retries=0))
    if mode == "sync":
        with AnalyticsClient(config) as client, call_deadline(0.3), pytest.raises(AnalyticsTimeoutError) as caught:
            client.call(endpoints.list_charts())
        return caught.value

    async def scenario() -> None:
        async with AsyncAnalyticsClient(config) as client:
            with call_deadline(0.3):
                await client.call(endpoints.list_charts())

    with pytest.raises(AnalyticsTimeoutError) as caught:
        asyncio.run(scenario())
    return caught.value


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_connect_that_never_completes_is_a_connect_timeout(mode: str, listener: socket.socket) -> None:
    port = listener.getsockname()[1]
    with socket.create_connection(("127.0.0.1", port)):  # fills the queue: the next handshake is never answered
        error = _fail(f"http://127.0.0.1:{port}", mode)
    assert str(error).startswith(f"Could not reach http://127.0.0.1:{port}: no connection within 30 s")
    assert str(error).endswith("GET /v1/charts timed out after 30 s (ConnectTimeout)")


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_an_answer_that_never_comes_is_a_read_timeout(mode: str, listener: socket.socket) -> None:
    port = listener.getsockname()[1]
    error = _fail(f"http://127.0.0.1:{port}", mode)
    assert str(error) == (
        f"http://127.0.0.1:{port} did not answer in time: GET /v1/charts timed out after 30 s (ReadTimeout)"
    )
