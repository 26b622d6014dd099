"""The hostile fault kinds through the admin endpoint (``POST /_sandbox/faults``): JSON in, the same wire out."""

from __future__ import annotations

import base64
import gzip
import json
from typing import Any

import httpx
import pytest

from airflow_provider_analytics.sandbox.faults import Fault

FAULTS = "/_sandbox/faults"


def inject(admin: httpx.Client, fault: dict[str, Any]) -> dict[str, Any]:
    response = admin.post(FAULTS, json=fault)
    assert response.status_code == 201, response.text
    shown: dict[str, Any] = response.json()["fault"]
    return shown


def test_respond_from_json(admin: httpx.Client, client: httpx.Client) -> None:
    shown = inject(
        admin,
        {"kind": "respond", "code": 302, "path": "/charts$", "headers": {"Location": "/login", "Retry-After": "²"},
         "body_b64": base64.b64encode(b"\xff\x00moved").decode()},
    )  # fmt: skip
    assert shown["kind"] == "respond"
    assert shown["code"] == 302
    assert shown["headers"] == [["Location", "/login"], ["Retry-After", "²"]]
    assert base64.b64decode(shown["body_b64"]) == b"\xff\x00moved"
    response = client.get("/v1/charts")
    assert (response.status_code, response.content, response.headers["location"]) == (302, b"\xff\x00moved", "/login")
    assert (b"retry-after", b"\xb2") in [(name.lower(), value) for name, value in response.headers.raw]
    inject(admin, {"kind": "respond", "code": 200, "headers": [["X-A", "1"], ["X-A", "2"]], "body": "naïve"})
    text = client.get("/v1/charts")
    assert (text.content, text.headers["x-a"]) == ("naïve".encode(), "1, 2")


def test_stream_from_json(admin: httpx.Client, client: httpx.Client) -> None:
    shown = inject(
        admin,
        {"kind": "stream", "code": 200, "prefix": '{"data": ["', "chunk_b64": base64.b64encode(b"xy").decode(),
         "chunk_count": 3, "interval": 0.01, "suffix": '"]}', "times": 2},
    )  # fmt: skip
    assert (shown["chunk_count"], shown["interval"], shown["content_length"], shown["times"]) == (3, 0.01, None, 2)
    assert base64.b64decode(shown["chunk_b64"]) == b"xy"
    response = client.get("/v1/charts")
    assert response.headers["transfer-encoding"] == "chunked"
    assert response.json() == {"data": ["xyxyxy"]}
    remaining = admin.get(FAULTS).json()["data"]
    assert [(fault["kind"], fault["remaining"]) for fault in remaining] == [("stream", 1)]
    assert client.get("/v1/charts").json() == {"data": ["xyxyxy"]}
    inject(admin, {"kind": "stream", "chunk": "a", "chunk_count": 2, "content_length": 2})
    assert client.get("/v1/dashboards").headers["content-length"] == "2"


def test_gzip_from_json(admin: httpx.Client, client: httpx.Client) -> None:
    assert inject(admin, {"kind": "gzip", "force": True, "path": "/charts$"})["force"] is True
    with client.stream("GET", "/v1/charts", headers={"Accept-Encoding": "identity"}) as response:
        raw = b"".join(response.iter_raw())
    assert response.headers["content-encoding"] == "gzip"
    assert len(json.loads(gzip.decompress(raw))["data"]) == 6


def test_headers_from_json(admin: httpx.Client, client: httpx.Client) -> None:
    shown = inject(admin, {"kind": "headers", "set": {"ETag": 'W/"abc"'}, "remove": ["X-Request-Id"]})
    assert (shown["set"], shown["remove"]) == ({"ETag": 'W/"abc"'}, ["x-request-id"])
    response = client.get("/v1/dashboards")
    assert response.headers["etag"] == 'W/"abc"'
    assert "x-request-id" not in response.headers
    assert len(response.json()["data"]) == 3


def test_pages_from_json(admin: httpx.Client, client: httpx.Client) -> None:
    fault = {"kind": "pages", "cycle": 2, "items": [{"id": "wf_1"}], "extra": {"total": 9}, "times": 3}
    shown = inject(admin, fault)
    assert (shown["cycle"], shown["items"], shown["extra"]) == (2, [{"id": "wf_1"}], {"total": 9})
    pages = [client.get("/v1/workflows").json() for _ in range(3)]
    assert [page["next_cursor"] for page in pages] == ["cur_1", "cur_2", "cur_1"]
    assert pages[0] == {"data": [{"id": "wf_1"}], "next_cursor": "cur_1", "total": 9}


def test_from_json_equals_the_constructors() -> None:
    assert Fault.from_json({"kind": "respond", "code": 204, "body": "x"}) == Fault.respond(204, body=b"x")
    assert Fault.from_json({"kind": "respond", "code": 200, "body_b64": "AAE="}) == Fault.respond(200, body=b"\x00\x01")
    assert Fault.from_json({"kind": "stream", "chunk": "ab", "suffix_b64": "AA=="}) == Fault.stream(
        chunk=b"ab", suffix=b"\x00"
    )
    assert Fault.from_json({"kind": "gzip"}) == Fault.gzip()
    assert Fault.from_json({"kind": "headers", "set": {"A": "1"}, "remove": ["b"]}) == Fault.headers(
        set={"A": "1"}, remove=["b"]
    )
    assert Fault.from_json({"kind": "pages", "cycle": 3}) == Fault.pages(cycle=3)


@pytest.mark.parametrize(
    ("fault", "problem"),
    [
        ({"kind": "respond", "code": 101}, "code"),
        ({"kind": "respond", "code": 600}, "code"),
        ({"kind": "respond", "code": 200, "headers": {"X-Bad": "a\r\nInjected: 1"}}, "X-Bad"),
        ({"kind": "respond", "code": 200, "headers": {"Bad Name": "1"}}, "header name"),
        ({"kind": "respond", "code": 200, "headers": {"Content-Length": "lots"}}, "Content-Length"),
        ({"kind": "respond", "code": 200, "headers": {"X-Euro": "€"}}, "latin-1"),
        ({"kind": "respond", "code": 200, "body_b64": "not base64!"}, "base64"),
        ({"kind": "respond", "code": 200, "body": "a", "body_b64": "YQ=="}, "not both"),
        ({"kind": "respond", "code": 200, "prefix": "a"}, "unknown field"),
        ({"kind": "stream", "chunk_count": -1}, "chunk_count"),
        ({"kind": "stream", "interval": -0.5}, "interval"),
        ({"kind": "stream", "content_length": -1}, "content_length"),
        ({"kind": "stream", "content_length": "10"}, "content_length"),
        ({"kind": "stream", "code": 99}, "code"),
        ({"kind": "gzip", "force": "yes"}, "force"),
        ({"kind": "headers", "set": ["ETag", "x"]}, "set"),
        ({"kind": "headers", "remove": "ETag"}, "remove"),
        ({"kind": "pages", "cycle": 0}, "cycle"),
        ({"kind": "pages", "items": {"id": 1}}, "items"),
        ({"kind": "pages", "extra": ["columns"]}, "extra"),
        ({"kind": "pages", "times": 0}, "times"),
    ],
)
def test_invalid_hostile_faults_are_refused(admin: httpx.Client, fault: dict[str, Any], problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        Fault.from_json(fault)
    response = admin.post(FAULTS, json=fault)
    assert response.status_code == 422
    assert problem in response.json()["error"]["message"]
    assert admin.get(FAULTS).json()["data"] == []
