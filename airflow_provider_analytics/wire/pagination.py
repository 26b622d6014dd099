"""Lazy iteration over cursor-paginated lists, for both transports."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Any, Generic, TypeVar

from airflow_provider_analytics.wire.endpoints import Page
from airflow_provider_analytics.wire.errors import UnexpectedResponseError
from airflow_provider_analytics.wire.models import Column

T = TypeVar("T")


def _next_cursor(previous: str | None, page: Page[Any]) -> str | None:
    # A platform bug that hands back the same cursor would otherwise loop forever.
    if page.next_cursor is not None and page.next_cursor == previous:
        raise UnexpectedResponseError(f"the platform returned the same cursor twice ({previous!r})")
    return page.next_cursor


class SyncPager(Generic[T]):
    """Iterates a list's items across pages, fetching each page only when it is reached.

    :param fetch: fetches the page at a cursor (``None`` for the first).
    """

    def __init__(self, fetch: Callable[[str | None], Page[T]]) -> None:
        self._fetch = fetch

    def pages(self) -> Iterator[Page[T]]:
        """Yield whole pages."""
        cursor: str | None = None
        while True:
            page = self._fetch(cursor)
            yield page
            cursor = _next_cursor(cursor, page)
            if cursor is None:
                return

    def __iter__(self) -> Iterator[T]:
        for page in self.pages():
            yield from page.items


class AsyncPager(Generic[T]):
    """The ``async for`` form of :class:`SyncPager`.

    :param fetch: fetches the page at a cursor (``None`` for the first).
    """

    def __init__(self, fetch: Callable[[str | None], Awaitable[Page[T]]]) -> None:
        self._fetch = fetch

    async def pages(self) -> AsyncIterator[Page[T]]:
        """Yield whole pages."""
        cursor: str | None = None
        while True:
            page = await self._fetch(cursor)
            yield page
            cursor = _next_cursor(cursor, page)
            if cursor is None:
                return

    async def __aiter__(self) -> AsyncIterator[T]:
        async for page in self.pages():
            for item in page.items:
                yield item


class ChartRows:
    """Rows of a chart's data; :attr:`columns` is filled when the first page arrives.

    :param pager: the pager over the chart data pages.
    """

    def __init__(self, pager: SyncPager[list[Any]]) -> None:
        self._pager = pager
        self.columns: list[Column] | None = None

    def __iter__(self) -> Iterator[list[Any]]:
        for page in self._pager.pages():
            if self.columns is None:
                self.columns = list(page.body.get("columns") or [])
            yield from page.items
