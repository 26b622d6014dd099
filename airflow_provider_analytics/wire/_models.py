"""Typed views of the platform's JSON objects.

They are plain dicts at run time (JSON-compatible, safe for XCom) and keep every field the platform
sends, including ones this version does not know about.
"""

from __future__ import annotations

from typing import Any, TypedDict


class ErrorInfo(TypedDict):
    """The ``error`` of a failed execution, report or sync."""

    type: str
    message: str


class Chart(TypedDict, total=False):
    """A chart: a query on a data source drawn as ``type``."""

    id: str
    name: str
    type: str
    data_source_id: str
    query: str
    options: dict[str, Any]
    created_at: str
    updated_at: str


class Column(TypedDict):
    """A column of chart data."""

    name: str
    type: str


class Workflow(TypedDict, total=False):
    """A workflow definition."""

    id: str
    name: str
    description: str
    configuration: dict[str, Any]
    created_at: str
    updated_at: str


class Execution(TypedDict, total=False):
    """One run of a workflow."""

    id: str
    workflow_id: str
    status: str
    inputs: dict[str, Any]
    outputs: dict[str, Any] | None
    error: ErrorInfo | None
    created_at: str
    started_at: str | None
    finished_at: str | None


class DataSource(TypedDict, total=False):
    """A connected data source (secret connection fields are never returned)."""

    id: str
    name: str
    type: str
    connection: dict[str, Any]
    created_at: str
    sync: dict[str, Any]


class SyncState(TypedDict, total=False):
    """The sync status of a data source."""

    data_source_id: str
    status: str
    last_synced_at: str | None
    last_attempt_at: str | None
    error: ErrorInfo | None


class LayoutItem(TypedDict):
    """A chart's place on a dashboard grid."""

    chart_id: str
    x: int
    y: int
    w: int
    h: int


class Dashboard(TypedDict, total=False):
    """A dashboard; ``version`` is what ``If-Match`` compares."""

    id: str
    name: str
    description: str
    tags: list[str]
    layout: list[LayoutItem]
    version: int
    created_at: str
    updated_at: str


class Report(TypedDict, total=False):
    """A report generated from dashboards."""

    id: str
    name: str
    dashboard_ids: list[str]
    format: str
    parameters: dict[str, Any]
    status: str
    error: ErrorInfo | None
    size_bytes: int | None
    sha256: str | None
    content_type: str | None
    created_at: str
    completed_at: str | None
    expires_at: str | None
