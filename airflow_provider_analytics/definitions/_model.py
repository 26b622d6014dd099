"""The parsed definitions: one frozen record per object, each remembering where it was written.

Every record may carry the ``id`` of the platform object it manages ("pinned"): it is then matched by that id, not
by its name, which is how two objects that share a name are told apart (an export writes it only for those).
Values are already checked (``_load``, with ``_schemas``): names and texts are strings, grid positions whole
numbers, and every free-form object (a connection, chart options, a workflow's configuration) plain JSON. A chart's
``data_source`` and a layout item's ``chart`` are references (a name or an id), resolved by ``_plan`` against
the other definitions and the platform.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

from airflow_provider_analytics.wire._request_bodies import MAX_INTEGER  # the one range, shared with the sandbox
from airflow_provider_analytics.wire._secret_rule import DROP, is_secret_key, map_secrets, mask_credentials

__all__ = [
    "KINDS",
    "LABELS",
    "MAX_DEPTH",
    "MAX_FILE_BYTES",
    "MAX_INTEGER",
    "MAX_VALUES",
    "SECTIONS",
    "Action",
    "ChartDef",
    "DashboardDef",
    "DataSourceDef",
    "Definition",
    "Definitions",
    "Kind",
    "LayoutItemDef",
    "Origin",
    "Refused",
    "SecretRef",
    "WorkflowDef",
    "is_secret_field",
    "without_secrets",
]

Kind = Literal["data_source", "chart", "dashboard", "workflow"]
# Dependency order: a chart needs its data source, a dashboard its charts; workflows need nothing.
KINDS: tuple[Kind, ...] = ("data_source", "chart", "dashboard", "workflow")
# What applying a plan does to one object (``_plan.py``).
Action = Literal["create", "update", "unchanged", "cannot_apply", "not_managed"]
SECTIONS: dict[Kind, str] = {
    "data_source": "data_sources",
    "chart": "charts",
    "dashboard": "dashboards",
    "workflow": "workflows",
}
LABELS: dict[Kind, str] = {
    "data_source": "data source",
    "chart": "chart",
    "dashboard": "dashboard",
    "workflow": "workflow",
}

# Free-form values (a connection, chart options, a workflow's configuration) nest at most MAX_DEPTH deep, and all
# sources together hold at most MAX_VALUES values: a YAML alias stands for its whole anchor, so a small file could
# otherwise stand for billions of them.
MAX_DEPTH = 100
MAX_VALUES = 1_000_000
# The largest definitions file read, and the most text one file may stand for with its aliases expanded.
MAX_FILE_BYTES = 10 * 1024 * 1024


def is_secret_field(name: str) -> bool:
    """Whether a field's name marks its value secret: the key part of the one rule of
    ``wire/_secret_rule.py`` (docs/hook.md, "Secrets"), for every section: a connection's fields (write-only on
    the platform), chart options and workflow configuration.

    :param name: the field's name.
    """
    return is_secret_key(name)


def without_secrets(value: Any, mask: str | None = None) -> Any:
    """``value`` with every secret of the one rule at any depth dropped (or, given ``mask``, replaced by it): a
    secret key's value, a secret pair's second item, a named secret's ``value``; a credential inside a text
    (a URL's password) is replaced by ``mask`` (``(secret)`` when none is given) within the text.

    :param value: a connection, or a value inside one.
    :param mask: what to put in place of a secret value; ``None`` drops a mapping's key (and leaves ``None`` in a
        pair).
    """

    return map_secrets(
        value,
        lambda _path, _secret: DROP if mask is None else mask,
        lambda _path, text, _credentials: mask_credentials(text, mask or "(secret)"),
    )


@dataclass(frozen=True, repr=False)
class Refused:
    """A value written in a file that the definitions refuse, kept in its place so that the check names the object
    and field holding it: ``190:20:30`` (YAML 1.1 reads it as 685230), a date out of range, a huge integer.

    :param text: the value as written (cut to 40 characters).
    :param what: what it is, after ``is``: ``a YAML 1.1 sexagesimal number (685230 in YAML 1.1, text in 1.2)``.
    :param advice: what to write instead.
    :param line: the line it is on (from 1), when the parser says.
    """

    text: str
    what: str
    advice: str
    line: int | None = None

    @property
    def shown(self) -> str:
        """The value as written, and its line when known: ``'190:20:30' (line 4)``."""
        return repr(self.text) + ("" if self.line is None else f" (line {self.line})")

    def __str__(self) -> str:
        return f"{self.shown} is {self.what}; {self.advice}"

    def __repr__(self) -> str:  # a message that shows an unexpected value with !r shows what was written
        return self.shown


@dataclass(frozen=True)
class Origin:
    """Where a definition was written, for messages: ``sales.yaml: charts[2] 'Revenue'``.

    :param source: the file's path, or ``definitions`` / ``definitions[i]`` for a mapping given directly.
    :param section: ``data_sources``, ``charts``, ``dashboards`` or ``workflows``.
    :param index: the object's position in its section of that source.
    :param name: the object's name, when it has a valid one.
    """

    source: str
    section: str
    index: int
    name: str | None = None

    def __str__(self) -> str:
        where = f"{self.source}: {self.section}[{self.index}]"
        return where if self.name is None else f"{where} {self.name!r}"


@dataclass(frozen=True)
class SecretRef:
    """A connection field whose value stays in Airflow: read when a plan is applied, never when it is made, and
    never written anywhere (``_references.py``). In a file: ``{from_connection: warehouse_db, field: password}``
    or ``{from_variable: warehouse_password}``.

    :param source: ``connection`` (an Airflow connection) or ``variable`` (an Airflow variable).
    :param key: the connection's id, or the variable's key.
    :param field: which of the connection's fields: ``password``, ``login``, ``host``, ``port``, ``schema`` or a
        key of its extra; ``None`` for a variable.
    """

    source: Literal["connection", "variable"]
    key: str
    field: str | None = None

    def __str__(self) -> str:
        if self.source == "variable":
            return f"Airflow variable {self.key!r}"
        return f"field {self.field!r} of Airflow connection {self.key!r}"


@dataclass(frozen=True)
class DataSourceDef:
    """A data source: ``name``, ``type`` and ``connection`` (secret fields included, never shown). A connection
    field may be a :class:`SecretRef` instead of a value: only an apply reads it, into what it sends."""

    kind: ClassVar[Kind] = "data_source"

    origin: Origin
    name: str
    type: str
    connection: dict[str, Any] = field(repr=False)  # holds secrets: kept out of reprs, tracebacks and test output
    id: str | None = None


@dataclass(frozen=True)
class ChartDef:
    """A chart; ``data_source`` is a data source's name (defined here or on the platform) or id."""

    kind: ClassVar[Kind] = "chart"

    origin: Origin
    name: str
    type: str
    data_source: str
    query: str
    options: dict[str, Any]
    id: str | None = None


@dataclass(frozen=True)
class LayoutItemDef:
    """A chart's place on a dashboard; ``chart`` is a chart's name (defined here or on the platform) or id."""

    chart: str
    x: int
    y: int
    w: int
    h: int


@dataclass(frozen=True)
class DashboardDef:
    """A dashboard: ``description`` is ``""`` and ``tags`` and ``layout`` empty when not given."""

    kind: ClassVar[Kind] = "dashboard"

    origin: Origin
    name: str
    description: str
    tags: tuple[str, ...]
    layout: tuple[LayoutItemDef, ...]
    id: str | None = None


@dataclass(frozen=True)
class WorkflowDef:
    """A workflow: ``configuration`` (an object) and ``description`` (``""`` when not given)."""

    kind: ClassVar[Kind] = "workflow"

    origin: Origin
    name: str
    configuration: dict[str, Any]
    description: str
    id: str | None = None


Definition = DataSourceDef | ChartDef | DashboardDef | WorkflowDef


@dataclass(frozen=True)
class Definitions:
    """Every object the sources define, by section, in the order read; names are unique within a section.

    :param data_sources: the data sources.
    :param charts: the charts.
    :param dashboards: the dashboards.
    :param workflows: the workflows.
    :param sources: what was read, in order: file paths, and ``definitions[i]`` for mappings.
    """

    data_sources: tuple[DataSourceDef, ...] = ()
    charts: tuple[ChartDef, ...] = ()
    dashboards: tuple[DashboardDef, ...] = ()
    workflows: tuple[WorkflowDef, ...] = ()
    sources: tuple[str, ...] = ()

    def free_form(self) -> list[dict[str, Any]]:
        """Every free-form object (connections, chart options, workflow configurations): where secrets may be."""
        return [
            *(source.connection for source in self.data_sources),
            *(chart.options for chart in self.charts),
            *(workflow.configuration for workflow in self.workflows),
        ]

    def of_kind(self, kind: Kind) -> tuple[Definition, ...]:
        """The definitions of one kind.

        :param kind: ``data_source``, ``chart``, ``dashboard`` or ``workflow``.
        """
        by_kind: dict[Kind, tuple[Definition, ...]] = {
            "data_source": self.data_sources,
            "chart": self.charts,
            "dashboard": self.dashboards,
            "workflow": self.workflows,
        }
        return by_kind[kind]
