"""``/_sandbox/...``: control endpoints for a sandbox running in another process, for its admin token only.

The gateway (``gateway.py``) refuses every request under ``/_sandbox`` without ``Authorization: Bearer <admin
token>`` before it reaches these routes, except :data:`OPEN_PATHS`: the generated OpenAPI page and document,
which describe the routes, hold no secret and change nothing. The routes' security scheme below only
describes that check in the OpenAPI document (the docs page's "Authorize" button); it checks nothing itself.
"""

from __future__ import annotations

import base64
import json
import re
from typing import Any

from fastapi import APIRouter, Security
from fastapi.security import HTTPBearer
from starlette.requests import Request
from starlette.responses import JSONResponse

from airflow_provider_analytics.sandbox.domain import lifecycle
from airflow_provider_analytics.sandbox.domain.api_error import ApiError
from airflow_provider_analytics.sandbox.domain.clock import rfc3339
from airflow_provider_analytics.sandbox.domain.rate_limits import per_second_problem
from airflow_provider_analytics.sandbox.domain.request_log import RecordedRequest
from airflow_provider_analytics.sandbox.domain.store import SandboxState
from airflow_provider_analytics.sandbox.faults.kinds import Fault

CONTROL_PREFIX = "/_sandbox"
DOCS_URL = f"{CONTROL_PREFIX}/docs"
OPENAPI_URL = f"{CONTROL_PREFIX}/openapi.json"
# Readable without the admin token: they describe the routes, hold no secret and change nothing.
OPEN_PATHS = frozenset({DOCS_URL, OPENAPI_URL})
_DESCRIBED_SCHEME = HTTPBearer(
    scheme_name="sandbox admin token",
    description="The sandbox's admin token (not an API token): printed when the sandbox starts.",
    auto_error=False,  # the gateway checks the token; this only puts the scheme in the OpenAPI document
)


def needs_admin_token(path: str) -> bool:
    """Whether a request for ``path`` must carry the admin token: every control route, not the docs.

    :param path: the request's path.
    """
    return (path == CONTROL_PREFIX or path.startswith(CONTROL_PREFIX + "/")) and path not in OPEN_PATHS


async def _json_object(request: Request) -> dict[str, Any]:
    raw = await request.body()
    try:
        data = json.loads(raw) if raw.strip() else {}
    except ValueError:
        raise ApiError(400, "request body is not valid JSON") from None
    if not isinstance(data, dict):
        raise ApiError(422, "request body must be a JSON object")
    return data


def _request_json(entry: RecordedRequest) -> dict[str, Any]:
    try:
        body_text: str | None = entry.body.decode()
    except UnicodeDecodeError:
        body_text = None
    return {
        "method": entry.method,
        "path": entry.path,
        "query": entry.query,
        "headers": entry.headers,
        "body": body_text,
        "body_base64": base64.b64encode(entry.body).decode() if body_text is None else None,
        "json": entry.json,
        "status": entry.status,
        "request_id": entry.request_id,
        "received_at": entry.received_at,
    }


def build_router(state: SandboxState, admin_token: str) -> APIRouter:
    """Control endpoints mirroring the Python controls of ``SandboxState``.

    :param state: the sandbox state.
    :param admin_token: the sandbox's admin token (a rotation may not hand it out as an API token).
    """
    router = APIRouter(prefix=CONTROL_PREFIX, dependencies=[Security(_DESCRIBED_SCHEME)])

    def ok(**extra: Any) -> JSONResponse:
        return JSONResponse({"ok": True, **extra})

    @router.get("/health")
    async def health() -> JSONResponse:
        return ok(now=rfc3339(state.now()))

    @router.post("/reset")
    async def reset() -> JSONResponse:
        state.reset()
        return ok()

    @router.get("/requests")
    async def requests(path: str | None = None) -> JSONResponse:
        try:
            pattern = re.compile(path) if path else None
        except re.error as error:
            raise ApiError(422, f"path is not a regular expression: {error}") from None
        entries = [entry for entry in state.requests if pattern is None or pattern.search(entry.path)]
        return JSONResponse({"data": [_request_json(entry) for entry in entries]})

    @router.get("/chaos")
    async def chaos() -> JSONResponse:
        injected = state.injected.snapshot()
        return JSONResponse({
            "config": state.chaos.config.as_json(),
            "counts": state.injected.counts(),
            "data": [entry.as_json() for entry in injected],
        })  # fmt: skip

    @router.post("/tokens/rotate")
    async def rotate_token(request: Request) -> JSONResponse:
        options = await _json_object(request)
        old, new = options.get("old", state.config.primary_token), options.get("new")
        grace = options.get("grace_seconds")
        if not isinstance(old, str) or (new is not None and not isinstance(new, str)):
            raise ApiError(422, "old and new must be strings")
        if isinstance(grace, bool) or not isinstance(grace, (int, float)):
            raise ApiError(422, "grace_seconds must be a number of seconds")
        if new == admin_token:
            raise ApiError(422, "new must not be the admin token: an API token is never the admin credential")
        try:
            token, expires = state.tokens.rotate(old, float(grace), state.now(), new)
        except ValueError as error:
            raise ApiError(422, str(error)) from None
        return JSONResponse({"token": token, "old_expires_at": rfc3339(expires)})

    @router.get("/data-sources/{data_source_id}/syncs")
    async def sync_history(data_source_id: str) -> JSONResponse:
        with state.lock:
            try:
                source = state.find_data_source(data_source_id)
            except KeyError:
                raise ApiError.not_found("data source", data_source_id) from None
            state.refresh_sync(source, state.now())
            return JSONResponse({"data": lifecycle.sync_history(source, state.timings)})

    @router.get("/executions")
    async def executions(workspace_id: str | None = None) -> JSONResponse:
        return JSONResponse({"data": state.executions(workspace_id)})

    @router.get("/reports")
    async def reports(workspace_id: str | None = None) -> JSONResponse:
        return JSONResponse({"data": state.reports(workspace_id)})

    @router.get("/faults")
    async def pending_faults() -> JSONResponse:
        pending = state.faults.pending()
        return JSONResponse({"data": [{**fault.as_json(), "remaining": left} for fault, left in pending]})

    @router.post("/faults", status_code=201)
    async def inject_fault(request: Request) -> JSONResponse:
        try:
            fault = Fault.from_json(await _json_object(request))
        except (ValueError, TypeError) as error:
            raise ApiError(422, f"invalid fault: {error}") from None
        state.inject(fault)
        return JSONResponse({"fault": fault.as_json()}, status_code=201)

    @router.delete("/faults")
    async def clear_faults() -> JSONResponse:
        state.faults.clear()
        return ok()

    @router.post("/data-sources/{data_source_id}/sync")
    async def start_sync(data_source_id: str, request: Request) -> JSONResponse:
        options = await _json_object(request)
        try:
            sync = state.start_sync(data_source_id, str(options.get("outcome", "synced")), options.get("workspace_id"))
        except KeyError:
            raise ApiError.not_found("data source", data_source_id) from None
        except ValueError as error:
            raise ApiError(422, str(error)) from None
        return JSONResponse(sync)

    @router.post("/clock/advance")
    async def advance(request: Request) -> JSONResponse:
        seconds = (await _json_object(request)).get("seconds")
        if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or seconds < 0:
            raise ApiError(422, "seconds must be a non-negative number")
        state.advance(float(seconds))
        return ok(now=rfc3339(state.now()))

    @router.post("/workflows/{workflow_id}/outcome")
    async def execution_outcome(workflow_id: str, request: Request) -> JSONResponse:
        options = await _json_object(request)
        try:
            state.set_execution_outcome(workflow_id, str(options.get("outcome")), options.get("error"))
        except ValueError as error:
            raise ApiError(422, str(error)) from None
        return ok()

    @router.post("/reports/outcome")
    async def report_outcome(request: Request) -> JSONResponse:
        try:
            state.set_report_outcome(str((await _json_object(request)).get("outcome")))
        except ValueError as error:
            raise ApiError(422, str(error)) from None
        return ok()

    @router.post("/reports/{report_id}/expire")
    async def expire_report(report_id: str) -> JSONResponse:
        try:
            state.expire_report(report_id)
        except KeyError:
            raise ApiError.not_found("report", report_id) from None
        except ValueError as error:
            raise ApiError(409, str(error)) from None
        return ok()

    @router.get("/rate-limit")
    async def rate_limit() -> JSONResponse:
        return JSONResponse(dict(state.rate_limit_stats()))

    @router.post("/rate-limit")
    async def set_rate_limit(request: Request) -> JSONResponse:
        options = await _json_object(request)
        # per_second is required (null turns the limit off), as in SandboxServer.set_rate_limit: a body
        # that only says {"headers": false} must not silently keep or drop a limit.
        fields = {name: "is not a field of this endpoint" for name in options if name not in ("per_second", "headers")}
        per_second, headers = options.get("per_second"), options.get("headers", True)
        problem = per_second_problem(per_second) if "per_second" in options else "is required (null: no limit)"
        if problem is not None:
            fields["per_second"] = problem
        if not isinstance(headers, bool):
            fields["headers"] = "must be true or false"
        if fields:
            raise ApiError.invalid_fields(fields)
        state.set_rate_limit(per_second, headers)
        return JSONResponse(dict(state.rate_limit_stats()))

    @router.post("/deprecations")
    async def deprecate(request: Request) -> JSONResponse:
        options = await _json_object(request)
        prefix = options.pop("path_prefix", None)
        if not isinstance(prefix, str) or not prefix:
            raise ApiError(422, "path_prefix is required")
        state.deprecate(prefix, **{k: str(v) for k, v in options.items() if k in ("deprecation", "sunset")})
        return ok()

    return router
