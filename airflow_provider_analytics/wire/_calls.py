"""The shapes every endpoint builder produces and every client sends: requests, calls, pages."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar, cast

from airflow_provider_analytics.wire._bodies import loads_json
from airflow_provider_analytics.wire._contract import HEADER_IDEMPOTENCY_KEY, HEADER_REQUEST_ID
from airflow_provider_analytics.wire._redaction import may_hide_escapes, scrub_text, scrub_value
from airflow_provider_analytics.wire.errors import UnexpectedResponseError, clean_text

if TYPE_CHECKING:
    import httpx

T = TypeVar("T")
# The longest next_cursor a listing follows. Real cursors are tens to hundreds of characters; this one, at up to
# 4 UTF-8 bytes a character percent-encoded to 12, is at most 48 KiB of query, under httpx's 64 KiB cap on a URL
# component (past it httpx raises its own InvalidURL, outside the provider's exceptions). A longer cursor is a
# broken or hostile platform, refused before a request is built.
MAX_CURSOR_LENGTH = 4096


@dataclass(frozen=True)
class RequestSpec:
    """What to send. ``route`` is the path template (used to log deprecations once per route).

    ``mask_answer``: whether a successful answer is read with every remembered secret masked
    (``_redaction.py``), as every answer a hook method returns is. ``False`` for an answer that is data the caller
    compares or writes (the listings a definitions plan or export reads, the answer of an apply's write): masking
    would rewrite it (a name holding a remembered secret's text would no longer match its object). An error answer
    is masked either way: it becomes an exception's text.
    """

    method: str
    path: str
    route: str
    params: Mapping[str, str | int] | None = None
    json_body: Any = None
    headers: Mapping[str, str] = field(default_factory=dict)
    mask_answer: bool = True

    @property
    def idempotent(self) -> bool:
        """Whether sending this request twice cannot do the work twice."""
        return self.method in ("GET", "PUT", "DELETE") or HEADER_IDEMPOTENCY_KEY in self.headers


@dataclass(frozen=True)
class Call(Generic[T]):
    """A request and the parser of its successful JSON answer."""

    spec: RequestSpec
    parse: Callable[[Any], T]

    def unmasked(self) -> Call[T]:
        """This call, its successful answer read as the platform sent it (``RequestSpec.mask_answer``)."""
        return Call(replace(self.spec, mask_answer=False), self.parse)

    def decode(self, response: httpx.Response, body: bytes | None) -> T:
        """The successful answer's body, read as JSON (secrets it spells in escapes masked, unless the answer is
        data: ``RequestSpec.mask_answer``) and parsed.

        :param response: the answer, for its status and the request id errors name.
        :param body: its body, read and bounded (``None`` or empty: no body).
        :raises UnexpectedResponseError: the body is not JSON, or not of the shape the parser expects.
        """
        spec = self.spec
        request_id = clean_text(response.headers.get(HEADER_REQUEST_ID, ""), 200) or None
        content_type = clean_text(response.headers.get("content-type", ""), 200) or None
        try:
            value = loads_json(body) if body else None
            if body and spec.mask_answer and may_hide_escapes(body):
                value = scrub_value(value)
        except (ValueError, RecursionError):
            raise UnexpectedResponseError(
                f"{spec.method} {spec.path} answered {response.status_code} with a body that is not JSON "
                "(or is nested too deeply to read)",
                request_id=request_id,
                content_type=content_type,
            ) from None
        try:
            return self.parse(value)
        except UnexpectedResponseError as exc:
            # Masked: a parser may quote the answer, which an unmasked call did not mask (a message is text).
            raise type(exc)(
                scrub_text(f"{spec.method} {spec.path}: {exc}"), request_id=request_id, content_type=content_type
            ) from None


class Sender(Protocol):
    """What sends a :class:`Call` and answers with its parsed result, blocking: an ``AnalyticsClient``.

    Code that sends without knowing about Airflow takes one (definitions, a dashboard update's repeat check): the
    hook hands it its client, a test may hand it any client.
    """

    def call(self, call: Call[T]) -> T:
        """Send ``call`` and parse its answer.

        :param call: the request and the parser of its answer.
        """
        ...


@dataclass(frozen=True)
class Page(Generic[T]):
    """One page of a list: its items, the cursor of the next page and the whole body."""

    items: list[T]
    next_cursor: str | None
    body: dict[str, Any]


@dataclass(frozen=True)
class PagedCall(Generic[T]):
    """A cursor-paginated list; :meth:`page` builds the call for one page.

    ``check`` validates what else a page carries (chart data pages carry ``columns``); ``mask_answer`` is each
    page's (:class:`RequestSpec`).
    """

    route: str
    path: str
    page_size: int
    check: Callable[[dict[str, Any]], None] | None = None
    mask_answer: bool = True

    def unmasked(self) -> PagedCall[T]:
        """This list, its pages read as the platform sent them (``RequestSpec.mask_answer``)."""
        return replace(self, mask_answer=False)

    def page(self, cursor: str | None) -> Call[Page[T]]:
        """Build the call that fetches the page at ``cursor`` (``None`` for the first)."""
        params: dict[str, str | int] = {"limit": self.page_size}
        if cursor is not None:
            params["cursor"] = _sendable_cursor(cursor, self.path)
        spec = RequestSpec("GET", self.path, self.route, params=params, mask_answer=self.mask_answer)
        return Call(spec, self._parse_page)

    def _parse_page(self, body: Any) -> Page[T]:
        document = expect_object(body)
        items = document.get("data")
        cursor = document.get("next_cursor")
        if not isinstance(items, list):
            raise UnexpectedResponseError("the platform answered a page without a 'data' list")
        if len(items) > self.page_size:  # the contract: a page holds at most its limit; more is no page of ours
            raise UnexpectedResponseError(
                f"the platform answered a page of {len(items):,} items, asked for at most {self.page_size}; stopped"
                " reading the listing"
            )
        if not (cursor is None or isinstance(cursor, str)):
            raise UnexpectedResponseError(
                f"the page's next_cursor must be a string or null, not {type(cursor).__name__}"
            )
        if self.check is not None:
            self.check(document)
        return Page(cast("list[T]", items), cursor or None, document)


def _sendable_cursor(cursor: str, path: str) -> str:
    """``cursor`` when a request URL can carry it, else :class:`UnexpectedResponseError` naming the listing."""
    problem = None
    if len(cursor) > MAX_CURSOR_LENGTH:
        problem = f"is {len(cursor)} characters long, over the {MAX_CURSOR_LENGTH} a request URL can carry"
    elif not cursor.isascii():
        try:
            cursor.encode("utf-8")
        except UnicodeEncodeError:  # a lone surrogate: JSON lets "\ud800" through, UTF-8 cannot encode it
            problem = f"({len(cursor)} characters) is not valid text and cannot be sent"
    if problem is not None:
        raise UnexpectedResponseError(f"GET {path}: the platform's next_cursor {problem}; stopped reading the listing")
    return cursor


def expect_object(body: Any) -> dict[str, Any]:
    """The body as a JSON object, or :class:`UnexpectedResponseError`."""
    if not isinstance(body, dict):
        raise UnexpectedResponseError(f"expected a JSON object, got {type(body).__name__}")
    return body
