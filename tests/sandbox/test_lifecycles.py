"""Clock-driven state machines (executions, reports, syncs) and the resources around them."""

from __future__ import annotations

from datetime import datetime

import httpx
import pytest

from airflow_provider_analytics.sandbox.config import SandboxConfig, Timings
from airflow_provider_analytics.sandbox.domain.store import SandboxState


def parse_time(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


def test_execution_runs_and_succeeds(slow: tuple[httpx.Client, SandboxState]) -> None:
    client, state = slow
    created = client.post("/v1/workflows/wf_churn_scoring/execute", json={"inputs": {"day": "2026-11-20"}})
    assert created.status_code == 202
    execution = created.json()
    assert (execution["status"], execution["started_at"], execution["finished_at"]) == ("queued", None, None)
    url = f"/v1/workflows/wf_churn_scoring/executions/{execution['id']}"
    state.advance(15)
    running = client.get(url).json()
    assert running["status"] == "running"
    assert running["started_at"] is not None
    state.advance(10)
    done = client.get(url).json()
    assert done["status"] == "succeeded"
    assert done["error"] is None
    assert done["outputs"]["inputs"] == {"day": "2026-11-20"}
    assert done["outputs"]["rows_processed"] > 0
    assert parse_time(done["finished_at"]) > parse_time(done["started_at"]) > parse_time(done["created_at"])


def test_execution_outcome_control_and_failing_seed(client: httpx.Client, state: SandboxState) -> None:
    state.set_execution_outcome("wf_churn_scoring", "failed", error="model drift too high")
    failing = client.post("/v1/workflows/wf_churn_scoring/execute").json()
    always_failing = client.post("/v1/workflows/wf_legacy_export/execute").json()
    state.advance(5)
    failed = client.get(f"/v1/workflows/wf_churn_scoring/executions/{failing['id']}").json()
    assert failed["status"] == "failed"
    assert failed["outputs"] is None
    assert failed["error"] == {"type": "step_failed", "message": "model drift too high"}
    seeded = client.get(f"/v1/workflows/wf_legacy_export/executions/{always_failing['id']}").json()
    assert seeded["status"] == "failed"
    assert seeded["error"]["type"] == "step_failed"


def test_cancel_then_cancel_again_is_409(slow: tuple[httpx.Client, SandboxState]) -> None:
    client, state = slow
    execution = client.post("/v1/workflows/wf_churn_scoring/execute").json()
    url = f"/v1/workflows/wf_churn_scoring/executions/{execution['id']}"
    cancelled = client.post(f"{url}/cancel")
    assert cancelled.status_code == 202
    assert cancelled.json()["status"] == "cancelled"
    assert cancelled.json()["finished_at"] is not None
    state.advance(30)
    assert client.get(url).json()["status"] == "cancelled"
    again = client.post(f"{url}/cancel")
    assert again.status_code == 409
    assert again.json()["error"]["type"] == "conflict"


def test_execution_under_wrong_workflow_is_404(client: httpx.Client) -> None:
    execution = client.post("/v1/workflows/wf_churn_scoring/execute").json()
    response = client.get(f"/v1/workflows/wf_revenue_rollup/executions/{execution['id']}")
    assert response.status_code == 404
    assert execution["id"] in response.json()["error"]["message"]
    assert client.post("/v1/workflows/wf_nope/execute").status_code == 404


def test_report_lifecycle_and_expiry(slow: tuple[httpx.Client, SandboxState]) -> None:
    client, state = slow
    report = client.post("/v1/reports", json={"dashboard_ids": ["db_sales"], "format": "csv"}).json()
    assert report["status"] == "pending"
    assert report["name"] == "Sales report"
    url = f"/v1/reports/{report['id']}"
    assert client.get(f"{url}/download").status_code == 409
    state.advance(15)
    assert client.get(url).json()["status"] == "generating"
    state.advance(10)
    ready = client.get(url).json()
    assert ready["status"] == "ready"
    assert ready["size_bytes"] > 0
    assert len(ready["sha256"]) == 64
    assert ready["content_type"].startswith("text/csv")
    expires_in = parse_time(ready["expires_at"]) - parse_time(ready["completed_at"])
    assert expires_in.total_seconds() == 3600
    state.advance(3600)
    assert client.get(url).json()["status"] == "expired"
    gone = client.get(f"{url}/download")
    assert gone.status_code == 410
    assert gone.json()["error"]["type"] == "gone"


def test_expire_report_control(client: httpx.Client, state: SandboxState) -> None:
    report = client.post("/v1/reports", json={"dashboard_ids": ["db_sales"], "format": "pdf"}).json()
    state.advance(1)
    state.expire_report(report["id"])
    assert client.get(f"/v1/reports/{report['id']}").json()["status"] == "expired"
    assert client.get(f"/v1/reports/{report['id']}/download").status_code == 410


def test_failed_report(client: httpx.Client, state: SandboxState) -> None:
    state.set_report_outcome("failed")
    report = client.post("/v1/reports", json={"dashboard_ids": ["db_sales"], "format": "pdf"}).json()
    state.advance(1)
    failed = client.get(f"/v1/reports/{report['id']}").json()
    assert failed["status"] == "failed"
    assert failed["error"]["type"] == "render_failed"
    assert client.get(f"/v1/reports/{report['id']}/download").status_code == 409


def test_report_input_is_checked(client: httpx.Client) -> None:
    missing = client.post("/v1/reports", json={"dashboard_ids": ["db_sales", "db_gone"], "format": "pdf"})
    assert missing.status_code == 422
    assert missing.json()["error"]["details"]["fields"] == {"dashboard_ids[1]": "dashboard db_gone not found"}
    assert client.post("/v1/reports", json={"dashboard_ids": [], "format": "pdf"}).status_code == 422
    bad_format = client.post("/v1/reports", json={"dashboard_ids": ["db_sales"], "format": "docx"})
    assert bad_format.json()["error"]["details"]["fields"] == {"format": "must be one of pdf, csv, xlsx, html"}


def test_sync_lifecycle(slow: tuple[httpx.Client, SandboxState]) -> None:
    client, state = slow
    before = client.get("/v1/data-sources/ds_warehouse/sync").json()
    assert before["status"] == "synced"
    assert (state.now() - parse_time(before["last_synced_at"])).total_seconds() == pytest.approx(86400, abs=60)
    state.start_sync("ds_warehouse")
    pending = client.get("/v1/data-sources/ds_warehouse/sync").json()
    assert pending["status"] == "pending"
    assert pending["last_synced_at"] == before["last_synced_at"]
    state.advance(15)
    assert client.get("/v1/data-sources/ds_warehouse/sync").json()["status"] == "syncing"
    state.advance(10)
    synced = client.get("/v1/data-sources/ds_warehouse/sync").json()
    assert synced["status"] == "synced"
    assert parse_time(synced["last_synced_at"]) > parse_time(synced["last_attempt_at"])
    listed = {s["id"]: s for s in client.get("/v1/data-sources").json()["data"]}
    assert listed["ds_warehouse"]["sync"] == {"status": "synced", "last_synced_at": synced["last_synced_at"]}


def test_failed_sync_keeps_last_synced_at(client: httpx.Client, state: SandboxState) -> None:
    before = client.get("/v1/data-sources/ds_events/sync").json()
    state.start_sync("ds_events", outcome="failed")
    state.advance(1)
    failed = client.get("/v1/data-sources/ds_events/sync").json()
    assert failed["status"] == "failed"
    assert failed["last_synced_at"] == before["last_synced_at"]
    assert failed["error"]["type"] == "sync_failed"
    assert parse_time(failed["last_attempt_at"]) > parse_time(before["last_synced_at"])


def test_auto_sync_starts_syncs_on_schedule() -> None:
    state = SandboxState(SandboxConfig(timings=Timings(auto_sync_interval=15, sync_pending=1, sync_running=2)))
    start = state.now()
    (source,) = [s for s in state.data_sources() if s["id"] == "ds_warehouse"]
    assert source["sync"]["status"] == "synced"
    state.advance(15.5)
    (source,) = [s for s in state.data_sources() if s["id"] == "ds_warehouse"]
    assert source["sync"]["status"] == "pending"
    state.advance(3)
    (source,) = [s for s in state.data_sources() if s["id"] == "ds_warehouse"]
    assert source["sync"]["status"] == "synced"
    assert (parse_time(source["sync"]["last_synced_at"]) - start).total_seconds() == pytest.approx(18, abs=0.5)
    state.advance(600)
    (source,) = [s for s in state.data_sources() if s["id"] == "ds_warehouse"]
    assert (state.now() - parse_time(source["sync"]["last_synced_at"])).total_seconds() < 30


def test_connect_data_source_validates_and_hides_secrets(client: httpx.Client, state: SandboxState) -> None:
    missing = client.post("/v1/data-sources", json={"name": "x", "type": "postgres", "connection": {"host": "db"}})
    assert missing.status_code == 422
    assert set(missing.json()["error"]["details"]["fields"]) == {"connection.database", "connection.user"}
    assert client.post("/v1/data-sources", json={"name": "x", "type": "oracle", "connection": {}}).status_code == 422
    connection = {"host": "db", "port": 5432, "database": "sales", "user": "svc", "password": "hunter2"}
    created = client.post("/v1/data-sources", json={"name": "sales", "type": "postgres", "connection": connection})
    assert created.status_code == 201
    body = created.json()
    assert body["connection"] == {"host": "db", "port": 5432, "database": "sales", "user": "svc"}
    assert body["sync"] == {"status": "never_synced", "last_synced_at": None}
    assert "hunter2" not in client.get("/v1/data-sources").text
    logged = state.requests[-2]
    assert logged.json["connection"] == {**connection, "password": "[redacted]"}
    assert b"hunter2" not in logged.body


def test_dashboard_versions_and_if_match(client: httpx.Client) -> None:
    created = client.post("/v1/dashboards", json={"name": "Ops", "layout": [{"chart_id": "ch_revenue"}]})
    assert created.status_code == 201
    dashboard = created.json()
    assert (dashboard["version"], created.headers["etag"]) == (1, '"1"')
    assert dashboard["layout"] == [{"chart_id": "ch_revenue", "x": 0, "y": 0, "w": 6, "h": 4}]
    url = f"/v1/dashboards/{dashboard['id']}"
    updated = client.put(url, json={"name": "Ops v2", "tags": ["ops"]}, headers={"If-Match": '"1"'})
    assert updated.status_code == 200
    assert updated.json()["version"] == 2
    assert updated.json()["layout"] == []
    assert updated.headers["etag"] == '"2"'
    stale = client.put(url, json={"name": "Ops v3"}, headers={"If-Match": '"1"'})
    assert stale.status_code == 412
    assert stale.json()["error"]["type"] == "precondition_failed"
    assert client.put(url, json={"name": "Ops v3"}).json()["version"] == 3
    bad_layout = client.put(url, json={"name": "x", "layout": [{"chart_id": "ch_gone"}]})
    assert bad_layout.status_code == 422
    assert bad_layout.json()["error"]["details"]["fields"] == {"layout[0].chart_id": "chart ch_gone not found"}
    assert client.put("/v1/dashboards/db_gone", json={"name": "x"}).status_code == 404


def test_layout_items_hold_a_title_and_settings_only_when_sent(client: httpx.Client) -> None:
    # What a real platform keeps on a tile beyond the contract's fields: a full-replacement PUT must carry it.
    tile = {"chart_id": "ch_revenue", "title": "Revenue", "settings": {"legend": "bottom"}}
    created = client.post("/v1/dashboards", json={"name": "Ops", "layout": [tile, {"chart_id": "ch_orders_by_region"}]})
    assert created.json()["layout"] == [
        {
            "chart_id": "ch_revenue",
            "x": 0,
            "y": 0,
            "w": 6,
            "h": 4,
            "title": "Revenue",
            "settings": {"legend": "bottom"},
        },
        {"chart_id": "ch_orders_by_region", "x": 0, "y": 0, "w": 6, "h": 4},
    ]
    url = f"/v1/dashboards/{created.json()['id']}"
    assert client.put(url, json={"name": "Ops", "layout": [{"chart_id": "ch_revenue"}]}).json()["layout"] == [
        {"chart_id": "ch_revenue", "x": 0, "y": 0, "w": 6, "h": 4}
    ]
    refused = client.put(url, json={"name": "Ops", "layout": [{"chart_id": "ch_revenue", "titel": "x"}]})
    assert refused.json()["error"]["details"]["fields"] == {"layout[0].titel": "is not a known field"}


def test_create_chart_and_workflow(client: httpx.Client) -> None:
    chart = client.post(
        "/v1/charts",
        json={
            "name": "Signups",
            "type": "bar",
            "data_source_id": "ds_events",
            "query": "select week, signups as n from s",
        },
    )
    assert chart.status_code == 201
    assert chart.json()["id"].startswith("ch_")
    data = client.get(f"/v1/charts/{chart.json()['id']}/data").json()
    assert data["columns"] == [{"name": "week", "type": "date"}, {"name": "n", "type": "number"}]
    workflow = client.post("/v1/workflows", json={"name": "adhoc", "configuration": {"steps": []}})
    assert workflow.status_code == 201
    assert workflow.json()["description"] == ""
