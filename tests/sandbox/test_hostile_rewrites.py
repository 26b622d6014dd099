"""Rewritten answers on the wire: ``Fault.gzip`` and ``Fault.headers`` on JSON routes and report downloads."""

from __future__ import annotations

import gzip
import hashlib
import json
import time

import httpx
import pytest

from airflow_provider_analytics.sandbox.domain.store import SandboxState
from airflow_provider_analytics.sandbox.faults import Fault

PLAIN = {"Accept-Encoding": "identity"}
# What a download must keep when a fault rewrites it.
FILE_HEADERS = ("etag", "repr-digest", "content-disposition", "content-type", "accept-ranges")


def ready_csv(client: httpx.Client, state: SandboxState, rows: int = 4000) -> tuple[str, bytes]:
    """A ready CSV report larger than one 64 KiB download chunk, and its file."""
    request = {"dashboard_ids": ["db_sales"], "format": "csv", "parameters": {"rows": rows}}
    report_id = client.post("/v1/reports", json=request).json()["id"]
    state.advance(1)
    deadline = time.monotonic() + 10
    while (report := client.get(f"/v1/reports/{report_id}").json())["status"] != "ready":
        assert time.monotonic() < deadline, report
        time.sleep(0.02)
    content = client.get(f"/v1/reports/{report_id}/download", headers=PLAIN).content
    assert len(content) > 65536
    assert hashlib.sha256(content).hexdigest() == report["sha256"]
    return f"/v1/reports/{report_id}/download", content


def raw_get(client: httpx.Client, path: str, headers: dict[str, str] | None = None) -> tuple[httpx.Response, bytes]:
    """The answer and its body exactly as sent (not decoded)."""
    with client.stream("GET", path, headers=headers) as response:
        return response, b"".join(response.iter_raw())


def values(response: httpx.Response, name: bytes) -> list[bytes]:
    return [value for header, value in response.headers.raw if header.lower() == name]


# --- gzip ---------------------------------------------------------------------------------------------


def test_gzip_on_a_json_route_when_accepted(client: httpx.Client, state: SandboxState) -> None:
    plain = client.get("/v1/workflows", headers=PLAIN)
    state.inject(Fault.gzip(path="^/v1/workflows$"))
    response, raw = raw_get(client, "/v1/workflows", {"Accept-Encoding": "gzip"})
    assert response.status_code == 200
    assert response.headers["content-encoding"] == "gzip"
    assert int(response.headers["content-length"]) == len(raw) < len(plain.content)
    assert json.loads(gzip.decompress(raw))["data"] == plain.json()["data"]
    assert response.headers["content-type"] == "application/json"
    assert state.requests[-1].status == 200


@pytest.mark.parametrize("accept", ["identity", "br", "gzip;q=0", "gzip;q=0, identity", ""])
def test_honest_gzip_sends_plain_when_gzip_is_not_accepted(
    client: httpx.Client, state: SandboxState, accept: str
) -> None:
    state.inject(Fault.gzip())
    response, raw = raw_get(client, "/v1/charts", {"Accept-Encoding": accept})
    assert "content-encoding" not in response.headers
    assert int(response.headers["content-length"]) == len(raw)
    assert len(json.loads(raw)["data"]) == 6


@pytest.mark.parametrize("accept", ["gzip", "deflate, gzip;q=0.5", "*", "x-gzip"])
def test_honest_gzip_compresses_when_gzip_is_accepted(client: httpx.Client, state: SandboxState, accept: str) -> None:
    state.inject(Fault.gzip())
    response, raw = raw_get(client, "/v1/charts", {"Accept-Encoding": accept})
    assert response.headers["content-encoding"] == "gzip"
    assert len(json.loads(gzip.decompress(raw))["data"]) == 6


def test_forced_gzip_ignores_accept_encoding(client: httpx.Client, state: SandboxState) -> None:
    state.inject(Fault.gzip(force=True))
    response, raw = raw_get(client, "/v1/charts", PLAIN)
    assert response.headers["content-encoding"] == "gzip"
    assert raw[:2] == b"\x1f\x8b"
    assert len(json.loads(gzip.decompress(raw))["data"]) == 6
    assert client.get("/v1/charts", headers=PLAIN).headers.get("content-encoding") is None  # used up


def test_gzip_download_keeps_the_file_headers(client: httpx.Client, state: SandboxState) -> None:
    path, content = ready_csv(client, state)
    plain = client.get(path, headers=PLAIN)
    state.inject(Fault.gzip(force=True, path="/download$"))
    response, raw = raw_get(client, path, PLAIN)
    assert response.status_code == 200
    assert gzip.decompress(raw) == content
    assert response.headers["content-encoding"] == "gzip"
    assert int(response.headers["content-length"]) == len(raw) < len(content)
    for name in FILE_HEADERS:
        assert response.headers[name] == plain.headers[name], name


def test_gzip_partial_download_keeps_content_range(client: httpx.Client, state: SandboxState) -> None:
    path, content = ready_csv(client, state)
    ranged = {"Accept-Encoding": "gzip", "Range": "bytes=100-70099"}
    plain = client.get(path, headers={**ranged, **PLAIN})
    assert plain.status_code == 206
    state.inject(Fault.gzip(path="/download$"))
    response, raw = raw_get(client, path, ranged)
    assert response.status_code == 206
    assert gzip.decompress(raw) == content[100:70100]
    assert response.headers["content-range"] == plain.headers["content-range"] == f"bytes 100-70099/{len(content)}"
    assert int(response.headers["content-length"]) == len(raw)
    for name in FILE_HEADERS:
        assert response.headers[name] == plain.headers[name], name


def test_httpx_decodes_a_gzipped_download(client: httpx.Client, state: SandboxState) -> None:
    path, content = ready_csv(client, state)
    state.inject(Fault.gzip(path="/download$"))
    response = client.get(path)  # httpx accepts gzip and decodes it
    assert response.headers["content-encoding"] == "gzip"
    assert response.content == content


# --- headers ------------------------------------------------------------------------------------------


def test_headers_set_replaces_case_insensitively(client: httpx.Client, state: SandboxState) -> None:
    path, content = ready_csv(client, state)
    plain = client.get(path, headers=PLAIN)
    state.inject(Fault.headers(set={"etag": 'W/"abc"', "Retry-After": "soon", "X-New": "1"}, path="/download$"))
    response = client.get(path, headers=PLAIN)
    assert values(response, b"etag") == [b'W/"abc"']
    assert (response.headers["retry-after"], response.headers["x-new"]) == ("soon", "1")
    assert response.content == content
    assert response.headers["repr-digest"] == plain.headers["repr-digest"]
    assert response.headers["content-length"] == str(len(content))


def test_headers_on_a_206(client: httpx.Client, state: SandboxState) -> None:
    path, content = ready_csv(client, state)
    state.inject(Fault.headers(set={"ETag": '"another-file"'}, path="/download$"))
    response = client.get(path, headers={**PLAIN, "Range": "bytes=10-19"})
    assert (response.status_code, response.content) == (206, content[10:20])
    assert response.headers["etag"] == '"another-file"'
    assert response.headers["content-range"] == f"bytes 10-19/{len(content)}"


def test_headers_remove_content_length_sends_chunked(client: httpx.Client, state: SandboxState) -> None:
    path, content = ready_csv(client, state)
    state.inject(Fault.headers(remove=["Content-Length", "x-request-id", "ETAG"], path="/download$"))
    response, raw = raw_get(client, path, PLAIN)
    assert raw == content
    assert response.headers["transfer-encoding"] == "chunked"
    for name in ("content-length", "x-request-id", "etag"):
        assert name not in response.headers
    assert "repr-digest" in response.headers


def test_headers_on_a_json_route(client: httpx.Client, state: SandboxState) -> None:
    state.inject(Fault.headers(set={"Content-Type": "text/html", "X-RateLimit-Remaining": "-1"}, path="/charts$"))
    response = client.get("/v1/charts")
    assert response.headers["content-type"] == "text/html"
    assert values(response, b"x-ratelimit-remaining") == [b"-1"]
    assert len(json.loads(response.content)["data"]) == 6
    assert client.get("/v1/charts").headers["content-type"] == "application/json"


def test_headers_with_a_lying_content_length(client: httpx.Client, state: SandboxState) -> None:
    state.inject(
        Fault.headers(set={"Content-Length": "5"}, path="/charts$"),
        Fault.headers(set={"Content-Length": "999999"}, path="/charts$"),
    )
    short = client.get("/v1/charts")
    assert (short.headers["content-length"], short.content) == ("5", b'{"dat')
    received = bytearray()
    with pytest.raises(httpx.TransportError), client.stream("GET", "/v1/charts") as response:  # noqa: PT012
        assert response.headers["content-length"] == "999999"
        for piece in response.iter_raw():
            received += piece
    assert len(json.loads(bytes(received))["data"]) == 6
