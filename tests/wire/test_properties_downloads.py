"""Property-based tests (Hypothesis) of report downloads against arbitrary, spoilt or dropped answers:
a file is whole and verified, or the download fails with an ``AnalyticsError``.
"""

from __future__ import annotations

import base64
import hashlib
import io
from collections.abc import Iterator

import httpx
from hypothesis import event, example, given
from hypothesis import strategies as st

from airflow_provider_analytics.wire._download import DownloadedFile, ReportStream
from airflow_provider_analytics.wire._file_headers import parse_repr_digest
from airflow_provider_analytics.wire.client import AnalyticsClient
from airflow_provider_analytics.wire.errors import AnalyticsError
from tests.support.properties import CLIENT_SETTINGS, CONFIG, Headers, header_values, no_sleep, outcome


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


@CLIENT_SETTINGS
@example(script=_RESUMED_WITHOUT_DIGEST)  # found by the property: see the docstring
@example(script=_DIGEST_ONLY_ON_THE_RESUME)  # found by the property: see the docstring
@given(script=download_scripts())
def test_downloads_are_whole_and_verified_or_fail_typed(script: list[Answer]) -> None:
    """On success the file is exactly the announced length, hashed right, and matches every ``Repr-Digest``
    announced for the bytes it was made of (the last ``200`` answer and the ``206`` answers after it).

    A resumed file is checked against the ``Repr-Digest`` of the answer it began with (ed60157) and of every
    ``206`` that continued it (42df0ad): a ``206`` whose digest (of the whole file, RFC 9530) disagrees fails.
    """
    served: list[int] = []

    def handler(request: httpx.Request) -> httpx.Response:
        index = min(len(served), len(script) - 1)
        served.append(index)
        status, headers, body, cut = script[index]
        return httpx.Response(status, headers=headers, stream=CutStream(body, cut))

    def download() -> DownloadedFile:
        client = AnalyticsClient(CONFIG, transport=httpx.MockTransport(handler), sleep=no_sleep)
        with client, ReportStream(client, "rp_1") as stream:
            return stream.copy_to(out)

    out = io.BytesIO()
    written = outcome(download)
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
