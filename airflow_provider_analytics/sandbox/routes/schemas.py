"""Request bodies of the ``/v1`` API, validated strictly (wrong types and unknown fields are refused), and what
validation errors say about each field.

The bodies that definitions kept as code also describe are the provider's own (``wire/_request_bodies.py``), so the
sandbox and the provider cannot disagree on them; this module adds what only the sandbox takes or keeps.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any, Literal

from pydantic import Field, ValidationError

from airflow_provider_analytics.wire._request_bodies import (
    ChartPlacement,
    StrictBody,
    Text,
)
from airflow_provider_analytics.wire._request_bodies import ConnectDataSourceBody as _ContractDataSourceBody
from airflow_provider_analytics.wire._request_bodies import DashboardBody as _ContractDashboardBody

ReportFormat = Literal["pdf", "csv", "xlsx", "html"]
DataSourceType = Literal["postgres", "mysql", "bigquery", "snowflake", "redshift"]


class ExecuteWorkflowBody(StrictBody):
    """``POST /v1/workflows/:id/execute`` (the body itself is optional)."""

    inputs: dict[str, Any] | None = None


class ConnectDataSourceBody(_ContractDataSourceBody):
    """``POST /v1/data-sources`` as the sandbox takes it: only the connector types it implements."""

    type: DataSourceType


class LayoutItem(ChartPlacement):
    """One chart placed on a dashboard grid (the contract's placement, wire/_request_bodies.py), and more.

    ``title`` and ``settings`` stand for what a real platform keeps on a layout item beyond the contract's
    fields (a tile's caption, its display options): stored and answered only when sent, so that a client which
    rewrites a dashboard with ``PUT`` (a full replacement) can be seen to keep or to drop them.
    """

    title: str | None = None
    settings: dict[str, Any] | None = None

    def stored(self) -> dict[str, Any]:
        """The item as the dashboard keeps it: the optional fields only when sent."""
        placed = {"chart_id", "x", "y", "w", "h"}
        return self.model_dump(include=placed) | self.model_dump(exclude_unset=True, exclude=placed)


class DashboardBody(_ContractDashboardBody):
    """``POST /v1/dashboards`` and ``PUT /v1/dashboards/:id`` (a full replacement), with the sandbox's tiles."""

    # a narrower item than the base's: pydantic validates this one; lists are invariant to mypy, not here
    layout: list[LayoutItem] | None = None  # type: ignore[assignment]


class GenerateReportBody(StrictBody):
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
    if kind == "value_error":  # a validator's own refusal (BlankText, ...) says what is wrong in its own words
        return str(context.get("error", "is not valid"))
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
