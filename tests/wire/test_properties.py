"""Property-based tests: arbitrary bytes, headers and JSON into the decoding and download paths.

Whatever the platform sends, nothing escapes but the provider's own ``AnalyticsError`` tree (or a
successful parse), and the stated invariants hold.
"""

from __future__ import annotations

import asyncio
import base64
import gzip
import hashlib
import io
import json
import zlib
from typing import Any

import httpx
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from airflow_provider_analytics.wire import endpoints
from airflow_provider_analytics.wire.bodies import BoundedBody
from airflow_provider_analytics.wire.client import AnalyticsClient, AsyncAnalyticsClient
from airflow_provider_analytics.wire.core import ClientConfig
from airflow_provider_analytics.wire.download import ReportStream, parse_repr_digest, safe_filename
from airflow_provider_analytics.wire.errors import (
    AnalyticsAPIError,
    AnalyticsError,
    DownloadIntegrityError,
    api_error_from_response,
)
from airflow_provider_analytics.wire.retry import RetryPolicy, parse_retry_after

FAST = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
CONFIG = ClientConfig(
    base_url="https://api.example.com",
    token="t0ken-value",
    retry=RetryPolicy(max_retries=1, backoff_initial=0.0, backoff_max=0.0),
    max_response_bytes=64 * 1024,
)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20,
)
header_names = st.sampled_from(
    ["Content-Type", "Content-Encoding", "Retry-After", "X-Request-Id", "ETag", "Content-Length", "Repr-Digest",
     "Content-Range", "Content-Disposition", "Deprecation"]
)  # fmt: skip
header_values = st.text(st.characters(min_codepoint=32, max_codepoint=255), max_size=40)
bodies = st.one_of(
    st.binary(max_size=300),
    json_values.map(lambda value: json.dumps(value).encode()),
    st.builds(lambda error: json.dumps({"error": error}).encode(), json_values),
    st.integers(1, 3000).map(lambda depth: b"[" * depth + b"]" * depth),
    st.binary(max_size=200).map(gzip.compress),
)


@FAST
@given(chunks=st.lists(st.binary(max_size=200), max_size=5), coding=st.sampled_from(
    ["", "identity", "gzip", "deflate", "x-gzip", "br", "gzip, gzip", "GZIP", "compress"]))  # fmt: skip
def test_bounded_body_never_raises_outside_the_tree(chunks: list[bytes], coding: str) -> None:
    try:
        body = BoundedBody(coding, 1024, "GET /v1/x")
        for chunk in chunks:
            body.feed(chunk)
        assert len(body.finish()) <= 1024
    except AnalyticsError:
        pass


@FAST
@given(data=st.binary(max_size=3000), coding=st.sampled_from(["gzip", "deflate"]), split=st.integers(1, 50))
def test_bounded_body_round_trips_valid_compression(data: bytes, coding: str, split: int) -> None:
    packed = gzip.compress(data) if coding == "gzip" else zlib.compress(data)
    body = BoundedBody(coding, 4096, "GET /v1/x")
    for offset in range(0, len(packed), split):
        body.feed(packed[offset : offset + split])
    assert body.finish() == data


@FAST
@given(status=st.integers(400, 599), headers=st.dictionaries(header_names, header_values, max_size=4), body=bodies)
def test_error_answers_always_become_a_readable_typed_error(status: int, headers: dict[str, str], body: bytes) -> None:
    error = api_error_from_response(status, httpx.Headers(_raw(headers)), body, method="GET", path="/v1/charts")
    assert isinstance(error, AnalyticsAPIError)
    text = str(error)
    assert len(text) < 4000
    assert not any(ord(char) < 32 for char in text)


CALLS = [
    endpoints.list_charts(),
    endpoints.get_execution("wf_1", "ex_1"),
    endpoints.get_report("rp_1"),
    endpoints.get_sync_status("ds_1"),
    endpoints.chart_data("ch_1").page(None),
]


def _raw(headers: dict[str, str]) -> dict[str, bytes]:
    return {name: value.encode("latin-1") for name, value in headers.items()}  # any byte a server may send


def _transport(status: int, headers: dict[str, str], body: bytes) -> httpx.MockTransport:
    # A stream, not content=: httpx would decode in-memory content itself, before the client reads a byte.
    return httpx.MockTransport(
        lambda request: httpx.Response(status, headers=_raw(headers), stream=httpx.ByteStream(body))
    )


@FAST
@given(status=st.integers(100, 599), headers=st.dictionaries(header_names, header_values, max_size=4), body=bodies,
       call=st.sampled_from(CALLS))  # fmt: skip
def test_any_answer_is_parsed_or_a_typed_error(status: int, headers: dict[str, str], body: bytes, call: Any) -> None:
    headers.pop("Content-Length", None)  # httpx's own framing: a lying length is the download tests' business
    try:
        with AnalyticsClient(CONFIG, transport=_transport(status, headers, body), sleep=lambda _: None) as client:
            client.call(call)
    except AnalyticsError:
        pass


@settings(max_examples=60, deadline=None)
@given(status=st.integers(100, 599), headers=st.dictionaries(header_names, header_values, max_size=3), body=bodies)
def test_any_answer_is_parsed_or_a_typed_error_async(status: int, headers: dict[str, str], body: bytes) -> None:
    headers.pop("Content-Length", None)

    async def no_wait(seconds: float) -> None:
        return None

    async def scenario() -> None:
        client = AsyncAnalyticsClient(CONFIG, transport=_transport(status, headers, body), sleep=no_wait)
        try:
            await client.call(endpoints.get_execution("wf_1", "ex_1"))
        except AnalyticsError:
            pass
        finally:
            await client.aclose()

    asyncio.run(scenario())


@FAST
@given(text=st.text(max_size=60))
def test_parse_retry_after_is_none_or_a_finite_wait(text: str) -> None:
    value = parse_retry_after(text)
    assert value is None or (0 <= value < float("inf"))


@FAST
@given(text=st.text(max_size=80))
def test_parse_repr_digest_is_none_32_bytes_or_typed(text: str) -> None:
    try:
        value = parse_repr_digest(text)
    except DownloadIntegrityError:
        return
    assert value is None or len(value) == 32


@FAST
@given(header=st.text(max_size=300), extension=st.sampled_from([None, "pdf", "csv"]))
def test_safe_filename_never_leaves_a_path(header: str, extension: str | None) -> None:
    for form in (header, f'attachment; filename="{header}"', f"attachment; filename*=UTF-8''{header}"):
        name = safe_filename(form, extension)
        if name is None:
            continue
        assert not {"/", "\\", "\x00"} & set(name)
        assert not name.startswith(".")
        assert 0 < len(name) <= 200
        if extension:
            assert name.lower().endswith(f".{extension}")


download_headers = st.fixed_dictionaries(
    {},
    optional={
        "Content-Length": st.one_of(st.integers(0, 400).map(str), header_values),
        "Content-Encoding": st.sampled_from(["gzip", "identity", "br"]),
        "ETag": st.sampled_from(['"v1"', 'W/"v1"', "v1", ""]),
        "Repr-Digest": st.one_of(
            header_values,
            st.binary(min_size=32, max_size=32).map(lambda digest: f"sha-256=:{base64.b64encode(digest).decode()}:"),
        ),
        "Content-Range": header_values,
        "Content-Type": st.sampled_from(["application/pdf", "text/csv", "x/y"]),
    },
)


@FAST
@given(status=st.integers(100, 599), headers=download_headers, body=st.binary(max_size=400))
def test_downloads_succeed_verified_or_fail_typed(status: int, headers: dict[str, str], body: bytes) -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(status, headers=_raw(headers), stream=httpx.ByteStream(body))

    out = io.BytesIO()
    client = AnalyticsClient(CONFIG, transport=httpx.MockTransport(handler), sleep=lambda _: None)
    try:
        with client, ReportStream(client, "rp_1", max_resumes=1) as stream:
            written = stream.copy_to(out)
    except AnalyticsError:
        return
    data = out.getvalue()
    assert len(data) == written.size == int(headers["Content-Length"])
    assert hashlib.sha256(data).hexdigest() == written.sha256
