"""``/v1/charts``: list and create charts, and page through a chart's data."""

from __future__ import annotations

from fastapi import APIRouter
from starlette.requests import Request
from starlette.responses import JSONResponse

from airflow_provider_analytics.sandbox.domain.api_error import ApiError
from airflow_provider_analytics.sandbox.domain.chart_data import chart_rows, columns_for_query
from airflow_provider_analytics.sandbox.domain.pagination import paginate
from airflow_provider_analytics.sandbox.domain.records import ChartRecord, new_id
from airflow_provider_analytics.sandbox.domain.store import SandboxState
from airflow_provider_analytics.sandbox.routes.support import json_response, query_of, read_json, workspace_of
from airflow_provider_analytics.wire._request_bodies import CreateChartBody


def build_router(state: SandboxState) -> APIRouter:
    """Routes for charts and chart data.

    :param state: the sandbox state.
    """
    router = APIRouter(prefix="/v1/charts")

    @router.get("")
    async def list_charts(request: Request) -> JSONResponse:
        with state.lock:
            workspace = workspace_of(state, request)
            return json_response({"data": [chart.as_json() for chart in workspace.charts.values()]})

    @router.post("")
    async def create_chart(request: Request) -> JSONResponse:
        body = await read_json(request, CreateChartBody)
        with state.lock:
            workspace = workspace_of(state, request)
            if body.data_source_id not in workspace.data_sources:
                problem = f"data source {body.data_source_id} not found"
                raise ApiError.invalid_fields({"data_source_id": problem})
            now = state.now()
            chart = ChartRecord(
                new_id("ch"), body.name, body.type, body.data_source_id, body.query, body.options or {}, now, now
            )
            workspace.charts[chart.id] = chart
            return json_response(chart.as_json(), status=201)

    @router.get("/{chart_id}/data")
    async def chart_data(chart_id: str, request: Request) -> JSONResponse:
        with state.lock:
            workspace = workspace_of(state, request)
            chart = workspace.charts.get(chart_id)
            if chart is None:
                raise ApiError.not_found("chart", chart_id)
            query = chart.query
        columns = columns_for_query(query)
        positions, next_cursor = paginate(
            range(state.config.chart_rows), f"{workspace.id}/charts/{chart_id}/data", query_of(request), state.cursors
        )
        rows = chart_rows(chart_id, columns, positions[0], positions[-1] + 1) if positions else []
        return json_response(
            {
                "chart_id": chart_id,
                "columns": [column.as_json() for column in columns],
                "data": rows,
                "next_cursor": next_cursor,
            }
        )

    return router
