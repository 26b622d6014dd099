"""Property-based tests (Hypothesis) of whole client calls, sync and async, against arbitrary answers.

An ``httpx.MockTransport`` answers with any status, headers (raw bytes) and body; the body is handed
over as a raw stream, as a network transport would, so the client's own decoding is what reads it.
Nothing may escape but the provider's ``AnalyticsError`` tree or a successful, well-typed result, and an
error status stays that status's error.
"""

from __future__ import annotations

import asyncio
import gzip
import json
import zlib
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import httpx
from hypothesis import event, example, given, settings
from hypothesis import strategies as st

from airflow_provider_analytics.wire import _endpoints as endpoints
from airflow_provider_analytics.wire._endpoints import Call, Page
from airflow_provider_analytics.wire.client import AnalyticsClient, AsyncAnalyticsClient
from airflow_provider_analytics.wire.errors import AnalyticsAPIError, AnalyticsError
from tests.support.properties import (
    CLIENT_SETTINGS,
    CONFIG,
    Headers,
    async_no_sleep,
    header_values,
    most_requests,
    no_sleep,
    outcome,
)

# Answers -------------------------------------------------------------------------------------------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20,
)
short_ids = st.sampled_from(["ch_1", "wf_1", "ex_1", "rp_1", "ds_1"]) | json_values
statuses_text = st.sampled_from(["queued", "running", "succeeded", "ready", "synced", "failed"]) | json_values
statuses = st.sampled_from([200, 201, 202]) | st.integers(100, 599)
# Near-valid shapes reach the parsers' deeper checks; any field may still be of an odd type.
shaped = st.one_of(
    st.fixed_dictionaries({"data": st.lists(json_values, max_size=3) | json_values}),
    st.fixed_dictionaries(
        {"id": short_ids}, optional={"status": statuses_text, "error": json_values, "data_source_id": short_ids}
    ),
    st.fixed_dictionaries(
        {"data_source_id": short_ids, "status": statuses_text},
        optional={"last_synced_at": json_values, "error": json_values},
    ),
    st.fixed_dictionaries(
        {"columns": st.lists(st.fixed_dictionaries({"name": st.text(max_size=5) | json_values}), max_size=3)},
        optional={
            "data": st.lists(st.lists(json_values, max_size=3) | json_values, max_size=3),
            "next_cursor": st.none() | st.text(max_size=8) | json_values,
            "chart_id": short_ids,
        },
    ),
    st.fixed_dictionaries(
        {"error": st.fixed_dictionaries({}, optional={"type": json_values, "message": json_values}) | json_values}
    ),
)
plain_bodies = st.one_of(
    st.binary(max_size=300),
    json_values.map(lambda value: json.dumps(value).encode()),
    shaped.map(lambda value: json.dumps(value).encode()),
    st.integers(1, 5000).map(lambda depth: b"[" * depth + b"]" * depth),
    st.integers(1, 100_000).map(lambda depth: b"[" * depth),
    st.sampled_from([b"", b"null", b"\xef\xbb\xbf{}", b'{"data": []}', b"<html>502</html>", b"\xff\xfe{\x00}\x00"]),
)
texts = st.text(max_size=10)
resource = st.fixed_dictionaries(
    {"id": st.sampled_from(["ex_1", "rp_1"]), "status": st.sampled_from(["queued", "running", "ready", "failed"])},
    optional={"error": st.none() | st.fixed_dictionaries({"type": texts, "message": texts}), "extra": json_values},
)
sync_state = st.fixed_dictionaries(
    {"data_source_id": st.just("ds_1"), "status": st.sampled_from(["syncing", "synced", "failed"])},
    optional={"last_synced_at": st.none() | texts, "error": st.none()},
)
chart_page = st.integers(0, 3).flatmap(
    lambda width: st.fixed_dictionaries(
        {
            "columns": st.lists(st.fixed_dictionaries({"name": texts}), min_size=width, max_size=width),
            "data": st.lists(st.lists(json_values, min_size=width, max_size=width), max_size=3),
            "next_cursor": st.none() | texts,
        }
    )
)
VALID = {  # what each call accepts; drawn often, so the success paths are exercised too
    "list_charts": st.fixed_dictionaries({"data": st.lists(json_values, max_size=3)}),
    "get_execution": resource,
    "get_report": resource,
    "get_sync_status": sync_state,
    "chart_data page": chart_page,
}
# Over CONFIG.max_response_bytes; sent as gzip, they are small bombs.
large_bodies = st.integers(60_000, 200_000).map(lambda size: b'{"data": ["' + b"x" * size + b'"]}')


@st.composite
def encoded_bodies(draw: st.DrawFn, call: str) -> tuple[bytes, bytes | None]:
    """A body for ``call`` and the Content-Encoding it is sent with (``None``: no header)."""
    kind = draw(st.sampled_from(["valid", "valid", "valid", "shaped", "plain", "large"]))
    if kind in ("valid", "shaped"):
        body = json.dumps(draw(VALID[call] if kind == "valid" else shaped)).encode()
    else:
        body = draw(plain_bodies if kind == "plain" else large_bodies)
    coding = draw(
        st.sampled_from([None, b"gzip", b"deflate", b"identity"]) | st.sampled_from([b"br", b"gzip, gzip", b"\xff"])
    )
    if coding == b"gzip" and draw(st.integers(0, 3)):
        body = gzip.compress(body)
        if not draw(st.integers(0, 3)):
            body = body[: draw(st.integers(0, len(body)))]
    elif coding == b"deflate" and draw(st.integers(0, 3)):
        body = zlib.compress(body)
    return body, coding


header_names = st.sampled_from(
    [b"Content-Type", b"Retry-After", b"X-Request-Id", b"Deprecation", b"Sunset", b"Content-Length", b"ETag",
     b"X-RateLimit-Reset", b"Location", b"Transfer-Encoding"]
)  # fmt: skip


raw_headers = st.lists(st.tuples(header_names, header_values), max_size=5)


class Pieces(httpx.SyncByteStream, httpx.AsyncByteStream):
    """A raw body handed over ``size`` bytes at a time, as network reads would."""

    def __init__(self, data: bytes, size: int) -> None:
        self._pieces = [data[start : start + size] for start in range(0, len(data), size)]

    def __iter__(self) -> Iterator[bytes]:
        yield from self._pieces

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for piece in self._pieces:
            yield piece


def _answer(status: int, headers: Headers, body: tuple[bytes, bytes | None], read_size: int) -> httpx.Response:
    """The answer as a network transport hands it over: the raw body unread (read ``read_size`` at a time)."""
    data, coding = body
    pairs = headers + ([(b"Content-Encoding", coding)] if coding is not None else [])
    return httpx.Response(status, headers=pairs, stream=Pieces(data, read_size))


def _prebuilt(status: int, headers: Headers, body: tuple[bytes, bytes | None]) -> httpx.Response | None:
    """The answer built in memory (``content=``), which httpx decodes at once; ``None`` if that fails."""
    data, coding = body
    pairs = headers + ([(b"Content-Encoding", coding)] if coding is not None else [])
    try:
        return httpx.Response(status, headers=pairs, content=data)
    except httpx.DecodingError:  # raised here, in the test's own transport, not by the client
        return None


read_sizes = st.sampled_from([1, 7, 4096, 1 << 20])


CallCase = tuple[str, Callable[[], Call[Any]], type]  # name, request builder, type of a successful result
CALLS: list[CallCase] = [
    ("list_charts", endpoints.list_charts, list),
    ("get_execution", lambda: endpoints.get_execution("wf_1", "ex_1"), dict),
    ("get_report", lambda: endpoints.get_report("rp_1"), dict),
    ("get_sync_status", lambda: endpoints.get_sync_status("ds_1"), dict),
    ("chart_data page", lambda: endpoints.chart_data("ch_1").page(None), Page),
]


def _assert_status_kept(result: Any, status: int) -> None:
    """An error status ends as the API error of that status, whatever the body: contract section 2 says
    a body that cannot be read (a proxy's page, an empty one) still gives an error naming the status, and
    only the status tells a caller whether to retry (503) or give up (404). Any other status is not one.
    """
    if 400 <= status <= 599:
        assert isinstance(result, AnalyticsAPIError), f"HTTP {status} became {type(result).__name__}: {result}"
        assert result.status == status
    else:
        assert not isinstance(result, AnalyticsAPIError)


# Error answers whose body cannot be read (found by the property; see _assert_status_kept): an empty body
# labelled gzip, a coding the client does not read, a body over max_response_bytes.
UNREADABLE_ERRORS = [
    {"status": 503, "headers": [(b"X-Request-Id", b"req_1")], "exchange": (CALLS[2], (b"", b"gzip"))},
    {"status": 404, "headers": [], "exchange": (CALLS[2], (b"{}", b"br"))},
    {"status": 429, "headers": [(b"Retry-After", b"0")], "exchange": (CALLS[0], (b" " * 70_000, None))},
]


@CLIENT_SETTINGS
@example(**UNREADABLE_ERRORS[0], second_status=None, read_size=4096, prebuilt=False)
@example(**UNREADABLE_ERRORS[1], second_status=None, read_size=4096, prebuilt=False)
@example(**UNREADABLE_ERRORS[2], second_status=None, read_size=4096, prebuilt=False)
@given(
    status=statuses,
    headers=raw_headers,
    exchange=st.sampled_from(CALLS).flatmap(lambda call: st.tuples(st.just(call), encoded_bodies(call[0]))),
    second_status=st.none() | st.integers(200, 599),
    read_size=read_sizes,
    prebuilt=st.booleans(),
)
def test_any_answer_is_a_typed_result_or_an_analytics_error(
    status: int,
    headers: Headers,
    exchange: tuple[CallCase, tuple[bytes, bytes | None]],
    second_status: int | None,
    read_size: int,
    prebuilt: bool,
) -> None:
    (_, build, result_type), body = exchange
    statuses = [status, status if second_status is None else second_status]
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        status = statuses[min(len(seen), 2) - 1]
        built = _prebuilt(status, headers, body) if prebuilt else None
        return built or _answer(status, headers, body, read_size)

    with AnalyticsClient(CONFIG, transport=httpx.MockTransport(handler), sleep=no_sleep) as client:
        result = outcome(client.call, build())
    event(type(result).__name__)
    assert isinstance(result, (AnalyticsError, result_type))
    if isinstance(result, AnalyticsError):
        assert str(result)
    assert 1 <= len(seen) <= most_requests(CONFIG, refused=429 in statuses)
    _assert_status_kept(result, statuses[min(len(seen), 2) - 1])


@settings(CLIENT_SETTINGS, max_examples=100)
@example(**UNREADABLE_ERRORS[0], read_size=1)
@given(
    status=statuses,
    headers=raw_headers,
    exchange=st.sampled_from([CALLS[1], CALLS[4]]).flatmap(
        lambda call: st.tuples(st.just(call), encoded_bodies(call[0]))
    ),
    read_size=read_sizes,
)
def test_any_answer_is_a_typed_result_or_an_analytics_error_async(
    status: int,
    headers: Headers,
    exchange: tuple[CallCase, tuple[bytes, bytes | None]],
    read_size: int,
) -> None:
    (_, build, result_type), body = exchange

    async def handler(request: httpx.Request) -> httpx.Response:
        return _answer(status, headers, body, read_size)

    async def scenario() -> Any:
        transport = httpx.MockTransport(handler)
        async with AsyncAnalyticsClient(CONFIG, transport=transport, sleep=async_no_sleep) as client:
            try:
                return await client.call(build())
            except AnalyticsError as error:
                return error

    result = outcome(asyncio.run, scenario())
    event(type(result).__name__)
    assert isinstance(result, (AnalyticsError, result_type))
    if isinstance(result, AnalyticsError):
        assert str(result)
    _assert_status_kept(result, status)
