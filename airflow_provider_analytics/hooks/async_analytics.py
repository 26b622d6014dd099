"""``AnalyticsAsyncHook``: the asyncio hook triggers use (re-exported by :mod:`.analytics`).

It mirrors :class:`~airflow_provider_analytics.hooks.analytics.AnalyticsHook`: :meth:`AnalyticsAsyncHook.call` is
its client's ``call``, and :meth:`AnalyticsAsyncHook.rereading` reads the connection again after a refused token
by the same decision (``hooks/_reread.py``); only the ``await`` differs.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from airflow.providers.common.compat.connection import get_async_connection
from airflow.providers.common.compat.sdk import AirflowNotFoundException

from airflow_provider_analytics.connection._config import missing_store, prepared_config
from airflow_provider_analytics.connection._store import rate_limit_store_id
from airflow_provider_analytics.hooks._metrics import report_to_airflow
from airflow_provider_analytics.hooks._reread import TokenRefusals
from airflow_provider_analytics.hooks.base import DEFAULT_CONN_ID, AnalyticsBaseHook
from airflow_provider_analytics.wire import _endpoints as endpoints
from airflow_provider_analytics.wire._calls import Call
from airflow_provider_analytics.wire._models import Workflow
from airflow_provider_analytics.wire._pagination import AsyncPager
from airflow_provider_analytics.wire.client import AsyncAnalyticsClient
from airflow_provider_analytics.wire.config import ClientConfig
from airflow_provider_analytics.wire.errors import UnauthenticatedError

__all__ = ["AnalyticsAsyncHook"]
report_to_airflow()  # a triggerer reports its requests as Airflow metrics too (hooks/_metrics.py)

T = TypeVar("T")


class AnalyticsAsyncHook(AnalyticsBaseHook):
    """Asyncio hook for triggers: one client for the hook's whole life, connection looked up asynchronously.

    Use it as ``async with AnalyticsAsyncHook(conn_id) as hook: ...`` so the client is closed.

    :param analytics_conn_id: the Airflow connection of type ``analytics``.
    """

    def __init__(self, analytics_conn_id: str = DEFAULT_CONN_ID, **kwargs: Any) -> None:
        super().__init__(analytics_conn_id, **kwargs)
        self._client: AsyncAnalyticsClient | None = None

    async def get_client(self) -> AsyncAnalyticsClient:
        """The configured async client, built on first use with the async connection lookup."""
        if self._client is None:
            self._client = AsyncAnalyticsClient(await self._read_config())
        return self._client

    async def _read_config(self) -> ClientConfig:
        """The connection (and the Redis connection it names as its rate limit store), looked up asynchronously."""
        conn = await get_async_connection(self.analytics_conn_id, self)
        store_id, store = rate_limit_store_id(conn), None
        if store_id is not None:  # the Redis connection it names as its rate limit store
            try:
                store = await get_async_connection(store_id, self)
            except AirflowNotFoundException:
                raise missing_store(conn, store_id) from None
        # Reading the config may stat a CA bundle and build the process's TLS context: off the loop.
        return await asyncio.to_thread(prepared_config, conn, store)

    async def call(self, call: Call[T]) -> T:
        """Send one request built in ``wire/_endpoints.py`` (a wait's read or cancel) with the current client.

        The client is looked up on each call: :meth:`reload_connection` may have replaced it.

        :param call: the request and the parser of its answer.
        """
        return await (await self.get_client()).call(call)

    async def rereading(self, operation: Callable[[AnalyticsAsyncHook], Awaitable[T]], refusals: TokenRefusals) -> T:
        """``operation(self)``, a poll; when the token is refused and the connection, read again, changed, once more
        with it. A refusal right after that re-read is final (``hooks/_reread.py``).

        :param operation: the poll, given this hook.
        :param refusals: the trigger's memory of its re-reads, and the logger that says when one is used.
        """
        try:
            result = await operation(self)
        except UnauthenticatedError:
            if not refusals.worth_rereading(time.monotonic()) or not await self.reload_connection():
                raise
            refusals.reread(time.monotonic())
            result = await operation(self)
        refusals.answered()
        return result

    async def list_workflows(self, page_size: int = 100) -> AsyncPager[Workflow]:
        """Iterate all workflows lazily with ``async for``."""
        return (await self.get_client()).paginate(endpoints.list_workflows(page_size))

    async def reload_connection(self) -> bool:
        """Read the connection again; when it changed (a rotated token), later calls use a new client.

        :return: whether anything changed.
        """
        config = await self._read_config()
        if self._client is not None and self._client.config == config:
            return False
        previous, self._client = self._client, AsyncAnalyticsClient(config)
        if previous is not None:
            await previous.aclose()
        return True

    async def aclose(self) -> None:
        """Close the client, if one was opened."""
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    async def __aenter__(self) -> AnalyticsAsyncHook:
        return self

    async def __aexit__(self, *exc_info: Any) -> None:
        await self.aclose()
