"""The shapes definitions are validated with: the request bodies of ``wire/_request_bodies.py``, as a file writes them.

Each model here is the request body that creates its object (the one the sandbox validates too), changed only where a
file says more or otherwise than a request:

- a reference is a name or an id: a chart's ``data_source`` (sent as ``data_source_id``) and a layout item's
  ``chart`` (sent as ``chart_id``), read under those names through ``validation_alias``;
- a layout item's ``x``, ``y``, ``w`` and ``h`` are required: the contract fixes no defaults, and a default guessed
  here that the platform did not share would show every dashboard as changed on every run;
- a dashboard's tags are unique, each one is compared in its place;
- ``null`` is the same as leaving a field out, a tuple is a list (a mapping given in Python may hold one);
- free-form values (a connection, chart options, a workflow's configuration) must be plain JSON: values JSON cannot
  carry (a YAML date, a set, a non-string key, ``nan``, an integer beyond :data:`MAX_INTEGER`) and values a file's
  parser refused in place (:class:`~airflow_provider_analytics.definitions._model.Refused`) are refused rather than
  converted, since they would reach the platform as something else. They nest at most :data:`MAX_DEPTH` deep and
  all sources together hold at most :data:`MAX_VALUES` values (a :class:`ValueBudget` shared through pydantic's
  validation context): a YAML alias expands in place, so a small file could otherwise stand for billions of them.
  No library checks this, so ``plain_json`` below does.
"""

from __future__ import annotations

import datetime
import math
import re
from collections.abc import Mapping
from typing import Annotated, Any

from pydantic import AfterValidator, BeforeValidator, Field, ValidationInfo, field_validator, model_validator

from airflow_provider_analytics.definitions._files import type_name
from airflow_provider_analytics.definitions._model import MAX_DEPTH, MAX_VALUES, Kind, Refused
from airflow_provider_analytics.wire._contract import ID_PATTERN
from airflow_provider_analytics.wire._request_bodies import (
    MAX_INTEGER,
    ChartPlacement,
    ConnectDataSourceBody,
    CreateChartBody,
    CreateWorkflowBody,
    DashboardBody,
    GridPosition,
    GridSize,
    StrictBody,
    Text,
)

__all__ = [
    "SCHEMAS",
    "ChartDefinition",
    "DashboardDefinition",
    "DataSourceDefinition",
    "PlacementDefinition",
    "ValueBudget",
    "WorkflowDefinition",
    "out_of_range",
    "refusal",
    "shown",
]

_PLAIN_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")


def shown(value: object) -> str:
    """How a message names a wrong value without showing a text: ``int 3``, ``a list``, ``an integer of ...``.

    :param value: the value refused.
    """
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > 10**40:
        # str() of an int over 4,300 digits raises ValueError: count its digits from its bits
        return f"an integer of about {int(value.bit_length() * math.log10(2)) + 1:,} digits"
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return f"{type_name(value)} {value!r}"
    return type_name(value)


def out_of_range(value: int) -> str:
    """What is wrong with an integer beyond :data:`MAX_INTEGER`, and what to do.

    :param value: the integer.
    """
    return (
        f"is {shown(value)}, beyond the integers JSON carries exactly (-(2**53 - 1) to 2**53 - 1); write it as a"
        " string to send it as text"
    )


class ValueBudget:
    """How many free-form values the definitions hold so far, against :data:`MAX_VALUES` (one per load)."""

    def __init__(self) -> None:
        self.values = 0


class _Refusal(ValueError):
    """A value the definitions refuse in their own words (pydantic reports it as a ``value_error``).

    :param problem: what is wrong, and what to do.
    :param path: where the value is inside a free-form field (``configuration.steps[0]``), or ``None`` for the
        field pydantic names.
    """

    def __init__(self, problem: str, path: str | None = None) -> None:
        super().__init__(problem)
        self.problem = problem
        self.path = path


def refusal(cause: object) -> tuple[str | None, str] | None:
    """Where and what, when a pydantic error's cause is a refusal of the definitions' own; else ``None``.

    :param cause: the ``error`` of a pydantic error's ``ctx``, if any.
    """
    return (cause.path, cause.problem) if isinstance(cause, _Refusal) else None


# Where a value is, as its parent's place and its own key or index: built in constant time per value, formatted
# only for a problem (up to a million values pass here, and formatting each one's path cost nine tenths of the check).
_Where = tuple[Any, str | int]


def _path(where: _Where) -> str:
    """``configuration.steps[0]['a b']`` from the chain of places (the first is the field's name)."""
    steps: list[str | int] = []
    place: Any = where
    while place is not None:
        place, step = place
        steps.append(step)
    field, *inner = reversed(steps)
    text = str(field)
    for step in inner:
        if isinstance(step, int):
            text += f"[{step}]"
        else:
            text += f".{step}" if _PLAIN_KEY.fullmatch(step) else f"[{step!r}]"
    return text


def _plain(value: Any, where: _Where, depth: int, budget: ValueBudget) -> Any:
    budget.values += 1
    if budget.values > MAX_VALUES:
        problem = f"the definitions hold over {MAX_VALUES:,} values (YAML aliases expanding?); split them"
        raise _Refusal(problem, _path(where))
    if depth > MAX_DEPTH:
        raise _Refusal(f"nests more than {MAX_DEPTH} levels deep", _path(where))
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        if abs(value) > MAX_INTEGER:
            raise _Refusal(out_of_range(value), _path(where))
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise _Refusal(f"is {value}, which JSON cannot carry", _path(where))
        return value
    if isinstance(value, Mapping):
        plain: dict[str, Any] = {}
        for key, item in value.items():
            if isinstance(key, Refused):
                raise _Refusal(f"has the key {key}", _path(where))
            if not isinstance(key, str):
                raise _Refusal(f"has the key {key!r} ({type_name(key)}); keys must be strings: quote it", _path(where))
            plain[key] = _plain(item, (where, key), depth + 1, budget)
        return plain
    if isinstance(value, (list, tuple)):
        return [_plain(item, (where, index), depth + 1, budget) for index, item in enumerate(value)]
    if isinstance(value, Refused):
        raise _Refusal(str(value), _path(where))
    hint = "; quote it to send it as text" if isinstance(value, (datetime.date, datetime.time)) else ""
    raise _Refusal(f"is a {type(value).__name__}, which JSON cannot carry{hint}", _path(where))


def _platform_id(value: str) -> str:
    if not ID_PATTERN.fullmatch(value):
        raise _Refusal(
            "must be a platform object's id (1 to 64 letters, digits, '_' or '-'), as the platform lists it; leave"
            " it out to match the object by its name"
        )
    return value


class _AsWritten(StrictBody):
    """What every definition model does to what a file wrote before checking it."""

    @model_validator(mode="before")
    @classmethod
    def _null_is_absent(cls, value: Any) -> Any:
        if not isinstance(value, Mapping):
            return value  # refused as not a mapping, naming the fields
        return {key: list(item) if isinstance(item, tuple) else item for key, item in value.items() if item is not None}

    @field_validator("connection", "options", "configuration", mode="before", check_fields=False)
    @classmethod
    def _plain_json(cls, value: Any, info: ValidationInfo) -> Any:
        """A free-form value as plain JSON (a copy: aliases no longer shared); not a mapping: refused as such."""
        if not isinstance(value, Mapping):
            return value
        budget = info.context if isinstance(info.context, ValueBudget) else ValueBudget()
        return _plain(value, (None, info.field_name or ""), 0, budget)


class _Pinnable(_AsWritten):
    """An object's definition: ``id`` pins it to one platform object (``_model``), what an export writes for
    objects whose name others share."""

    id: Annotated[str, AfterValidator(_platform_id)] | None = None


class DataSourceDefinition(_Pinnable, ConnectDataSourceBody):
    """A data source: ``name``, ``type`` and ``connection`` (secret fields included, never shown)."""


class ChartDefinition(_Pinnable, CreateChartBody):
    """A chart; ``data_source`` is a data source's name (defined here or on the platform) or id."""

    data_source_id: Text = Field(validation_alias="data_source")
    options: dict[str, Any] = {}


class PlacementDefinition(_AsWritten, ChartPlacement):
    """A chart's place on a dashboard; ``chart`` is a chart's name (defined here or on the platform) or id."""

    chart_id: Text = Field(validation_alias="chart")
    x: GridPosition
    y: GridPosition
    w: GridSize
    h: GridSize


def _not_repeated(value: Any) -> Any:
    if isinstance(value, _Repeated):
        raise _Refusal(f"{value.tag!r} is listed twice; keep one")
    return value


class _Repeated:
    """A tag already listed before it: refused in its own place, beside any other tag's problem."""

    def __init__(self, tag: str) -> None:
        self.tag = tag


class DashboardDefinition(_Pinnable, DashboardBody):
    """A dashboard: ``description`` is ``""`` and ``tags`` and ``layout`` empty when not given."""

    description: str = ""
    tags: list[Annotated[Text, BeforeValidator(_not_repeated)]] = []
    # a narrower item than the base's: pydantic validates this one; lists are invariant to mypy, not here
    layout: list[PlacementDefinition] = []  # type: ignore[assignment]

    @field_validator("tags", mode="before")
    @classmethod
    def _mark_repeated(cls, value: Any) -> Any:
        if not isinstance(value, list):
            return value
        seen: set[str] = set()
        marked: list[Any] = []
        for tag in value:
            repeated = isinstance(tag, str) and tag.strip() and tag in seen
            marked.append(_Repeated(tag) if repeated else tag)
            if isinstance(tag, str):
                seen.add(tag)
        return marked


class WorkflowDefinition(_Pinnable, CreateWorkflowBody):
    """A workflow: ``configuration`` (an object) and ``description`` (``""`` when not given)."""

    description: str = ""


SCHEMAS: dict[Kind, type[StrictBody]] = {
    "data_source": DataSourceDefinition,
    "chart": ChartDefinition,
    "dashboard": DashboardDefinition,
    "workflow": WorkflowDefinition,
}
