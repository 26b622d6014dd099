"""Edges of the hostile faults: idempotent requests under a rewrite, bodyless statuses, fault arguments."""

from __future__ import annotations

import gzip
import json

import httpx
import pytest

from airflow_provider_analytics.sandbox.domain.store import SandboxState
from airflow_provider_analytics.sandbox.faults import Fault, FaultQueue
from airflow_provider_analytics.sandbox.faults.hostile import accepts_gzip
from tests.support.names import EXECUTE_PATH


@pytest.mark.parametrize(
    "fault", [Fault.gzip(force=True, method="POST"), Fault.headers(set={"X-Edge": "1"}, method="POST")]
)
def test_a_rewritten_idempotent_answer_is_stored_and_replayed(
    client: httpx.Client, state: SandboxState, fault: Fault
) -> None:
    state.inject(fault)
    key = {"Idempotency-Key": "edge-1"}
    first = client.post(EXECUTE_PATH, json={}, headers=key)
    again = client.post(EXECUTE_PATH, json={}, headers=key)  # not 409 "still being processed"
    assert (first.status_code, again.status_code) == (202, 202)
    assert again.headers["idempotent-replayed"] == "true"
    assert again.json()["id"] == first.json()["id"]
    assert len(state.executions()) == 1
    assert "content-encoding" not in again.headers  # the stored answer is the route's own
    assert "x-edge" not in again.headers


def test_a_rewrite_applies_to_a_replayed_answer(client: httpx.Client, state: SandboxState) -> None:
    key = {"Idempotency-Key": "edge-2"}
    first = client.post(EXECUTE_PATH, json={}, headers=key)
    state.inject(Fault.gzip(force=True, method="POST"))
    with client.stream("POST", EXECUTE_PATH, json={}, headers={**key, "Accept-Encoding": "identity"}) as response:
        raw = b"".join(response.iter_raw())
    assert response.headers["content-encoding"] == "gzip"
    assert response.headers["idempotent-replayed"] == "true"
    assert json.loads(gzip.decompress(raw))["id"] == first.json()["id"]


def test_headers_can_drop_the_gateways_own_headers(client: httpx.Client, state: SandboxState) -> None:
    state.inject(Fault.headers(remove=["X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset"]))
    rewritten = client.get("/v1/charts")
    assert not [name for name in rewritten.headers if name.startswith("x-ratelimit")]
    assert "x-ratelimit-limit" in client.get("/v1/charts").headers


def test_a_rewrite_also_applies_to_the_gateways_errors(client: httpx.Client, state: SandboxState) -> None:
    state.inject(Fault.headers(set={"X-Edge": "yes"}))
    denied = client.get("/v1/charts", headers={"Authorization": "Bearer nope"})
    assert (denied.status_code, denied.headers["x-edge"]) == (401, "yes")
    assert denied.json()["error"]["type"] == "unauthenticated"


def test_gzip_leaves_a_head_answer_alone(client: httpx.Client, state: SandboxState) -> None:
    plain = client.head("/v1/charts", headers={"Accept-Encoding": "identity"})
    state.inject(Fault.gzip(force=True))
    head = client.head("/v1/charts", headers={"Accept-Encoding": "identity"})
    assert head.status_code == plain.status_code
    assert "content-encoding" not in head.headers
    assert head.headers.get("content-length") == plain.headers.get("content-length")


def test_a_204_stream_sends_no_body(client: httpx.Client, state: SandboxState) -> None:
    state.inject(Fault.stream(204, chunk=b"x", chunk_count=10))
    answer = client.get("/v1/charts")
    assert (answer.status_code, answer.content) == (204, b"")
    assert client.get("/v1/charts").status_code == 200


def test_respond_with_transfer_encoding_gets_no_added_length(client: httpx.Client, state: SandboxState) -> None:
    state.inject(Fault.respond(200, headers={"Transfer-Encoding": "chunked"}, body=b"in chunks"))
    answer = client.get("/v1/charts")
    assert answer.content == b"in chunks"
    assert "content-length" not in answer.headers


@pytest.mark.parametrize(
    ("header", "admits"),
    [
        ("", False),
        ("identity", False),
        ("gzip", True),
        ("GZIP;Q=1.0", True),
        ("gzip;q=0", False),
        ("gzip;q=0.000", False),
        ("br, *", True),
        ("*;q=0, identity", False),
        ("gzip;q=0, *", False),
        ("x-gzip", True),
        ("gzip;q=nonsense", False),
    ],
)
def test_accept_encoding(header: str, admits: bool) -> None:
    assert accepts_gzip(header) is admits


def test_the_use_count_belongs_to_the_queue_entry() -> None:
    queue = FaultQueue()
    fault = Fault.pages(times=2, path="^/a$")
    queue.add(fault)
    queue.add(fault)
    assert [queue.take_use("GET", "/a")[1] for _ in range(5)] == [1, 2, 1, 2, 0]
    assert queue.pending() == []
    assert hash(Fault.pages(items=[{"a": 1}])) == hash(Fault.pages(items=[{"b": 2}]))  # frozen, with list fields


@pytest.mark.parametrize(
    ("build", "problem"),
    [
        (lambda: Fault.respond(200, path="("), "regular expression"),
        (lambda: Fault.respond(200, times=True), "times"),
        (lambda: Fault.respond(True), "code"),
        (lambda: Fault.respond(200, body=123), "body"),  # type: ignore[arg-type]
        (lambda: Fault.respond(200, headers={"X-Tab": 5}), "str or bytes"),  # type: ignore[dict-item]
        (lambda: Fault.respond(200, headers=[("only-a-name",)]), "pairs"),  # type: ignore[list-item]
        (lambda: Fault.stream(chunk=None), "chunk"),  # type: ignore[arg-type]
        (lambda: Fault.stream(interval=float("inf")), "interval"),
        (lambda: Fault.headers(set={"Content-Length": "-1"}), "Content-Length"),
        (lambda: Fault.headers(set={"X-Bad": "a\nb"}), "control characters"),
        (lambda: Fault.pages(items=[object()]), "JSON"),
    ],
)
def test_bad_arguments_are_value_errors(build: object, problem: str) -> None:
    assert callable(build)
    with pytest.raises(ValueError, match=problem):
        build()
