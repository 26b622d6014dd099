"""Assemble the sandbox application: FastAPI routes, contract error handlers and the gateway."""

from __future__ import annotations

import logging
from collections.abc import Mapping

from fastapi import FastAPI
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp

from airflow_provider_analytics.sandbox.domain.api_error import ApiError
from airflow_provider_analytics.sandbox.domain.store import SandboxState
from airflow_provider_analytics.sandbox.faults.hostile import ConnectionDropped
from airflow_provider_analytics.sandbox.http import admin, ui
from airflow_provider_analytics.sandbox.http.errors import error_body, new_request_id
from airflow_provider_analytics.sandbox.http.gateway import REQUEST_ID_KEY, Gateway
from airflow_provider_analytics.sandbox.routes import charts, dashboards, data_sources, reports, workflows
from airflow_provider_analytics.sandbox.routes.schemas import validation_fields

logger = logging.getLogger(__name__)


def _error_response(
    request: Request,
    status: int,
    message: str,
    details: dict[str, object] | None = None,
    headers: Mapping[str, str] | None = None,
) -> Response:
    request_id = request.scope.get(REQUEST_ID_KEY) or new_request_id()
    return Response(
        error_body(status, message, request_id, details),
        status_code=status,
        media_type="application/json",
        headers=headers,
    )


async def _api_error(request: Request, error: Exception) -> Response:
    assert isinstance(error, ApiError)
    return _error_response(request, error.status, error.message, error.details, error.headers)


async def _validation_error(request: Request, error: Exception) -> Response:
    # FastAPI's own validation only sees path and query parameters here (bodies are parsed by the
    # routes), so these are the caller's URL being wrong: 400, naming the parameters.
    assert isinstance(error, RequestValidationError)
    fields = validation_fields(list(error.errors()), skip_prefix=1)
    return _error_response(request, 400, "invalid request parameters", {"fields": fields})


async def _http_error(request: Request, error: Exception) -> Response:
    assert isinstance(error, StarletteHTTPException)
    if error.status_code == 404:
        message = f"no such endpoint: {request.method} {request.url.path}"
    elif error.status_code == 405:
        message = f"method {request.method} is not allowed on {request.url.path}"
    else:
        message = str(error.detail)
    return _error_response(request, error.status_code, message, headers=error.headers)


async def _unexpected_error(request: Request, error: Exception) -> Response:
    if isinstance(error, ConnectionDropped):
        # An injected truncation, not a bug: the gateway closes the connection, nothing to report.
        raise error
    logger.error("sandbox bug answering %s %s", request.method, request.url.path, exc_info=error)
    return _error_response(request, 500, "internal error")


def create_app(state: SandboxState, admin_token: str) -> ASGIApp:
    """The ASGI application of one sandbox.

    :param state: the sandbox state the routes read and change.
    :param admin_token: the credential the ``/_sandbox`` control routes require (never an API token).
    """
    api = FastAPI(
        title="Analytics Platform sandbox",
        docs_url=admin.DOCS_URL,
        openapi_url=admin.OPENAPI_URL,
        redoc_url=None,
    )
    for module in (workflows, charts, data_sources, dashboards, reports):
        api.include_router(module.build_router(state))
    api.include_router(admin.build_router(state, admin_token))
    api.include_router(ui.build_router(state))
    api.add_exception_handler(ApiError, _api_error)
    api.add_exception_handler(RequestValidationError, _validation_error)
    api.add_exception_handler(StarletteHTTPException, _http_error)
    api.add_exception_handler(Exception, _unexpected_error)
    return Gateway(api, state, admin_token)
