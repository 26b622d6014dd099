"""A total deadline for every HTTP request, not only a timeout for each read.

httpx's timeouts apply to each network operation: a server that trickles one byte every half second never
trips a one-second read timeout and can hold a request for as long as it likes. Here every connect, TLS
handshake, read and write of a request gets at most the time left until the request's deadline, so a
request ends by its deadline however the server paces its bytes.

The deadline travels in a context variable (set around one attempt by the client, and around a whole call,
retries included, by :func:`call_deadline`), so it follows a request into the connection it happens to use.
The two backends at the bottom are what :mod:`~airflow_provider_analytics.wire._transports` builds every
connection pool on, through httpcore's public ``network_backend`` parameter.
"""

from __future__ import annotations

import logging
import ssl
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

import httpcore

log = logging.getLogger("airflow_provider_analytics.wire")

# The least time one poll of a wait gets, even when the wait's deadline is closer (or past, after a restart):
# a last short look rather than none.
LAST_LOOK_SECONDS = 1.0

_request_deadline: ContextVar[float | None] = ContextVar("analytics_request_deadline", default=None)
_call_deadline: ContextVar[float | None] = ContextVar("analytics_call_deadline", default=None)


@contextmanager
def call_deadline(seconds: float | None) -> Iterator[None]:
    """Bound every call made inside the block, retries and their waits included, to ``seconds`` from now.

    A deadline already in force is only ever shortened.

    :param seconds: the time budget; ``None`` leaves the current one.
    """
    if seconds is None:
        yield
        return
    deadline = time.monotonic() + max(0.0, seconds)
    outer = _call_deadline.get()
    token = _call_deadline.set(deadline if outer is None else min(outer, deadline))
    try:
        yield
    finally:
        _call_deadline.reset(token)


def current_call_deadline() -> float | None:
    """The :func:`time.monotonic` time by which the current call must end, if one is set."""
    return _call_deadline.get()


@contextmanager
def request_deadline(deadline: float) -> Iterator[None]:
    """Bound the network operations of the request made inside the block to end by ``deadline``.

    :param deadline: a :func:`time.monotonic` time.
    """
    token = _request_deadline.set(deadline)
    try:
        yield
    finally:
        _request_deadline.reset(token)


def _bounded(timeout: float | None, expired: type[httpcore.TimeoutException]) -> float | None:
    deadline = _request_deadline.get()
    if deadline is None:
        return timeout
    left = deadline - time.monotonic()
    if left <= 0:
        raise expired("the request's deadline passed")
    return left if timeout is None else min(timeout, left)


class _Stream(httpcore.NetworkStream):
    def __init__(self, inner: httpcore.NetworkStream) -> None:
        self._inner = inner

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._inner.read(max_bytes, _bounded(timeout, httpcore.ReadTimeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._inner.write(buffer, _bounded(timeout, httpcore.WriteTimeout))

    def close(self) -> None:
        self._inner.close()

    def start_tls(
        self, ssl_context: ssl.SSLContext, server_hostname: str | None = None, timeout: float | None = None
    ) -> httpcore.NetworkStream:
        bounded = _bounded(timeout, httpcore.ConnectTimeout)
        return _Stream(self._inner.start_tls(ssl_context, server_hostname, bounded))

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


class _Backend(httpcore.NetworkBackend):
    def __init__(self, inner: httpcore.NetworkBackend) -> None:
        self._inner = inner

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.NetworkStream:
        bounded = _bounded(timeout, httpcore.ConnectTimeout)
        return _Stream(self._inner.connect_tcp(host, port, bounded, local_address, socket_options))

    def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Iterable[Any] | None = None
    ) -> httpcore.NetworkStream:
        bounded = _bounded(timeout, httpcore.ConnectTimeout)
        return _Stream(self._inner.connect_unix_socket(path, bounded, socket_options))

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


class _AsyncStream(httpcore.AsyncNetworkStream):
    def __init__(self, inner: httpcore.AsyncNetworkStream) -> None:
        self._inner = inner

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return await self._inner.read(max_bytes, _bounded(timeout, httpcore.ReadTimeout))

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        await self._inner.write(buffer, _bounded(timeout, httpcore.WriteTimeout))

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def start_tls(
        self, ssl_context: ssl.SSLContext, server_hostname: str | None = None, timeout: float | None = None
    ) -> httpcore.AsyncNetworkStream:
        bounded = _bounded(timeout, httpcore.ConnectTimeout)
        return _AsyncStream(await self._inner.start_tls(ssl_context, server_hostname, bounded))

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


class _AsyncBackend(httpcore.AsyncNetworkBackend):
    def __init__(self, inner: httpcore.AsyncNetworkBackend) -> None:
        self._inner = inner

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        bounded = _bounded(timeout, httpcore.ConnectTimeout)
        return _AsyncStream(await self._inner.connect_tcp(host, port, bounded, local_address, socket_options))

    async def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Iterable[Any] | None = None
    ) -> httpcore.AsyncNetworkStream:
        bounded = _bounded(timeout, httpcore.ConnectTimeout)
        return _AsyncStream(await self._inner.connect_unix_socket(path, bounded, socket_options))

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)


# Network backends keep no state of their own, so every connection pool of every client shares these two.
DEADLINE_BACKEND: httpcore.NetworkBackend = _Backend(httpcore.SyncBackend())
# AnyIO runs on asyncio (the triggerer's loop) and on trio alike; httpcore's own default picks it for asyncio.
ASYNC_DEADLINE_BACKEND: httpcore.AsyncNetworkBackend = _AsyncBackend(httpcore.AnyIOBackend())
