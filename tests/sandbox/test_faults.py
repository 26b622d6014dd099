"""Injected faults: status answers, dropped connections, truncated and corrupted downloads, delays."""

from __future__ import annotations

import base64
import hashlib
import time

import httpx
import pytest

from airflow_provider_analytics.sandbox.domain.store import SandboxState
from airflow_provider_analytics.sandbox.faults import Fault
from tests.support.names import EXECUTE_PATH


def ready_report_id(client: httpx.Client, state: SandboxState) -> str:
    report = client.post("/v1/reports", json={"dashboard_ids": ["db_sales"], "format": "pdf"}).json()
    state.advance(1)
    return str(report["id"])


def test_status_fault_answers_before_processing(client: httpx.Client, state: SandboxState) -> None:
    state.inject(Fault.status(503, method="POST", path="/execute$", retry_after=7))
    failed = client.post(EXECUTE_PATH, json={})
    assert failed.status_code == 503
    assert failed.headers["retry-after"] == "7"
    assert failed.json()["error"]["type"] == "unavailable"
    assert failed.json()["error"]["request_id"] == failed.headers["x-request-id"]
    assert state.executions() == []
    assert client.post(EXECUTE_PATH, json={}).status_code == 202
    assert [r.status for r in state.requests] == [503, 202]


def test_raw_bodies(client: httpx.Client, state: SandboxState) -> None:
    page = "<html><body><h1>502 Bad Gateway</h1></body></html>"
    date = "Wed, 21 Oct 2026 07:28:00 GMT"
    state.inject(Fault.status(502, body=page, content_type="text/html", retry_after=date), Fault.status(504, body=""))
    html = client.get("/v1/charts")
    assert (html.status_code, html.text, html.headers["retry-after"]) == (502, page, date)
    assert html.headers["content-type"] == "text/html"
    empty = client.get("/v1/charts")
    assert (empty.status_code, empty.content) == (504, b"")
    assert "x-request-id" in empty.headers


def test_faults_match_method_path_and_count(client: httpx.Client, state: SandboxState) -> None:
    state.inject(Fault.status(500, method="POST", path=r"^/v1/workflows$", times=2), Fault.status(429))
    assert client.post("/v1/workflows/wf_churn_scoring/execute").status_code == 429
    assert client.get("/v1/workflows").status_code == 200
    body = {"name": "x", "configuration": {}}
    assert [client.post("/v1/workflows", json=body).status_code for _ in range(3)] == [500, 500, 201]


def test_drop_raises_transport_error_and_creates_nothing(client: httpx.Client, state: SandboxState) -> None:
    state.inject(Fault.drop(method="POST"))
    with pytest.raises(httpx.TransportError):
        client.post(EXECUTE_PATH, json={}, headers={"Idempotency-Key": "k"})
    assert state.executions() == []
    assert state.requests[-1].status == 0
    retried = client.post(EXECUTE_PATH, json={}, headers={"Idempotency-Key": "k"})
    assert retried.status_code == 202
    assert len(state.executions()) == 1


def test_drop_after_processing_then_retry_replays(client: httpx.Client, state: SandboxState) -> None:
    state.inject(Fault.drop(method="POST", path="/execute$", after_processing=True))
    with pytest.raises(httpx.TransportError):
        client.post(EXECUTE_PATH, json={"inputs": {"a": 1}}, headers={"Idempotency-Key": "once"})
    (created,) = state.executions()
    retried = client.post(EXECUTE_PATH, json={"inputs": {"a": 1}}, headers={"Idempotency-Key": "once"})
    assert retried.status_code == 202
    assert retried.json()["id"] == created["id"]
    assert len(state.executions()) == 1
    assert [r.status for r in state.requests] == [0, 202]


def test_truncated_download(client: httpx.Client, state: SandboxState) -> None:
    report_id = ready_report_id(client, state)
    state.inject(Fault.truncate(path="/download$", at_bytes=100))
    received: list[bytes] = []

    def download() -> None:
        with client.stream("GET", f"/v1/reports/{report_id}/download") as response:
            assert int(response.headers["content-length"]) > 100
            received.extend(response.iter_bytes())

    with pytest.raises(httpx.TransportError):
        download()
    assert len(b"".join(received)) == 100
    assert client.get(f"/v1/reports/{report_id}/download").status_code == 200


def test_a_cut_past_the_bodys_end_still_cuts_its_last_byte(client: httpx.Client, state: SandboxState) -> None:
    report_id = ready_report_id(client, state)
    state.inject(Fault.truncate(path="/download$", at_bytes=10**9))
    received: list[bytes] = []
    length = 0

    def download() -> None:
        nonlocal length
        with client.stream("GET", f"/v1/reports/{report_id}/download") as response:
            length = int(response.headers["content-length"])
            received.extend(response.iter_bytes())

    with pytest.raises(httpx.TransportError):
        download()
    assert len(b"".join(received)) == length - 1


def test_bad_digest(client: httpx.Client, state: SandboxState) -> None:
    report_id = ready_report_id(client, state)
    state.inject(Fault.bad_digest())
    response = client.get(f"/v1/reports/{report_id}/download")
    assert response.status_code == 200
    good = f"sha-256=:{base64.b64encode(hashlib.sha256(response.content).digest()).decode()}:"
    assert response.headers["repr-digest"].startswith("sha-256=:")
    assert response.headers["repr-digest"] != good
    assert client.get(f"/v1/reports/{report_id}/download").headers["repr-digest"] == good


def test_delay(client: httpx.Client, state: SandboxState) -> None:
    state.inject(Fault.delay(0.3, path="/v1/charts"))
    started = time.monotonic()
    assert client.get("/v1/charts").status_code == 200
    # The delay is the behaviour, so time is measured, as a lower bound only: a busy machine can only make
    # the answer later, so this fails only when the delay was not applied.
    assert time.monotonic() - started >= 0.3
    state.inject(Fault.delay(1.0))
    with pytest.raises(httpx.ReadTimeout):
        client.get("/v1/charts", timeout=0.2)


def test_fault_validation() -> None:
    with pytest.raises(ValueError, match="code"):
        Fault.status(200)
    with pytest.raises(ValueError, match="times"):
        Fault.drop(times=0)
    with pytest.raises(ValueError, match="kind"):
        Fault.from_json({"kind": "explode"})
    assert Fault.from_json({"kind": "status", "code": 503, "retry_after": 2}) == Fault.status(503, retry_after=2)
