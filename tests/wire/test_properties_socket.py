"""Property-based tests (Hypothesis) with raw bytes on a real socket (``tests/support/hostile.py``), so
httpx's own HTTP/1.1 parsing and framing are in the path: the end is a result or an ``AnalyticsError``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import gzip
import io
import itertools
import json
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from airflow_provider_analytics.wire import _endpoints as endpoints
from airflow_provider_analytics.wire._download import DownloadedFile, ReportStream
from airflow_provider_analytics.wire.client import AnalyticsClient, AsyncAnalyticsClient
from airflow_provider_analytics.wire.errors import AnalyticsError
from tests.support.hostile import HostileServer, Script, chunked
from tests.support.properties import CLIENT_SETTINGS, CONFIG, async_no_sleep, most_requests, no_sleep, outcome

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


@settings(CLIENT_SETTINGS, max_examples=150)
@given(answer=wire_answers(), way=st.sampled_from(["sync", "async", "download"]))
def test_any_bytes_on_a_real_socket_are_a_result_or_an_analytics_error(
    hostile: HostileServer, answer: Script, way: str
) -> None:
    """Through httpx's own HTTP/1.1 parser and the deadline wrappers, not a mock: odd status lines, header
    lines and framing (lying lengths, bad chunking, a connection closed early) end as a result or an
    ``AnalyticsError``, after a bounded number of requests."""
    hostile.answer_with(answer)
    config = dataclasses.replace(CONFIG, base_url=hostile.url, timeout=5)

    def download() -> DownloadedFile:
        with AnalyticsClient(config, sleep=no_sleep) as client, ReportStream(client, "rp_1") as stream:
            return stream.copy_to(io.BytesIO())

    async def call_async() -> Any:
        async with AsyncAnalyticsClient(config, sleep=async_no_sleep) as client:
            return await client.call(endpoints.get_report("rp_1"))

    def call_sync() -> Any:
        with AnalyticsClient(config, sleep=no_sleep) as client:
            return client.call(endpoints.get_report("rp_1"))

    run = {"sync": call_sync, "async": lambda: asyncio.run(call_async()), "download": download}[way]
    before = len(hostile.received)
    result = outcome(run)
    event(f"{way}: {type(result).__name__}")
    assert isinstance(result, (AnalyticsError, dict, DownloadedFile))
    # It gave up after a bounded number of requests (each attempt's own time is bounded by the deadline, which
    # tests/wire/test_trickled_headers.py checks; a hang is pytest-timeout's to catch): a call's retries, and
    # for a download those of each of its requests, the first and the resumes (ReportStream's max_resumes).
    requests_per_call = most_requests(config)
    calls = 1 + 3 if way == "download" else 1
    assert len(hostile.received) - before <= requests_per_call * calls
