"""A total deadline for every HTTP request, not only a timeout for each read.

httpx's timeouts apply to each network operation: a server that trickles one byte every half second never
trips a one-second read timeout and can hold a request for as long as it likes. Here a request ends by its
deadline however the server paces its bytes. The deadline travels in a context variable (set around one
attempt by the client, and around a whole call, retries included, by :func:`call_deadline`), so it follows a
request into the connection it happens to use.

- **asyncio**: :class:`AsyncRequestDeadline` is :func:`asyncio.timeout_at` around the request and around each
  read of its body (``_transports.AsyncDeadlineTransport``). httpcore's ``trace`` extension says what the
  request was doing when the time ran out, so the error is the one a per-operation timeout would raise there
  (``ConnectTimeout`` while connecting, ``WriteTimeout`` while sending, else ``ReadTimeout``).
- **blocking**: hand-written, because no library can end a blocking call from outside (there is no
  ``asyncio.timeout`` for a thread): :data:`DEADLINE_BACKEND` gives every connect, TLS handshake, read and
  write at most the time left. :mod:`~airflow_provider_analytics.wire._transports` builds every blocking
  connection pool on it, through httpcore's public ``network_backend`` parameter.
"""

from __future__ import annotations

import asyncio
import logging
import ssl
import time
from collections.abc import Awaitable, Callable, Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from types import TracebackType
from typing import Any, TypeAlias

import httpcore

log = logging.getLogger("airflow_provider_analytics.wire")

# The least time one poll of a wait gets, even when the wait's deadline is closer (or past, after a restart):
# a last short look rather than none.
LAST_LOOK_SECONDS = 1.0
PASSED = "the request's deadline passed"

_request_deadline: ContextVar[float | None] = ContextVar("analytics_request_deadline", default=None)
_call_deadline: ContextVar[float | None] = ContextVar("analytics_call_deadline", default=None)
_pause_waits: ContextVar[bool] = ContextVar("analytics_pause_waits", default=True)


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
def waiting_for_no_pause() -> Iterator[None]:
    """Inside the block, a call that meets a rate-limit pause of its token fails at once, unsent, with
    ``RateLimitedError`` (naming the pause), instead of waiting for the pause to end.

    For a task that can give its worker slot back and come again when the pause ends: a sensor in reschedule
    mode, a deferrable one before it defers (docs/operators.md, "Waiting under the platform's rate limit"). The
    limiter's pace between turns is not a pause: a request still waits its turn.
    """
    token = _pause_waits.set(False)
    try:
        yield
    finally:
        _pause_waits.reset(token)


def pause_waits_allowed() -> bool:
    """Whether a call made now may wait for a pause of its token (``False`` inside :func:`waiting_for_no_pause`)."""
    return _pause_waits.get()


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
        raise expired(PASSED)
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


# A network backend keeps no state of its own, so every blocking connection pool of every client shares this one.
DEADLINE_BACKEND: httpcore.NetworkBackend = _Backend(httpcore.SyncBackend())

# The timeout a step of httpcore's (its trace events, "<where>.<step>.started") raises when the deadline passes
# during it; any other step is a read. Before its first step a request waits for a connection of the pool.
_TIMEOUT_BY_STEP: dict[str, type[httpcore.TimeoutException]] = {
    "connect_tcp": httpcore.ConnectTimeout,
    "connect_unix_socket": httpcore.ConnectTimeout,
    "start_tls": httpcore.ConnectTimeout,
    "retry": httpcore.ConnectTimeout,
    "send_request_headers": httpcore.WriteTimeout,
    "send_request_body": httpcore.WriteTimeout,
}
Trace: TypeAlias = Callable[[str, dict[str, Any]], Awaitable[None]]


class RequestPhase:
    """httpcore's ``trace`` callback for one asyncio request: remembers the timeout its current step would raise.

    :param outer: a ``trace`` callback the request already carried, called on as before.
    """

    __slots__ = ("outer", "timeout")

    def __init__(self, outer: Trace | None = None) -> None:
        self.outer = outer
        self.timeout: type[httpcore.TimeoutException] = httpcore.PoolTimeout

    async def __call__(self, event: str, info: dict[str, Any]) -> None:
        if event.endswith(".started"):
            self.timeout = _TIMEOUT_BY_STEP.get(event.rsplit(".", 2)[-2], httpcore.ReadTimeout)
        if self.outer is not None:
            await self.outer(event, info)


class AsyncRequestDeadline:
    """``async with AsyncRequestDeadline():`` ends the block by the request's deadline, if one is set.

    The block runs under :func:`asyncio.timeout_at` the deadline; when that expires, the block raises the httpcore
    timeout of the step the request was in (``phase``; a read of the body without one), which the transport turns
    into httpx's, as a per-operation timeout of that step would have been.

    :param phase: the request's :class:`RequestPhase`, when it has one.
    """

    __slots__ = ("_phase", "_timeout")

    def __init__(self, phase: RequestPhase | None = None) -> None:
        self._phase = phase
        self._timeout: asyncio.Timeout | None = None

    async def __aenter__(self) -> None:
        deadline = _request_deadline.get()
        if deadline is None:
            return
        loop = asyncio.get_running_loop()  # its clock need not be time.monotonic(): convert, do not assume
        self._timeout = asyncio.timeout_at(loop.time() + (deadline - time.monotonic()))
        await self._timeout.__aenter__()

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        timeout, self._timeout = self._timeout, None
        if timeout is None:
            return
        try:
            await timeout.__aexit__(kind, exc, tb)
        except TimeoutError:
            if not timeout.expired():  # someone else's TimeoutError
                raise
            expired = httpcore.ReadTimeout if self._phase is None else self._phase.timeout
            raise expired(PASSED) from TimeoutError(PASSED)
