"""A server that trickles its status line and headers one byte at a time cannot hold a request.

uvicorn sends headers whole, so the sandbox cannot play this: a raw socket server does.
"""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Iterator

import pytest

from airflow_provider_analytics.wire import endpoints
from airflow_provider_analytics.wire.client import AnalyticsClient, AsyncAnalyticsClient
from airflow_provider_analytics.wire.core import ClientConfig
from airflow_provider_analytics.wire.errors import AnalyticsTimeoutError
from airflow_provider_analytics.wire.retry import RetryPolicy

ANSWER = b'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 11\r\n\r\n{"data":[]}'


@pytest.fixture
def trickling_server() -> Iterator[str]:
    """Answers every connection one byte every 0.2 s; stops and joins its threads at the end."""
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.2)
    stop = threading.Event()
    workers: list[threading.Thread] = []

    def serve(conn: socket.socket) -> None:
        with conn:
            conn.recv(65536)
            for byte in ANSWER:
                if stop.wait(0.2):
                    return
                try:
                    conn.sendall(bytes([byte]))
                except OSError:
                    return

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            worker = threading.Thread(target=serve, args=(conn,), daemon=True)
            workers.append(worker)
            worker.start()

    acceptor = threading.Thread(target=accept, daemon=True)
    acceptor.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    finally:
        stop.set()
        for thread in [acceptor, *workers]:
            thread.join(5)
            assert not thread.is_alive()
        listener.close()


def _config(url: str) -> ClientConfig:
    retry = RetryPolicy(max_retries=1, backoff_initial=0.01, backoff_max=0.01)
    return ClientConfig(base_url=url, token="t0ken-value", timeout=1.0, retry=retry)


def test_trickled_headers_end_at_the_deadline_sync(trickling_server: str) -> None:
    started = time.monotonic()
    with AnalyticsClient(_config(trickling_server)) as client, pytest.raises(AnalyticsTimeoutError):
        client.call(endpoints.list_charts())
    assert time.monotonic() - started < 8  # two attempts of 1 s; the trickle takes 16 s an attempt


def test_trickled_headers_end_at_the_deadline_async(trickling_server: str) -> None:
    async def scenario() -> None:
        async with AsyncAnalyticsClient(_config(trickling_server)) as client:
            await client.call(endpoints.list_charts())

    started = time.monotonic()
    with pytest.raises(AnalyticsTimeoutError):
        asyncio.run(scenario())
    assert time.monotonic() - started < 8
