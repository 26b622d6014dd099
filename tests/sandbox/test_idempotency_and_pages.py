"""Idempotency-Key replay and conflicts; cursor pagination."""

from __future__ import annotations

import httpx
import pytest

from airflow_provider_analytics.sandbox.domain.store import SandboxState


def test_repeat_with_same_key_replays_the_original(client: httpx.Client, state: SandboxState) -> None:
    headers = {"Idempotency-Key": "run-2026-11-21"}
    first = client.post("/v1/workflows/wf_churn_scoring/execute", json={"inputs": {"day": 1}}, headers=headers)
    state.advance(10)
    # Same body with other key order and spacing still counts as the same request.
    again = client.post(
        "/v1/workflows/wf_churn_scoring/execute",
        content=b'{ "inputs" : { "day" : 1 } }',
        headers={**headers, "Content-Type": "application/json"},
    )
    assert first.status_code == again.status_code == 202
    assert again.json() == first.json()
    assert again.json()["status"] == "queued"
    assert again.headers["idempotent-replayed"] == "true"
    assert len(state.executions()) == 1


def test_same_key_with_another_body_is_409(client: httpx.Client, state: SandboxState) -> None:
    headers = {"Idempotency-Key": "k-1"}
    client.post("/v1/workflows/wf_churn_scoring/execute", json={"inputs": {"day": 1}}, headers=headers)
    conflict = client.post("/v1/workflows/wf_churn_scoring/execute", json={"inputs": {"day": 2}}, headers=headers)
    assert conflict.status_code == 409
    assert conflict.json()["error"]["type"] == "conflict"
    other_path = client.post("/v1/workflows/wf_revenue_rollup/execute", json={"inputs": {"day": 1}}, headers=headers)
    assert other_path.status_code == 409
    assert len(state.executions()) == 1


def test_keys_are_scoped_by_workspace_and_expire(client: httpx.Client, state: SandboxState) -> None:
    body = {"name": "shared", "configuration": {}}
    headers = {"Idempotency-Key": "same"}
    first = client.post("/v1/workflows", json=body, headers=headers).json()
    other = client.post("/v1/workflows", json=body, headers={**headers, "X-Workspace-Id": "ws_marketing"}).json()
    assert first["id"] != other["id"]
    state.advance(24 * 3600 + 1)
    assert client.post("/v1/workflows", json=body, headers=headers).json()["id"] != first["id"]


def test_failed_request_does_not_burn_the_key(client: httpx.Client) -> None:
    headers = {"Idempotency-Key": "retry-me"}
    assert client.post("/v1/workflows", json={"name": "x"}, headers=headers).status_code == 422
    assert client.post("/v1/workflows", json={"name": "x"}, headers=headers).status_code == 422


@pytest.mark.parametrize("key", ["", "x" * 256, "caf\u00e9", "tab\there"])
def test_invalid_key_is_400(client: httpx.Client, state: SandboxState, key: str) -> None:
    response = client.post(
        "/v1/workflows/wf_churn_scoring/execute", json={}, headers=[(b"Idempotency-Key", key.encode("utf-8"))]
    )
    assert response.status_code == 400
    assert "Idempotency-Key" in response.json()["error"]["details"]["fields"]
    assert state.executions() == []


def test_post_without_key_creates_each_time(client: httpx.Client, state: SandboxState) -> None:
    client.post("/v1/workflows/wf_churn_scoring/execute")
    client.post("/v1/workflows/wf_churn_scoring/execute")
    assert len(state.executions()) == 2


def test_workflows_page_through_with_cursor(client: httpx.Client) -> None:
    first = client.get("/v1/workflows").json()
    assert len(first["data"]) == 20
    second = client.get("/v1/workflows", params={"cursor": first["next_cursor"]}).json()
    assert second["next_cursor"] is None
    ids = [w["id"] for w in first["data"] + second["data"]]
    assert len(ids) == len(set(ids)) >= 25
    assert {"wf_nightly_enrichment", "wf_churn_scoring"} <= set(ids)


def test_chart_data_pages(client: httpx.Client) -> None:
    pages, cursor = [], None
    while True:
        params = {"limit": "100", **({"cursor": cursor} if cursor else {})}
        page = client.get("/v1/charts/ch_revenue/data", params=params).json()
        pages.append(page)
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert [len(page["data"]) for page in pages] == [100, 100, 50]
    assert pages[0]["columns"] == [{"name": "day", "type": "date"}, {"name": "revenue", "type": "number"}]
    assert pages[0]["chart_id"] == "ch_revenue"
    assert pages[0]["data"][0][0] == "2026-01-01"
    assert isinstance(pages[2]["data"][-1][1], float)
    again = client.get("/v1/charts/ch_revenue/data", params={"limit": "100"}).json()
    assert again["data"] == pages[0]["data"]


def test_other_lists_ignore_paging(client: httpx.Client) -> None:
    for path in ("/v1/charts", "/v1/data-sources", "/v1/reports"):
        body = client.get(path, params={"limit": "1", "cursor": "whatever"}).json()
        assert set(body) == {"data"}


@pytest.mark.parametrize("mutate", ["garbage", "tamper", "other_list"])
def test_bad_cursor_is_400(client: httpx.Client, mutate: str) -> None:
    cursor = client.get("/v1/workflows", params={"limit": "2"}).json()["next_cursor"]
    if mutate == "garbage":
        cursor = "c_2"
    elif mutate == "tamper":
        payload, _, signature = cursor.partition(".")
        cursor = payload[:-1] + ("A" if payload[-1] != "A" else "B") + "." + signature
    else:
        cursor = client.get("/v1/dashboards", params={"limit": "1"}).json()["next_cursor"]
    response = client.get("/v1/workflows", params={"cursor": cursor})
    assert response.status_code == 400
    assert response.json()["error"]["details"]["fields"] == {"cursor": "is unknown or expired"}
