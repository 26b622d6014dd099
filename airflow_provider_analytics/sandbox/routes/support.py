"""Helpers shared by the ``/v1`` route modules: the caller's workspace, JSON bodies and answers."""

from __future__ import annotations

import json
from email.message import Message
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError
from starlette.requests import Request
from starlette.responses import JSONResponse

from airflow_provider_analytics.sandbox.domain.api_error import ApiError
from airflow_provider_analytics.sandbox.domain.records import Workspace
from airflow_provider_analytics.sandbox.domain.store import SandboxState
from airflow_provider_analytics.sandbox.routes.schemas import validation_fields

# Where the gateway (http/gateway.py) leaves the workspace it authorised a request for.
WORKSPACE_KEY = "sandbox.workspace_id"
ModelT = TypeVar("ModelT", bound=BaseModel)


def workspace_of(state: SandboxState, request: Request) -> Workspace:
    """The workspace the gateway authorised this request for.

    :param state: the sandbox state.
    :param request: the current request.
    """
    return state.workspace(request.scope[WORKSPACE_KEY])


def _is_json_content_type(value: str) -> bool:
    message = Message()
    message["content-type"] = value
    subtype = message.get_content_subtype()
    return message.get_content_maintype() == "application" and (subtype == "json" or subtype.endswith("+json"))


async def read_json(request: Request, model: type[ModelT], *, optional: bool = False) -> ModelT:
    """Parse and validate the JSON body: 415 for another media type, 400 for malformed JSON, 422 for bad fields.

    :param request: the current request.
    :param model: the body model.
    :param optional: whether an empty body is allowed (it then counts as ``{}``).
    """
    raw = await request.body()
    content_type = request.headers.get("content-type")
    if raw.strip() and content_type and not _is_json_content_type(content_type):
        raise ApiError(415, f"request body must be application/json, not {content_type}")
    if not raw.strip():
        if not optional:
            raise ApiError(422, "a JSON request body is required", {"fields": {"body": "is required"}})
        data: Any = {}
    else:
        try:
            data = json.loads(raw)
        except ValueError as error:
            raise ApiError(
                400, f"request body is not valid JSON: {error}", {"fields": {"body": "is not valid JSON"}}
            ) from None
    if not isinstance(data, dict):
        raise ApiError(422, "request body must be a JSON object", {"fields": {"body": "must be an object"}})
    try:
        return model.model_validate(data)
    except ValidationError as error:
        raise ApiError.invalid_fields(validation_fields(error)) from None


def json_response(content: Any, status: int = 200, headers: dict[str, str] | None = None) -> JSONResponse:
    """A JSON answer.

    :param content: the JSON-compatible body.
    :param status: the HTTP status.
    :param headers: extra headers (e.g. ``ETag``).
    """
    return JSONResponse(content, status_code=status, headers=headers)


def query_of(request: Request) -> dict[str, str]:
    """The query parameters (last value wins).

    :param request: the current request.
    """
    return dict(request.query_params)
