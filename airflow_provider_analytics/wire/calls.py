"""The shapes every endpoint builder produces and every client sends: requests, calls, pages."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar, cast

from airflow_provider_analytics.wire.contract import HEADER_IDEMPOTENCY_KEY
from airflow_provider_analytics.wire.errors import UnexpectedResponseError

T = TypeVar("T")


@dataclass(frozen=True)
class RequestSpec:
    """What to send. ``route`` is the path template (used to log deprecations once per route)."""

    method: str
    path: str
    route: str
    params: Mapping[str, str | int] | None = None
    json_body: Any = None
    headers: Mapping[str, str] = field(default_factory=dict)

    @property
    def idempotent(self) -> bool:
        """Whether sending this request twice cannot do the work twice."""
        return self.method in ("GET", "PUT", "DELETE") or HEADER_IDEMPOTENCY_KEY in self.headers


@dataclass(frozen=True)
class Call(Generic[T]):
    """A request and the parser of its successful JSON answer."""

    spec: RequestSpec
    parse: Callable[[Any], T]


@dataclass(frozen=True)
class Page(Generic[T]):
    """One page of a list: its items, the cursor of the next page and the whole body."""

    items: list[T]
    next_cursor: str | None
    body: dict[str, Any]


@dataclass(frozen=True)
class PagedCall(Generic[T]):
    """A cursor-paginated list; :meth:`page` builds the call for one page.

    ``check`` validates what else a page carries (chart data pages carry ``columns``).
    """

    route: str
    path: str
    page_size: int
    check: Callable[[dict[str, Any]], None] | None = None

    def page(self, cursor: str | None) -> Call[Page[T]]:
        """Build the call that fetches the page at ``cursor`` (``None`` for the first)."""
        params: dict[str, str | int] = {"limit": self.page_size}
        if cursor is not None:
            params["cursor"] = cursor
        spec = RequestSpec("GET", self.path, self.route, params=params)
        return Call(spec, self._parse_page)

    def _parse_page(self, body: Any) -> Page[T]:
        document = expect_object(body)
        items = document.get("data")
        cursor = document.get("next_cursor")
        if not isinstance(items, list):
            raise UnexpectedResponseError("the platform answered a page without a 'data' list")
        if not (cursor is None or isinstance(cursor, str)):
            raise UnexpectedResponseError(
                f"the page's next_cursor must be a string or null, not {type(cursor).__name__}"
            )
        if self.check is not None:
            self.check(document)
        return Page(cast("list[T]", items), cursor or None, document)


def expect_object(body: Any) -> dict[str, Any]:
    """The body as a JSON object, or :class:`UnexpectedResponseError`."""
    if not isinstance(body, dict):
        raise UnexpectedResponseError(f"expected a JSON object, got {type(body).__name__}")
    return body
