"""Every endpoint, through both transports, against the sandbox over real sockets."""

from __future__ import annotations

from typing import Any

import pytest

from airflow_provider_analytics import __version__
from airflow_provider_analytics.sandbox.config import Timings
from airflow_provider_analytics.sandbox.server import SandboxServer
from airflow_provider_analytics.wire import _endpoints as endpoints
from airflow_provider_analytics.wire._contract import EXECUTION_TERMINAL, ExecutionStatus, ReportStatus
from airflow_provider_analytics.wire._models import LayoutItem
from airflow_provider_analytics.wire.errors import ConflictError, PreconditionFailedError
from tests.support.fixtures import Api, ApiFactory


def _first_id(api: Api, call: Any) -> str:
    items = api.call(call)
    assert items, "the sandbox seed should not be empty"
    return str(items[0]["id"])


def test_every_request_carries_auth_user_agent_and_request_ids(api: Api, sandbox: SandboxServer) -> None:
    api.call(endpoints.list_charts())
    recorded = sandbox.state.requests[-1]
    # The sandbox logs the scheme only (as a real platform's logs would); a 200 proves the token was right.
    assert recorded.headers["authorization"] == "Bearer [redacted]"
    assert recorded.status == 200
    assert recorded.headers["user-agent"] == f"airflow-provider-analytics/{__version__}"
    assert "x-workspace-id" not in recorded.headers


def test_workspace_header_selects_another_workspace(api_factory: ApiFactory, sandbox: SandboxServer) -> None:
    api = api_factory(workspace_id="ws_marketing")
    default_charts = {chart["id"] for chart in api_factory().call(endpoints.list_charts())}
    marketing_charts = {chart["id"] for chart in api.call(endpoints.list_charts())}
    assert sandbox.state.requests[-1].headers["x-workspace-id"] == "ws_marketing"
    assert default_charts != marketing_charts


def test_charts_list_create_and_data(api: Api, sandbox: SandboxServer) -> None:
    data_source_id = _first_id(api, endpoints.list_data_sources())
    chart = api.call(endpoints.create_chart("Orders", "bar", data_source_id, "select day, orders from sales"))
    assert chart["id"].startswith("ch_")
    assert chart["type"] == "bar"
    assert chart["id"] in {item["id"] for item in api.call(endpoints.list_charts())}
    pages = api.pages(endpoints.chart_data(chart["id"], page_size=100))
    assert len(pages) >= 2, "the sandbox serves more rows than one page"
    assert [column["name"] for column in pages[0].body["columns"]] == ["day", "orders"]
    rows = [row for page in pages for row in page.items]
    assert all(len(row) == 2 for row in rows)
    limits = [r.query.get("limit") for r in sandbox.state.requests if r.path.endswith("/data")]
    assert limits == ["100"] * len(pages)


def test_create_sends_an_idempotency_key_on_every_post(api: Api, sandbox: SandboxServer) -> None:
    api.call(endpoints.create_workflow("wf-a", {"steps": []}))
    api.call(endpoints.create_workflow("wf-b", {"steps": []}, idempotency_key="fixed-key-1"))
    keys = [r.headers.get("idempotency-key") for r in sandbox.state.requests if r.method == "POST"]
    assert keys[0]
    assert keys[0].startswith("apa-")
    assert keys[1] == "fixed-key-1"


def test_workflows_create_execute_and_follow_to_the_end(api: Api, sandbox: SandboxServer) -> None:
    workflow = api.call(endpoints.create_workflow("enrich", {"steps": [{"name": "load"}]}, description="demo"))
    assert workflow["description"] == "demo"
    execution = api.call(endpoints.execute_workflow(workflow["id"], {"day": "2026-11-20"}))
    assert execution["status"] == ExecutionStatus.QUEUED
    assert sandbox.state.requests[-1].json == {"inputs": {"day": "2026-11-20"}}
    sandbox.state.advance(60)
    final = api.call(endpoints.get_execution(workflow["id"], execution["id"]))
    assert final["status"] in EXECUTION_TERMINAL
    assert final["status"] == ExecutionStatus.SUCCEEDED
    assert final["outputs"]


def test_same_idempotency_key_starts_one_execution(api: Api, sandbox: SandboxServer) -> None:
    workflow_id = api.items(endpoints.list_workflows(), limit=1)[0]["id"]
    first = api.call(endpoints.execute_workflow(workflow_id, {"n": 1}, idempotency_key="run-2026-11-20"))
    again = api.call(endpoints.execute_workflow(workflow_id, {"n": 1}, idempotency_key="run-2026-11-20"))
    assert again["id"] == first["id"]
    assert [e["id"] for e in sandbox.state.executions() if e["workflow_id"] == workflow_id] == [first["id"]]
    with pytest.raises(ConflictError) as caught:
        api.call(endpoints.execute_workflow(workflow_id, {"n": 2}, idempotency_key="run-2026-11-20"))
    assert caught.value.status == 409


def test_cancel_execution_and_conflict_once_terminal(api: Api, sandbox: SandboxServer) -> None:
    sandbox.state.set_timings(Timings(execution_queued=5, execution_running=5))  # still running when cancelled
    workflow_id = api.items(endpoints.list_workflows(), limit=1)[0]["id"]
    execution = api.call(endpoints.execute_workflow(workflow_id))
    cancelled = api.call(endpoints.cancel_execution(workflow_id, execution["id"]))
    assert cancelled["status"] == ExecutionStatus.CANCELLED
    with pytest.raises(ConflictError):
        api.call(endpoints.cancel_execution(workflow_id, execution["id"]))


def test_data_sources_connect_and_sync_status(api: Api, sandbox: SandboxServer) -> None:
    created = api.call(
        endpoints.connect_data_source(
            "crm", "postgres", {"host": "db", "port": 5432, "database": "crm", "user": "svc", "password": "s3cret!"}
        )
    )
    assert "password" not in created["connection"]
    assert created["id"] in {source["id"] for source in api.call(endpoints.list_data_sources())}
    status = api.call(endpoints.get_sync_status(created["id"]))
    assert status["data_source_id"] == created["id"]
    assert status["status"] == "never_synced"


def test_dashboards_create_update_with_if_match(api: Api, sandbox: SandboxServer) -> None:
    chart_id = _first_id(api, endpoints.list_charts())
    layout: list[LayoutItem] = [{"chart_id": chart_id, "x": 0, "y": 0, "w": 6, "h": 4}]
    dashboard = api.call(endpoints.create_dashboard("Ops", "ops view", ["ops"], layout))
    assert dashboard["version"] == 1
    updated = api.call(endpoints.update_dashboard(dashboard["id"], "Ops v2", tags=["ops"], layout=layout, if_match=1))
    assert updated["version"] == 2
    assert sandbox.state.requests[-1].headers["if-match"] == '"1"'
    with pytest.raises(PreconditionFailedError):
        api.call(endpoints.update_dashboard(dashboard["id"], "stale write", if_match=1))
    listed = {item["id"]: item for item in api.items(endpoints.list_dashboards())}
    assert listed[dashboard["id"]]["name"] == "Ops v2"


def test_reports_generate_get_and_list(api: Api, sandbox: SandboxServer) -> None:
    dashboard_id = api.items(endpoints.list_dashboards(), limit=1)[0]["id"]
    report = api.call(endpoints.generate_report([dashboard_id], "csv", name="Weekly", parameters={"week": 47}))
    assert report["status"] == ReportStatus.PENDING
    sandbox.state.advance(60)
    ready = api.call(endpoints.get_report(report["id"]))
    assert ready["status"] == ReportStatus.READY
    assert ready["size_bytes"] > 0
    assert report["id"] in {item["id"] for item in api.call(endpoints.list_reports())}
