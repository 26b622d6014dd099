"""Proxies named in the environment (``HTTP_PROXY``, ``HTTPS_PROXY``, ``ALL_PROXY``, ``NO_PROXY``) are used, as
httpx's own clients use them, and the per-request deadline holds through a proxy too.

A raw-socket server stands in for the proxy: a plain-http request through a proxy is sent to the proxy
with the whole URL as its target (``GET http://host/v1/... HTTP/1.1``), so the request line tells where
the request went.
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

EMPTY_PAGE = json_script(b'{"data": []}')
PLATFORM = "http://api.analytics.invalid"  # never resolved: only the proxy is ever connected to
PROXY_VARIABLES = ("http_proxy", "https_proxy", "all_proxy", "no_proxy")


@pytest.fixture(autouse=True)
def _no_proxies_but_the_test_s(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.upper(), raising=False)


def _config(base_url: str, timeout: float = 5.0) -> ClientConfig:
    retry = RetryPolicy(max_retries=0)
    return ClientConfig(base_url=base_url, token="t0ken-value", timeout=timeout, retry=retry, allow_insecure_http=True)


def _list_charts_async(config: ClientConfig) -> None:
    async def scenario() -> None:
        async with AsyncAnalyticsClient(config) as client:
            await client.call(endpoints.list_charts())

    asyncio.run(scenario())


def _list_charts_sync(config: ClientConfig) -> None:
    with AnalyticsClient(config) as client:
        client.call(endpoints.list_charts())


CLIENTS = [pytest.param(_list_charts_sync, id="sync"), pytest.param(_list_charts_async, id="async")]


@pytest.mark.parametrize("variable", ["HTTP_PROXY", "http_proxy", "ALL_PROXY"])
@pytest.mark.parametrize("list_charts", CLIENTS)
def test_a_proxy_from_the_environment_carries_the_request(
    monkeypatch: pytest.MonkeyPatch, variable: str, list_charts: object
) -> None:
    with HostileServer([EMPTY_PAGE]) as proxy:
        monkeypatch.setenv(variable, proxy.url.replace("http://", "http://user:pa55@"))
        list_charts(_config(PLATFORM))  # type: ignore[operator]
    assert [request.line for request in proxy.received] == [b"GET http://api.analytics.invalid/v1/charts HTTP/1.1"]
    assert proxy.received[0].header("Proxy-Authorization") == b"Basic dXNlcjpwYTU1"  # user:pa55
    assert proxy.received[0].header("Authorization") == b"Bearer t0ken-value"


@pytest.mark.parametrize("list_charts", CLIENTS)
def test_no_proxy_sends_the_request_directly(monkeypatch: pytest.MonkeyPatch, list_charts: object) -> None:
    with HostileServer([EMPTY_PAGE]) as proxy, HostileServer([EMPTY_PAGE]) as platform:
        monkeypatch.setenv("HTTP_PROXY", proxy.url)
        monkeypatch.setenv("NO_PROXY", "example.com,127.0.0.1")
        list_charts(_config(platform.url))  # type: ignore[operator]
    assert proxy.received == []
    assert [request.line for request in platform.received] == [b"GET /v1/charts HTTP/1.1"]


@pytest.mark.parametrize("list_charts", CLIENTS)
def test_a_proxy_only_for_https_leaves_http_direct(monkeypatch: pytest.MonkeyPatch, list_charts: object) -> None:
    with HostileServer([EMPTY_PAGE]) as proxy, HostileServer([EMPTY_PAGE]) as platform:
        monkeypatch.setenv("HTTPS_PROXY", proxy.url)
        list_charts(_config(platform.url))  # type: ignore[operator]
    assert proxy.received == []
    assert len(platform.received) == 1


@pytest.mark.parametrize("list_charts", CLIENTS)
def test_a_trickling_proxy_cannot_hold_a_request_past_its_deadline(
    monkeypatch: pytest.MonkeyPatch, list_charts: object
) -> None:
    with HostileServer([json_script(b'{"data": []}', trickle=0.2)]) as proxy:
        monkeypatch.setenv("HTTP_PROXY", proxy.url)
        with pytest.raises(AnalyticsTimeoutError):
            list_charts(_config(PLATFORM, timeout=1.0))  # type: ignore[operator]
    # Each byte comes 0.2 s after the last, well inside httpx's 1 s read timeout: only the deadline on the
    # whole attempt can end it (without, the 90 bytes arrive after 18 s and the list succeeds). One attempt.
    assert len(proxy.received) == 1
