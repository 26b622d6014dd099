"""Hostile answers on the wire: ``Fault.respond``, ``Fault.stream`` and ``Fault.pages`` through a real socket."""

from __future__ import annotations

import json
import logging
import time

import httpx
import pytest

from airflow_provider_analytics.sandbox.domain.store import SandboxState
from airflow_provider_analytics.sandbox.faults import Fault
from airflow_provider_analytics.sandbox.server import SandboxServer
from tests.support.names import EXECUTE_PATH

# Headers uvicorn puts on every answer, whatever the fault says.
SERVER_HEADERS = {"date", "server"}


def header_names(response: httpx.Response) -> set[str]:
    return {name.decode("latin-1").lower() for name, _ in response.headers.raw}


def read_until_error(client: httpx.Client, path: str) -> tuple[httpx.Response, bytes]:
    """Stream a response and collect its raw bytes until the server closes the connection on us."""
    received = bytearray()
    with pytest.raises(httpx.TransportError), client.stream("GET", path) as response:  # noqa: PT012
        for piece in response.iter_raw():
            received += piece
    return response, bytes(received)


def wait_for_idle_server(server: SandboxServer, timeout: float = 5.0) -> bool:
    """Whether every request task of the server ends within ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while server.requests_in_progress:
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


# --- respond ------------------------------------------------------------------------------------------


def test_respond_sends_exactly_its_status_headers_and_body(client: httpx.Client, state: SandboxState) -> None:
    state.inject(Fault.respond(418, headers={"X-Odd": "yes", "Content-Type": "text/x-teapot"}, body="café ☕"))
    response = client.get("/v1/charts")
    assert response.status_code == 418
    assert response.content == "café ☕".encode()
    assert response.headers["x-odd"] == "yes"
    assert response.headers["content-length"] == str(len("café ☕".encode()))
    assert header_names(response) == {"x-odd", "content-type", "content-length", "x-request-id"} | SERVER_HEADERS
    assert state.requests[-1].status == 418
    assert state.requests[-1].request_id == response.headers["x-request-id"]


def test_respond_answers_before_auth_and_processing(analytics_sandbox: SandboxServer, state: SandboxState) -> None:
    state.inject(Fault.respond(200, headers={"Content-Type": "application/json"}, body=b'{"id": "ex_fake"}'))
    response = httpx.post(f"{analytics_sandbox.base_url}{EXECUTE_PATH}", json={})  # no token at all
    assert (response.status_code, response.json()) == (200, {"id": "ex_fake"})
    assert state.executions() == []


def test_respond_204_302_and_206(client: httpx.Client, state: SandboxState) -> None:
    state.inject(
        Fault.respond(204, headers=[("X-Trace", "t")]),
        Fault.respond(302, headers={"Location": "https://login.example/"}, body=b"<a>login</a>"),
        Fault.respond(206, headers={"Content-Range": "bytes 0-3/10", "ETag": '"x"'}, body=b"%PDF"),
    )
    empty = client.get("/v1/charts")
    assert (empty.status_code, empty.content, empty.headers["x-trace"]) == (204, b"", "t")
    assert "content-length" not in empty.headers
    moved = client.get("/v1/charts")
    assert (moved.status_code, moved.content) == (302, b"<a>login</a>")
    assert moved.headers["location"] == "https://login.example/"
    partial = client.get("/v1/charts")
    assert (partial.status_code, partial.content) == (206, b"%PDF")
    assert (partial.headers["content-range"], partial.headers["etag"]) == ("bytes 0-3/10", '"x"')
    assert [r.status for r in state.requests] == [204, 302, 206]


def test_respond_header_values_go_out_verbatim(client: httpx.Client, state: SandboxState) -> None:
    state.inject(
        Fault.respond(
            503,
            headers=[
                ("Retry-After", "²"),
                ("X-Raw", b"\xff\xfe ok"),
                ("X-Request-Id", "req_mine"),
                ("X-Dup", "1"),
                ("X-Dup", "2"),
            ],
        )
    )
    response = client.get("/v1/charts")
    raw = response.headers.raw
    assert (b"retry-after", b"\xb2") in [(name.lower(), value) for name, value in raw]
    assert (b"x-raw", b"\xff\xfe ok") in [(name.lower(), value) for name, value in raw]
    assert [value for name, value in raw if name.lower() == b"x-request-id"] == [b"req_mine"]
    assert [value for name, value in raw if name.lower() == b"x-dup"] == [b"1", b"2"]


def test_respond_with_a_content_length_that_promises_more(client: httpx.Client, state: SandboxState) -> None:
    state.inject(Fault.respond(200, headers={"Content-Length": "1000"}, body=b'{"partial": tr'))
    response, received = read_until_error(client, "/v1/charts")
    assert response.headers["content-length"] == "1000"
    assert received == b'{"partial": tr'
    assert client.get("/v1/charts").status_code == 200  # the server is fine


def test_respond_with_a_content_length_that_promises_less(client: httpx.Client, state: SandboxState) -> None:
    state.inject(Fault.respond(200, headers={"Content-Length": "4"}, body=b"abcdefgh"))
    response = client.get("/v1/charts")
    assert (response.headers["content-length"], response.content) == ("4", b"abcd")


# --- stream -------------------------------------------------------------------------------------------


def test_stream_chunked_oversized_json(client: httpx.Client, state: SandboxState) -> None:
    chunk = b"x" * 65536
    state.inject(Fault.stream(headers={"Content-Type": "application/json"}, prefix=b'{"data": ["', chunk=chunk,
                              chunk_count=40, suffix=b'"]}'))  # fmt: skip
    response = client.get("/v1/workflows")
    assert response.status_code == 200
    assert response.headers["transfer-encoding"] == "chunked"
    assert "content-length" not in response.headers
    assert "x-request-id" in response.headers
    assert len(response.content) == len(b'{"data": ["') + 40 * len(chunk) + len(b'"]}')
    assert json.loads(response.content) == {"data": ["x" * 40 * 65536]}


def test_stream_with_a_lying_content_length(client: httpx.Client, state: SandboxState) -> None:
    state.inject(Fault.stream(prefix=b"<", chunk=b"ab", chunk_count=3, suffix=b">", content_length=10**15))
    response, received = read_until_error(client, "/v1/charts")
    assert response.headers["content-length"] == str(10**15)
    assert "transfer-encoding" not in response.headers
    assert received == b"<ababab>"


def test_stream_with_a_true_content_length_and_status(client: httpx.Client, state: SandboxState) -> None:
    state.inject(Fault.stream(503, prefix=b"[", chunk=b"1,", chunk_count=3, suffix=b"1]", content_length=9))
    response = client.get("/v1/charts")
    assert (response.status_code, response.headers["content-length"], response.content) == (503, "9", b"[1,1,1,1]")
    assert state.requests[-1].status == 503


def test_stream_trickles(client: httpx.Client, state: SandboxState) -> None:
    state.inject(Fault.stream(chunk=b" ", chunk_count=4, interval=0.25, suffix=b"{}"))
    arrivals: list[float] = []
    started = time.monotonic()
    with client.stream("GET", "/v1/charts") as response:
        headers_at = time.monotonic() - started
        for piece in response.iter_raw():
            if piece:
                arrivals.append(time.monotonic() - started)
    total = time.monotonic() - started
    # Lower bounds only (a busy machine can only make them larger): the body took the four intervals, and
    # the headers came before it was done. How many reads it took depends on the reader's speed: not checked.
    assert total >= 4 * 0.25
    assert headers_at < total
    assert arrivals


def test_stream_stops_quietly_when_the_client_goes_away(
    analytics_sandbox: SandboxServer, client: httpx.Client, state: SandboxState, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    state.inject(
        Fault.stream(chunk=b"x" * 65536, chunk_count=100_000),  # 6.5 GB if nobody stopped it
        Fault.stream(chunk=b" ", chunk_count=1000, interval=0.5),  # 500 s if nobody stopped it
    )
    for _ in range(2):
        # httpx's 5 s default is too short on a loaded machine: the sandbox may still be ending the stream
        # the previous client walked away from when this request arrives.
        with (
            httpx.Client(base_url=analytics_sandbox.base_url, timeout=60) as other,
            other.stream("GET", "/v1/charts") as response,
        ):
            next(response.iter_raw())
    assert wait_for_idle_server(analytics_sandbox)
    assert client.get("/v1/charts").status_code == 200
    noisy = [r for r in caplog.records if r.name.startswith(("uvicorn", "asyncio", "airflow_provider_analytics"))]
    assert noisy == []


# --- pages --------------------------------------------------------------------------------------------


def cursors(client: httpx.Client, path: str, count: int) -> list[str | None]:
    return [client.get(path).json()["next_cursor"] for _ in range(count)]


def test_pages_count_their_uses_then_the_route_answers(client: httpx.Client, state: SandboxState) -> None:
    state.inject(Fault.pages(path="^/v1/workflows$", times=3, items=[{"id": "wf_x"}]))
    first = client.get("/v1/workflows")
    assert first.status_code == 200
    assert first.json() == {"data": [{"id": "wf_x"}], "next_cursor": "cur_1"}
    assert first.headers["content-type"] == "application/json"
    assert "x-request-id" in first.headers
    assert cursors(client, "/v1/workflows", 2) == ["cur_2", "cur_3"]
    real = client.get("/v1/workflows").json()
    assert len(real["data"]) == 20
    assert real["next_cursor"].startswith("c_")


def test_pages_cycle(client: httpx.Client, state: SandboxState) -> None:
    state.inject(Fault.pages(cycle=2, times=5))
    assert cursors(client, "/v1/dashboards", 5) == ["cur_1", "cur_2", "cur_1", "cur_2", "cur_1"]
    assert client.get("/v1/dashboards").json()["next_cursor"] is None  # 3 seeded dashboards: one page


def test_pages_count_per_fault(client: httpx.Client, state: SandboxState) -> None:
    state.inject(
        Fault.pages(path="/workflows$", times=3),
        Fault.pages(path="/dashboards$", times=3),
        Fault.pages(path="/charts$", times=2),
        Fault.pages(path="/charts$", times=2),  # an equal fault: its own count
    )
    seen = [client.get(path).json()["next_cursor"] for path in ("/v1/workflows", "/v1/dashboards", "/v1/workflows")]
    assert seen == ["cur_1", "cur_1", "cur_2"]
    assert cursors(client, "/v1/charts", 4) == ["cur_1", "cur_2", "cur_1", "cur_2"]


def test_pages_extra_fields(client: httpx.Client, state: SandboxState) -> None:
    columns = [{"name": "day", "type": "date"}]
    state.inject(Fault.pages(items=[["2026-01-01"]], extra={"columns": columns}, path="/data$"))
    page = client.get("/v1/charts/ch_revenue/data").json()
    assert page == {"data": [["2026-01-01"]], "next_cursor": "cur_1", "columns": columns}
