"""A minimal HTTPS server for ``bench/triggerer.py``: every execution is ``running``, at the lowest CPU cost.

asyncio streams over TLS (the given certificate), HTTP/1.1 keep-alive, one process pinned to one CPU.
``GET /v1/workflows/<wf>/executions/<ex>`` answers 200 with a running execution as JSON and an
``X-Request-Id``; anything else answers 404. The server counts requests and connections and reports its
own CPU time, so the harness can show that it was not the bottleneck (CPU per request).

Usage: ``python bench/tls_server.py CERT KEY [--cpu 1]``. It prints ``PORT <n>``, then answers each
``stats`` line on stdin with one JSON line ``{"requests", "accepted", "open", "cpu"}``; EOF on stdin ends it.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
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


class Counters:
    """What the server did so far."""

    def __init__(self) -> None:
        self.requests = 0
        self.accepted = 0
        self.open = 0

    def snapshot(self) -> dict[str, float]:
        return {"requests": self.requests, "accepted": self.accepted, "open": self.open, "cpu": time.process_time()}


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


def read_commands(counters: Counters, loop: asyncio.AbstractEventLoop, done: asyncio.Event) -> None:
    """Answer ``stats`` lines from stdin (a thread); EOF ends the server."""
    for line in sys.stdin:
        if line.strip() == "stats":
            print(json.dumps(counters.snapshot()), flush=True)
    loop.call_soon_threadsafe(done.set)


async def main(cert: str, key: str) -> None:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    counters = Counters()

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await serve_connection(counters, reader, writer)

    server = await asyncio.start_server(handle, "127.0.0.1", 0, ssl=context, backlog=4096)
    print(f"PORT {server.sockets[0].getsockname()[1]}", flush=True)
    done = asyncio.Event()
    threading.Thread(target=read_commands, args=(counters, asyncio.get_running_loop(), done), daemon=True).start()
    async with server:
        await done.wait()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cert")
    parser.add_argument("key")
    parser.add_argument("--cpu", type=int, default=1)
    arguments = parser.parse_args()
    pin(arguments.cpu)
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(main(arguments.cert, arguments.key))
