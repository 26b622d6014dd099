"""The create, update and read operators through real Airflow runs."""

from __future__ import annotations

import csv
import json
from pathlib import Path

from airflow_provider_analytics.sandbox.domain.config import DEFAULT_WORKSPACE
from airflow_provider_analytics.sandbox.server import SandboxServer
from tests.support.airflow_runs import RunDag


def test_create_source_chart_dashboard_and_update_it(run_dag: RunDag, sandbox: SandboxServer) -> None:
    result = run_dag("test_create_objects")
    assert set(result.states.values()) == {"success"}
    source = result.xcom("source")
    assert "password" not in source["connection"]
    chart = result.xcom("chart")
    assert chart["data_source_id"] == source["id"]
    dashboard = result.xcom("dashboard")
    assert dashboard["layout"][0]["chart_id"] == chart["id"]
    updated = result.xcom("update")
    assert updated["id"] == dashboard["id"]
    assert updated["version"] == dashboard["version"] + 1
    assert updated["name"] == "Orders (renamed)"
    put = [r for r in sandbox.state.requests if r.method == "PUT"]
    assert put[0].headers["if-match"] == f'"{dashboard["version"]}"'
    assert result.xcom("workflow")["name"] == "orders-rollup"
    posts = [r for r in sandbox.state.requests if r.method == "POST"]
    assert all(r.headers["idempotency-key"].startswith("apa-") for r in posts)


def test_a_stale_if_match_fails_instead_of_overwriting(run_dag: RunDag, sandbox: SandboxServer) -> None:
    dashboard = sandbox.state.dashboards()[0]
    result = run_dag("test_stale_update", dashboard_id=dashboard["id"], version=dashboard["version"] + 5, name="x")
    assert result.states == {"update": "failed"}
    assert sandbox.state.dashboards()[0]["name"] == dashboard["name"]


def test_dashboard_as_code_creates_once_then_updates(run_dag: RunDag, sandbox: SandboxServer) -> None:
    first = run_dag("test_dashboard_as_code", description="v1").xcom("dashboard")
    second = run_dag("test_dashboard_as_code", description="v2").xcom("dashboard")
    assert second["id"] == first["id"]
    assert second["version"] == first["version"] + 1
    assert second["description"] == "v2"
    assert [d["id"] for d in sandbox.state.dashboards() if d["name"] == "Managed"] == [first["id"]]


def test_the_apply_takes_the_plan_task_s_output_as_its_reviewed_plan(run_dag: RunDag, sandbox: SandboxServer) -> None:
    first = run_dag("test_definitions_reviewed", description="v1")
    assert first.states == {"plan": "success", "apply": "success"}
    [written] = first.xcom("apply")["applied"]["written"]
    assert (written["kind"], written["name"], written["action"]) == ("dashboard", "Reviewed", "create")
    second = run_dag("test_definitions_reviewed", description="v2")  # an update, reviewed then applied
    assert second.states == {"plan": "success", "apply": "success"}
    [updated] = second.xcom("apply")["applied"]["written"]
    assert (updated["id"], updated["action"]) == (written["id"], "update")
    assert [d["description"] for d in sandbox.state.dashboards() if d["name"] == "Reviewed"] == ["v2"]
    moved = run_dag("test_definitions_reviewed", description="v3", edited="v3, edited after the review")
    assert moved.states == {"plan": "success", "apply": "failed"}
    assert moved.tries["apply"] == 1  # ReviewedPlanMoved: no retry
    assert [d["description"] for d in sandbox.state.dashboards() if d["name"] == "Reviewed"] == ["v2"]


def test_an_export_passes_the_drift_check_of_its_own_files(
    run_dag: RunDag, sandbox: SandboxServer, tmp_path: Path
) -> None:
    result = run_dag("test_definitions_exported", folder=str(tmp_path))
    assert result.states == {"export": "success", "drift_check": "success"}
    exported = result.xcom("export")
    assert exported["counts"]["dashboards"] == len(sandbox.state.dashboards(DEFAULT_WORKSPACE))
    assert all(Path(path).parent.parent == tmp_path for path in exported["files"])
    assert result.xcom("drift_check")["plan"]["writes"] is False


def test_chart_data_to_xcom_bounded_and_to_files(run_dag: RunDag, sandbox: SandboxServer, tmp_path: Path) -> None:
    chart = sandbox.state.charts()[0]
    result = run_dag("test_chart_data", chart_id=chart["id"], folder=str(tmp_path))
    assert result.states == {
        "to_xcom": "success",
        "too_big_for_xcom": "failed",
        "to_csv": "success",
        "to_jsonl": "success",
    }
    data = result.xcom("to_xcom")
    names = [column["name"] for column in data["columns"]]
    assert len(data["rows"]) > 100, "more than one page"
    with (tmp_path / "rows.csv").open() as handle:
        table = list(csv.reader(handle))
    assert table[0] == names
    assert len(table) - 1 == len(data["rows"]) == result.xcom("to_csv")["rows"]
    lines = (tmp_path / "rows.jsonl").read_text().splitlines()
    assert json.loads(lines[0]) == dict(zip(names, data["rows"][0], strict=True))
    assert len(lines) == len(data["rows"])
    assert result.xcom("to_csv")["uri"] == str(tmp_path / "rows.csv")
