"""Lazy iteration over cursor-paginated lists, for both transports."""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Any, Generic, TypeVar

from airflow_provider_analytics.wire._calls import Page, PagedCall, Sender
from airflow_provider_analytics.wire._contract import MAX_PAGES
from airflow_provider_analytics.wire._models import Column
from airflow_provider_analytics.wire.errors import UnexpectedResponseError, clean_text

T = TypeVar("T")


class _CursorTrail:
    """The cursors a listing has followed: a cursor seen before (a cycle) or too many pages end it.

    A platform bug that hands back an earlier cursor would otherwise make the listing loop forever. Each cursor is
    remembered as a 16-byte digest, not as its text, so what a listing holds does not grow with its cursors' length.
    """

    def __init__(self, max_pages: int) -> None:
        self._seen: set[bytes] = set()
        self._max_pages = max_pages

    def next(self, page: Page[Any]) -> str | None:
        cursor = page.next_cursor
        if cursor is None:
            return None
        # "surrogatepass": JSON admits a lone surrogate ("\ud800") that strict UTF-8 cannot encode.
        fingerprint = hashlib.blake2b(cursor.encode("utf-8", "surrogatepass"), digest_size=16).digest()
        if fingerprint in self._seen:
            raise UnexpectedResponseError(
                f"the platform's pages run in a circle: cursor {clean_text(cursor, 80)!r} came back after "
                f"{len(self._seen)} pages"
            )
        if len(self._seen) + 1 >= self._max_pages:
            raise UnexpectedResponseError(f"the listing did not end after {self._max_pages} pages; stopped reading")
        self._seen.add(fingerprint)
        return cursor


class SyncPager(Generic[T]):
    """Iterates a list's items across pages, fetching each page only when it is reached.

    :param fetch: fetches the page at a cursor (``None`` for the first).
    :param max_pages: the most pages read before the listing is taken to be broken.
    """

    def __init__(self, fetch: Callable[[str | None], Page[T]], max_pages: int = MAX_PAGES) -> None:
        self._fetch = fetch
        self._max_pages = max_pages

    def pages(self) -> Iterator[Page[T]]:
        """Yield whole pages."""
        trail = _CursorTrail(self._max_pages)
        cursor: str | None = None
        while True:
            page = self._fetch(cursor)
            yield page
            cursor = trail.next(page)
            if cursor is None:
                return

    def __iter__(self) -> Iterator[T]:
        for page in self.pages():
            yield from page.items


def listing(sender: Sender, paged: PagedCall[T]) -> SyncPager[T]:
    """Iterate a paginated list lazily, every page sent through ``sender``.

    :param sender: what sends each page's call (a client).
    :param paged: the list.
    """
    return SyncPager(lambda cursor: sender.call(paged.page(cursor)))


class AsyncPager(Generic[T]):
    """The ``async for`` form of :class:`SyncPager`.

    :param fetch: fetches the page at a cursor (``None`` for the first).
    :param max_pages: the most pages read before the listing is taken to be broken.
    """

    def __init__(self, fetch: Callable[[str | None], Awaitable[Page[T]]], max_pages: int = MAX_PAGES) -> None:
        self._fetch = fetch
        self._max_pages = max_pages

    async def pages(self) -> AsyncIterator[Page[T]]:
        """Yield whole pages."""
        trail = _CursorTrail(self._max_pages)
        cursor: str | None = None
        while True:
            page = await self._fetch(cursor)
            yield page
            cursor = trail.next(page)
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
