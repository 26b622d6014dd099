"""``/v1/dashboards``: list, create and update (with optimistic concurrency) dashboards."""

from __future__ import annotations

from fastapi import APIRouter
from starlette.requests import Request
from starlette.responses import JSONResponse

from airflow_provider_analytics.sandbox.domain.api_error import ApiError
from airflow_provider_analytics.sandbox.domain.pagination import paginate
from airflow_provider_analytics.sandbox.domain.records import DashboardRecord, JsonDict, Workspace, new_id
from airflow_provider_analytics.sandbox.domain.store import SandboxState
from airflow_provider_analytics.sandbox.routes.schemas import DashboardBody
from airflow_provider_analytics.sandbox.routes.support import json_response, query_of, read_json, workspace_of


def _checked_layout(workspace: Workspace, body: DashboardBody) -> list[JsonDict]:
    """The layout as stored, after checking that every chart exists (422 naming each missing one)."""
    layout = [item.stored() for item in body.layout or []]
    missing = {
        f"layout[{position}].chart_id": f"chart {item['chart_id']} not found"
        for position, item in enumerate(layout)
        if item["chart_id"] not in workspace.charts
    }
    if missing:
        raise ApiError.invalid_fields(missing)
    return layout


def if_match_allows(header: str | None, version: int) -> bool:
    """Whether an ``If-Match`` header allows updating a dashboard at ``version``.

    Accepts ``"3"``, ``W/"3"``, a bare ``3``, lists of those, and ``*``.

    :param header: the header value, if sent.
    :param version: the dashboard's current version.
    """
    if header is None or header.strip() == "*":
        return True
    for candidate in header.split(","):
        tag = candidate.strip().removeprefix("W/").strip().strip('"')
        if tag == str(version):
            return True
    return False


def build_router(state: SandboxState) -> APIRouter:
    """Routes for dashboards.

    :param state: the sandbox state.
    """
    router = APIRouter(prefix="/v1/dashboards")

    @router.get("")
    async def list_dashboards(request: Request) -> JSONResponse:
        with state.lock:
            workspace = workspace_of(state, request)
            items = list(workspace.dashboards.values())
            page, next_cursor = paginate(items, f"{workspace.id}/dashboards", query_of(request), state.cursors)
            return json_response({"data": [dashboard.as_json() for dashboard in page], "next_cursor": next_cursor})

    @router.post("")
    async def create_dashboard(request: Request) -> JSONResponse:
        body = await read_json(request, DashboardBody)
        with state.lock:
            workspace = workspace_of(state, request)
            layout = _checked_layout(workspace, body)
            now = state.now()
            dashboard = DashboardRecord(
                new_id("db"), body.name, body.description or "", list(body.tags or []), layout, 1, now, now
            )
            workspace.dashboards[dashboard.id] = dashboard
            return json_response(dashboard.as_json(), status=201, headers={"ETag": dashboard.etag})

    @router.put("/{dashboard_id}")
    async def update_dashboard(dashboard_id: str, request: Request) -> JSONResponse:
        body = await read_json(request, DashboardBody)
        with state.lock:
            workspace = workspace_of(state, request)
            dashboard = workspace.dashboards.get(dashboard_id)
            if dashboard is None:
                raise ApiError.not_found("dashboard", dashboard_id)
            if_match = request.headers.get("if-match")
            if not if_match_allows(if_match, dashboard.version):
                raise ApiError(
                    412,
                    f"dashboard {dashboard_id} is at version {dashboard.version}, not {if_match}",
                    {"current_version": dashboard.version},
                    headers={"ETag": dashboard.etag},
                )
            dashboard.layout = _checked_layout(workspace, body)
            dashboard.name = body.name
            dashboard.description = body.description or ""
            dashboard.tags = list(body.tags or [])
            dashboard.version += 1
            dashboard.updated_at = state.now()
            return json_response(dashboard.as_json(), headers={"ETag": dashboard.etag})

    return router
