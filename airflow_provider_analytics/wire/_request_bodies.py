"""The request bodies that both sides of the wire validate, as strict pydantic models: one definition of each shape.

The sandbox validates what it receives with these models (``sandbox/routes/schemas.py`` narrows a few of them to
what it implements), and definitions kept as code are validated with subclasses of them
(``definitions/_schemas.py``: a file names a chart or a data source by name or id, and gives every grid position).
Types, ranges, required texts and unknown fields are therefore decided once: a definition the provider accepts is
a body the sandbox accepts, field by field.

Strict: a number is not a text, a float not a whole number, ``true`` not ``1``, and an unknown field is an error
rather than ignored. pydantic itself is imported only where a body is validated (the sandbox, or a task planning
definitions), never when a DAG file is parsed.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

__all__ = [
    "MAX_INTEGER",
    "ChartPlacement",
    "ChartTypeName",
    "ConnectDataSourceBody",
    "CreateChartBody",
    "CreateWorkflowBody",
    "DashboardBody",
    "GridPosition",
    "GridSize",
    "StrictBody",
    "Text",
]

# The integers JSON carries exactly everywhere (I-JSON, RFC 7493): a platform or a tool between that reads numbers
# as doubles would change a larger one silently, so one is refused rather than sent or stored.
MAX_INTEGER = 2**53 - 1


class _BlankText(ValueError):
    """A text with nothing in it besides white space (pydantic reports it as a ``value_error``)."""

    def __init__(self) -> None:
        super().__init__("must not be empty")


def _not_blank(value: str) -> str:
    if not value.strip():
        raise _BlankText
    return value


# A name, a type, a query or a reference: a string with something in it besides white space.
Text = Annotated[str, AfterValidator(_not_blank)]
# The contract's chart types (wire/_contract.py's ChartType; tests/wire/test_request_bodies.py checks they agree).
ChartTypeName = Literal["line", "bar", "area", "pie", "table", "number", "scatter"]
GridPosition = Annotated[int, Field(ge=0, le=MAX_INTEGER)]
GridSize = Annotated[int, Field(ge=1, le=MAX_INTEGER)]


class StrictBody(BaseModel):
    """A body validated strictly: wrong types and unknown fields are refused, nothing is converted."""

    model_config = ConfigDict(strict=True, extra="forbid")


class CreateChartBody(StrictBody):
    """``POST /v1/charts``."""

    name: Text
    type: ChartTypeName
    data_source_id: Text
    query: Text
    options: dict[str, Any] | None = None


class CreateWorkflowBody(StrictBody):
    """``POST /v1/workflows``."""

    name: Text
    configuration: dict[str, Any]
    description: str | None = None


class ConnectDataSourceBody(StrictBody):
    """``POST /v1/data-sources``: which ``type``\\ s a platform connects to is the platform's to say (422)."""

    name: Text
    type: Text
    connection: dict[str, Any]


class ChartPlacement(StrictBody):
    """One chart placed on a dashboard grid.

    A request may leave out the position and size: the platform places the chart (a 6x4 tile at the origin, as in
    the contract's example; docs/api-contract.md, "layout positions"). Definitions give them
    (``definitions/_schemas.py``).
    """

    chart_id: Text
    x: GridPosition = 0
    y: GridPosition = 0
    w: GridSize = 6
    h: GridSize = 4


class DashboardBody(StrictBody):
    """``POST /v1/dashboards`` and ``PUT /v1/dashboards/:id`` (a full replacement)."""

    name: Text
    description: str | None = None
    tags: list[Text] | None = None
    layout: list[ChartPlacement] | None = None
