"""Each operator's OpenLineage facets after a real run against the sandbox (real sockets).

The operator runs as on a worker; then its ``get_openlineage_facets_on_*`` method is called the way the
OpenLineage listener calls it. The facets come from what the task left in XCom; the extra platform calls
lineage makes are counted in the sandbox's request log.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from airflow.providers.common.compat.sdk import Asset
from openlineage.client.serde import Serde

from airflow_provider_analytics.lineage._facets import FACET_NAME, PRODUCER, AnalyticsRunFacet
from airflow_provider_analytics.operators.charts import CreateChartOperator, GetChartDataOperator
from airflow_provider_analytics.operators.dashboards import CreateDashboardOperator, UpdateDashboardOperator
from airflow_provider_analytics.operators.data_sources import ConnectDataSourceOperator
from airflow_provider_analytics.operators.errors import RemoteJobFailed
from airflow_provider_analytics.operators.reports import DownloadReportOperator, GenerateReportOperator
from airflow_provider_analytics.operators.workflows import CreateWorkflowOperator, ExecuteWorkflowOperator
from airflow_provider_analytics.sandbox.server import SandboxServer
from tests.lineage.conftest import RecordingTaskInstance, names, run_task
from tests.support.context import make_context

FAST: dict[str, Any] = {"poll_interval": 0.1, "deferrable": False}


class OutletEvents:
    """Airflow's ``outlet_events`` accessor, by asset URI (Airflow 3.1.8's ``Asset`` cannot be hashed)."""

    def __init__(self) -> None:
        self.by_uri: dict[str, SimpleNamespace] = {}

    def __getitem__(self, asset: Any) -> SimpleNamespace:
        return self.by_uri.setdefault(asset.uri, SimpleNamespace(extra={}))


def facet(lineage: Any) -> AnalyticsRunFacet:
    found = lineage.run_facets[FACET_NAME]
    assert isinstance(found, AnalyticsRunFacet)
    assert Serde.to_dict(found)["_producer"] == PRODUCER  # as the facet goes out in the OpenLineage event
    return found


def lineage_requests(sandbox: SandboxServer, before: int) -> list[tuple[str, str]]:
    return [(entry.method, entry.path) for entry in sandbox.state.requests[before:]]


def test_connect_data_source_reports_the_new_source(sandbox: SandboxServer, platform: str) -> None:
    operator = ConnectDataSourceOperator(
        task_id="source",
        name="orders",
        type="postgres",
        connection={"host": "db", "database": "orders", "user": "svc", "password": "s3cr3t!"},
    )
    ti = run_task(operator)
    source_id = ti.xcom["return_value"]["id"]
    before = len(sandbox.state.requests)
    lineage = operator.get_openlineage_facets_on_complete(ti)
    assert lineage_requests(sandbox, before) == []
    assert (names(lineage.inputs), names(lineage.outputs)) == ([], [(platform, f"data_source/{source_id}")])
    run = facet(lineage)
    assert (run.platform, run.operation, run.ids, run.details) == (
        platform,
        "connect_data_source",
        {"data_source_id": source_id},
        {"type": "postgres"},
    )
    assert "s3cr3t" not in repr(lineage)


def test_create_chart_reads_its_data_source_and_writes_the_chart(sandbox: SandboxServer, platform: str) -> None:
    operator = CreateChartOperator(
        task_id="chart", name="Orders", type="line", data_source_id="ds_warehouse", query="select 1"
    )
    ti = run_task(operator)
    chart_id = ti.xcom["return_value"]["id"]
    lineage = operator.get_openlineage_facets_on_complete(ti)
    assert names(lineage.inputs) == [(platform, "data_source/ds_warehouse")]
    assert names(lineage.outputs) == [(platform, f"chart/{chart_id}")]
    assert facet(lineage).ids == {"chart_id": chart_id, "data_source_id": "ds_warehouse"}


def test_chart_data_to_a_file_reads_chart_and_source_with_one_extra_call(
    sandbox: SandboxServer, platform: str, tmp_path: Path
) -> None:
    target = tmp_path / "rows.csv"
    operator = GetChartDataOperator(task_id="rows", chart_id="ch_top_customers", destination=str(target))
    ti = run_task(operator)
    before = len(sandbox.state.requests)
    lineage = operator.get_openlineage_facets_on_complete(ti)
    assert lineage_requests(sandbox, before) == [("GET", "/v1/charts")]
    assert names(lineage.inputs) == [(platform, "data_source/ds_crm"), (platform, "chart/ch_top_customers")]
    assert names(lineage.outputs) == [("file", str(target))]
    run = facet(lineage)
    assert run.ids == {"chart_id": "ch_top_customers", "data_source_id": "ds_crm"}
    assert run.details == {"rows": ti.xcom["return_value"]["rows"], "format": "csv"}
    assert run.gaps == []


def test_dashboards_read_their_layout_charts_and_write_the_dashboard(sandbox: SandboxServer, platform: str) -> None:
    layout = [{"chart_id": "ch_revenue", "x": 0, "y": 0, "w": 6, "h": 4}]
    layout.append({"chart_id": "ch_active_users", "x": 6, "y": 0, "w": 6, "h": 4})
    create = CreateDashboardOperator(task_id="dashboard", name="Mixed", layout=layout)
    ti = run_task(create)
    created = ti.xcom["return_value"]
    lineage = create.get_openlineage_facets_on_complete(ti)
    assert names(lineage.inputs) == [(platform, "chart/ch_revenue"), (platform, "chart/ch_active_users")]
    assert names(lineage.outputs) == [(platform, f"dashboard/{created['id']}")]
    assert (facet(lineage).ids, facet(lineage).details) == ({"dashboard_id": created["id"]}, {"version": 1})

    update = UpdateDashboardOperator(
        task_id="update", dashboard_id=created["id"], name="Mixed", layout=layout[:1], if_match=1
    )
    ti = run_task(update)
    lineage = update.get_openlineage_facets_on_complete(ti)
    assert names(lineage.inputs) == [(platform, "chart/ch_revenue")]
    assert names(lineage.outputs) == [(platform, f"dashboard/{created['id']}")]
    assert facet(lineage).details == {"version": 2}


def test_create_workflow_writes_the_workflow(sandbox: SandboxServer, platform: str) -> None:
    operator = CreateWorkflowOperator(task_id="workflow", name="rollup", configuration={"steps": []})
    ti = run_task(operator)
    workflow_id = ti.xcom["return_value"]["id"]
    lineage = operator.get_openlineage_facets_on_complete(ti)
    assert (names(lineage.inputs), names(lineage.outputs)) == ([], [(platform, f"workflow/{workflow_id}")])
    assert facet(lineage).ids == {"workflow_id": workflow_id}


def test_execute_workflow_reports_the_execution_without_extra_calls(sandbox: SandboxServer, platform: str) -> None:
    operator = ExecuteWorkflowOperator(
        task_id="enrich", workflow_id="wf_nightly_enrichment", inputs={"day": "2026-11-20"}, **FAST
    )
    ti = run_task(operator)
    execution = ti.xcom["return_value"]
    before = len(sandbox.state.requests)
    lineage = operator.get_openlineage_facets_on_complete(ti)
    assert lineage_requests(sandbox, before) == []
    assert names(lineage.inputs) == [(platform, "workflow/wf_nightly_enrichment")]
    assert lineage.outputs == []
    run = facet(lineage)
    assert run.ids == {"workflow_id": "wf_nightly_enrichment", "execution_id": execution["id"]}
    assert run.status == "succeeded"
    assert run.details == {"inputs": {"day": "2026-11-20"}, "outputs": execution["outputs"]}


def test_a_failed_execution_reports_its_status_and_error_with_one_call(sandbox: SandboxServer, platform: str) -> None:
    operator = ExecuteWorkflowOperator(task_id="export", workflow_id="wf_legacy_export", **FAST)
    ti = RecordingTaskInstance()
    ti.task_id = "export"
    with pytest.raises(RemoteJobFailed):
        operator.execute(make_context(ti=ti, task_state_store=None))
    before = len(sandbox.state.requests)
    lineage = operator.get_openlineage_facets_on_failure(ti)
    execution_id = ti.xcom["execution_id"]  # pushed by the task; lineage kept the id in memory
    assert lineage_requests(sandbox, before) == [("GET", f"/v1/workflows/wf_legacy_export/executions/{execution_id}")]
    run = facet(lineage)
    assert (run.status, run.ids["execution_id"]) == ("failed", execution_id)
    assert run.details["error"]["type"] == "step_failed"
    assert names(lineage.inputs) == [(platform, "workflow/wf_legacy_export")]


def test_generate_then_download_a_report(sandbox: SandboxServer, platform: str, tmp_path: Path) -> None:
    generate = GenerateReportOperator(
        task_id="generate", dashboard_ids=["db_sales", "db_product"], format="csv", **FAST
    )
    ti = run_task(generate)
    report = ti.xcom["return_value"]
    lineage = generate.get_openlineage_facets_on_complete(ti)
    assert names(lineage.inputs) == [(platform, "dashboard/db_sales"), (platform, "dashboard/db_product")]
    assert names(lineage.outputs) == [(platform, f"report/{report['id']}")]
    run = facet(lineage)
    assert (run.ids, run.status, run.details) == ({"report_id": report["id"]}, "ready", {"format": "csv"})

    target = tmp_path / "sales.csv"
    file_asset = Asset(uri=f"file://{target}")
    download = DownloadReportOperator(
        task_id="download", report_id=report["id"], destination=str(target), outlets=[file_asset], **FAST
    )
    events = OutletEvents()
    ti = run_task(download, outlet_events=events)
    before = len(sandbox.state.requests)
    lineage = download.get_openlineage_facets_on_complete(ti)
    assert lineage_requests(sandbox, before) == []
    assert names(lineage.inputs) == [(platform, f"report/{report['id']}")]
    # The declared file asset and the file the task wrote are one dataset, reported once.
    assert names(lineage.outputs) == [("file", str(target))]
    assert facet(lineage).ids == {"report_id": report["id"]}
    assert events[file_asset].extra["sha256"] == ti.xcom["download"]["sha256"], "the file asset event is unchanged"


def test_declared_analytics_assets_join_what_the_platform_says(sandbox: SandboxServer, platform: str) -> None:
    host = platform.removeprefix("analytics://")
    refreshed = Asset(f"analytics://{host.upper()}/data_source/ds_warehouse")
    operator = ExecuteWorkflowOperator(
        task_id="refresh", workflow_id="wf_nightly_enrichment", outlets=[refreshed], **FAST
    )
    ti = run_task(operator)
    lineage = operator.get_openlineage_facets_on_complete(ti)
    assert names(lineage.outputs) == [(platform, "data_source/ds_warehouse")]
    assert names(lineage.inputs) == [(platform, "workflow/wf_nightly_enrichment")]
