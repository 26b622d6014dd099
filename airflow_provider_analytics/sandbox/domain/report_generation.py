"""Report generation: snapshot the dashboards when a report is requested, then render its file.

Small reports are rendered right away; large generated CSVs (load tests) render on a worker thread.
Either way a report only reads ``ready`` once its timed phases have passed *and* its file exists.
"""

from __future__ import annotations

import hashlib
import logging
import threading
from typing import Any

from airflow_provider_analytics.sandbox.domain.api_error import ApiError
from airflow_provider_analytics.sandbox.domain.chart_data import chart_rows, columns_for_query
from airflow_provider_analytics.sandbox.domain.clock import rfc3339
from airflow_provider_analytics.sandbox.domain.config import MAX_GENERATED_ROWS
from airflow_provider_analytics.sandbox.domain.records import ReportRecord, Workspace
from airflow_provider_analytics.sandbox.domain.report_files import (
    ChartSnapshot,
    DashboardSnapshot,
    ReportSnapshot,
    render_report,
)
from airflow_provider_analytics.sandbox.domain.store import SandboxState

INLINE_RENDER_ROWS = 50_000
logger = logging.getLogger(__name__)


def generated_rows(file_format: str, parameters: dict[str, Any]) -> int | None:
    """The ``rows`` parameter of a CSV report (synthetic data for load tests), validated.

    :param file_format: the report format (``rows`` only applies to ``csv``).
    :param parameters: the report parameters.
    """
    if file_format != "csv" or "rows" not in parameters:
        return None
    rows = parameters["rows"]
    if isinstance(rows, bool) or not isinstance(rows, int) or not 0 <= rows <= MAX_GENERATED_ROWS:
        raise ApiError.invalid_fields({"parameters.rows": f"must be an integer from 0 to {MAX_GENERATED_ROWS}"})
    return rows


def missing_dashboards(workspace: Workspace, dashboard_ids: list[str]) -> dict[str, str]:
    """Field problems for dashboard ids that do not exist.

    :param workspace: the caller's workspace.
    :param dashboard_ids: the requested dashboards.
    """
    return {
        f"dashboard_ids[{position}]": f"dashboard {dashboard_id} not found"
        for position, dashboard_id in enumerate(dashboard_ids)
        if dashboard_id not in workspace.dashboards
    }


def default_report_name(workspace: Workspace, dashboard_ids: list[str]) -> str:
    """``"<first dashboard> report"``, mentioning how many more dashboards there are.

    :param workspace: the caller's workspace.
    :param dashboard_ids: the requested (existing) dashboards.
    """
    first = workspace.dashboards[dashboard_ids[0]].name
    more = len(dashboard_ids) - 1
    return f"{first} report" if more == 0 else f"{first} and {more} more report"


def snapshot(state: SandboxState, workspace: Workspace, report: ReportRecord) -> ReportSnapshot:
    """The content of a report as of now (call with the state lock held).

    :param state: the sandbox state.
    :param workspace: the report's workspace.
    :param report: the new report.
    """
    dashboards = []
    for dashboard_id in report.dashboard_ids:
        dashboard = workspace.dashboards[dashboard_id]
        charts = []
        for chart_id in dashboard.chart_ids:
            chart = workspace.charts.get(chart_id)
            if chart is None:
                continue
            columns = columns_for_query(chart.query)
            rows = chart_rows(chart.id, columns, 0, state.config.chart_rows)
            charts.append(ChartSnapshot(chart.name, chart.type, columns, rows))
        dashboards.append(DashboardSnapshot(dashboard.name, charts))
    rows_parameter = generated_rows(report.format, report.parameters)
    return ReportSnapshot(report.name, rfc3339(report.created_at) or "", dashboards, rows_parameter)


def _render(state: SandboxState, report: ReportRecord, content_snapshot: ReportSnapshot) -> None:
    try:
        content = render_report(content_snapshot, report.format)
    except Exception:
        logger.exception("rendering report %s failed", report.id)
        with state.lock:
            report.outcome = "failed"
            report.error = {"type": "render_failed", "message": f"could not render report {report.id}"}
        return
    digest = hashlib.sha256(content).hexdigest()
    with state.lock:
        report.content, report.sha256, report.rendered_at = content, digest, state.now()


def start_rendering(state: SandboxState, report: ReportRecord, content_snapshot: ReportSnapshot) -> None:
    """Render the report's file now, or on a worker thread when it is a large generated CSV.

    :param state: the sandbox state.
    :param report: the report (its outcome decides whether anything is rendered).
    :param content_snapshot: what to render.
    """
    if report.outcome == "failed":
        return
    if (content_snapshot.generated_rows or 0) > INLINE_RENDER_ROWS:
        worker = threading.Thread(
            target=_render, args=(state, report, content_snapshot), name=f"render-{report.id}", daemon=True
        )
        worker.start()
    else:
        _render(state, report, content_snapshot)
