"""The stored records of each resource, and the JSON of those whose rendering does not depend on time.

Records hold facts (when something was created, what its outcome will be); statuses that move with
the clock are computed from those facts in ``lifecycle``.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from airflow_provider_analytics.sandbox.domain.clock import rfc3339

JsonDict = dict[str, Any]


def new_id(prefix: str) -> str:
    """A fresh opaque id such as ``ex_3kq0X9a-Lb2f`` (matches ``^[A-Za-z0-9_-]{1,64}$``).

    :param prefix: the resource prefix without the underscore, e.g. ``ex``.
    """
    return f"{prefix}_{secrets.token_urlsafe(9)}"


@dataclass
class WorkflowRecord:
    """A workflow definition."""

    id: str
    name: str
    description: str
    configuration: JsonDict
    created_at: datetime
    updated_at: datetime

    def as_json(self) -> JsonDict:
        """The workflow as the API renders it."""
        return {
            "id": self.id,
            "name": self.name,
            "description": self.description,
            "configuration": self.configuration,
            "created_at": rfc3339(self.created_at),
            "updated_at": rfc3339(self.updated_at),
        }


@dataclass
class ExecutionRecord:
    """One run of a workflow; its outcome is decided when it is created."""

    id: str
    workflow_id: str
    inputs: JsonDict
    created_at: datetime
    outcome: str
    outputs: JsonDict | None
    error: JsonDict | None
    cancelled_at: datetime | None = None
    duration: float | None = None  # seconds queued + running; None: the sandbox's timings


@dataclass
class ChartRecord:
    """A chart: a query against a data source plus a visual type."""

    id: str
    name: str
    type: str
    data_source_id: str
    query: str
    options: JsonDict
    created_at: datetime
    updated_at: datetime

    def as_json(self) -> JsonDict:
        """The chart as the API renders it."""
        return {
            "id": self.id,
            "name": self.name,
            "type": self.type,
            "data_source_id": self.data_source_id,
            "query": self.query,
            "options": self.options,
            "created_at": rfc3339(self.created_at),
            "updated_at": rfc3339(self.updated_at),
        }


@dataclass
class DashboardRecord:
    """A dashboard: charts placed on a grid; ``version`` grows with every update."""

    id: str
    name: str
    description: str
    tags: list[str]
    layout: list[JsonDict]
    version: int
    created_at: datetime
    updated_at: datetime

    @property
    def etag(self) -> str:
        """The ETag header value for the current version."""
        return f'"{self.version}"'

    @property
    def chart_ids(self) -> list[str]:
        """Ids of the charts on the dashboard, in layout order, without repeats."""
        return list(dict.fromkeys(str(item["chart_id"]) for item in self.layout))

    def as_json(self) -> JsonDict:
        """The dashboard as the API renders it."""
        return {
            "id": self.id,
            "name": self.name,
            "description": self.description,
            "tags": list(self.tags),
            "layout": [dict(item) for item in self.layout],
            "version": self.version,
            "created_at": rfc3339(self.created_at),
            "updated_at": rfc3339(self.updated_at),
        }


@dataclass
class SyncAttempt:
    """One sync of a data source, started at ``started_at``; its outcome is decided up front."""

    started_at: datetime
    outcome: str
    error: JsonDict | None = None


@dataclass
class DataSourceRecord:
    """A connected data source. ``last_synced_at`` covers attempts before the current one."""

    id: str
    name: str
    type: str
    connection: JsonDict
    created_at: datetime
    last_synced_at: datetime | None = None
    attempt: SyncAttempt | None = None
    history: list[SyncAttempt] = field(default_factory=list)  # every attempt started, oldest first


@dataclass
class ReportRecord:
    """A generated report; ``content`` is filled once rendering finished (``rendered_at``)."""

    id: str
    name: str
    dashboard_ids: list[str]
    format: str
    parameters: JsonDict
    created_at: datetime
    outcome: str
    error: JsonDict | None = None
    content: bytes | None = None
    sha256: str | None = None
    rendered_at: datetime | None = None
    expired_at: datetime | None = None
    cancelled_at: datetime | None = None
    duration: float | None = None  # seconds pending + generating; None: the sandbox's timings


@dataclass
class Workspace:
    """Everything one workspace holds; dicts keep insertion order, which is the listing order."""

    id: str
    workflows: dict[str, WorkflowRecord] = field(default_factory=dict)
    executions: dict[str, ExecutionRecord] = field(default_factory=dict)
    charts: dict[str, ChartRecord] = field(default_factory=dict)
    dashboards: dict[str, DashboardRecord] = field(default_factory=dict)
    data_sources: dict[str, DataSourceRecord] = field(default_factory=dict)
    reports: dict[str, ReportRecord] = field(default_factory=dict)
