"""The two clients, :class:`AnalyticsClient` (blocking) and :class:`AsyncAnalyticsClient` (asyncio).

Each drives the shared retry loop of :mod:`._core`: it sends every ``Send`` step on its ``httpx`` client,
within the step's deadline, reads the answer's body under the size bound, sleeps every ``Sleep`` step and makes
every ``StoreCall`` (a round trip to the rate limit's store, ``_shared_limiter.py``) the way it makes its I/O.
Nothing else is decided here. The two ``_run``/``_attempt`` pairs differ only by ``await``: they are the
I/O each client does itself. The connection pools under both are built in :mod:`._transports`.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from types import TracebackType
from typing import Any, TypeVar

import httpx

from airflow_provider_analytics.wire._core import BaseAnalyticsClient
from airflow_provider_analytics.wire._deadline import request_deadline
from airflow_provider_analytics.wire._endpoints import Call, PagedCall, RequestSpec
from airflow_provider_analytics.wire._pagination import AsyncPager, SyncPager, listing
from airflow_provider_analytics.wire._steps import Answer, Exchange, Reply, Send, Sleep, StoreCall
from airflow_provider_analytics.wire._store_clients import AsyncStoreLeases
from airflow_provider_analytics.wire._transports import async_transports, sync_transports
from airflow_provider_analytics.wire.config import ClientConfig
from airflow_provider_analytics.wire.errors import UnexpectedResponseError

__all__ = ["AnalyticsClient", "AsyncAnalyticsClient"]

T = TypeVar("T")


class AnalyticsClient(BaseAnalyticsClient):
    """Blocking client for the /v1 API, built on ``httpx.Client``.

    :param config: the client configuration.
    :param transport: an httpx transport to use instead of the network (tests inject faults with it).
    :param sleep: the function used to wait between retries.
    """

    def __init__(
        self,
        config: ClientConfig,
        *,
        transport: httpx.BaseTransport | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        super().__init__(config)
        # An injected transport (a test's MockTransport) is used as it is, without environment proxies, as
        # httpx itself does; otherwise every pool runs on the deadline backend (wire/_transports.py).
        transports = {"transport": transport} if transport is not None else sync_transports(self.pool_settings())
        self._http = httpx.Client(**transports, **self._httpx_options())
        self._sleep = sleep

    def call(self, call: Call[T]) -> T:
        """Send a request built by :mod:`~airflow_provider_analytics.wire._endpoints`, with retries."""
        answer = self._run(self._exchange(self._http, call.spec))
        return call.decode(answer.response, answer.body)

    def paginate(self, paged: PagedCall[T]) -> SyncPager[T]:
        """Iterate a paginated list lazily."""
        return listing(self, paged)

    def open_stream(self, spec: RequestSpec) -> httpx.Response:
        """Send with retries and return the successful response with its body unread; close it after use."""
        return self._run(self._exchange(self._http, spec, stream=True)).response

    def _run(self, exchange: Exchange) -> Answer:
        reply: Reply = None
        while True:
            try:
                step = exchange.send(reply)
            except StopIteration as done:
                answer: Answer = done.value
                return answer
            if isinstance(step, Sleep):
                self._sleep(step.seconds)
                reply = None
            elif isinstance(step, StoreCall):
                reply = step.blocking(step.timeout)
            else:
                reply = self._attempt(step)

    def _attempt(self, step: Send) -> Reply:
        with request_deadline(step.deadline):
            try:
                response = self._http.send(step.request, stream=True)
            except httpx.TransportError as exc:
                return exc
            if step.stream and response.is_success:
                return Answer(response, None)
            try:
                body = self.body_reader(response)
                for chunk in (response.content,) if response.is_stream_consumed else response.iter_raw():
                    body.feed(chunk)
                return Answer(response, body.finish())
            except httpx.TransportError as exc:
                return exc
            except UnexpectedResponseError:
                if not response.is_error:
                    raise
                return Answer(response, b"")  # an unreadable error body still leaves its status's error
            finally:
                response.close()

    def close(self) -> None:
        """Close the connection pool."""
        self._http.close()

    def __enter__(self) -> AnalyticsClient:
        return self

    def __exit__(self, *exc_info: type[BaseException] | BaseException | TracebackType | None) -> None:
        self.close()


class AsyncAnalyticsClient(BaseAnalyticsClient):
    """Asyncio client for the /v1 API, built on ``httpx.AsyncClient`` (used by triggers).

    :param config: the client configuration.
    :param transport: an httpx async transport to use instead of the network.
    :param sleep: the coroutine function used to wait between retries.
    """

    def __init__(
        self,
        config: ClientConfig,
        *,
        transport: httpx.AsyncBaseTransport | None = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        super().__init__(config)
        transports = {"transport": transport} if transport is not None else async_transports(self.pool_settings())
        self._http = httpx.AsyncClient(**transports, **self._httpx_options())
        self._sleep = sleep
        self._store_leases = AsyncStoreLeases()  # the rate limit store's clients of this loop, while this one lives

    async def call(self, call: Call[T]) -> T:
        """Send a request built by :mod:`~airflow_provider_analytics.wire._endpoints`, with retries."""
        answer = await self._run(self._exchange(self._http, call.spec))
        return call.decode(answer.response, answer.body)

    def paginate(self, paged: PagedCall[T]) -> AsyncPager[T]:
        """Iterate a paginated list lazily with ``async for``."""
        return AsyncPager(lambda cursor: self.call(paged.page(cursor)))

    async def _run(self, exchange: Exchange) -> Answer:
        reply: Reply = None
        while True:
            try:
                step = exchange.send(reply)
            except StopIteration as done:
                answer: Answer = done.value
                return answer
            if isinstance(step, Sleep):
                await self._sleep(step.seconds)
                reply = None
            elif isinstance(step, StoreCall):
                reply = await step.awaiting(self._store_leases, step.timeout)
            else:
                reply = await self._attempt(step)

    async def _attempt(self, step: Send) -> Reply:
        with request_deadline(step.deadline):
            try:
                response = await self._http.send(step.request, stream=True)
            except httpx.TransportError as exc:
                return exc
            if step.stream and response.is_success:
                return Answer(response, None)
            try:
                body = self.body_reader(response)
                if response.is_stream_consumed:
                    body.feed(response.content)
                else:
                    async for chunk in response.aiter_raw():
                        body.feed(chunk)
                return Answer(response, body.finish())
            except httpx.TransportError as exc:
                return exc
            except UnexpectedResponseError:
                if not response.is_error:
                    raise
                return Answer(response, b"")  # an unreadable error body still leaves its status's error
            finally:
                await response.aclose()

    async def aclose(self) -> None:
        """Close the connection pool, and give back the rate limit store's clients it held."""
        await self._http.aclose()
        await self._store_leases.aclose()

    async def __aenter__(self) -> AsyncAnalyticsClient:
        return self

    async def __aexit__(self, *exc_info: Any) -> None:
        await self.aclose()
