"""Answers of a hostile or broken platform, written straight to the ASGI connection.

``respond``, ``stream`` and ``pages`` faults answer instead of the route; ``gzip`` and ``headers`` faults
rewrite the route's answer. Headers go out exactly as the fault says, lies included: a body shorter
than its announced ``Content-Length`` ends with the connection closed, a longer one is cut at the
announced length. A client that goes away ends the answer quietly.
"""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import json
from collections.abc import AsyncGenerator, Iterable
from typing import TYPE_CHECKING

from airflow_provider_analytics.sandbox.faults.arguments import HeaderPairs
from airflow_provider_analytics.sandbox.faults.kinds import Fault

if TYPE_CHECKING:  # ASGI's callables by name; nothing of Starlette runs here
    from starlette.types import Message, Receive, Send

RawHeaders = list[tuple[bytes, bytes]]
REWRITING_KINDS = ("gzip", "headers")
_BODYLESS = (204, 304)
_PIECE = 65536


class ConnectionDropped(Exception):
    """Raised after a response has started so that uvicorn closes the connection mid-answer.

    The server installs a log filter that hides uvicorn's traceback for this exception.
    """


def _raw(headers: HeaderPairs) -> RawHeaders:
    return [(name.encode("latin-1"), value if isinstance(value, bytes) else value.encode("latin-1"))
            for name, value in headers]  # fmt: skip


def _with_request_id(headers: RawHeaders, request_id: str) -> RawHeaders:
    if not _has(headers, b"x-request-id"):
        headers = [*headers, (b"x-request-id", request_id.encode())]
    return headers


def _has(headers: RawHeaders, name: bytes) -> bool:
    return any(header.lower() == name for header, _ in headers)


def _announced(headers: RawHeaders) -> int | None:
    """The first ``Content-Length`` (the one the server counts against), if any."""
    for name, value in headers:
        if name.lower() == b"content-length":
            return int(value)  # the fault's arguments were checked to be digits
    return None


class _Connection:
    """The sending side of one answer: knows when the client went away, and stops there."""

    def __init__(self, send: Send, receive: Receive) -> None:
        self._send = send
        self._receive = receive
        self._gone = asyncio.Event()
        self._watcher: asyncio.Task[None] | None = None

    async def __aenter__(self) -> _Connection:
        self._watcher = asyncio.create_task(self._watch())
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        if self._watcher is not None:
            self._watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._watcher

    async def _watch(self) -> None:
        """Wait for ``http.disconnect`` (the request body was read already, so nothing else comes)."""
        while (await self._receive())["type"] != "http.disconnect":
            pass
        self._gone.set()

    @property
    def gone(self) -> bool:
        """Whether the client disconnected."""
        return self._gone.is_set()

    async def pause(self, seconds: float) -> None:
        """Sleep, waking early when the client goes away.

        :param seconds: how long.
        """
        # asyncio.TimeoutError: on Python 3.10 wait_for raises it and it is not yet the builtin TimeoutError.
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(self._gone.wait(), seconds)

    async def start(self, status: int, headers: RawHeaders) -> None:
        """Send the status line and headers.

        :param status: the status.
        :param headers: the headers, as they are.
        """
        await self.send({"type": "http.response.start", "status": status, "headers": headers})

    async def body(self, chunk: bytes, more: bool) -> None:
        """Send a piece of the body.

        :param chunk: the bytes.
        :param more: whether more follows.
        """
        await self.send({"type": "http.response.body", "body": chunk, "more_body": more})

    async def send(self, message: Message) -> None:
        """Send one ASGI message; a client that went away (``OSError`` from the server) ends the answer.

        :param message: the message.
        """
        try:
            await self._send(message)
        except OSError as gone:
            self._gone.set()
            raise ConnectionDropped("client disconnected") from gone


async def _send_pieces(connection: _Connection, body: AsyncGenerator[bytes, None], announced: int | None) -> None:
    """Send body pieces against an announced length: cut there when they are more, close when they are less.

    :param connection: the connection.
    :param body: the body, piece by piece.
    :param announced: the ``Content-Length`` sent, or None (chunked: send everything).
    """
    sent = 0
    async with contextlib.aclosing(body) as pieces:
        async for piece in pieces:
            if connection.gone:
                return
            if announced is not None and sent + len(piece) >= announced:
                await connection.body(piece[: announced - sent], more=False)
                return
            if piece:
                await connection.body(piece, more=True)
                sent += len(piece)
            # Once the client is gone, a write neither fails nor blocks on the plain asyncio loop (no uvloop):
            # without a turn of the loop the disconnect is never delivered, and every later write is logged.
            await asyncio.sleep(0)
    if connection.gone:
        return
    if announced is not None:  # fewer bytes than announced: the client sees a short body
        raise ConnectionDropped("a body shorter than its Content-Length")
    await connection.body(b"", more=False)


async def _pieces(body: bytes) -> AsyncGenerator[bytes, None]:
    for offset in range(0, len(body), _PIECE):
        yield body[offset : offset + _PIECE]


async def _stream_pieces(fault: Fault, connection: _Connection) -> AsyncGenerator[bytes, None]:
    prefix, chunk, suffix = fault.raw
    yield prefix
    for _ in range(fault.chunk_count):
        if fault.seconds:
            await connection.pause(fault.seconds)
        yield chunk
    yield suffix


async def answer(fault: Fault, use: int, send: Send, receive: Receive, request_id: str) -> None:
    """Answer a request with a ``respond``, ``stream`` or ``pages`` fault.

    :param fault: the fault.
    :param use: which use of the fault this is (1 for the first), for ``pages``.
    :param send: the ASGI send callable.
    :param receive: the ASGI receive callable (the request body was read already).
    :param request_id: the request's id, sent unless the fault's headers carry one.
    """
    async with _Connection(send, receive) as connection:
        if fault.kind == "pages":
            position = use if fault.cycle is None else (use - 1) % fault.cycle + 1
            page = {"data": fault.items, "next_cursor": f"cur_{position}", **(fault.extra or {})}
            await _send_whole(connection, 200, [(b"content-type", b"application/json")], json.dumps(page).encode(),
                              request_id)  # fmt: skip
            return
        assert fault.code is not None
        headers = _raw(fault.answer_headers)
        if fault.kind == "respond":
            await _send_whole(connection, fault.code, headers, fault.raw[0], request_id)
            return
        headers = _with_request_id(headers, request_id)
        if fault.content_length is not None:
            headers = [(n, v) for n, v in headers if n.lower() != b"content-length"]
            headers.append((b"content-length", str(fault.content_length).encode()))
        await connection.start(fault.code, headers)
        if fault.code in _BODYLESS:
            await connection.body(b"", more=False)
            return
        await _send_pieces(connection, _stream_pieces(fault, connection), _announced(headers))


async def _send_whole(connection: _Connection, status: int, headers: RawHeaders, body: bytes, request_id: str) -> None:
    """Send an answer whose body is known: ``Content-Length`` is added unless the headers have one."""
    headers = _with_request_id(headers, request_id)
    if status in _BODYLESS:
        body = b""
    elif not _has(headers, b"content-length") and not _has(headers, b"transfer-encoding"):
        headers.append((b"content-length", str(len(body)).encode()))
    await connection.start(status, headers)
    announced = _announced(headers)
    if status in _BODYLESS and not announced:
        await connection.body(b"", more=False)
        return
    await _send_pieces(connection, _pieces(body), announced)


def accepts_gzip(accept_encoding: str) -> bool:
    """Whether an ``Accept-Encoding`` admits gzip: ``gzip`` (or ``x-gzip``, or else ``*``) with q > 0.

    :param accept_encoding: the header (empty when absent: plain).
    """
    weights: dict[str, float] = {}
    for part in accept_encoding.split(","):
        coding, _, parameters = part.partition(";")
        weight = 1.0
        for parameter in parameters.split(";"):
            name, _, value = parameter.partition("=")
            if name.strip().lower() == "q":
                try:
                    weight = float(value.strip())
                except ValueError:
                    weight = 0.0
        if coding.strip():
            weights[coding.strip().lower()] = weight
    for coding in ("gzip", "x-gzip", "*"):
        if coding in weights:
            return weights[coding] > 0
    return False


def rewrite(
    fault: Fault, status: int, headers: Iterable[tuple[bytes, bytes]], body: bytes, request: dict[str, str]
) -> tuple[RawHeaders, bytes]:
    """A route's whole answer as a ``gzip`` or ``headers`` fault changes it.

    :param fault: the fault.
    :param status: the answer's status.
    :param headers: the answer's headers, without ``Content-Length``.
    :param body: the answer's body.
    :param request: ``method`` and ``accept_encoding`` of the request.
    :return: the headers to send (with ``Content-Length`` unless the fault removed it) and the body.
    """
    headers = list(headers)
    if fault.kind == "gzip":
        honest = accepts_gzip(request.get("accept_encoding", ""))
        if (fault.force or honest) and status not in _BODYLESS and request.get("method") != "HEAD":
            body = gzip.compress(body)
            headers = [(n, v) for n, v in headers if n.lower() != b"content-encoding"] + [
                (b"content-encoding", b"gzip")
            ]
        return [*headers, (b"content-length", str(len(body)).encode())], body
    replaced = {name.lower() for name, _ in fault.set_headers} | set(fault.remove_headers)
    headers = [(n, v) for n, v in headers if n.decode("latin-1").lower() not in replaced]
    headers += [(n.encode("latin-1"), v.encode("latin-1")) for n, v in fault.set_headers]
    if (
        not _has(headers, b"content-length")
        and not _has(headers, b"transfer-encoding")
        and ("content-length" not in fault.remove_headers)
    ):
        headers.append((b"content-length", str(len(body)).encode()))
    return headers, body


async def send_rewritten(
    fault: Fault, send: Send, receive: Receive, status: int, headers: RawHeaders, body: bytes, request: dict[str, str]
) -> None:
    """Rewrite a route's whole answer with a ``gzip`` or ``headers`` fault and send it.

    Without ``Content-Length`` the body goes out chunked; a ``Content-Length`` the fault set is sent as
    given (the body is cut there, or the connection closes after a shorter body).

    :param fault: the fault.
    :param send: the ASGI send callable.
    :param receive: the ASGI receive callable.
    :param status: the answer's status.
    :param headers: the answer's headers (any ``Content-Length`` among them is replaced).
    :param body: the answer's body.
    :param request: ``method`` and ``accept_encoding`` of the request.
    """
    plain = [(n, v) for n, v in headers if n.lower() != b"content-length"]
    headers, body = rewrite(fault, status, plain, body, request)
    async with _Connection(send, receive) as connection:
        await connection.start(status, headers)
        announced = _announced(headers)
        if status in _BODYLESS and not announced:
            await connection.body(b"", more=False)
            return
        await _send_pieces(connection, _pieces(body), announced)
