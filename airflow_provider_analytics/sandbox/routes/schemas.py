"""Request bodies of the ``/v1`` API, validated strictly (wrong types and unknown fields are refused), and what
validation errors say about each field."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationError

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
    """One chart placed on a dashboard grid; position and size default to a 6x4 tile at the origin.

    ``title`` and ``settings`` stand for what a real platform keeps on a layout item beyond the contract's
    fields (a tile's caption, its display options): stored and answered only when sent, so that a client which
    rewrites a dashboard with ``PUT`` (a full replacement) can be seen to keep or to drop them.
    """

    chart_id: Text
    x: int = Field(default=0, ge=0)
    y: int = Field(default=0, ge=0)
    w: int = Field(default=6, ge=1)
    h: int = Field(default=4, ge=1)
    title: str | None = None
    settings: dict[str, Any] | None = None

    def stored(self) -> dict[str, Any]:
        """The item as the dashboard keeps it: the optional fields only when sent."""
        placed = {"chart_id", "x", "y", "w", "h"}
        return self.model_dump(include=placed) | self.model_dump(exclude_unset=True, exclude=placed)


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


def field_path(location: Sequence[int | str]) -> str:
    """A pydantic error location as a readable path, e.g. ``layout[0].chart_id``.

    :param location: the pydantic ``loc`` tuple (without the ``body`` prefix).
    """
    path = ""
    for part in location:
        if isinstance(part, int):
            path += f"[{part}]"
        else:
            path += f".{part}" if path else str(part)
    return path or "body"


def _problem(error: Any) -> str:
    kind = error.get("type", "")
    context = error.get("ctx") or {}
    simple = {
        "missing": "is required",
        "string_type": "must be a string",
        "int_type": "must be an integer",
        "bool_type": "must be a boolean",
        "dict_type": "must be an object",
        "list_type": "must be an array",
        "model_type": "must be an object",
        "extra_forbidden": "is not a known field",
        "string_too_short": "must not be empty",
        "too_short": "must not be empty",
    }
    if kind in simple:
        return simple[kind]
    if kind == "literal_error":
        expected = str(context.get("expected", "")).replace("'", "").replace(" or ", ", ")
        return f"must be one of {expected}"
    if kind in ("greater_than_equal", "less_than_equal", "greater_than", "less_than"):
        return str(error.get("msg", "is out of range")).replace("Input should be", "must be")
    return str(error.get("msg", "is not valid"))


def validation_fields(error: ValidationError | Sequence[Any], skip_prefix: int = 0) -> dict[str, str]:
    """Translate pydantic errors into ``{"field.path": "what is wrong"}``.

    :param error: a pydantic ``ValidationError`` or its ``errors()`` list.
    :param skip_prefix: how many leading location parts to drop (e.g. 1 for FastAPI's ``body``).
    """
    errors = error.errors() if isinstance(error, ValidationError) else error
    fields: dict[str, str] = {}
    for item in errors:
        fields.setdefault(field_path(tuple(item.get("loc", ()))[skip_prefix:]), _problem(item))
    return fields
