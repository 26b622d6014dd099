"""Authentication, workspaces, the error shape, standard headers, limits and the admin surface."""

from __future__ import annotations

import re
from typing import Any

import httpx
import pytest

from airflow_provider_analytics.sandbox.config import SandboxConfig, Timings
from airflow_provider_analytics.sandbox.domain.store import SandboxState
from airflow_provider_analytics.sandbox.server import SandboxServer

REQUEST_ID = re.compile(r"^req_[0-9a-f]+$")


def assert_contract_error(response: httpx.Response, status: int, error_type: str) -> dict[str, Any]:
    assert response.status_code == status
    assert response.headers["content-type"] == "application/json"
    error: dict[str, Any] = response.json()["error"]
    assert set(error) == {"type", "message", "request_id", "details"}
    assert error["type"] == error_type
    assert REQUEST_ID.match(error["request_id"])
    assert error["request_id"] == response.headers["x-request-id"]
    return error


@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"Authorization": "Bearer nope"},
        {"Authorization": "Basic c2FuZGJveC10b2tlbjo="},
        {"Authorization": "Bearer"},
    ],
)
def test_missing_or_bad_token_is_401(analytics_sandbox: SandboxServer, headers: dict[str, str]) -> None:
    response = httpx.get(f"{analytics_sandbox.base_url}/v1/workflows", headers=headers)
    error = assert_contract_error(response, 401, "unauthenticated")
    assert "nope" not in error["message"]
    assert response.headers["www-authenticate"].startswith("Bearer")


def test_limited_token_cannot_select_other_workspace(analytics_sandbox: SandboxServer) -> None:
    url = f"{analytics_sandbox.base_url}/v1/dashboards"
    limited = {"Authorization": "Bearer sandbox-token-limited"}
    assert httpx.get(url, headers=limited).status_code == 200
    response = httpx.get(url, headers={**limited, "X-Workspace-Id": "ws_marketing"})
    assert_contract_error(response, 403, "forbidden")


def test_workspaces_hold_separate_data(client: httpx.Client) -> None:
    default_ids = {d["id"] for d in client.get("/v1/dashboards").json()["data"]}
    marketing = client.get("/v1/dashboards", headers={"X-Workspace-Id": "ws_marketing"}).json()["data"]
    assert {"db_sales", "db_marketing"} <= default_ids
    assert [d["id"] for d in marketing] == ["db_campaigns"]
    response = client.get("/v1/charts/ch_revenue/data", headers={"X-Workspace-Id": "ws_marketing"})
    assert_contract_error(response, 404, "not_found")


def test_every_answer_has_request_id_and_rate_limit_headers(client: httpx.Client) -> None:
    for response in (client.get("/v1/charts"), client.get("/v1/nowhere"), client.post("/v1/charts", json={})):
        assert REQUEST_ID.match(response.headers["x-request-id"])
        assert response.headers["x-ratelimit-limit"] == "6000"
        assert int(response.headers["x-ratelimit-remaining"]) < 6000
        assert int(response.headers["x-ratelimit-reset"]) > 1_700_000_000


def test_unknown_route_method_and_id_use_the_contract_body(client: httpx.Client) -> None:
    assert_contract_error(client.get("/v1/nowhere"), 404, "not_found")
    assert_contract_error(client.delete("/v1/charts"), 405, "invalid_request")
    error = assert_contract_error(client.get("/v1/workflows/wf_9/executions/ex_1"), 404, "not_found")
    assert "wf_9" in error["message"]


def test_body_problems_name_the_fields(client: httpx.Client) -> None:
    bad_type = {"name": "x", "type": "donut", "data_source_id": "ds_warehouse", "query": "select 1", "colour": 1}
    error = assert_contract_error(client.post("/v1/charts", json=bad_type), 422, "invalid_request")
    assert error["details"]["fields"]["type"] == "must be one of line, bar, area, pie, table, number, scatter"
    assert error["details"]["fields"]["colour"] == "is not a known field"

    missing = client.post("/v1/workflows", json={"name": "x"})
    assert assert_contract_error(missing, 422, "invalid_request")["details"]["fields"] == {
        "configuration": "is required"
    }
    wrong_type = client.post("/v1/workflows", json={"name": 5, "configuration": {}})
    assert "name" in assert_contract_error(wrong_type, 422, "invalid_request")["details"]["fields"]

    unknown_source = {"name": "x", "type": "bar", "data_source_id": "ds_gone", "query": "select 1"}
    error = assert_contract_error(client.post("/v1/charts", json=unknown_source), 422, "invalid_request")
    assert error["details"]["fields"]["data_source_id"] == "data source ds_gone not found"


def test_malformed_json_and_bad_query_are_400(client: httpx.Client) -> None:
    malformed = client.post("/v1/workflows", content=b"{nope", headers={"Content-Type": "application/json"})
    assert_contract_error(malformed, 400, "invalid_request")
    not_json = client.post("/v1/workflows", content=b"{}", headers={"Content-Type": "text/plain"})
    assert_contract_error(not_json, 415, "invalid_request")
    for limit in ("0", "101", "ten"):
        response = client.get("/v1/workflows", params={"limit": limit})
        assert assert_contract_error(response, 400, "invalid_request")["details"]["fields"].keys() == {"limit"}


def test_oversized_body_is_413(client: httpx.Client) -> None:
    big = b'{"name": "' + b"x" * (1024 * 1024) + b'", "configuration": {}}'
    response = client.post("/v1/workflows", content=big, headers={"Content-Type": "application/json"})
    assert_contract_error(response, 413, "payload_too_large")


def test_rate_limit_answers_429_with_retry_after() -> None:
    config = SandboxConfig(timings=Timings.fast(), rate_limit_per_minute=3)
    with SandboxServer(config=config) as server:
        headers = {"Authorization": f"Bearer {server.token}"}
        remaining = [httpx.get(f"{server.base_url}/v1/charts", headers=headers).headers for _ in range(3)]
        assert [h["x-ratelimit-remaining"] for h in remaining] == ["2", "1", "0"]
        response = httpx.get(f"{server.base_url}/v1/charts", headers=headers)
        assert_contract_error(response, 429, "rate_limited")
        assert 1 <= int(response.headers["retry-after"]) <= 60
        server.state.advance(60)
        assert httpx.get(f"{server.base_url}/v1/charts", headers=headers).status_code == 200


def test_deprecation_headers(client: httpx.Client, state: SandboxState) -> None:
    state.deprecate("/v1/charts")
    deprecated = client.get("/v1/charts")
    assert deprecated.headers["deprecation"] == "@1767225600"
    assert deprecated.headers["sunset"] == "Wed, 01 Jul 2027 00:00:00 GMT"
    assert "deprecation" not in client.get("/v1/workflows").headers


def test_request_log_records_what_was_received(client: httpx.Client, state: SandboxState) -> None:
    client.post("/v1/workflows", json={"name": "x", "configuration": {}}, headers={"User-Agent": "probe/1"})
    client.get("/v1/workflows", params={"limit": "5"})
    first, second = state.requests
    assert (first.method, first.path, first.status) == ("POST", "/v1/workflows", 201)
    assert first.json == {"name": "x", "configuration": {}}
    assert first.headers["user-agent"] == "probe/1"
    assert first.headers["authorization"] == "Bearer [redacted]"
    assert (second.query, second.status) == ({"limit": "5"}, 200)
    state.reset()
    assert state.requests == []


def test_admin_endpoints(analytics_sandbox: SandboxServer, client: httpx.Client, admin: httpx.Client) -> None:
    # Long enough that the execution cannot finish by itself between these calls on a loaded machine.
    analytics_sandbox.state.set_timings(Timings(execution_queued=1, execution_running=2))
    assert admin.get("/_sandbox/health").json()["ok"] is True
    client.post("/v1/workflows/wf_churn_scoring/execute", json={})
    assert len(admin.get("/_sandbox/requests").json()["data"]) == 1
    assert admin.get("/_sandbox/executions").json()["data"][0]["status"] in ("queued", "running")
    assert admin.post("/_sandbox/clock/advance", json={"seconds": 5}).status_code == 200
    assert admin.get("/_sandbox/executions").json()["data"][0]["status"] == "succeeded"
    sync = admin.post("/_sandbox/data-sources/ds_warehouse/sync", json={"outcome": "failed"}).json()
    assert sync["status"] == "pending"
    fault = {"kind": "status", "code": 503, "path": "/v1/charts"}
    assert admin.post("/_sandbox/faults", json=fault).status_code == 201
    assert client.get("/v1/charts").status_code == 503
    assert admin.post("/_sandbox/faults", json={"kind": "status", "code": 200}).status_code == 422
    assert admin.post("/_sandbox/reset").status_code == 200
    assert admin.get("/_sandbox/executions").json()["data"] == []


def test_ui_pages_resolve(analytics_sandbox: SandboxServer, client: httpx.Client) -> None:
    execution = client.post("/v1/workflows/wf_churn_scoring/execute", json={}).json()
    base = f"{analytics_sandbox.base_url}/ui"
    page = httpx.get(f"{base}/workflows/wf_churn_scoring/executions/{execution['id']}")
    assert page.status_code == 200
    assert execution["id"] in page.text
    assert "text/html" in page.headers["content-type"]
    assert httpx.get(f"{base}/dashboards/db_campaigns").status_code == 200
    assert httpx.get(f"{base}/reports/rp_missing").status_code == 404
    assert httpx.get(base).status_code == 200
