"""Every endpoint of the /v1 API as a pure request builder: validate the input, describe the request.

Builders do no I/O. A :class:`Call` is sent by either client (``client.call(...)``), so each endpoint
is written once for both transports. Input is checked here, before anything is sent.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar, cast

from airflow_provider_analytics.wire._calls import Call, Page, PagedCall, RequestSpec, expect_object
from airflow_provider_analytics.wire._contract import (
    API_PREFIX,
    ASSUMED_ROUTES,
    HEADER_IDEMPOTENCY_KEY,
    IDEMPOTENCY_KEY_PATTERN,
    MAX_PAGE_SIZE,
    MAX_REQUEST_BODY_BYTES,
    ChartType,
    ReportFormat,
)
from airflow_provider_analytics.wire._ids import answered_id, validate_id, validate_page_size
from airflow_provider_analytics.wire._models import (
    Chart,
    Dashboard,
    DataSource,
    Execution,
    LayoutItem,
    Report,
    SyncState,
    Workflow,
)
from airflow_provider_analytics.wire._request_json import Unsendable, measure, shown_path
from airflow_provider_analytics.wire.errors import MAX_TEXT, AnalyticsInputError, UnexpectedResponseError, clean_text

T = TypeVar("T")
# The error type given to an error the platform sent as bare text instead of ``{"type", "message"}``.
STRING_ERROR_TYPE = "unknown_error"
# The most characters kept of a work's error text, as of an error body's: the type as a header's, the message
# as a body's message (wire/errors.py).
_ERROR_TEXT_LIMITS = {"type": 200, "message": MAX_TEXT}
# The request builders, and the call types they return (re-exported: callers build and send through here).
# fmt: off
__all__ = [
    "Call", "Page", "PagedCall", "RequestSpec", "cancel_execution", "cancel_report", "chart_data",
    "connect_data_source", "create_chart", "create_dashboard", "create_workflow", "download_report",
    "execute_workflow", "generate_report", "get_execution", "get_report", "get_sync_status", "list_charts",
    "list_dashboards", "list_data_sources", "list_reports", "list_workflows", "new_idempotency_key",
    "update_dashboard",
]
# fmt: on


def new_idempotency_key() -> str:
    """A fresh random idempotency key, for POSTs whose caller gave none."""
    return f"apa-{secrets.token_urlsafe(24)}"


def _idempotency_headers(key: str | None) -> dict[str, str]:
    key = new_idempotency_key() if key is None else key
    if not isinstance(key, str) or not IDEMPOTENCY_KEY_PATTERN.fullmatch(key):
        raise AnalyticsInputError(
            f"idempotency_key must be 1-255 printable ASCII characters without spaces, got {key!r}"
        )
    return {HEADER_IDEMPOTENCY_KEY: key}


def _mapping(value: object, what: str) -> dict[str, Any]:
    if not isinstance(value, Mapping):
        raise AnalyticsInputError(f"{what} must be a mapping (dict), got {type(value).__name__}")
    return dict(value)


def _text(value: object, what: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise AnalyticsInputError(f"{what} must be a non-empty string, got {value!r}")
    return value


def _choice(value: object, allowed: type[ChartType] | type[ReportFormat], what: str) -> str:
    names = [member.value for member in allowed]
    if value not in names:
        raise AnalyticsInputError(f"{what} must be one of {', '.join(names)}; got {value!r}")
    return cast(str, value)


def _body(document: dict[str, Any], what: str) -> dict[str, Any]:
    """``document`` once it is known to fit the platform's bound as JSON, and to encode (``_request_json``)."""
    found = measure(document, MAX_REQUEST_BODY_BYTES)
    if isinstance(found, Unsendable):
        where = shown_path(found.path)
        if found.over_limit:
            raise AnalyticsInputError(
                f"{what} takes over 1 MiB as JSON (the limit is passed at {where or 'its start'}); the platform"
                " accepts at most 1 MiB in one request: make it smaller"
            )
        raise AnalyticsInputError(f"{what}: {where or 'the value'} {found.problem}")
    return document


def _resource(body: Any, identity: str = "id") -> Any:
    document = expect_object(body)
    # Every object is found again by its id; a sync status, which has none, by its data source's.
    if not isinstance(document.get(identity), str):
        raise UnexpectedResponseError(
            f"the platform answered an object without {'an' if identity == 'id' else 'a'} {identity!r}"
        )
    # Operators, the sensor and triggers read these: a wrong type here would fail them with a raw error.
    if "status" in document and not isinstance(document["status"], str):
        raise UnexpectedResponseError(
            f"the object's 'status' must be a string, not {type(document['status']).__name__}"
        )
    error = document.get("error")
    if isinstance(error, str):
        # A platform that sends its error as bare text still said what went wrong: keep its words for the
        # task's failure message, in the contract's shape (docs/api-contract.md).
        text = clean_text(error).strip()
        document["error"] = {"type": STRING_ERROR_TYPE, "message": text} if text else None
    elif error is not None and not (
        isinstance(error, dict) and all(isinstance(error.get(key, ""), str) for key in ("type", "message"))
    ):
        raise UnexpectedResponseError(
            "the object's 'error' must be null or an object with string type and message, or text"
        )
    elif error is not None:
        # Platform text that reaches a task's failure and a trigger's event: folded and capped as an error
        # body's is, so 200,000 characters with terminal escapes never reach a log line or the database whole.
        folded = {key: clean_text(error[key], limit) for key, limit in _ERROR_TEXT_LIMITS.items() if key in error}
        document["error"] = {**error, **folded}
    return document


def _started(noun: str) -> Callable[[Any], Any]:
    """The parser of a start's answer: the work it started, whose id must be an id before anyone keeps it.

    :param noun: what the start starts (``execution``), for the message; the call names the start's request.
    """

    def parse(body: Any) -> Any:
        document = _resource(body)
        answered_id(document["id"], f"{noun} id")
        return document

    return parse


def _chart_page(document: dict[str, Any]) -> None:
    columns = document.get("columns")
    if not isinstance(columns, list) or not all(
        isinstance(column, dict) and isinstance(column.get("name"), str) for column in columns
    ):
        raise UnexpectedResponseError("the chart data page's 'columns' must be a list of objects with a string name")
    for row in document["data"]:
        if not isinstance(row, list) or len(row) != len(columns):
            raise UnexpectedResponseError(
                f"each chart data row must be a list of {len(columns)} values, got {row!r:.80}"
            )


def _listing(body: Any) -> Any:
    data = expect_object(body).get("data")
    if not isinstance(data, list):
        raise UnexpectedResponseError("the platform answered a list without a 'data' array")
    return data


def _get(route: str, parse: Callable[[Any], T], **ids: str) -> Call[T]:
    return Call(RequestSpec("GET", API_PREFIX + route.format(**ids), API_PREFIX + route), parse)


def _post(route: str, body: dict[str, Any] | None, key: str | None, parse: Callable[[Any], T], **ids: str) -> Call[T]:
    spec = RequestSpec(
        "POST",
        API_PREFIX + route.format(**ids),
        API_PREFIX + route,
        json_body=body,
        headers=_idempotency_headers(key),
    )
    return Call(spec, parse)


def _paged(
    route: str, page_size: int, check: Callable[[dict[str, Any]], None] | None = None, **ids: str
) -> PagedCall[Any]:
    return PagedCall(API_PREFIX + route, API_PREFIX + route.format(**ids), validate_page_size(page_size), check)


# Charts ------------------------------------------------------------------------------------------------


def list_charts() -> Call[list[Chart]]:
    """``GET /v1/charts``."""
    return _get("/charts", _listing)


def create_chart(
    name: str,
    type: str,
    data_source_id: str,
    query: str,
    options: Mapping[str, Any] | None = None,
    idempotency_key: str | None = None,
) -> Call[Chart]:
    """``POST /v1/charts``."""
    body = {
        "name": _text(name, "name"),
        "type": _choice(type, ChartType, "type"),
        "data_source_id": validate_id(data_source_id, "data_source_id"),
        "query": _text(query, "query"),
        "options": _mapping(options or {}, "options"),
    }
    return _post("/charts", _body(body, "the chart"), idempotency_key, _resource)


def chart_data(chart_id: str, page_size: int = MAX_PAGE_SIZE) -> PagedCall[list[Any]]:
    """``GET /v1/charts/:id/data``, paginated; each page's body also carries ``columns``."""
    return _paged("/charts/{chart_id}/data", page_size, _chart_page, chart_id=validate_id(chart_id, "chart_id"))


# Workflows and executions ---------------------------------------------------------------------------


def list_workflows(page_size: int = MAX_PAGE_SIZE) -> PagedCall[Workflow]:
    """``GET /v1/workflows``, paginated."""
    return _paged("/workflows", page_size)


def create_workflow(
    name: str,
    configuration: Mapping[str, Any],
    description: str | None = None,
    idempotency_key: str | None = None,
) -> Call[Workflow]:
    """``POST /v1/workflows``."""
    body: dict[str, Any] = {
        "name": _text(name, "name"),
        "configuration": _mapping(configuration, "configuration"),
    }
    if description is not None:
        body["description"] = str(description)
    return _post("/workflows", _body(body, "the workflow"), idempotency_key, _resource)


def execute_workflow(
    workflow_id: str, inputs: Mapping[str, Any] | None = None, idempotency_key: str | None = None
) -> Call[Execution]:
    """``POST /v1/workflows/:id/execute``."""
    body = {"inputs": _mapping(inputs if inputs is not None else {}, "inputs")}
    workflow_id = validate_id(workflow_id, "workflow_id")
    return _post(
        "/workflows/{workflow_id}/execute",
        _body(body, "inputs"),
        idempotency_key,
        _started("execution"),
        workflow_id=workflow_id,
    )


def get_execution(workflow_id: str, execution_id: str) -> Call[Execution]:
    """``GET /v1/workflows/:id/executions/:execution_id`` (assumed endpoint)."""
    ids = {
        "workflow_id": validate_id(workflow_id, "workflow_id"),
        "execution_id": validate_id(execution_id, "execution_id"),
    }
    return _get(ASSUMED_ROUTES["get_execution"], _resource, **ids)


def cancel_execution(workflow_id: str, execution_id: str, idempotency_key: str | None = None) -> Call[Execution]:
    """``POST /v1/workflows/:id/executions/:execution_id/cancel`` (assumed endpoint)."""
    ids = {
        "workflow_id": validate_id(workflow_id, "workflow_id"),
        "execution_id": validate_id(execution_id, "execution_id"),
    }
    return _post(ASSUMED_ROUTES["cancel_execution"], None, idempotency_key, _resource, **ids)


# Data sources ------------------------------------------------------------------------------------------


def list_data_sources() -> Call[list[DataSource]]:
    """``GET /v1/data-sources``."""
    return _get("/data-sources", _listing)


def connect_data_source(
    name: str, type: str, connection: Mapping[str, Any], idempotency_key: str | None = None
) -> Call[DataSource]:
    """``POST /v1/data-sources``; secret connection fields are sent once and never returned."""
    body = {
        "name": _text(name, "name"),
        "type": _text(type, "type"),
        "connection": _mapping(connection, "connection"),
    }
    return _post("/data-sources", _body(body, "the data source"), idempotency_key, _resource)


def get_sync_status(data_source_id: str) -> Call[SyncState]:
    """``GET /v1/data-sources/:id/sync``."""
    ds = validate_id(data_source_id, "data_source_id")
    return _get(
        "/data-sources/{data_source_id}/sync", lambda body: _resource(body, "data_source_id"), data_source_id=ds
    )


# Dashboards --------------------------------------------------------------------------------------------


def list_dashboards(page_size: int = MAX_PAGE_SIZE) -> PagedCall[Dashboard]:
    """``GET /v1/dashboards``, paginated."""
    return _paged("/dashboards", page_size)


def _dashboard_body(
    name: str, description: str | None, tags: Sequence[str] | None, layout: Sequence[LayoutItem] | None
) -> dict[str, Any]:
    if isinstance(tags, str) or not all(isinstance(tag, str) for tag in tags or []):
        raise AnalyticsInputError(f"tags must be a list of strings, got {tags!r}")
    items = [dict(_mapping(item, "each layout item")) for item in layout or []]
    for item in items:
        validate_id(item.get("chart_id"), "layout chart_id")
    body = {
        "name": _text(name, "name"),
        "description": description or "",
        "tags": list(tags or []),
        "layout": items,
    }
    return _body(body, "the dashboard")


def create_dashboard(
    name: str,
    description: str | None = None,
    tags: Sequence[str] | None = None,
    layout: Sequence[LayoutItem] | None = None,
    idempotency_key: str | None = None,
) -> Call[Dashboard]:
    """``POST /v1/dashboards``."""
    return _post("/dashboards", _dashboard_body(name, description, tags, layout), idempotency_key, _resource)


def update_dashboard(
    dashboard_id: str,
    name: str,
    description: str | None = None,
    tags: Sequence[str] | None = None,
    layout: Sequence[LayoutItem] | None = None,
    if_match: int | None = None,
) -> Call[Dashboard]:
    """``PUT /v1/dashboards/:id``, a full replacement; ``if_match`` is the expected ``version``."""
    dashboard_id = validate_id(dashboard_id, "dashboard_id")
    headers: dict[str, str] = {}
    if if_match is not None:
        if isinstance(if_match, bool) or not isinstance(if_match, int) or if_match < 1:
            raise AnalyticsInputError(f"if_match must be the dashboard's version (a positive int), got {if_match!r}")
        headers["If-Match"] = f'"{if_match}"'
    route = "/dashboards/{dashboard_id}"
    spec = RequestSpec(
        "PUT",
        API_PREFIX + route.format(dashboard_id=dashboard_id),
        API_PREFIX + route,
        json_body=_dashboard_body(name, description, tags, layout),
        headers=headers,
    )
    return Call(spec, _resource)


# Reports -------------------------------------------------------------------------------------------------


def list_reports() -> Call[list[Report]]:
    """``GET /v1/reports``."""
    return _get("/reports", _listing)


def generate_report(
    dashboard_ids: Sequence[str],
    format: str = "pdf",
    name: str | None = None,
    parameters: Mapping[str, Any] | None = None,
    idempotency_key: str | None = None,
) -> Call[Report]:
    """``POST /v1/reports``."""
    if isinstance(dashboard_ids, str) or not isinstance(dashboard_ids, Sequence) or not dashboard_ids:
        raise AnalyticsInputError(f"dashboard_ids must be a non-empty list of dashboard ids, got {dashboard_ids!r}")
    body: dict[str, Any] = {
        "dashboard_ids": [validate_id(item, "each dashboard id") for item in dashboard_ids],
        "format": _choice(format, ReportFormat, "format"),
        "parameters": _mapping(parameters or {}, "parameters"),
    }
    if name is not None:
        body["name"] = _text(name, "name")
    return _post("/reports", _body(body, "the report request"), idempotency_key, _started("report"))


def get_report(report_id: str) -> Call[Report]:
    """``GET /v1/reports/:id`` (assumed endpoint)."""
    return _get(ASSUMED_ROUTES["get_report"], _resource, report_id=validate_id(report_id, "report_id"))


def cancel_report(report_id: str, idempotency_key: str | None = None) -> Call[Report]:
    """``POST /v1/reports/:id/cancel`` (assumed endpoint): stop generating; the report ends ``failed``."""
    ids = {"report_id": validate_id(report_id, "report_id")}
    return _post(ASSUMED_ROUTES["cancel_report"], None, idempotency_key, _resource, **ids)


def download_report(report_id: str, offset: int = 0, if_range: str | None = None) -> RequestSpec:
    """``GET /v1/reports/:id/download``, from byte ``offset`` (a ``Range`` request when it is not 0).

    ``if_range`` (the first answer's ``ETag``) makes a server whose file changed send it whole instead.
    """
    route = "/reports/{report_id}/download"
    # identity: length and digest are checked over the bytes as sent, and no compression bomb can reach disk.
    headers = {"Accept-Encoding": "identity"}
    if offset:
        headers["Range"] = f"bytes={offset}-"
    if offset and if_range:
        headers["If-Range"] = if_range
    path = API_PREFIX + route.format(report_id=validate_id(report_id, "report_id"))
    return RequestSpec("GET", path, API_PREFIX + route, headers=headers)
