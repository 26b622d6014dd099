"""The two transports. They only carry out the steps the shared core yields; no logic is copied here."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from types import TracebackType
from typing import Any, TypeVar

import httpx

from airflow_provider_analytics.wire.core import BaseAnalyticsClient, ClientConfig, Exchange, Outcome, Sleep
from airflow_provider_analytics.wire.endpoints import Call, PagedCall, RequestSpec
from airflow_provider_analytics.wire.pagination import AsyncPager, SyncPager

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
        self._http = httpx.Client(transport=transport, **self._httpx_options())
        self._sleep = sleep

    def call(self, call: Call[T]) -> T:
        """Send a request built by :mod:`~airflow_provider_analytics.wire.endpoints`, with retries."""
        return self._decode(call, self._run(self._exchange(self._http, call.spec)))

    def paginate(self, paged: PagedCall[T]) -> SyncPager[T]:
        """Iterate a paginated list lazily."""
        return SyncPager(lambda cursor: self.call(paged.page(cursor)))

    def open_stream(self, spec: RequestSpec) -> httpx.Response:
        """Send with retries and return the successful response with its body unread; close it after use."""
        return self._run(self._exchange(self._http, spec, stream=True))

    def _run(self, exchange: Exchange) -> httpx.Response:
        outcome: Outcome = None
        while True:
            try:
                step = exchange.send(outcome)
            except StopIteration as done:
                final: httpx.Response = done.value
                return final
            if isinstance(step, Sleep):
                self._sleep(step.seconds)
                outcome = None
                continue
            response = None
            try:
                response = self._http.send(step.request, stream=True)
                if not step.stream or response.is_error:
                    response.read()
                outcome = response
            except httpx.TransportError as exc:
                if response is not None:
                    response.close()
                outcome = exc

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
        self._http = httpx.AsyncClient(transport=transport, **self._httpx_options())
        self._sleep = sleep

    async def call(self, call: Call[T]) -> T:
        """Send a request built by :mod:`~airflow_provider_analytics.wire.endpoints`, with retries."""
        return self._decode(call, await self._run(self._exchange(self._http, call.spec)))

    def paginate(self, paged: PagedCall[T]) -> AsyncPager[T]:
        """Iterate a paginated list lazily with ``async for``."""
        return AsyncPager(lambda cursor: self.call(paged.page(cursor)))

    async def _run(self, exchange: Exchange) -> httpx.Response:
        outcome: Outcome = None
        while True:
            try:
                step = exchange.send(outcome)
            except StopIteration as done:
                final: httpx.Response = done.value
                return final
            if isinstance(step, Sleep):
                await self._sleep(step.seconds)
                outcome = None
                continue
            response = None
            try:
                response = await self._http.send(step.request, stream=True)
                if not step.stream or response.is_error:
                    await response.aread()
                outcome = response
            except httpx.TransportError as exc:
                if response is not None:
                    await response.aclose()
                outcome = exc

    async def aclose(self) -> None:
        """Close the connection pool."""
        await self._http.aclose()

    async def __aenter__(self) -> AsyncAnalyticsClient:
        return self

    async def __aexit__(self, *exc_info: Any) -> None:
        await self.aclose()
