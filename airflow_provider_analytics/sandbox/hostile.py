"""Answers of a hostile or broken platform, written straight to the ASGI connection.

``respond``, ``stream`` and ``pages`` faults answer instead of the route; ``gzip`` and ``headers`` faults
rewrite the route's answer. Headers go out exactly as the fault says, lies included, and a body shorter
than its announced ``Content-Length`` ends with the connection closed.
"""

from __future__ import annotations

import asyncio
import gzip
import json

from starlette.types import Message, Send

from airflow_provider_analytics.sandbox.faults import Fault, HeaderPairs
from airflow_provider_analytics.sandbox.idempotency import StoredResponse

RawHeaders = list[tuple[bytes, bytes]]


class ConnectionDropped(Exception):
    """Raised after a response has started so that uvicorn closes the connection mid-answer.

    The server installs a log filter that hides uvicorn's traceback for this exception.
    """


def _raw(headers: HeaderPairs) -> RawHeaders:
    return [(name.encode("latin-1"), value if isinstance(value, bytes) else value.encode("latin-1"))
            for name, value in headers]  # fmt: skip


def _with_request_id(headers: RawHeaders, request_id: str) -> RawHeaders:
    if not any(name.lower() == b"x-request-id" for name, _ in headers):
        headers = [*headers, (b"x-request-id", request_id.encode())]
    return headers


def _announced(headers: RawHeaders) -> int | None:
    for name, value in headers:
        if name.lower() == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None


async def _send_body(send: Send, body: bytes, more: bool) -> None:
    try:
        await send({"type": "http.response.body", "body": body, "more_body": more})
    except OSError as gone:  # the client went away: nothing more to send
        raise ConnectionDropped("client disconnected") from gone


async def answer(fault: Fault, use: int, send: Send, request_id: str) -> None:
    """Answer a request with a ``respond``, ``stream`` or ``pages`` fault.

    :param fault: the fault.
    :param use: which use of the fault this is (1 for the first), for ``pages``.
    :param send: the ASGI send callable.
    :param request_id: the request's id, sent unless the fault's headers carry one.
    """
    if fault.kind == "pages":
        await _answer_page(fault, use, send, request_id)
        return
    assert fault.code is not None
    headers = _with_request_id(_raw(fault.answer_headers), request_id)
    if fault.kind == "respond":
        (body,) = fault.raw
        announced = _announced(headers)
        if announced is None and fault.code != 204:
            headers.append((b"content-length", str(len(body)).encode()))
        await send({"type": "http.response.start", "status": fault.code, "headers": headers})
        await _send_body(send, b"" if fault.code == 204 else body, more=announced is not None and announced > len(body))
        if announced is not None and announced > len(body):
            raise ConnectionDropped("a body shorter than its Content-Length")
        return
    prefix, chunk, suffix = fault.raw
    if fault.content_length is not None:
        headers = [(n, v) for n, v in headers if n.lower() != b"content-length"]
        headers.append((b"content-length", str(fault.content_length).encode()))
    await send({"type": "http.response.start", "status": fault.code, "headers": headers})
    sent = len(prefix)
    await _send_body(send, prefix, more=True)
    for _ in range(fault.chunk_count):
        if fault.seconds:
            await asyncio.sleep(fault.seconds)
        await _send_body(send, chunk, more=True)
        sent += len(chunk)
    if fault.content_length is not None and fault.content_length > sent + len(suffix):
        await _send_body(send, suffix, more=True)
        raise ConnectionDropped("a body shorter than its Content-Length")
    await _send_body(send, suffix, more=False)


async def _answer_page(fault: Fault, use: int, send: Send, request_id: str) -> None:
    position = use if fault.cycle is None else (use - 1) % fault.cycle + 1
    body = json.dumps({"data": fault.items, "next_cursor": f"cur_{position}", **(fault.extra or {})}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
               (b"x-request-id", request_id.encode())]  # fmt: skip
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await _send_body(send, body, more=False)


def rewrite(fault: Fault, response: StoredResponse, accept_encoding: str) -> tuple[int, RawHeaders, bytes, bool]:
    """A route's buffered answer as a ``gzip`` or ``headers`` fault changes it.

    :param fault: the fault.
    :param response: the route's whole answer.
    :param accept_encoding: the request's ``Accept-Encoding``.
    :return: status, headers, body, and whether to send a ``Content-Length``.
    """
    headers = [(name, value) for name, value in response.headers if name.lower() != b"content-length"]
    body, with_length = response.body, True
    if fault.kind == "gzip" and (fault.force or "gzip" in accept_encoding.lower()):
        body = gzip.compress(body)
        headers = [(n, v) for n, v in headers if n.lower() != b"content-encoding"] + [(b"content-encoding", b"gzip")]
    if fault.kind == "headers":
        replaced = {name.lower() for name, _ in fault.set_headers} | set(fault.remove_headers)
        headers = [(n, v) for n, v in headers if n.decode("latin-1").lower() not in replaced]
        headers += [(n.encode("latin-1"), v.encode("latin-1")) for n, v in fault.set_headers]
        with_length = "content-length" not in fault.remove_headers
    return response.status, headers, body, with_length


async def send_rewritten(send: Send, status: int, headers: RawHeaders, body: bytes, with_length: bool) -> None:
    """Send a rewritten answer; without a ``Content-Length`` the body goes out in chunks.

    :param send: the ASGI send callable.
    :param status: the status.
    :param headers: the headers (``Content-Length`` is added here when ``with_length``).
    :param body: the body.
    :param with_length: whether to announce the length.
    """
    if with_length:
        headers = [*headers, (b"content-length", str(len(body)).encode())]
    start: Message = {"type": "http.response.start", "status": status, "headers": headers}
    await send(start)
    if with_length:
        await _send_body(send, body, more=False)
        return
    for offset in range(0, len(body), 65536):
        await _send_body(send, body[offset : offset + 65536], more=True)
    await _send_body(send, b"", more=False)
