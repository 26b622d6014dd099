"""A minimal HTTPS server for ``bench/triggerer.py``: every execution is ``running``, at the lowest CPU cost.

asyncio streams over TLS (the given certificate), HTTP/1.1 keep-alive, one process pinned to one CPU.
``GET /v1/workflows/<wf>/executions/<ex>`` answers 200 with a running execution as JSON and an
``X-Request-Id``; anything else answers 404. The server counts requests and connections and reports its
own CPU time, so the harness can show that it was not the bottleneck (CPU per request).

With ``--limit R`` (``bench/ratelimit.py``) it enforces a rate limit the way the contract describes one: R
requests per fixed one-second window (whole epoch seconds of the wall clock), counted per ``Authorization``
header value; a request over the limit answers 429 ``rate_limited`` (the contract's error JSON) with
``Retry-After`` (the seconds to the window's end, rounded up, at least 1) and does not count. Unless
``--no-headers``, every answer then carries ``X-RateLimit-Limit``, ``X-RateLimit-Remaining`` and
``X-RateLimit-Reset`` (the epoch second the window ends). Without ``--limit`` it answers exactly as before.

Usage: ``python bench/tls_server.py CERT KEY [--cpu 1] [--limit R [--no-headers]]``. It prints ``PORT <n>``,
then answers each ``stats`` line on stdin with one JSON line ``{"requests", "accepted", "open", "cpu",
"refused", "allowed", "not_found"}`` (``refused``: 429s sent; ``allowed``: the other answers) and each
``history`` line with one JSON list ``[[epoch second, allowed, refused], ...]`` of the windows so far (with
``--limit`` only; empty without); EOF on stdin ends it.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import re
import ssl
import sys
import threading
import time

from benchlib import pin

_GET = re.compile(rb"GET /v1/workflows/([A-Za-z0-9_-]{1,64})/executions/([A-Za-z0-9_-]{1,64}) HTTP/1\.1")
_BODY = (
    b'{"id": "%s", "workflow_id": "%s", "status": "running", "inputs": {}, "outputs": null, "error": null, '
    b'"created_at": "2026-11-23T10:00:00Z", "started_at": "2026-11-23T10:00:00Z", "finished_at": null}'
)
_HEAD = b"HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\nX-Request-Id: req_%d\r\n\r\n"
_NOT_FOUND = b'{"error": {"type": "not_found", "message": "no such route", "request_id": null, "details": {}}}'
# With --limit: the same head plus the rate-limit headers (when on), and the 429 answer.
_RATE_HEADERS = b"X-RateLimit-Limit: %d\r\nX-RateLimit-Remaining: %d\r\nX-RateLimit-Reset: %d\r\n"
_HEAD_OPEN = b"HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\nX-Request-Id: req_%d\r\n"
_RETRY_AFTER = b"Retry-After: %d\r\n"
_REFUSED = (
    b'{"error": {"type": "rate_limited", "message": "more than %d requests in one second for this token", '
    b'"request_id": "req_%d", "details": {}}}'
)
_AUTHORIZATION = b"\r\nauthorization:"


class Counters:
    """What the server did so far."""

    def __init__(self) -> None:
        self.requests = 0
        self.accepted = 0
        self.open = 0
        self.refused = 0
        self.not_found = 0

    def snapshot(self) -> dict[str, float]:
        return {
            "requests": self.requests,
            "accepted": self.accepted,
            "open": self.open,
            "cpu": time.process_time(),
            "refused": self.refused,
            "allowed": self.requests - self.refused,
            "not_found": self.not_found,
        }


class RateLimit:
    """Fixed one-second windows on whole epoch seconds, counted per ``Authorization`` value.

    :param limit: requests allowed per token and window.
    :param headers: whether every answer carries the ``X-RateLimit-*`` headers.
    """

    def __init__(self, limit: int, headers: bool) -> None:
        self.limit = limit
        self.headers = headers
        self.second = 0
        self.used: dict[bytes, int] = {}
        self.allowed = 0  # in the current window, every token together
        self.refused = 0
        self.history: list[tuple[int, int, int]] = []  # finished windows that saw requests

    def admit(self, token: bytes) -> tuple[bool, int, float]:
        """Count one request of ``token``: whether it is allowed, what is left in the window, and the time."""
        now = time.time()
        second = int(now)
        if second != self.second:
            if self.allowed or self.refused:
                self.history.append((self.second, self.allowed, self.refused))
            self.second, self.used, self.allowed, self.refused = second, {}, 0, 0
        used = self.used.get(token, 0)
        if used >= self.limit:
            self.refused += 1
            return False, 0, now
        self.used[token] = used + 1
        self.allowed += 1
        return True, self.limit - used - 1, now

    def windows(self) -> list[tuple[int, int, int]]:
        """Every window so far, the current one included."""
        current = [(self.second, self.allowed, self.refused)] if self.allowed or self.refused else []
        return self.history + current


async def serve_connection(counters: Counters, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Answer requests on one connection until the client closes it (keep-alive)."""
    counters.accepted += 1
    counters.open += 1
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            counters.requests += 1
            match = _GET.fullmatch(head[: head.index(b"\r\n")])
            if match:
                body = _BODY % (match.group(2), match.group(1))
                writer.write(_HEAD % (200, b"OK", len(body), counters.requests) + body)
            else:
                counters.not_found += 1
                writer.write(_HEAD % (404, b"Not Found", len(_NOT_FOUND), counters.requests) + _NOT_FOUND)
            await writer.drain()
            if b"\r\nconnection: close" in head.lower():
                break
    except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError, ssl.SSLError, OSError):
        pass
    finally:
        counters.open -= 1
        with contextlib.suppress(Exception):
            writer.close()


async def serve_limited(
    counters: Counters, limit: RateLimit, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
) -> None:
    """``serve_connection`` under a rate limit: the same answers, or 429 over the limit."""
    counters.accepted += 1
    counters.open += 1
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            counters.requests += 1
            lowered = head.lower()
            at = lowered.find(_AUTHORIZATION)
            token = head[at + len(_AUTHORIZATION) : head.index(b"\r\n", at + 2)].strip() if at >= 0 else b""
            allowed, remaining, now = limit.admit(token)
            reset = int(now) + 1
            extra = _RATE_HEADERS % (limit.limit, remaining, reset) if limit.headers else b""
            if not allowed:
                counters.refused += 1
                body = _REFUSED % (limit.limit, counters.requests)
                head_out = _HEAD_OPEN % (429, b"Too Many Requests", len(body), counters.requests)
                retry_after = max(1, math.ceil(reset - now))
                writer.write(head_out + _RETRY_AFTER % retry_after + extra + b"\r\n" + body)
            else:
                match = _GET.fullmatch(head[: head.index(b"\r\n")])
                if match:
                    body = _BODY % (match.group(2), match.group(1))
                    writer.write(_HEAD_OPEN % (200, b"OK", len(body), counters.requests) + extra + b"\r\n" + body)
                else:
                    counters.not_found += 1
                    head_out = _HEAD_OPEN % (404, b"Not Found", len(_NOT_FOUND), counters.requests)
                    writer.write(head_out + extra + b"\r\n" + _NOT_FOUND)
            await writer.drain()
            if b"\r\nconnection: close" in lowered:
                break
    except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError, ssl.SSLError, OSError):
        pass
    finally:
        counters.open -= 1
        with contextlib.suppress(Exception):
            writer.close()


def read_commands(
    counters: Counters, limit: RateLimit | None, loop: asyncio.AbstractEventLoop, done: asyncio.Event
) -> None:
    """Answer ``stats`` and ``history`` lines from stdin (a thread); EOF ends the server."""
    for line in sys.stdin:
        command = line.strip()
        if command == "stats":
            print(json.dumps(counters.snapshot()), flush=True)
        elif command == "history":
            print(json.dumps(limit.windows() if limit is not None else []), flush=True)
    loop.call_soon_threadsafe(done.set)


async def main(cert: str, key: str, limit: RateLimit | None = None) -> None:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    counters = Counters()

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if limit is None:
            await serve_connection(counters, reader, writer)
        else:
            await serve_limited(counters, limit, reader, writer)

    server = await asyncio.start_server(handle, "127.0.0.1", 0, ssl=context, backlog=4096)
    print(f"PORT {server.sockets[0].getsockname()[1]}", flush=True)
    done = asyncio.Event()
    commands = (counters, limit, asyncio.get_running_loop(), done)
    threading.Thread(target=read_commands, args=commands, daemon=True).start()
    async with server:
        await done.wait()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cert")
    parser.add_argument("key")
    parser.add_argument("--cpu", type=int, default=1)
    parser.add_argument("--limit", type=int, default=None, help="requests per second and token (default: none)")
    parser.add_argument("--no-headers", action="store_true", help="with --limit: no X-RateLimit-* headers")
    arguments = parser.parse_args()
    if arguments.limit is not None and arguments.limit < 1:
        parser.error("--limit must be at least 1")
    pin(arguments.cpu)
    rate_limit = None if arguments.limit is None else RateLimit(arguments.limit, not arguments.no_headers)
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(main(arguments.cert, arguments.key, rate_limit))
