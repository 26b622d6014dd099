"""A server that trickles its status line and headers one byte every 0.2 s cannot hold a request.

Each byte arrives well within httpx's read timeout, so only the client's total deadline per request
ends the wait; uvicorn sends headers whole, so the sandbox cannot play this and a raw socket server does.
"""

from __future__ import annotations

import asyncio

import pytest

from airflow_provider_analytics.wire import _endpoints as endpoints
from airflow_provider_analytics.wire.client import AnalyticsClient, AsyncAnalyticsClient
from airflow_provider_analytics.wire.config import ClientConfig
from airflow_provider_analytics.wire.errors import AnalyticsTimeoutError
from airflow_provider_analytics.wire.retry import RetryPolicy
from tests.support.hostile import HostileServer, json_script

# 90 bytes of status line and headers at 0.2 s a byte: 18 s an attempt without the total deadline.
TRICKLED = json_script(b'{"data": []}', trickle=0.2)


def _config(url: str) -> ClientConfig:
    retry = RetryPolicy(max_retries=1, backoff_initial=0.01, backoff_max=0.01)
    return ClientConfig(base_url=url, token="t0ken-value", timeout=1.0, retry=retry)


def test_trickled_headers_end_at_the_deadline_sync() -> None:
    with (
        HostileServer([TRICKLED]) as server,
        AnalyticsClient(_config(server.url)) as client,
        pytest.raises(AnalyticsTimeoutError),
    ):
        client.call(endpoints.list_charts())
    # A timeout at all shows the deadline ended each attempt: each byte comes inside httpx's read timeout.
    assert [request.line for request in server.received] == [b"GET /v1/charts HTTP/1.1"] * 2
    assert server.received[0].header("Authorization") == b"Bearer t0ken-value"


def test_trickled_headers_end_at_the_deadline_async() -> None:
    async def scenario(url: str) -> None:
        async with AsyncAnalyticsClient(_config(url)) as client:
            await client.call(endpoints.list_charts())

    with HostileServer([TRICKLED]) as server, pytest.raises(AnalyticsTimeoutError):
        asyncio.run(scenario(server.url))
    assert len(server.received) == 2
