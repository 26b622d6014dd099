"""Property-based tests (Hypothesis) of the wire layer's pure parts: body decoding, error mapping, headers.

Whatever bytes, headers or JSON the platform sends, nothing escapes but the provider's own
``AnalyticsError`` tree (or a result), and each function's stated invariant holds. Whole client calls,
downloads and raw bytes on a socket are in ``test_properties_calls.py``, ``test_properties_downloads.py``
and ``test_properties_socket.py``.
"""

from __future__ import annotations

import base64
import datetime
import email.utils
import gzip
import itertools
import json
import string
import unicodedata
import zlib
from typing import Any

import httpx
import pytest
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st

from airflow_provider_analytics.wire._bodies import BoundedBody
from airflow_provider_analytics.wire._error_answers import api_error_from_response
from airflow_provider_analytics.wire._file_headers import parse_repr_digest, safe_filename
from airflow_provider_analytics.wire.errors import (
    AnalyticsAPIError,
    AnalyticsError,
    DownloadIntegrityError,
    RateLimitedError,
    ResponseTooLargeError,
    ServerError,
)
from airflow_provider_analytics.wire.retry import parse_retry_after
from tests.support.properties import outcome

# No health check is suppressed: none fires (checked over many seeds), so a slow strategy would be noticed.
SETTINGS = settings(max_examples=250, deadline=None)
WHAT = "GET /v1/charts"

# Bodies --------------------------------------------------------------------------------------------------

payloads = st.one_of(
    st.binary(max_size=3000),
    st.integers(0, 200_000).map(bytes),  # runs of zeros: small when compressed, large when inflated
    st.builds(lambda head, n: head * n, st.binary(min_size=1, max_size=8), st.integers(1, 3000)),
)


def _gzip(data: bytes, level: int) -> bytes:
    return gzip.compress(data, compresslevel=level)


def _zlib(data: bytes, level: int) -> bytes:
    return zlib.compress(data, level)


def _raw_deflate(data: bytes, level: int) -> bytes:
    packer = zlib.compressobj(level, zlib.DEFLATED, -zlib.MAX_WBITS)
    return packer.compress(data) + packer.flush()


ENCODERS = {"gzip": _gzip, "x-gzip": _gzip, "deflate": _zlib, "raw deflate": _raw_deflate}
HEADER_FOR = {"gzip": "gzip", "x-gzip": "x-gzip", "deflate": "deflate", "raw deflate": "deflate"}


def _split(data: bytes, cuts: list[int]) -> list[bytes]:
    """``data`` in pieces at the given offsets (as a network read would hand them over)."""
    points = sorted({cut % (len(data) + 1) for cut in cuts} | {0, len(data)})
    return [data[start:end] for start, end in itertools.pairwise(points)]


def _read_all(reader: BoundedBody, pieces: list[bytes], limit: int) -> bytes:
    """Feed every piece then finish, checking after each piece that no more than ``limit`` is kept."""
    for piece in pieces:
        reader.feed(piece)
        assert reader.size <= limit
    body = reader.finish()
    assert len(body) == reader.size  # size is what the reader held: the bound above is a bound on memory
    return body


@st.composite
def hostile_raw_bodies(draw: st.DrawFn) -> tuple[str, bytes]:
    """A Content-Encoding value and a raw body: valid, truncated, corrupted or mislabelled."""
    data = draw(payloads)
    kind = draw(st.sampled_from([*ENCODERS, "plain"]))
    raw = data if kind == "plain" else ENCODERS[kind](data, draw(st.integers(0, 9)))
    damage = draw(st.sampled_from(["none", "truncate", "flip", "append", "two members"]))
    if damage == "truncate" and raw:
        raw = raw[: draw(st.integers(0, len(raw) - 1))]
    elif damage == "flip" and raw:
        at = draw(st.integers(0, len(raw) - 1))
        raw = raw[:at] + bytes([raw[at] ^ draw(st.integers(1, 255))]) + raw[at + 1 :]
    elif damage == "append":
        raw += draw(st.binary(min_size=1, max_size=50))
    elif damage == "two members":
        raw += raw
    header = draw(
        st.sampled_from(["", "identity", "gzip", "x-gzip", "deflate", "GZIP", " gzip ", "br", "zstd", "compress",
                         "gzip, gzip", "identity, gzip", "gzip,", ",", "gzip;q=1", "deflate, identity"])
        | st.just(HEADER_FOR.get(kind, "identity"))
        | st.text(max_size=20)
    )  # fmt: skip
    return header, raw


@SETTINGS
@given(body=hostile_raw_bodies(), cuts=st.lists(st.integers(0, 10**6), max_size=6), limit=st.integers(1, 8192))
def test_bounded_body_raises_only_analytics_errors_and_keeps_at_most_the_limit(
    body: tuple[str, bytes], cuts: list[int], limit: int
) -> None:
    header, raw = body
    reader = outcome(BoundedBody, header, limit, WHAT)
    if isinstance(reader, AnalyticsError):
        return
    decoded = outcome(_read_all, reader, _split(raw, cuts), limit)
    assert reader.size <= limit
    if isinstance(decoded, AnalyticsError):
        assert str(decoded)
    else:
        assert len(decoded) <= limit


@SETTINGS
@given(
    data=payloads,
    kind=st.sampled_from(["gzip", "x-gzip", "deflate", "identity"]),
    level=st.integers(0, 9),
    cuts=st.lists(st.integers(0, 10**6), max_size=6),
    room=st.integers(0, 5000),
)
def test_valid_compressed_bodies_under_the_limit_round_trip(
    data: bytes, kind: str, level: int, cuts: list[int], room: int
) -> None:
    raw = data if kind == "identity" else ENCODERS[kind](data, level)
    reader = BoundedBody(kind.upper() if level % 2 else kind, max(1, len(data) + room), WHAT)
    for piece in _split(raw, cuts):
        reader.feed(piece)
    assert reader.finish() == data


@SETTINGS
@given(
    data=payloads,
    kind=st.sampled_from(["gzip", "x-gzip", "deflate", "identity"]),
    cuts=st.lists(st.integers(0, 10**6), max_size=6),
)
def test_bodies_over_the_limit_stop_there(data: bytes, kind: str, cuts: list[int]) -> None:
    assume(len(data) > 1)
    limit = len(data) // 2
    raw = data if kind == "identity" else ENCODERS[kind](data, 6)
    reader = BoundedBody(HEADER_FOR.get(kind), limit, WHAT)
    with pytest.raises(ResponseTooLargeError):
        _read_all(reader, _split(raw, cuts), limit)
    assert reader.size <= limit


@SETTINGS
@example(data=b'{"data": []}' * 20, level=6, cut=1)  # found by the property: see the docstring
@given(data=payloads, level=st.integers(0, 9), cut=st.integers(0, 10**6))
def test_raw_deflate_decodes_whatever_the_first_read_holds(data: bytes, level: int, cut: int) -> None:
    """Raw deflate (no zlib header) is accepted, but only when the first chunk fails the zlib header check.

    A first network read of one byte raises no error yet; the second fails, and the fallback to raw
    deflate then re-feeds only that second chunk, the first byte lost: the same body decodes or not
    depending on where the network split it (``_bodies.py``, ``BoundedBody.feed``).
    """
    raw = _raw_deflate(data, level)
    reader = BoundedBody("deflate", max(1, len(data)), WHAT)
    for piece in _split(raw, [cut]):
        reader.feed(piece)
    assert reader.finish() == data


# Error answers -------------------------------------------------------------------------------------------

json_scalars = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=30)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=25,
)
odd_text = st.text(max_size=40) | st.sampled_from(["\x00\x1b[31mred\x1b[0m", "a\r\nX-Injected: 1", "\u2028\x85\x9b"])
odd_field = (
    json_values
    | odd_text
    | st.integers(1, 5000).map(lambda size: "m" * size * 20)
    | st.integers(1, 300).map(lambda depth: json.loads("[" * depth + "]" * depth))
)
error_objects = st.fixed_dictionaries(
    {}, optional={"type": odd_field, "message": odd_field, "request_id": odd_field, "details": odd_field}
)
error_documents = st.builds(lambda error: {"error": error}, error_objects | odd_field) | json_values


def _dumps(document: Any) -> bytes:
    return json.dumps(document, allow_nan=True).encode()


error_bodies = st.one_of(
    st.binary(max_size=500),
    error_documents.map(_dumps),
    st.integers(1, 100_000).map(lambda depth: b"[" * depth),
    st.integers(1, 5000).map(lambda depth: b'{"error": ' * depth + b"1" + b"}" * depth),
    st.builds(
        lambda field, depth: b'{"error": {"%s": %s}}' % (field, b"[" * depth + b"]" * depth),
        st.sampled_from([b"type", b"message", b"request_id", b"details"]),
        st.integers(1, 5000),
    ),
    st.builds(
        lambda field, depth: b'{"error": {"%s": %s1%s}}' % (field, b'{"a": ' * depth, b"}" * depth),
        st.sampled_from([b"message", b"details"]),
        st.integers(1, 5000),
    ),
    st.sampled_from([b"<html><body>502 Bad Gateway</body></html>", b"", b"null", b'{"error": null}', b"\xff\xfe"]),
)
header_names = st.sampled_from(["X-Request-Id", "Content-Type", "Retry-After", "x-request-id"]) | st.text(
    string.ascii_letters + "-", min_size=1, max_size=12
)
raw_header_values = st.binary(max_size=300) | st.sampled_from([b"req_1", b"\x1b[2J", b"a" * 5000])


def _assert_one_readable_line(text: str) -> None:
    assert text
    assert len(text) < 4000
    controls = [char for char in text if unicodedata.category(char) == "Cc"]
    assert not controls, f"control characters in {text!r}"


@SETTINGS
@example(status=500, headers=[], body=b"[" * 100_000, retry_after=None)
@example(status=404, headers=[("X-Request-Id", b"\x1b[2J" * 999)], body=b'{"error": "gone\\r\\n"}', retry_after=None)
@example(status=429, headers=[], body=b'{"error": {"message": [[1]], "details": "x", "type": 7}}', retry_after=1e6)
@example(status=503, headers=[], body=b'{"error": {"message": {"a": null}, "request_id": true}}', retry_after=0.0)
@example(status=418, headers=[], body=b'{"error": ["a", 1]}', retry_after=None)
@example(status=400, headers=[], body=b'{"error": 1e999, "details": {"x": NaN}}', retry_after=None)
@given(
    status=st.integers(400, 599),
    headers=st.lists(st.tuples(header_names, raw_header_values), max_size=4),
    body=error_bodies,
    retry_after=st.none() | st.floats(0, 1e6),
)
def test_error_answers_become_one_readable_typed_error(
    status: int, headers: list[tuple[str, bytes]], body: bytes, retry_after: float | None
) -> None:
    raw = httpx.Headers([(name.encode(), value) for name, value in headers])  # as httpx hands them over
    error = api_error_from_response(status, raw, body, method="GET", path="/v1/charts", retry_after=retry_after)
    assert isinstance(error, AnalyticsAPIError)
    assert error.status == status
    assert isinstance(error, ServerError) == (status >= 500)
    assert isinstance(error, RateLimitedError) == (status == 429)
    _assert_one_readable_line(str(error))
    _assert_one_readable_line(error.error_type)
    assert error.request_id is None or len(error.request_id) < 300


# Header parsers ------------------------------------------------------------------------------------------

http_dates = st.builds(
    lambda when, gmt: email.utils.format_datetime(when.replace(tzinfo=datetime.UTC) if gmt else when, gmt),
    st.datetimes(
        min_value=datetime.datetime(1, 1, 2), max_value=datetime.datetime(9999, 12, 30), timezones=st.timezones()
    ),
    st.booleans(),
)
date_shaped = st.builds(
    "{}, {:02d} {} {} {:02d}:{:02d}:{:02d} {}".format,
    st.sampled_from(["Mon", "Sun", "Xyz"]),
    st.integers(0, 99),
    st.sampled_from(["Jan", "Feb", "Dec", "Foo"]),
    st.integers(-1, 10**22),
    st.integers(0, 99),
    st.integers(0, 99),
    st.integers(0, 99),
    st.sampled_from(["GMT", "UTC", "+0000", "-2359", "+9999", "-9999", "EST", "", "Z"]),
)
retry_after_texts = st.one_of(
    st.text(max_size=60),
    st.integers(-(10**30), 10**30).map(str),
    st.floats().map(str),
    http_dates,
    date_shaped,
    st.text("0123456789 \t", max_size=15),
    st.sampled_from(["\u0661\u0662", "²", "1e400", "inf", "nan", "-0", "Thu, 01 Jan 1970 00:00:00 GMT"]),
)


@SETTINGS
@given(text=retry_after_texts, now=st.none() | st.floats(0, 4e11))
def test_parse_retry_after_is_none_or_a_finite_wait(text: str, now: float | None) -> None:
    value = parse_retry_after(text, now=now)
    assert value is None or (isinstance(value, float) and 0 <= value < float("inf"))


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


digest_values = st.one_of(
    st.binary(max_size=64).map(_b64),
    st.text(max_size=50),
    st.binary(min_size=32, max_size=32).map(lambda digest: _b64(digest).rstrip("=") + "\u00e9"),
    st.binary(min_size=32, max_size=32).map(lambda digest: base64.urlsafe_b64encode(digest).decode()),
)
repr_digest_texts = st.one_of(
    st.text(max_size=80),
    st.builds("sha-256=:{}:".format, digest_values),
    st.builds("sha-512=:{}:, sha-256=:{}:".format, digest_values, digest_values),
    st.builds("{}sha-256={}".format, st.text(max_size=10), st.text(max_size=60)),
)


@SETTINGS
@example(text="sha-256=:\u00e9:")  # a Latin-1 byte in the header; see the test's docstring
@given(text=repr_digest_texts)
def test_parse_repr_digest_is_none_32_bytes_or_an_integrity_error(text: str) -> None:
    """A malformed sha-256 value must be a ``DownloadIntegrityError``.

    ``base64.b64decode`` raises a bare ``ValueError`` (not ``binascii.Error``) for a non-ASCII str, which
    ``parse_repr_digest`` does not catch (``_download.py``); httpx hands a Latin-1 header byte over as such
    a character.
    """
    value = outcome(parse_repr_digest, text)
    if isinstance(value, AnalyticsError):
        assert isinstance(value, DownloadIntegrityError)
        assert "sha-256" in text
    else:
        assert value is None or len(value) == 32
        assert value is None or "sha-256=" in text


filename_texts = st.one_of(
    st.text(max_size=300),
    st.text(st.sampled_from("./\\\x00 aA\u2024\uff0e\uff0f\u2215\u29f8\u0085\u202e%"), max_size=40),
    st.sampled_from(["../../etc/passwd", "..", ".", "/abs/x.pdf", "C:\\x\\y.pdf", ".bashrc", "dag.py\x00.pdf",
                     "x.pdf.py", "x.PDF", " .pdf", "..pdf", "a" * 400 + ".pdf", "%2e%2e%2fx.pdf", "%00.pdf"]),
)  # fmt: skip
extensions = st.sampled_from([None, "pdf", "csv", "xlsx", "html", "bin", "PDF"]) | st.text(max_size=5)


@SETTINGS
@given(name=filename_texts, extension=extensions, form=st.integers(0, 3))
def test_safe_filename_is_none_or_a_plain_base_name(name: str, extension: str | None, form: int) -> None:
    header = [
        name,
        f'attachment; filename="{name}"',
        f"attachment; filename*=UTF-8''{name}",
        f"attachment; filename={name}; filename*=utf-8''{name}.{extension}",
    ][form]
    result = safe_filename(header, extension)
    if result is None:
        return
    assert 0 < len(result) <= 200
    assert not {"/", "\\", "\x00"} & set(result)
    assert not result.startswith(".")
    assert result not in {".", ".."}
    if extension is not None:
        assert result.lower().endswith(f".{extension}".lower())
