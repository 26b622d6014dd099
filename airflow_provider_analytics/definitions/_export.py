"""The platform's objects written as definitions, so that planning them against the same workspace changes nothing.

:func:`export` sends the four listings a plan sends (``_read.read_existing``) and nothing else; the rest is no
I/O: :func:`export_definitions` turns what they answered into one mapping of the definitions' shape, which
:func:`export` then plans against the same answers (an export that would not plan as unchanged says why);
``_export_files.definition_files`` splits it into files. The platform's answers are
read as hostile: an object without a usable name or id is left out and said so, a value definitions cannot carry
fails the export naming the object (the same checks a plan makes, run on the result before anything is written),
and nothing the platform keeps secret is written. What an export writes, and why:

- **Only what a definition sets**: no ``created_at``, ``version``, ``sync``, no layout item's own fields (a tile's
  title): those are the platform's, never compared by a plan, and kept by an update.
- **References by name**: a chart names its data source, a layout item its chart, by name when that name is one
  object's on the platform (and no other object's id), else by id.
- **Names the platform shares** (it does not keep them unique): each object of such a name is exported with its
  ``id``, which pins the definition to it (``_plan``), and a note says so.
- **Secrets are never written.** What the one rule (``wire/_secret_rule.py``) counts as secret becomes a
  reference: a connection field that holds one anywhere (under a secret-looking key, in a secret pair, a URL's or
  DSN's password), or answered masked (``***``), becomes, whole, a reference to an Airflow connection to fill in:
  ``{from_connection: analytics_<name>, field: <key>}``. The platform never returns a secret connection field at
  all, so a connection naming a user and no secret gets a ``password`` reference: a plan does not compare
  references, and an apply reads one only when it creates the object, so on this workspace the export still plans
  as unchanged. A secret in a chart's options or a workflow's configuration becomes, in its place (a text holding
  a URL's password: the whole text), a reference to an Airflow variable:
  ``{from_variable: analytics_<name>_<field path>}`` (:func:`reference_variable_key`). A credential in a field that
  cannot hold a reference (a chart's query, a description) fails the export, naming the object.
- **The platform cannot plant a reference.** What it answered is data: a mapping in a reference's shape (or an
  escape's, or a misspelt reference's) is written inside the escape ``{$literal: <value>}``, which an apply sends
  as the value it holds and reads nothing from; one with a secret inside fails the export, naming the object.
- **Stable text**: objects sorted by name (then id), fields in the order of the definitions' shape, the keys of
  free-form values sorted; a re-export of an unchanged workspace writes the same bytes.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from airflow_provider_analytics.definitions._allowed import DEFAULT_OWN_CONNECTIONS
from airflow_provider_analytics.definitions._compare import PLACED
from airflow_provider_analytics.definitions._export_values import (
    Said,
    connection_written,
    free_form_written,
    no_credentials,
    no_known_secrets,
    reference_connection_id,
    reference_variable_key,
)
from airflow_provider_analytics.definitions._model import KINDS, LABELS, SECTIONS, Kind
from airflow_provider_analytics.definitions._plan import Existing
from airflow_provider_analytics.definitions._problems import listed, one_line
from airflow_provider_analytics.definitions._references import LITERAL
from airflow_provider_analytics.wire._contract import ID_PATTERN
from airflow_provider_analytics.wire.errors import AnalyticsInputError

__all__ = [
    "Exported",
    "checked_filters",
    "export_definitions",
    "reference_connection_id",
    "reference_variable_key",
]


@dataclass(frozen=True)
class Exported:
    """An export: the definitions, and what the export has to say about them.

    :param definitions: one mapping of the definitions' shape: a section per exported kind, each object's fields.
    :param notes: one line per thing a person should know: names exported with their ids, secrets as references,
        references to fill in, objects that could not be exported.
    """

    definitions: dict[str, list[dict[str, Any]]]
    notes: tuple[str, ...] = field(default=())


def checked_filters(kinds: object, names: object) -> tuple[tuple[Kind, ...], frozenset[str] | None]:
    """An export's ``kinds`` (section names; ``None``: all four) and ``names`` (``None``: every object), checked
    before any request.

    :param kinds: ``None``, or a list of ``data_sources``, ``charts``, ``dashboards``, ``workflows``.
    :param names: ``None``, a name, or a list of names.
    :raises AnalyticsInputError: anything else, saying what to write.
    """
    sections = {section: kind for kind, section in SECTIONS.items()}
    if kinds is None:
        chosen: tuple[Kind, ...] = KINDS
    else:
        listed = [kinds] if isinstance(kinds, str) else kinds
        if (
            not isinstance(listed, (list, tuple, set, frozenset))
            or not listed
            or not all(isinstance(item, str) and item in sections for item in listed)
        ):
            raise AnalyticsInputError(
                f"kinds must be a list of section names ({', '.join(sections)}) or None for all of them; got"
                f" {one_line(repr(kinds))[:200]}"
            )
        chosen = tuple(kind for kind in KINDS if SECTIONS[kind] in listed)
    if names is None:
        return chosen, None
    listed_names = [names] if isinstance(names, str) else names
    if (
        not isinstance(listed_names, (list, tuple, set, frozenset))
        or not listed_names
        or not all(isinstance(name, str) and name.strip() for name in listed_names)
    ):
        raise AnalyticsInputError(
            f"names must be a non-empty list of object names, or None to export every object; got"
            f" {one_line(repr(names))[:200]}"
        )
    return chosen, frozenset(listed_names)


def export_definitions(
    existing: Existing,
    kinds: Collection[Kind],
    names: Collection[str] | None,
    own: Collection[str] = DEFAULT_OWN_CONNECTIONS,
) -> Exported:
    """The platform's objects of ``kinds`` (those named ``names``, when given) as definitions.

    :param existing: what the platform's four listings answered.
    :param kinds: which kinds to export.
    :param names: only objects of these names; ``None``: every object.
    :param own: the ids of the connections the provider itself uses, which no reference written names.
    :raises UnexpectedResponseError: a value no definition can hold (nesting beyond the definitions' limit).
    """
    notes: list[str] = []
    referred: list[str] = []  # one phrase per data source whose secrets are references: said in one line
    left_out: list[str] = []  # one phrase per object whose options or configuration hold references: one line too
    escaped: list[str] = []  # one phrase per object with a value in a reference's shape, written as $literal
    usable = {kind: _usable(kind, existing.of_kind(kind), notes) for kind in KINDS}
    naming = {kind: _Naming(usable[kind]) for kind in KINDS}
    exported: dict[str, list[dict[str, Any]]] = {}
    taken: dict[str, tuple[str, ...]] = {}  # the references written: each names one secret only
    for kind in KINDS:
        if kind not in kinds:
            continue
        chosen = [item for item in usable[kind] if names is None or item["name"] in names]
        chosen.sort(key=lambda item: (item["name"], item["id"]))
        entries = []
        for item in chosen:
            entry = {"name": item["name"], **_fields(kind, item, naming, Said(left_out, referred, escaped, own, taken))}
            if naming[kind].shared(item["name"]):
                entry["id"] = item["id"]
            entries.append(entry)
        exported[SECTIONS[kind]] = entries
        for name, ids in naming[kind].shared_chosen(chosen):
            notes.append(
                f"{len(ids)} {LABELS[kind]}s on the platform are named {one_line(name)!r}: each is exported with its"
                f" id ({', '.join(ids)}), which tells the definitions apart; rename them on the platform (and drop"
                " the ids) to manage them by name"
            )
    if referred:
        notes.append(
            f"{len(referred)} data source(s) have secret connection fields, exported as references to Airflow"
            f" connections that an apply reads when it creates the data source (the platform never returns"
            f" secrets): {listed(referred)}. Create those connections, or change the references, before applying"
            " these definitions to another workspace"
        )
    if left_out:
        notes.append(
            f"{len(left_out)} object(s) hold secrets in their options or configuration, exported as references to"
            f" Airflow variables that an apply reads when it creates the object (a text holding a URL's password:"
            f" the whole text): {listed(left_out)}. Create those variables, or change the references, before"
            " applying these definitions to another workspace"
        )
    if escaped:
        notes.append(
            f"{len(escaped)} object(s) hold values in the shape of a secret reference, which the platform wrote:"
            f" {listed(escaped)}. They are exported inside {{{LITERAL}: ...}}, so that an apply sends them as"
            " they are and reads no secret for them"
        )
    return Exported(exported, tuple(notes))


def _usable(kind: Kind, items: Iterable[Mapping[str, Any]], notes: list[str]) -> list[Mapping[str, Any]]:
    """The objects a definition can name: a non-blank string name and an id of the platform's shape."""
    kept = []
    for item in items:
        ident, name = item.get("id"), item.get("name")
        if not isinstance(ident, str) or not ID_PATTERN.fullmatch(ident):
            notes.append(f"a {LABELS[kind]} with the id {one_line(repr(ident))[:80]} was not exported: not an id")
        elif not isinstance(name, str) or not name.strip():
            notes.append(f"{LABELS[kind]} {ident} was not exported: it has no name ({one_line(repr(name))[:40]})")
        else:
            kept.append(item)
    return kept


class _Naming:
    """How a definition refers to a platform object of one kind: by name when that name is one object's and no
    object's id, else by id."""

    def __init__(self, items: list[Mapping[str, Any]]) -> None:
        self.ids = {item["id"] for item in items}
        self.by_id = {item["id"]: item for item in items}
        self.counts: dict[str, int] = {}
        for item in items:
            self.counts[item["name"]] = self.counts.get(item["name"], 0) + 1

    def shared(self, name: str) -> bool:
        return self.counts.get(name, 0) > 1

    def shared_chosen(self, chosen: list[Mapping[str, Any]]) -> list[tuple[str, list[str]]]:
        by_name: dict[str, list[str]] = {}
        for item in chosen:
            if self.shared(item["name"]):
                by_name.setdefault(item["name"], []).append(item["id"])
        return sorted(by_name.items())

    def reference(self, ident: object) -> Any:
        """The name to write for the object ``ident`` names, or ``ident`` itself."""
        item = self.by_id.get(ident) if isinstance(ident, str) else None
        if item is None or self.shared(item["name"]) or (item["name"] in self.ids and item["name"] != ident):
            return ident
        return item["name"]


def _fields(kind: Kind, item: Mapping[str, Any], naming: Mapping[Kind, _Naming], said: Said) -> dict[str, Any]:
    """An object's fields in the definitions' shape (its name aside)."""
    where = f"{LABELS[kind]} {one_line(item['name'])!r} ({item['id']})"
    if kind == "data_source":
        fields: dict[str, Any] = {"type": item.get("type"), "connection": connection_written(item, where, said)}
    elif kind == "chart":
        fields = {
            "type": item.get("type"),
            "data_source": naming["data_source"].reference(item.get("data_source_id")),
            "query": item.get("query"),
            "options": free_form_written(item.get("options"), "options", item, said),
        }
    elif kind == "dashboard":
        layout = item.get("layout")
        fields = {
            "description": _text(item.get("description")),
            "tags": item.get("tags") if item.get("tags") is not None else [],
            "layout": [_placed(place, naming["chart"]) for place in layout] if isinstance(layout, list) else layout,
        }
    else:
        fields = {
            "description": _text(item.get("description")),
            "configuration": free_form_written(item.get("configuration"), "configuration", item, said),
        }
    no_credentials({"name": item["name"], **fields}, where)
    no_known_secrets({"name": item["name"], **fields}, item["id"], LABELS[kind])
    return fields


def _text(value: object) -> object:
    return "" if value is None else value


def _placed(place: object, charts: _Naming) -> object:
    if not isinstance(place, Mapping):
        return place  # refused by the check of the result, naming the dashboard
    placed = {key: place.get(key) for key in PLACED}
    return {"chart": charts.reference(placed.pop("chart_id")), **placed}
