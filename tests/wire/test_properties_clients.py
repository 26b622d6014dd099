"""Property-based tests (Hypothesis) of whole client calls and report downloads against arbitrary answers.

An ``httpx.MockTransport`` answers with any status, headers (raw bytes) and body; the body is handed
over as a raw stream, as a network transport would, so the client's own decoding is what reads it.
Nothing may escape but the provider's ``AnalyticsError`` tree or a successful, well-typed result, and an
error status stays that status's error. The last test sends raw bytes over a real socket
(``tests/support/hostile.py``), so httpx's own HTTP/1.1 parsing and framing are in the path too.
"""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import gzip
import hashlib
import io
import itertools
import json
import time
import zlib
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import httpx
import pytest
from hypothesis import event, example, given, settings
from hypothesis import strategies as st

from airflow_provider_analytics.wire import endpoints
from airflow_provider_analytics.wire.client import AnalyticsClient, AsyncAnalyticsClient
from airflow_provider_analytics.wire.core import ClientConfig
from airflow_provider_analytics.wire.download import DownloadedFile, ReportStream, parse_repr_digest
from airflow_provider_analytics.wire.endpoints import Call, Page
from airflow_provider_analytics.wire.errors import AnalyticsAPIError, AnalyticsError
from airflow_provider_analytics.wire.retry import RetryPolicy
from tests.support.hostile import HostileServer, Script, chunked

# No health check is suppressed: none fires (checked over many seeds), so a slow strategy would be noticed.
SETTINGS = settings(max_examples=200, deadline=None)
CONFIG = ClientConfig(
    base_url="https://api.example.com",
    token="t0ken-value",
    retry=RetryPolicy(max_retries=1, backoff_initial=0, backoff_max=0),
    max_response_bytes=64 * 1024,
)
Headers = list[tuple[bytes, bytes]]

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
header_values = st.binary(max_size=60) | st.sampled_from(
    [b"0", b"1", b"120", b"121", b"99999999999", b"-1", b"Wed, 21 Oct 2015 07:28:00 GMT",
     b"Fri, 31 Dec 9999 23:59:59 GMT", b"application/json", b"text/html", b"req_1", b"\x1b[31m", b"\xc3\xa9",
     b"\x85\xe2\x80\xa8"]
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


def _outcome(function: Callable[..., Any], *args: Any) -> Any:
    """What ``function(*args)`` returns, or the ``AnalyticsError`` it raises (anything else escapes)."""
    try:
        return function(*args)
    except AnalyticsError as error:
        return error


def _no_sleep(seconds: float) -> None:
    assert 0 <= seconds <= CONFIG.retry.max_retry_after


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


@SETTINGS
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

    with AnalyticsClient(CONFIG, transport=httpx.MockTransport(handler), sleep=_no_sleep) as client:
        result = _outcome(client.call, build())
    event(type(result).__name__)
    assert isinstance(result, (AnalyticsError, result_type))
    if isinstance(result, AnalyticsError):
        assert str(result)
    assert 1 <= len(seen) <= 1 + CONFIG.retry.max_retries
    _assert_status_kept(result, statuses[len(seen) - 1])


async def _async_no_sleep(seconds: float) -> None:
    _no_sleep(seconds)


@settings(SETTINGS, max_examples=100)
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
        async with AsyncAnalyticsClient(CONFIG, transport=transport, sleep=_async_no_sleep) as client:
            try:
                return await client.call(build())
            except AnalyticsError as error:
                return error

    result = asyncio.run(scenario())
    event(type(result).__name__)
    assert isinstance(result, (AnalyticsError, result_type))
    if isinstance(result, AnalyticsError):
        assert str(result)
    _assert_status_kept(result, status)


# Downloads -----------------------------------------------------------------------------------------------


def _digest_header(data: bytes) -> bytes:
    return b"sha-256=:%s:" % base64.b64encode(hashlib.sha256(data).digest())


class CutStream(httpx.SyncByteStream):
    """A body that breaks off after ``cut`` bytes, as a dropped connection does."""

    def __init__(self, data: bytes, cut: int | None) -> None:
        self._data, self._cut = data, cut

    def __iter__(self) -> Iterator[bytes]:
        if self._cut is None:
            yield self._data
            return
        yield self._data[: self._cut]
        raise httpx.RemoteProtocolError("peer closed connection without sending complete message body")


Answer = tuple[int, Headers, bytes, int | None]  # status, headers, body, where the connection drops
ODD_VALUES: dict[bytes, st.SearchStrategy[bytes]] = {
    b"Content-Length": st.sampled_from([b"", b"-1", b"0x10", b" 5", b"+5", b"5, 5", b"9" * 19, b"9" * 25, b"\xb2"]),
    b"Content-Encoding": st.sampled_from([b"gzip", b"br", b"", b"\xff", b"identity"]),
    b"ETag": st.sampled_from([b'W/"v1"', b'"v2"', b"v1", b'""', b"\xe9"]),
    b"Repr-Digest": st.sampled_from([b"sha-512=:AA==:", b"sha-256=:\xe9\xff:", b"sha-256=:AAAA:"]) | header_values,
    b"Content-Range": st.sampled_from([b"bytes */10", b"bytes 0-0/1", b"bytes 5-2/1"]) | header_values,
    b"Content-Type": st.sampled_from([b"x/y", b"\xff", b""]),
}


@st.composite
def download_answer(draw: st.DrawFn, content: bytes, offset: int) -> Answer:
    """A plausible answer for ``content`` from byte ``offset`` (a ``200`` or a ``206``), then spoilt at will:
    any header dropped or given an odd value, the body swapped, shortened or lengthened, the status changed.
    """
    resume = offset > 0 and draw(st.booleans())
    status = 206 if resume else 200
    body = content[offset:] if resume else content
    total = len(content)
    headers: dict[bytes, bytes] = {
        b"Content-Length": b"%d" % len(body),
        b"ETag": b'"v1"',
        b"Repr-Digest": _digest_header(content),
        b"Content-Type": b"application/pdf",
        b"Content-Disposition": b'attachment; filename="../r.pdf"',
    }
    if resume:
        headers[b"Content-Range"] = b"bytes %d-%d/%d" % (offset, total - 1, total)
    spoil = st.integers(0, 9).map(lambda roll: roll < 2)  # one field in five goes wrong
    for name in [*headers, *(name for name in ODD_VALUES if name not in headers)]:
        if draw(spoil):
            value = draw(st.none() | ODD_VALUES.get(name, header_values))
            if value is None:
                headers.pop(name, None)
            else:
                headers[name] = value
    if draw(spoil):
        changed = draw(st.binary(min_size=len(body), max_size=len(body)))  # same length, other bytes
        body = draw(st.sampled_from([changed, body[:-1], body + b"!", b""]) | st.binary(max_size=50))
    if draw(spoil):
        status = draw(st.sampled_from([200, 204, 206, 304, 409, 416, 500]) | st.integers(100, 599))
    cut = draw(st.none() | st.integers(0, max(0, len(body) - 1)))
    return status, list(headers.items()), body, cut


@st.composite
def download_scripts(draw: st.DrawFn) -> list[Answer]:
    """Up to four answers in a row, each resuming where the one before it dropped (if it did)."""
    content = draw(st.binary(min_size=1, max_size=300))
    script: list[Answer] = []
    offset = 0
    for _ in range(draw(st.integers(1, 4))):
        answer = draw(download_answer(content, offset))
        script.append(answer)
        status, _, _, cut = answer
        offset = (offset if status == 206 else 0) + (cut or 0)
    return script


def _served_digest(headers: Headers) -> bytes | None:
    try:
        return parse_repr_digest(httpx.Headers(headers).get("Repr-Digest"))
    except (AnalyticsError, ValueError):
        return None


_ETAG, _LENGTH = (b"ETag", b'"v1"'), (b"Content-Length", b"4")
_DIGEST = (b"Repr-Digest", _digest_header(b"good"))
_RESUMED_WITHOUT_DIGEST = [
    (200, [_LENGTH, _ETAG, _DIGEST], b"good", 2),  # 2 of 4 bytes, then the connection drops
    (206, [(b"Content-Length", b"2"), _ETAG, (b"Content-Range", b"bytes 2-3/4")], b"ad", None),
]
_GOLD = (b"Repr-Digest", _digest_header(b"gold"))  # a 206's Repr-Digest is of the whole file (RFC 9530)
_DIGEST_ONLY_ON_THE_RESUME = [
    (200, [_LENGTH, _ETAG], b"good", 2),
    (206, [(b"Content-Length", b"2"), _ETAG, (b"Content-Range", b"bytes 2-3/4"), _GOLD], b"od", None),
]


@SETTINGS
@example(script=_RESUMED_WITHOUT_DIGEST)  # found by the property: see the docstring
@example(script=_DIGEST_ONLY_ON_THE_RESUME)  # found by the property: see the docstring
@given(script=download_scripts())
def test_downloads_are_whole_and_verified_or_fail_typed(script: list[Answer]) -> None:
    """On success the file is exactly the announced length, hashed right, and matches every ``Repr-Digest``
    announced for the bytes it was made of (the last ``200`` answer and the ``206`` answers after it).

    ``ReportStream.copy_to`` checks one answer's ``Repr-Digest`` only. It used to be the last answer's, so a
    resumed ``206`` without one let a file through that did not match the first answer's digest; since
    ed60157 it is the first answer's, so a ``206`` whose ``Repr-Digest`` (of the whole file, RFC 9530)
    disagrees with the file is let through (``download.py``, ``copy_to``: ``self._headers`` is the first
    answer's headers).
    """
    served: list[int] = []

    def handler(request: httpx.Request) -> httpx.Response:
        index = min(len(served), len(script) - 1)
        served.append(index)
        status, headers, body, cut = script[index]
        return httpx.Response(status, headers=headers, stream=CutStream(body, cut))

    def download() -> DownloadedFile:
        client = AnalyticsClient(CONFIG, transport=httpx.MockTransport(handler), sleep=_no_sleep)
        with client, ReportStream(client, "rp_1") as stream:
            return stream.copy_to(out)

    out = io.BytesIO()
    written = _outcome(download)
    event(f"{type(written).__name__} after {len(served)} requests")
    if isinstance(written, AnalyticsError):
        return
    data = out.getvalue()
    last_start = max(position for position, index in enumerate(served) if script[index][0] == 200)
    announced = int(httpx.Headers(script[served[last_start]][1])["Content-Length"])
    assert len(data) == written.size == announced
    assert hashlib.sha256(data).hexdigest() == written.sha256
    for index in served[last_start:]:
        status, headers, _, _ = script[index]
        digest = _served_digest(headers) if status in (200, 206) else None  # an error answer's headers say nothing
        assert digest is None or digest == hashlib.sha256(data).digest(), "a file passed against its digest"


# The real wire -------------------------------------------------------------------------------------------

line_bytes = st.binary(max_size=40).map(lambda raw: raw.replace(b"\r", b"").replace(b"\n", b""))
status_lines = st.one_of(
    st.sampled_from([200, 200, 200, 206, 404, 429, 503]).map(b"HTTP/1.1 %d OK".__mod__),
    st.integers(0, 999).map(b"HTTP/1.1 %d OK".__mod__),
    st.sampled_from([b"HTTP/1.0 200 OK", b"HTTP/1.1 200", b"HTTP/2 200 OK", b"XTTP/1.1 200 OK", b"HTTP/1.1 2000 OK"]),
    line_bytes.map(b"HTTP/1.1 200 %s".__mod__),
    line_bytes,
)
odd_header_lines = st.sampled_from(
    [b"Content-Length: -1", b"Content-Length: 1e3", b"Content-Length: 4, 5", b"Transfer-Encoding: gzip, chunked",
     b"Content-Encoding: gzip", b"Content-Encoding: br", b"Retry-After: 0", b"Retry-After: 99999999999",
     b"X-Request-Id: \xff\x1b[2J", b"Connection: close", b" folded", b"no colon", b": no name", b"Repr-Digest: x",
     b'Content-Disposition: attachment; filename="../x.pdf"', b'ETag: W/"1"', b"Content-Type: application/pdf"]
) | st.builds(
    b"%s: %s".__mod__, st.tuples(st.sampled_from([b"X-Request-Id", b"Content-Length", b"Retry-After"]), line_bytes)
)  # fmt: skip
report = json.dumps({"id": "rp_1", "status": "ready", "error": None}).encode()


@st.composite
def wire_answers(draw: st.DrawFn) -> Script:
    """A status line, header lines and a body, framed by a true or lying length, chunks, or the close."""
    body = draw(st.sampled_from([report, gzip.compress(report), b""]) | st.binary(max_size=200))
    pieces = _split_at(body, draw(st.lists(st.integers(0, len(body)), max_size=2)))
    framing = draw(st.sampled_from(["length", "lying length", "chunked", "bad chunks", "close"]))
    headers = draw(st.lists(odd_header_lines, max_size=4))
    if framing in ("length", "lying length"):
        headers.append(b"Content-Length: %d" % (len(body) + (framing == "lying length") * draw(st.integers(-5, 5))))
    elif framing in ("chunked", "bad chunks"):
        headers.append(b"Transfer-Encoding: chunked")
        pieces = list(chunked(pieces))
        if framing == "bad chunks":
            pieces = [b"zz\r\n", *pieces] if draw(st.booleans()) else pieces[:-1]
    return Script(draw(status_lines), tuple(headers), tuple(pieces))


def _split_at(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({0, len(data), *cuts})
    return [data[start:end] for start, end in itertools.pairwise(points)]


@pytest.fixture(scope="module")
def hostile() -> Iterator[HostileServer]:
    """One raw-socket server for every example: the examples swap its answer."""
    with HostileServer([Script()]) as server:
        yield server


@settings(SETTINGS, max_examples=150)
@given(answer=wire_answers(), way=st.sampled_from(["sync", "async", "download"]))
def test_any_bytes_on_a_real_socket_are_a_result_or_an_analytics_error(
    hostile: HostileServer, answer: Script, way: str
) -> None:
    """Through httpx's own HTTP/1.1 parser and the deadline wrappers, not a mock: odd status lines, header
    lines and framing (lying lengths, bad chunking, a connection closed early) end as a result or an
    ``AnalyticsError``, within the timeout."""
    hostile.answer_with(answer)
    config = dataclasses.replace(CONFIG, base_url=hostile.url, timeout=5)

    def download() -> DownloadedFile:
        with AnalyticsClient(config, sleep=_no_sleep) as client, ReportStream(client, "rp_1") as stream:
            return stream.copy_to(io.BytesIO())

    async def call_async() -> Any:
        async with AsyncAnalyticsClient(config, sleep=_async_no_sleep) as client:
            return await client.call(endpoints.get_report("rp_1"))

    def call_sync() -> Any:
        with AnalyticsClient(config, sleep=_no_sleep) as client:
            return client.call(endpoints.get_report("rp_1"))

    run = {"sync": call_sync, "async": lambda: asyncio.run(call_async()), "download": download}[way]
    started = time.monotonic()
    result = _outcome(run)
    event(f"{way}: {type(result).__name__}")
    assert isinstance(result, (AnalyticsError, dict, DownloadedFile))
    assert time.monotonic() - started < 2 * config.timeout * (1 + config.retry.max_retries)
