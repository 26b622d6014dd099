"""Load definitions and check them whole, before any request: :func:`load_definitions`.

Each object is validated by its pydantic model (``_schemas``: the request body that creates it, as a file writes it),
and every problem is reported together in one :class:`AnalyticsInputError`, one line each:
``<file>: <section>[<index>] '<name>': <field>: <what is wrong and what to do>``. This module turns pydantic's
errors (a location, a type, the input) into those lines: it names the field, never shows a text the file wrote (a
connection's values are secrets; pydantic's own messages would repeat them), and puts an unknown field, with the
nearest known one, before the problems of the fields beside it. Typos are never ignored: an unknown section or field
is an error naming the nearest known one. A data source's connection field may be a reference to a secret kept
in Airflow, checked here and kept as a ``SecretRef`` (``_references.py``).
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from typing import Any, get_args

from pydantic import BaseModel, ValidationError

from airflow_provider_analytics.definitions._files import DefinitionsSource, read_sources, section_names, type_name
from airflow_provider_analytics.definitions._model import (
    KINDS,
    LABELS,
    MAX_DEPTH,
    MAX_INTEGER,
    MAX_VALUES,
    SECTIONS,
    ChartDef,
    DashboardDef,
    DataSourceDef,
    Definition,
    Definitions,
    Kind,
    LayoutItemDef,
    Origin,
    WorkflowDef,
)
from airflow_provider_analytics.definitions._problems import Problems
from airflow_provider_analytics.definitions._references import nested_references_in, references_in
from airflow_provider_analytics.definitions._schemas import (
    SCHEMAS,
    ChartDefinition,
    DashboardDefinition,
    DataSourceDefinition,
    PlacementDefinition,
    ValueBudget,
    WorkflowDefinition,
    out_of_range,
    refusal,
    shown,
)
from airflow_provider_analytics.wire._contract import MAX_REQUEST_BODY_BYTES
from airflow_provider_analytics.wire._request_json import Unsendable, measure, shown_path

__all__ = ["MAX_DEPTH", "MAX_INTEGER", "MAX_VALUES", "DefinitionsSource", "load_definitions", "load_documents"]

# One of pydantic's errors (its ``_Details``): ``loc``, ``type``, ``input`` and ``ctx``.
_Details = Mapping[str, Any]

# What "is required" adds, by field: what to write there.
_REQUIRED = {
    "connection": " (a mapping)",
    "configuration": " (a mapping)",
    "chart": " (a chart's name or id)",
    **dict.fromkeys("xywh", ": give each chart's grid position and size (x, y, w, h)"),
}


def load_definitions(source: DefinitionsSource) -> Definitions:
    """Read and check definitions; nothing is returned unless all of them are valid.

    :param source: a path or a glob (``.yaml``, ``.yml``, ``.json``), a mapping of sections (``data_sources``,
        ``charts``, ``dashboards``, ``workflows``), or a list of those.
    :raises AnalyticsInputError: listing every problem found, each with its file, object and field.
    """
    problems = Problems()
    return _checked(read_sources(source, problems), problems)


def load_documents(documents: Sequence[tuple[str, Mapping[str, Any]]], problems: Problems) -> Definitions:
    """Check documents read already (each file's label and top-level mapping) as one set, as
    :func:`load_definitions` checks what it reads: what an export checks the files it writes with.

    :param documents: each document's label (a file's path) and its top-level mapping.
    :param problems: where the problems go, and the words of the error that lists them.
    :raises AnalyticsInputError: listing every problem found.
    """
    return _checked(list(documents), problems)


def _checked(documents: list[tuple[str, Mapping[str, Any]]], problems: Problems) -> Definitions:
    budget = ValueBudget()  # shared by every source: MAX_VALUES counts them all
    # every object with a name, valid or not, with the id that pins it (if any)
    named: dict[Kind, list[tuple[Origin, object]]] = {kind: [] for kind in KINDS}
    by_kind: dict[Kind, list[Definition]] = {kind: [] for kind in KINDS}
    kinds = {SECTIONS[kind]: kind for kind in KINDS}
    for label, document in documents:
        for section, entries in document.items():
            kind = kinds.get(section) if isinstance(section, str) else None
            if kind is None:
                problems.add(
                    f"{label}: {section!r}: is not a known section; the sections are {section_names()}"
                    + _suggest(section, list(kinds))
                )
            elif entries is not None and not isinstance(entries, (list, tuple)):
                problems.add(f"{label}: {section}: must be a list of {LABELS[kind]}s, not {type_name(entries)}")
            else:
                for index, raw in enumerate(entries or ()):
                    origin = Origin(label, section, index, _name_of(raw))
                    if origin.name is not None:
                        named[kind].append((origin, raw.get("id") if isinstance(raw, Mapping) else None))
                    definition = _validated(kind, origin, raw, budget, problems)
                    if definition is not None:
                        by_kind[kind].append(definition)
    for kind in KINDS:
        _check_unique_names(kind, named[kind], problems)
    problems.raise_if_any()
    return Definitions(
        data_sources=tuple(item for item in by_kind["data_source"] if isinstance(item, DataSourceDef)),
        charts=tuple(item for item in by_kind["chart"] if isinstance(item, ChartDef)),
        dashboards=tuple(item for item in by_kind["dashboard"] if isinstance(item, DashboardDef)),
        workflows=tuple(item for item in by_kind["workflow"] if isinstance(item, WorkflowDef)),
        sources=tuple(label for label, _ in documents),
    )


def _name_of(raw: object) -> str | None:
    name = raw.get("name") if isinstance(raw, Mapping) else None
    return name if isinstance(name, str) and name.strip() else None


def _validated(kind: Kind, origin: Origin, raw: object, budget: ValueBudget, problems: Problems) -> Definition | None:
    """The object's record, or ``None`` with each of its problems recorded."""
    unsendable = _unsendable(kind, raw)
    if unsendable is not None:
        problems.add(f"{origin}: {unsendable}")
        return None
    try:
        model = SCHEMAS[kind].model_validate(raw, context=budget)
    except ValidationError as error:
        for details in _in_order([_key_named(details) for details in error.errors(include_url=False)]):
            problems.add(_problem(origin, kind, details))
        return None
    if isinstance(model, DataSourceDefinition):
        connection, wrong = references_in(model.connection)  # secrets kept in Airflow, read only by an apply
        for line in wrong:
            problems.add(f"{origin}: {line}")
        return None if wrong else DataSourceDef(origin, model.name, model.type, connection, model.id)
    if isinstance(model, DashboardDefinition):
        layout = tuple(LayoutItemDef(item.chart_id, item.x, item.y, item.w, item.h) for item in model.layout)
        return DashboardDef(origin, model.name, model.description, tuple(model.tags), layout, model.id)
    # Secrets kept in Airflow may sit at any depth of chart options and workflow configurations.
    field = "options" if isinstance(model, ChartDefinition) else "configuration"
    free_form, wrong = nested_references_in(getattr(model, field), field)
    for line in wrong:
        problems.add(f"{origin}: {line}")
    if wrong:
        return None
    if isinstance(model, ChartDefinition):
        return ChartDef(origin, model.name, model.type, model.data_source_id, model.query, free_form, model.id)
    assert isinstance(model, WorkflowDefinition)
    return WorkflowDef(origin, model.name, free_form, model.description, model.id)


def _unsendable(kind: Kind, raw: object) -> str | None:
    """Why the object, as written, could not be sent in one request (``None`` when it could): over the platform's
    1 MiB as JSON, or holding a text UTF-8 cannot encode. Measured before anything else reads it, and only up to
    the limit: an object that stands for gigabytes (one text referred to from everywhere) costs about 1 MiB of
    work. The request an apply sends differs a little (a reference becomes an id, a secret its value): it is
    measured again before the apply's first write (``_apply``)."""
    found = measure(raw, MAX_REQUEST_BODY_BYTES, strict=False)
    if not isinstance(found, Unsendable):
        return None
    where = shown_path(found.path)
    if found.over_limit:
        return (
            f"the {LABELS[kind]} takes over 1 MiB as JSON (the limit is passed at {where or 'its start'}), more"
            " than the platform accepts in one request: make it smaller"
        )
    return f"{where}: {found.problem}" if where else found.problem


def _key_named(details: _Details) -> _Details:
    """A key that is not a string (``5:`` in YAML) is an unknown field too, named as written (its ``loc`` says 1 for
    ``true``, and only the value of a :class:`~airflow_provider_analytics.definitions._model.Refused` one)."""
    if details["type"] != "invalid_key":
        return details
    return {**details, "type": "extra_forbidden", "loc": (*details["loc"][:-1], str(details["input"]))}


def _check_unique_names(kind: Kind, named: Sequence[tuple[Origin, object]], problems: Problems) -> None:
    """A name identifies an object, so each is unique in its section; unless every definition of that name is
    pinned to a platform object by its ``id`` (the platform does not keep names unique), each id once."""
    by_name: dict[str, list[tuple[Origin, object]]] = {}
    for origin, ident in named:
        assert origin.name is not None  # only named objects are listed
        by_name.setdefault(origin.name, []).append((origin, ident))
    label = LABELS[kind]
    for name, same in by_name.items():
        if len(same) == 1:
            continue
        first = same[0][0]
        if any(ident is None for _, ident in same):
            for origin, _ in same[1:]:
                problems.add(
                    f"{origin}: name: {SECTIONS[kind]} already has {name!r} at {first}; a name identifies a {label}"
                    f" on the platform, so each must be unique in its section: rename one, or give each the 'id'"
                    f" of the platform {label} it manages"
                )
            continue
        seen: dict[object, Origin] = {}
        for origin, ident in same:
            earlier = seen.setdefault(ident, origin)
            if earlier is not origin:
                problems.add(f"{origin}: id: {ident!r} is already managed by {earlier}: keep one")


def _suggest(key: object, known: Sequence[str]) -> str:
    close = difflib.get_close_matches(str(key), known, n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if close else ""


def _in_order(errors: Sequence[_Details]) -> list[_Details]:
    """pydantic's errors in field order, an unknown field first among the fields beside it (it may explain them)."""
    first_seen: dict[tuple[Any, ...], int] = {}
    for details in errors:
        for depth in range(1, len(details["loc"]) + 1):
            first_seen.setdefault(details["loc"][:depth], len(first_seen))

    def rank(details: _Details) -> list[tuple[int, int]]:
        loc, unknown = details["loc"], details["type"] == "extra_forbidden"
        return [
            (0 if unknown and depth == len(loc) else 1, first_seen[loc[:depth]]) for depth in range(1, len(loc) + 1)
        ]

    return sorted(errors, key=rank)


def _field_path(loc: Sequence[int | str]) -> str:
    path = ""
    for part in loc:
        path += f"[{part}]" if isinstance(part, int) else (f".{part}" if path else str(part))
    return path


def _model_at(kind: Kind, loc: Sequence[int | str]) -> tuple[type[BaseModel], str]:
    """The model that holds the field at ``loc`` (its parent), and what a message calls it."""
    if tuple(loc[:1]) == ("layout",) and len(loc) >= 2:
        return PlacementDefinition, "layout item"
    return SCHEMAS[kind], LABELS[kind]


def _field_names(model: type[BaseModel]) -> list[str]:
    return [
        info.validation_alias if isinstance(info.validation_alias, str) else name
        for name, info in model.model_fields.items()
    ]


def _problem(origin: Origin, kind: Kind, details: _Details) -> str:
    """One line for one pydantic error: where, and what to change; a text the file wrote is never shown."""
    loc = details["loc"]
    own = refusal((details.get("ctx") or {}).get("error"))
    if own is not None:  # in the definitions' own words; inside a free-form value, the path goes on inside it
        path, problem = own
        return f"{origin}: {path or _field_path(loc)}: {problem}"
    text = _what(kind, loc, details["type"], details["input"])
    return f"{origin}: {_field_path(loc)}: {text}" if loc else f"{origin}: {text}"


def _what(kind: Kind, loc: Sequence[int | str], error: str, value: Any) -> str:
    field = loc[-1] if loc else None
    model, label = _model_at(kind, loc[:-1] if loc else loc)
    if error == "missing":
        return f"is required{_REQUIRED.get(str(field), '')}"
    if error == "extra_forbidden":
        known = _field_names(model)
        return f"is not a known field of a {label}; the fields are {', '.join(known)}{_suggest(field, known)}"
    if error == "model_type":
        model, _ = _model_at(kind, loc)
        return f"must be a mapping with the fields {', '.join(_field_names(model))}, not {type_name(value)}"
    if loc[:1] == ("tags",) and len(loc) == 2:
        return f"must be a non-empty string, got {shown(value)}"
    if field == "chart":
        return f"must be a non-empty string, got {shown(value)} (a chart's name or id)"
    if field in ("x", "y", "w", "h"):
        if error == "less_than_equal":
            return out_of_range(value)
        minimum = next(rule.ge for rule in model.model_fields[str(field)].metadata if hasattr(rule, "ge"))
        return f"must be a whole number of at least {minimum}, got {shown(value)}"
    if error == "dict_type":
        return f"must be a mapping, got {shown(value)}"
    if error == "list_type":
        items = "strings" if field == "tags" else "chart placements"
        return f"must be a list of {items}, got {shown(value)}"
    if error == "value_error" or (isinstance(value, str) and not value.strip()):
        return "must not be empty"
    if error == "literal_error" and isinstance(value, str):
        allowed = [str(choice) for choice in get_args(model.model_fields[str(field)].annotation)]
        return f"must be one of {', '.join(allowed)}, got {value!r}{_suggest(value, allowed)}"
    if error in ("string_type", "literal_error"):
        return f"must be a string, got {shown(value)}; quote it in YAML"
    return f"is not valid ({error})"
