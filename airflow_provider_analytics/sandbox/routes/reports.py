"""``/v1/reports``: generate, list and read reports, and download their files."""

from __future__ import annotations

from fastapi import APIRouter
from starlette.requests import Request
from starlette.responses import JSONResponse, StreamingResponse

from airflow_provider_analytics.sandbox.domain import lifecycle, report_generation
from airflow_provider_analytics.sandbox.domain.api_error import ApiError
from airflow_provider_analytics.sandbox.domain.records import ReportRecord, new_id
from airflow_provider_analytics.sandbox.domain.store import SandboxState
from airflow_provider_analytics.sandbox.routes.downloads import download_response
from airflow_provider_analytics.sandbox.routes.schemas import GenerateReportBody
from airflow_provider_analytics.sandbox.routes.support import json_response, read_json, workspace_of


def build_router(state: SandboxState) -> APIRouter:
    """Routes for reports.

    :param state: the sandbox state.
    """
    router = APIRouter(prefix="/v1/reports")

    def find(request: Request, report_id: str) -> ReportRecord:
        report = workspace_of(state, request).reports.get(report_id)
        if report is None:
            raise ApiError.not_found("report", report_id)
        return report

    @router.get("")
    async def list_reports(request: Request) -> JSONResponse:
        with state.lock:
            workspace = workspace_of(state, request)
            return json_response({"data": state.reports(workspace.id)})

    @router.post("")
    async def generate_report(request: Request) -> JSONResponse:
        body = await read_json(request, GenerateReportBody)
        parameters = body.parameters or {}
        report_generation.generated_rows(body.format, parameters)
        with state.lock:
            workspace = workspace_of(state, request)
            missing = report_generation.missing_dashboards(workspace, body.dashboard_ids)
            if missing:
                raise ApiError.invalid_fields(missing)
            now = state.now()
            report = ReportRecord(
                id=new_id("rp"),
                name=body.name or report_generation.default_report_name(workspace, body.dashboard_ids),
                dashboard_ids=list(body.dashboard_ids),
                format=body.format,
                parameters=parameters,
                created_at=now,
                outcome=state.new_report_outcome(),
                duration=state.chaos.work_seconds(),
            )
            if report.outcome == "failed":
                report.error = {"type": "render_failed", "message": f"rendering {report.format} report failed"}
            workspace.reports[report.id] = report
            content_snapshot = report_generation.snapshot(state, workspace, report)
        report_generation.start_rendering(state, report, content_snapshot)
        with state.lock:
            return json_response(lifecycle.report_view(report, state.timings, now), status=202)

    @router.get("/{report_id}")
    async def get_report(report_id: str, request: Request) -> JSONResponse:
        with state.lock:
            return json_response(lifecycle.report_view(find(request, report_id), state.timings, state.now()))

    @router.post("/{report_id}/cancel")
    async def cancel_report(report_id: str, request: Request) -> JSONResponse:
        with state.lock:
            report = find(request, report_id)
            now = state.now()
            status = lifecycle.report_status(report, state.timings, now)
            if status in lifecycle.REPORT_FINISHED:
                raise ApiError(409, f"report {report_id} already finished ({status})", {"status": status})
            report.cancelled_at = now
            return json_response(lifecycle.report_view(report, state.timings, now), status=202)

    @router.get("/{report_id}/download")
    async def download_report(report_id: str, request: Request) -> StreamingResponse:
        with state.lock:
            report = find(request, report_id)
            status = lifecycle.report_status(report, state.timings, state.now())
            content, sha256 = report.content, report.sha256
        if status == "expired":
            raise ApiError(410, f"report {report_id} has expired; generate it again")
        if status != "ready" or content is None or sha256 is None:
            raise ApiError(409, f"report {report_id} is not ready (status {status})", {"status": status})
        return download_response(
            content,
            sha256,
            lifecycle.REPORT_CONTENT_TYPES[report.format],
            report.name,
            report.format,
            request.headers.get("range"),
            request.headers.get("if-range"),
        )

    return router
