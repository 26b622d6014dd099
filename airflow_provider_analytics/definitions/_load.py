"""Load definitions and check them whole, before any request: :func:`load_definitions`.

Every problem is reported together in one :class:`AnalyticsInputError`, one line each:
``<file>: <section>[<index>] '<name>': <field>: <what is wrong and what to do>``. Typos are never ignored: an unknown
section or field is an error naming the nearest known one. Values JSON cannot carry (a YAML date, a set, a
non-string key, ``nan``, an integer beyond :data:`MAX_INTEGER`) are refused rather than converted, since they would
be sent to the platform as something else, and so are values a file's parser refused in place
(:class:`~airflow_provider_analytics.definitions._model.Refused`: a YAML 1.1 sexagesimal number, a date that does
not exist). Free-form values (a connection, chart options, a workflow's configuration) nest at most
:data:`MAX_DEPTH` deep and all sources together hold at most :data:`MAX_VALUES` values: a YAML alias expands in
place, so a small file could otherwise stand for billions of them (a YAML file is also budgeted while it is
parsed, ``_yaml``).

Grid positions (``x``, ``y``, ``w``, ``h``) are required: the contract fixes no defaults, and a default guessed here
that the platform did not share would show every dashboard as changed on every run.
"""

from __future__ import annotations

import datetime
import difflib
import math
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

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
    Refused,
    WorkflowDef,
)
from airflow_provider_analytics.definitions._problems import Problems
from airflow_provider_analytics.wire._contract import ChartType

__all__ = ["MAX_DEPTH", "MAX_INTEGER", "MAX_VALUES", "DefinitionsSource", "load_definitions"]

_FIELDS: dict[Kind, tuple[str, ...]] = {
    "data_source": ("name", "type", "connection"),
    "chart": ("name", "type", "data_source", "query", "options"),
    "dashboard": ("name", "description", "tags", "layout"),
    "workflow": ("name", "configuration", "description"),
}
_LAYOUT_FIELDS = ("chart", "x", "y", "w", "h")
_CHART_TYPES = tuple(member.value for member in ChartType)
_PLAIN_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")


def load_definitions(source: DefinitionsSource) -> Definitions:
    """Read and check definitions; nothing is returned unless all of them are valid.

    :param source: a path or a glob (``.yaml``, ``.yml``, ``.json``), a mapping of sections (``data_sources``,
        ``charts``, ``dashboards``, ``workflows``), or a list of those.
    :raises AnalyticsInputError: listing every problem found, each with its file, object and field.
    """
    problems = Problems()
    documents = read_sources(source, problems)
    checker = _Checker(problems)
    by_kind: dict[Kind, list[Definition]] = {kind: [] for kind in KINDS}
    for label, document in documents:
        checker.document(label, document, by_kind)
    for kind in KINDS:
        _check_unique_names(kind, checker.named[kind], problems)
    problems.raise_if_any()
    return Definitions(
        data_sources=tuple(item for item in by_kind["data_source"] if isinstance(item, DataSourceDef)),
        charts=tuple(item for item in by_kind["chart"] if isinstance(item, ChartDef)),
        dashboards=tuple(item for item in by_kind["dashboard"] if isinstance(item, DashboardDef)),
        workflows=tuple(item for item in by_kind["workflow"] if isinstance(item, WorkflowDef)),
        sources=tuple(label for label, _ in documents),
    )


def _check_unique_names(kind: Kind, origins: Sequence[Origin], problems: Problems) -> None:
    first: dict[str, Origin] = {}
    for origin in origins:
        assert origin.name is not None  # only named objects are listed
        earlier = first.setdefault(origin.name, origin)
        if earlier is not origin:
            problems.add(
                f"{origin}: name: {SECTIONS[kind]} already has {origin.name!r} at {earlier}; a name identifies a"
                f" {LABELS[kind]} on the platform, so each must be unique in its section: rename one"
            )


def _suggest(key: object, known: Sequence[str]) -> str:
    close = difflib.get_close_matches(str(key), known, n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if close else ""


def _shown(value: object) -> str:
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > 10**40:
        # str() of an int over 4,300 digits raises ValueError: count its digits from its bits
        return f"an integer of about {int(value.bit_length() * math.log10(2)) + 1:,} digits"
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return f"{type_name(value)} {value!r}"
    return type_name(value)


def _out_of_range(value: int) -> str:
    return (
        f"is {_shown(value)}, beyond the integers JSON carries exactly (-(2**53 - 1) to 2**53 - 1); write it as a"
        " string to send it as text"
    )


class _NotJson(Exception):
    def __init__(self, path: str, problem: str) -> None:
        super().__init__(problem)
        self.path = path
        self.problem = problem


class _Checker:
    """Checks documents section by section; counts every free-form value against :data:`MAX_VALUES`."""

    def __init__(self, problems: Problems) -> None:
        self.problems = problems
        self.values = 0
        self.named: dict[Kind, list[Origin]] = {kind: [] for kind in KINDS}  # every object with a name, valid or not

    def document(self, label: str, document: Mapping[str, Any], by_kind: dict[Kind, list[Definition]]) -> None:
        kinds = {SECTIONS[kind]: kind for kind in KINDS}
        for section, entries in document.items():
            kind = kinds.get(section) if isinstance(section, str) else None
            if kind is None:
                self.problems.add(
                    f"{label}: {section!r}: is not a known section; the sections are {section_names()}"
                    + _suggest(section, list(kinds))
                )
            elif entries is not None and not isinstance(entries, (list, tuple)):
                self.problems.add(f"{label}: {section}: must be a list of {LABELS[kind]}s, not {type_name(entries)}")
            else:
                for index, raw in enumerate(entries or ()):
                    entry = _Entry(self, Origin(label, section, index), raw, kind)
                    if entry.origin.name is not None:
                        self.named[kind].append(entry.origin)
                    parsed = self.entry(kind, entry)
                    if parsed is not None:
                        by_kind[kind].append(parsed)

    def entry(self, kind: Kind, entry: _Entry) -> Definition | None:
        if not entry.mapping:
            return None
        definition = _PARSERS[kind](entry)  # every field is checked, so that one run reports all their problems
        return definition if entry.valid else None

    def plain(self, value: Any, field: str) -> Any:
        """``value`` as plain JSON (a copy: aliases no longer shared), or :class:`_NotJson` saying where not.

        :param value: a free-form field's value.
        :param field: the field's name, where the path in a problem starts.
        """
        return self._plain(value, (None, field), 0)

    def _plain(self, value: Any, where: _Where, depth: int) -> Any:
        # ``where`` is formatted only for a problem: up to a million values pass here, and formatting each one's
        # path cost nine tenths of the check.
        self.values += 1
        if self.values > MAX_VALUES:
            raise _NotJson(
                _path(where), f"the definitions hold over {MAX_VALUES:,} values (YAML aliases expanding?); split them"
            )
        if depth > MAX_DEPTH:
            raise _NotJson(_path(where), f"nests more than {MAX_DEPTH} levels deep")
        if value is None or isinstance(value, (bool, str)):
            return value
        if isinstance(value, int):
            if abs(value) > MAX_INTEGER:
                raise _NotJson(_path(where), _out_of_range(value))
            return value
        if isinstance(value, float):
            if not math.isfinite(value):
                raise _NotJson(_path(where), f"is {value}, which JSON cannot carry")
            return value
        if isinstance(value, Mapping):
            plain: dict[str, Any] = {}
            for key, item in value.items():
                if isinstance(key, Refused):
                    raise _NotJson(_path(where), f"has the key {key}")
                if not isinstance(key, str):
                    problem = f"has the key {key!r} ({type_name(key)}); keys must be strings: quote it"
                    raise _NotJson(_path(where), problem)
                plain[key] = self._plain(item, (where, key), depth + 1)
            return plain
        if isinstance(value, (list, tuple)):
            return [self._plain(item, (where, index), depth + 1) for index, item in enumerate(value)]
        if isinstance(value, Refused):
            raise _NotJson(_path(where), str(value))
        hint = "; quote it to send it as text" if isinstance(value, (datetime.date, datetime.time)) else ""
        raise _NotJson(_path(where), f"is a {type(value).__name__}, which JSON cannot carry{hint}")


# Where a value is, as its parent's place and its own key or index: built in constant time per value.
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


class _Entry:
    """One object of a section being checked; each accessor records what is wrong and returns a stand-in."""

    def __init__(self, checker: _Checker, origin: Origin, raw: object, kind: Kind) -> None:
        self.checker = checker
        self.valid = True
        self.mapping = isinstance(raw, Mapping)
        fields = _FIELDS[kind]
        name = raw.get("name") if isinstance(raw, Mapping) else None
        named = isinstance(name, str) and bool(name.strip())
        self.origin = Origin(origin.source, origin.section, origin.index, name if named else None)
        self.raw: Mapping[Any, Any] = raw if isinstance(raw, Mapping) else {}
        if not isinstance(raw, Mapping):
            self.valid = False
            checker.problems.add(
                f"{self.origin}: must be a mapping with the fields {', '.join(fields)}, not {type_name(raw)}"
            )
            return
        for key in raw:
            if key not in fields:
                known = f"the fields are {', '.join(fields)}{_suggest(key, fields)}"
                self.problem(str(key), f"is not a known field of a {LABELS[kind]}; {known}")

    def problem(self, field: str, text: str) -> None:
        self.valid = False
        self.checker.problems.add(f"{self.origin}: {field}: {text}")

    def text(self, field: str, *, required: bool = True) -> str:
        value = self.raw.get(field)
        if value is None:
            if required:
                self.problem(field, "is required")
            return ""
        if not isinstance(value, str):
            self.problem(field, f"must be a string, got {_shown(value)}; quote it in YAML")
            return ""
        if required and not value.strip():
            self.problem(field, "must not be empty")
        return value

    def choice(self, field: str, allowed: Sequence[str]) -> str:
        value = self.text(field)
        if value and value not in allowed:
            self.problem(field, f"must be one of {', '.join(allowed)}, got {value!r}{_suggest(value, allowed)}")
        return value

    def json_object(self, field: str, *, required: bool = True) -> dict[str, Any]:
        value = self.raw.get(field)
        if value is None:
            if required:
                self.problem(field, "is required (a mapping)")
            return {}
        if not isinstance(value, Mapping):
            self.problem(field, f"must be a mapping, got {_shown(value)}")
            return {}
        try:
            plain: dict[str, Any] = self.checker.plain(value, field)
        except _NotJson as error:
            self.problem(error.path, error.problem)
            return {}
        return plain

    def tags(self) -> tuple[str, ...]:
        value = self.raw.get("tags")
        if value is None:
            return ()
        if not isinstance(value, (list, tuple)):
            self.problem("tags", f"must be a list of strings, got {_shown(value)}")
            return ()
        seen: set[str] = set()
        for index, tag in enumerate(value):
            if not isinstance(tag, str) or not tag.strip():
                self.problem(f"tags[{index}]", f"must be a non-empty string, got {_shown(tag)}")
            elif tag in seen:
                self.problem(f"tags[{index}]", f"{tag!r} is listed twice; keep one")
            else:
                seen.add(tag)
        return tuple(tag for tag in value if isinstance(tag, str))

    def layout(self) -> tuple[LayoutItemDef, ...]:
        value = self.raw.get("layout")
        if value is None:
            return ()
        if not isinstance(value, (list, tuple)):
            self.problem("layout", f"must be a list of chart placements, got {_shown(value)}")
            return ()
        return tuple(item for index, raw in enumerate(value) if (item := self._layout_item(index, raw)) is not None)

    def _layout_item(self, index: int, raw: object) -> LayoutItemDef | None:
        where = f"layout[{index}]"
        if not isinstance(raw, Mapping):
            self.problem(where, f"must be a mapping with the fields {', '.join(_LAYOUT_FIELDS)}, not {type_name(raw)}")
            return None
        for key in raw:
            if key not in _LAYOUT_FIELDS:
                known = ", ".join(_LAYOUT_FIELDS)
                self.problem(
                    f"{where}.{key}",
                    f"is not a known field of a layout item; the fields are {known}{_suggest(key, _LAYOUT_FIELDS)}",
                )
        chart = raw.get("chart")
        if not isinstance(chart, str) or not chart.strip():
            got = "is required" if chart is None else f"must be a non-empty string, got {_shown(chart)}"
            self.problem(f"{where}.chart", f"{got} (a chart's name or id)")
        x, y = (self._whole(f"{where}.{key}", raw.get(key), 0) for key in "xy")
        w, h = (self._whole(f"{where}.{key}", raw.get(key), 1) for key in "wh")
        if not isinstance(chart, str) or x is None or y is None or w is None or h is None:
            return None
        return LayoutItemDef(chart, x, y, w, h)

    def _whole(self, field: str, value: object, minimum: int) -> int | None:
        if value is None:
            self.problem(field, "is required: give each chart's grid position and size (x, y, w, h)")
            return None
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            self.problem(field, f"must be a whole number of at least {minimum}, got {_shown(value)}")
            return None
        if value > MAX_INTEGER:
            self.problem(field, _out_of_range(value))
            return None
        return value


def _data_source(entry: _Entry) -> DataSourceDef:
    return DataSourceDef(entry.origin, entry.text("name"), entry.text("type"), entry.json_object("connection"))


def _chart(entry: _Entry) -> ChartDef:
    return ChartDef(
        entry.origin,
        entry.text("name"),
        entry.choice("type", _CHART_TYPES),
        entry.text("data_source"),
        entry.text("query"),
        entry.json_object("options", required=False),
    )


def _dashboard(entry: _Entry) -> DashboardDef:
    description = entry.text("description", required=False)
    return DashboardDef(entry.origin, entry.text("name"), description, entry.tags(), entry.layout())


def _workflow(entry: _Entry) -> WorkflowDef:
    configuration = entry.json_object("configuration")
    return WorkflowDef(entry.origin, entry.text("name"), configuration, entry.text("description", required=False))


_PARSERS: dict[Kind, Callable[[_Entry], Definition]] = {
    "data_source": _data_source,
    "chart": _chart,
    "dashboard": _dashboard,
    "workflow": _workflow,
}
