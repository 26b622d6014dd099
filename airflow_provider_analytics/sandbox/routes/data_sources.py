"""``/v1/data-sources``: list and connect data sources, and read a source's sync status."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from starlette.requests import Request
from starlette.responses import JSONResponse

from airflow_provider_analytics.sandbox.domain import lifecycle
from airflow_provider_analytics.sandbox.domain.api_error import ApiError
from airflow_provider_analytics.sandbox.domain.records import DataSourceRecord, JsonDict, new_id
from airflow_provider_analytics.sandbox.domain.redaction import is_secret_field
from airflow_provider_analytics.sandbox.domain.store import SandboxState
from airflow_provider_analytics.sandbox.routes.schemas import ConnectDataSourceBody
from airflow_provider_analytics.sandbox.routes.support import json_response, read_json, workspace_of

REQUIRED_CONNECTION_FIELDS = {
    "postgres": ("host", "database", "user"),
    "mysql": ("host", "database", "user"),
    "redshift": ("host", "database", "user"),
    "bigquery": ("project",),
    "snowflake": ("account", "user"),
}


def connection_problems(source_type: str, connection: dict[str, Any]) -> dict[str, str]:
    """What is wrong with a connection's settings for its type, by field path.

    :param source_type: the data source type.
    :param connection: the connection settings as received.
    """
    problems: dict[str, str] = {}
    for name in REQUIRED_CONNECTION_FIELDS[source_type]:
        value = connection.get(name)
        if value is None:
            problems[f"connection.{name}"] = f"is required for a {source_type} data source"
        elif not isinstance(value, str) or not value.strip():
            problems[f"connection.{name}"] = "must be a non-empty string"
    port = connection.get("port")
    if port is not None and (isinstance(port, bool) or not isinstance(port, int) or not 1 <= port <= 65535):
        problems["connection.port"] = "must be an integer from 1 to 65535"
    return problems


def build_router(state: SandboxState) -> APIRouter:
    """Routes for data sources and their sync status.

    :param state: the sandbox state.
    """
    router = APIRouter(prefix="/v1/data-sources")

    @router.get("")
    async def list_data_sources(request: Request) -> JSONResponse:
        with state.lock:
            workspace = workspace_of(state, request)
            return json_response({"data": state.data_sources(workspace.id)})

    @router.post("")
    async def connect_data_source(request: Request) -> JSONResponse:
        body = await read_json(request, ConnectDataSourceBody)
        problems = connection_problems(body.type, body.connection)
        if problems:
            raise ApiError.invalid_fields(problems)
        public: JsonDict = {key: value for key, value in body.connection.items() if not is_secret_field(key)}
        with state.lock:
            workspace = workspace_of(state, request)
            now = state.now()
            source = DataSourceRecord(new_id("ds"), body.name, body.type, public, now)
            workspace.data_sources[source.id] = source
            return json_response(lifecycle.data_source_view(source, state.timings, now), status=201)

    @router.get("/{data_source_id}/sync")
    async def sync_status(data_source_id: str, request: Request) -> JSONResponse:
        with state.lock:
            workspace = workspace_of(state, request)
            source = workspace.data_sources.get(data_source_id)
            if source is None:
                raise ApiError.not_found("data source", data_source_id)
            now = state.now()
            state.refresh_sync(source, now)
            return json_response(lifecycle.sync_view(source, state.timings, now))

    return router
