"""Request bodies of the ``/v1`` API, validated strictly: wrong types and unknown fields are refused."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

CHART_TYPES = ("line", "bar", "area", "pie", "table", "number", "scatter")
REPORT_FORMATS = ("pdf", "csv", "xlsx", "html")
DATA_SOURCE_TYPES = ("postgres", "mysql", "bigquery", "snowflake", "redshift")

Text = Annotated[str, StringConstraints(min_length=1, max_length=10_000)]
ChartType = Literal["line", "bar", "area", "pie", "table", "number", "scatter"]
ReportFormat = Literal["pdf", "csv", "xlsx", "html"]
DataSourceType = Literal["postgres", "mysql", "bigquery", "snowflake", "redshift"]


class _Body(BaseModel):
    # Strict: a client that sends "5" for a number or a misspelled field learns it here, not in production.
    model_config = ConfigDict(strict=True, extra="forbid")


class CreateChartBody(_Body):
    """``POST /v1/charts``."""

    name: Text
    type: ChartType
    data_source_id: Text
    query: Text
    options: dict[str, Any] | None = None


class CreateWorkflowBody(_Body):
    """``POST /v1/workflows``."""

    name: Text
    configuration: dict[str, Any]
    description: str | None = None


class ExecuteWorkflowBody(_Body):
    """``POST /v1/workflows/:id/execute`` (the body itself is optional)."""

    inputs: dict[str, Any] | None = None


class ConnectDataSourceBody(_Body):
    """``POST /v1/data-sources``."""

    name: Text
    type: DataSourceType
    connection: dict[str, Any]


class LayoutItem(_Body):
    """One chart placed on a dashboard grid; position and size default to a 6x4 tile at the origin."""

    chart_id: Text
    x: int = Field(default=0, ge=0)
    y: int = Field(default=0, ge=0)
    w: int = Field(default=6, ge=1)
    h: int = Field(default=4, ge=1)


class DashboardBody(_Body):
    """``POST /v1/dashboards`` and ``PUT /v1/dashboards/:id`` (a full replacement)."""

    name: Text
    description: str | None = None
    tags: list[Text] | None = None
    layout: list[LayoutItem] | None = None


class GenerateReportBody(_Body):
    """``POST /v1/reports``."""

    dashboard_ids: Annotated[list[Text], Field(min_length=1)]
    format: ReportFormat
    name: Text | None = None
    parameters: dict[str, Any] | None = None
