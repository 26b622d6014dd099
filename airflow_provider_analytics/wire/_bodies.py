"""Reading an answer's body with a bound on its decoded size, so no answer can exhaust memory.

The client reads the raw bytes off the connection and decodes ``gzip``/``deflate`` itself, a bounded
piece at a time: a 1 MiB gzip bomb that would inflate to 1 GiB stops at the limit, having used about the
limit's worth of memory, instead of being inflated whole by the transport first. Hand-written because httpx
has no size limit, and its decoders inflate each chunk whole (``decompress`` without ``max_length``): one
64 KiB chunk of a bomb is already about 64 MiB.
"""

from __future__ import annotations

import json
import math
import zlib
from typing import Any

from airflow_provider_analytics.wire.errors import ResponseTooLargeError, UnexpectedResponseError

# What the client accepts for JSON answers; downloads ask for identity (see wire/_download.py).
ACCEPT_ENCODING = "gzip, deflate"
_GZIP = ("gzip", "x-gzip")


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _finite_float(text: str) -> float:
    number = float(text)
    if not math.isfinite(number):  # 1e999: valid JSON, but no float holds it
        raise ValueError(f"the number {text[:40]} is out of range")
    return number


# One decoder for every answer, as json.loads keeps one for its defaults: a decoder made per call (json.loads
# with any option does that) costs a scanner each time.
_DECODER = json.JSONDecoder(parse_constant=_refuse_constant, parse_float=_finite_float)


def loads_json(body: bytes | str) -> Any:
    """Parse an answer's JSON strictly: ``NaN``, ``Infinity`` and ``-Infinity``, which Python's parser takes
    by default but JSON (RFC 8259) does not have, are refused like any other malformed body; so is a number
    too large for a float (``1e999``), which would otherwise be read as infinity.

    :param body: the answer's decoded body (bytes in UTF-8, -16 or -32, as ``json.loads`` reads them).
    :raises ValueError: the body is not JSON.
    :raises RecursionError: the body is nested too deeply to parse.
    """
    text = body.decode(json.detect_encoding(body), "surrogatepass") if isinstance(body, bytes) else body
    return _DECODER.decode(text)


def content_codings(header: str | None) -> list[str]:
    """The content codings named by a ``Content-Encoding`` header, ``identity`` left out."""
    names = [name.strip().lower() for name in (header or "").split(",")]
    return [name for name in names if name and name != "identity"]


class BoundedBody:
    """Collects a body from its raw chunks, decoded, failing once it passes ``limit`` decoded bytes.

    :param content_encoding: the answer's ``Content-Encoding`` header.
    :param limit: the most decoded bytes accepted.
    :param what: how messages name the answer (method and path).
    """

    def __init__(self, content_encoding: str | None, limit: int, what: str) -> None:
        self._limit = limit
        self._what = what
        self._parts: list[bytes] = []
        self._size = 0
        self.over_limit = False  # set when the body passed the limit: it was then not read to its end
        codings = content_codings(content_encoding)
        if len(codings) > 1 or (codings and codings[0] not in (*_GZIP, "deflate")):
            raise UnexpectedResponseError(f"{what} answered with a content coding this client cannot read: {codings}")
        self._coding = codings[0] if codings else None
        # deflate: zlib-wrapped as RFC 9110 asks, or raw as some servers send it; the first two bytes tell.
        self._pending = b""
        self._decoder = None if self._coding == "deflate" else self._new_decoder(self._coding)

    @staticmethod
    def _new_decoder(coding: str | None, raw_deflate: bool = False) -> zlib._Decompress | None:
        if coding is None:
            return None
        if coding in _GZIP:
            return zlib.decompressobj(16 + zlib.MAX_WBITS)
        return zlib.decompressobj(-zlib.MAX_WBITS if raw_deflate else zlib.MAX_WBITS)

    @property
    def size(self) -> int:
        """Decoded bytes collected, and so held in memory, so far: never more than the limit."""
        return self._size

    def feed(self, raw: bytes) -> None:
        """Add a raw chunk as read off the connection.

        :raises ResponseTooLargeError: the decoded body passed the limit.
        :raises UnexpectedResponseError: the chunk does not decode.
        """
        if self._coding == "deflate" and self._decoder is None:
            self._pending += raw
            if len(self._pending) < 2:
                return
            raw, self._pending = self._pending, b""
            self._decoder = self._new_decoder("deflate", raw_deflate=not _has_zlib_header(raw))
        if self._decoder is None:
            self._keep(raw)
            return
        data = raw
        try:
            while data:
                # max_length bounds what one call may inflate; the rest waits in unconsumed_tail.
                self._keep(self._decoder.decompress(data, self._limit - self._size + 1))
                data = self._decoder.unconsumed_tail
        except zlib.error as exc:
            raise self._undecodable(exc) from None

    def _keep(self, chunk: bytes) -> None:
        if not chunk:
            return
        if self._size + len(chunk) > self._limit:  # refused before it is kept: size stays what is held
            self.over_limit = True
            raise ResponseTooLargeError(
                f"{self._what} answered with a body over {self._limit} bytes; it was not read further "
                "(raise the connection extra max_response_bytes if the platform really sends this much)"
            )
        self._size += len(chunk)
        self._parts.append(chunk)

    def _undecodable(self, exc: zlib.error) -> UnexpectedResponseError:
        return UnexpectedResponseError(f"{self._what} answered with a body that does not decode ({exc})")

    def finish(self) -> bytes:
        """The whole decoded body, once every raw chunk was fed.

        :raises UnexpectedResponseError: a compressed body that stops before its end (a cut or corrupt one).
        """
        if self._pending:  # a deflate body of one byte: no valid stream, the check below says so
            self._decoder = self._new_decoder("deflate", raw_deflate=True)
            pending, self._pending = self._pending, b""
            self.feed(pending)
        if self._decoder is not None:
            try:
                self._keep(self._decoder.flush(self._limit - self._size + 1))
            except zlib.error as exc:
                raise self._undecodable(exc) from None
            if not self._decoder.eof:
                raise UnexpectedResponseError(f"{self._what} answered with a compressed body that does not decode "
                                              "(it ends before the end of its compressed stream)")  # fmt: skip
        return b"".join(self._parts)


def _has_zlib_header(start: bytes) -> bool:
    """Whether a deflate body starts with a zlib header (RFC 1950: method 8, window <= 32 KiB, check bits)."""
    first, second = start[0], start[1]
    return first & 0x0F == 8 and first >> 4 <= 7 and ((first << 8) | second) % 31 == 0
