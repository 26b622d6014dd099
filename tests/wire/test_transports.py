"""The transports under both clients (wire/_transports.py): httpcore pools on the deadline backend, built from
public httpx and httpcore API only, answering and failing exactly as httpx's own transport does.

The deadlines themselves are tested where they matter (test_trickled_headers.py, the hostile answers and
downloads, test_proxies_from_environment.py); here: the error table, errors while a body streams, kept
connections and the settings every pool is built with.
"""

from __future__ import annotations

import asyncio

import httpcore
import httpx
import pytest

from airflow_provider_analytics.wire import _endpoints as endpoints
from airflow_provider_analytics.wire._core import KEEPALIVE_SECONDS, BaseAnalyticsClient
from airflow_provider_analytics.wire._tls import tls_context
from airflow_provider_analytics.wire._transports import (
    HTTPCORE_TO_HTTPX,
    PoolSettings,
    async_transports,
    httpx_error,
    sync_transports,
)
from airflow_provider_analytics.wire.client import AnalyticsClient, AsyncAnalyticsClient
from airflow_provider_analytics.wire.config import ClientConfig
from tests.support.hostile import HostileServer, Script, json_script

ERROR_PAIRS = [pytest.param(core, public, id=core.__name__) for core, public in HTTPCORE_TO_HTTPX.items()]
# Claims 100 bytes, sends 5, closes: the body fails while it streams, after the answer's head arrived.
CUT_SHORT = Script(b"HTTP/1.1 200 OK", (b"Content-Length: 100",), b"short")
KEPT = json_script(b'{"data": []}', close=False)


def _config(url: str) -> ClientConfig:
    return ClientConfig(base_url=url, token="t0ken-value", timeout=5.0)


def _settings() -> PoolSettings:
    return PoolSettings(tls_context(True), httpx.Limits())


@pytest.mark.parametrize(("core", "public"), ERROR_PAIRS)
def test_each_httpcore_error_becomes_its_httpx_twin(core: type[Exception], public: type[Exception]) -> None:
    mapped = httpx_error(core("it broke"))
    assert type(mapped) is public
    assert str(mapped) == "it broke"


def test_a_subclass_maps_to_its_nearest_listed_ancestor() -> None:
    class Stalled(httpcore.ReadTimeout):
        pass

    assert type(httpx_error(Stalled("slow"))) is httpx.ReadTimeout
    assert httpx_error(ValueError("not a transport error")) is None


def test_every_httpcore_error_is_in_the_table() -> None:
    """A new httpcore exception class would pass through unmapped, past the client's retry and error rules."""
    public = {getattr(httpcore, name) for name in httpcore.__all__}
    errors = {kind for kind in public if isinstance(kind, type) and issubclass(kind, Exception)}
    # ConnectionNotAvailable is the pool's own retry signal; it never leaves handle_request.
    assert errors - set(HTTPCORE_TO_HTTPX) == {httpcore.ConnectionNotAvailable}


def test_a_body_cut_short_fails_with_httpx_s_error_sync() -> None:
    with (
        HostileServer([CUT_SHORT]) as server,
        httpx.Client(**sync_transports(_settings())) as http,
        pytest.raises(httpx.RemoteProtocolError) as raised,
    ):
        http.get(server.url)
    assert isinstance(raised.value.__cause__, httpcore.RemoteProtocolError)


def test_a_body_cut_short_fails_with_httpx_s_error_async() -> None:
    async def scenario(url: str) -> None:
        async with httpx.AsyncClient(**async_transports(_settings())) as http:
            await http.get(url)

    with HostileServer([CUT_SHORT]) as server, pytest.raises(httpx.RemoteProtocolError) as raised:
        asyncio.run(scenario(server.url))
    assert isinstance(raised.value.__cause__, httpcore.RemoteProtocolError)


def test_a_refused_connection_is_httpx_s_connect_error() -> None:
    with HostileServer([KEPT]) as server:
        url = server.url  # nothing listens there once the server stopped
    with httpx.Client(**sync_transports(_settings())) as http, pytest.raises(httpx.ConnectError):
        http.get(url)


def test_polls_reuse_one_kept_connection_sync() -> None:
    with HostileServer([KEPT]) as server:
        with AnalyticsClient(_config(server.url)) as client:
            for _ in range(3):
                client.call(endpoints.list_charts())
        assert (len(server.received), server.connections) == (3, 1)


def test_polls_reuse_one_kept_connection_async() -> None:
    async def scenario(url: str) -> None:
        async with AsyncAnalyticsClient(_config(url)) as client:
            for _ in range(3):
                await client.call(endpoints.list_charts())

    with HostileServer([KEPT]) as server:
        asyncio.run(scenario(server.url))
        assert (len(server.received), server.connections) == (3, 1)


def test_every_pool_shares_the_tls_context_and_keeps_connections_two_minutes() -> None:
    settings = BaseAnalyticsClient(_config("https://api.example.com")).pool_settings()
    assert settings.ssl_context is tls_context(True)  # one CA bundle load per process, not per client
    assert settings.options() == {
        "ssl_context": tls_context(True),
        "max_connections": 100,
        "max_keepalive_connections": 20,
        "keepalive_expiry": KEEPALIVE_SECONDS,
    }
