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
- **Secrets are never written.** A connection field under a secret-looking key, or answered masked (``***``),
  becomes a reference to an Airflow connection to fill in: ``{from_connection: analytics_<name>, field: <key>}``.
  The platform never returns a secret connection field at all, so a connection naming a user and no secret gets a
  ``password`` reference: a plan does not compare references, and an apply reads one only when it creates the
  object, so on this workspace the export still plans as unchanged. A value under a secret-looking key in a
  chart's options or a workflow's configuration becomes, in its place, a reference to an Airflow variable:
  ``{from_variable: analytics_<name>_<field path>}`` (:func:`reference_variable_key`).
- **Stable text**: objects sorted by name (then id), fields in the order of the definitions' shape, the keys of
  free-form values sorted; a re-export of an unchanged workspace writes the same bytes.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from airflow_provider_analytics.definitions._compare import PLACED, is_masked
from airflow_provider_analytics.definitions._model import KINDS, LABELS, MAX_DEPTH, SECTIONS, Kind, is_secret_field
from airflow_provider_analytics.definitions._plan import Existing
from airflow_provider_analytics.definitions._problems import listed, one_line
from airflow_provider_analytics.wire._contract import ID_PATTERN
from airflow_provider_analytics.wire.errors import AnalyticsInputError, UnexpectedResponseError

__all__ = [
    "Exported",
    "checked_filters",
    "export_definitions",
    "reference_connection_id",
    "reference_variable_key",
]

# Connection keys that name a user: such a connection has a password the platform never returns.
_USER_KEYS = frozenset({"user", "username", "login", "user_name"})
_NOT_SLUG = re.compile(r"[^a-z0-9]+")
_MOST_SLUG = 60


@dataclass(frozen=True)
class Exported:
    """An export: the definitions, and what the export has to say about them.

    :param definitions: one mapping of the definitions' shape: a section per exported kind, each object's fields.
    :param notes: one line per thing a person should know: names exported with their ids, secrets as references,
        references to fill in, objects that could not be exported.
    """

    definitions: dict[str, list[dict[str, Any]]]
    notes: tuple[str, ...] = field(default=())


def reference_connection_id(name: str, ident: str) -> str:
    """The Airflow connection a data source's exported secret fields refer to: ``analytics_<its name as a slug>``.

    :param name: the data source's name.
    :param ident: its id (the slug when the name has no letter or digit).
    """
    slug = _NOT_SLUG.sub("_", name.lower()).strip("_")[:_MOST_SLUG].strip("_")
    return f"analytics_{slug or ident.lower()}"


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


def export_definitions(existing: Existing, kinds: Collection[Kind], names: Collection[str] | None) -> Exported:
    """The platform's objects of ``kinds`` (those named ``names``, when given) as definitions.

    :param existing: what the platform's four listings answered.
    :param kinds: which kinds to export.
    :param names: only objects of these names; ``None``: every object.
    :raises UnexpectedResponseError: a value no definition can hold (nesting beyond the definitions' limit).
    """
    notes: list[str] = []
    referred: list[str] = []  # one phrase per data source whose secrets are references: said in one line
    left_out: list[str] = []  # one phrase per object whose options or configuration hold references: one line too
    usable = {kind: _usable(kind, existing.of_kind(kind), notes) for kind in KINDS}
    naming = {kind: _Naming(usable[kind]) for kind in KINDS}
    exported: dict[str, list[dict[str, Any]]] = {}
    for kind in KINDS:
        if kind not in kinds:
            continue
        chosen = [item for item in usable[kind] if names is None or item["name"] in names]
        chosen.sort(key=lambda item: (item["name"], item["id"]))
        entries = []
        for item in chosen:
            entry = {"name": item["name"], **_fields(kind, item, naming, left_out, referred)}
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
            f" Airflow variables that an apply reads when it creates the object: {listed(left_out)}. Create those"
            " variables, or change the references, before applying these definitions to another workspace"
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


def _fields(
    kind: Kind, item: Mapping[str, Any], naming: Mapping[Kind, _Naming], left_out: list[str], referred: list[str]
) -> dict[str, Any]:
    """An object's fields in the definitions' shape (its name aside)."""
    where = f"{LABELS[kind]} {one_line(item['name'])!r} ({item['id']})"
    if kind == "data_source":
        return {"type": item.get("type"), "connection": _connection(item, where, referred)}
    if kind == "chart":
        return {
            "type": item.get("type"),
            "data_source": naming["data_source"].reference(item.get("data_source_id")),
            "query": item.get("query"),
            "options": _free_form(item.get("options"), "options", item, left_out),
        }
    if kind == "dashboard":
        layout = item.get("layout")
        return {
            "description": _text(item.get("description")),
            "tags": item.get("tags") if item.get("tags") is not None else [],
            "layout": [_placed(place, naming["chart"]) for place in layout] if isinstance(layout, list) else layout,
        }
    return {
        "description": _text(item.get("description")),
        "configuration": _free_form(item.get("configuration"), "configuration", item, left_out),
    }


def _text(value: object) -> object:
    return "" if value is None else value


def _placed(place: object, charts: _Naming) -> object:
    if not isinstance(place, Mapping):
        return place  # refused by the check of the result, naming the dashboard
    placed = {key: place.get(key) for key in PLACED}
    return {"chart": charts.reference(placed.pop("chart_id")), **placed}


def _connection(item: Mapping[str, Any], where: str, referred: list[str]) -> object:
    held = item.get("connection")
    if held is None:
        return {}
    if not isinstance(held, Mapping):
        return held  # refused by the check of the result
    conn_id = reference_connection_id(item["name"], item["id"])
    written: dict[str, Any] = {}
    for key in sorted(held):
        value = held[key]
        if is_secret_field(key) or is_masked(value):
            written[key] = {"from_connection": conn_id, "field": key}
        else:
            # a secret nested deeper is not compared by a plan either (``without_secrets``): left out, unsaid
            written[key] = _cleaned(value, f"connection.{key}", 2, where, [])
    has_reference = any(isinstance(value, Mapping) and "from_connection" in value for value in written.values())
    if not has_reference and _USER_KEYS & {key.lower() for key in written if isinstance(key, str)}:
        written["password"] = {"from_connection": conn_id, "field": "password"}
    refs = sorted(key for key, value in written.items() if isinstance(value, Mapping) and "from_connection" in value)
    if refs:
        referred.append(f"{where}: {', '.join(refs)} from {conn_id!r}")
    return written


def _free_form(value: object, name: str, item: Mapping[str, Any], left_out: list[str]) -> object:
    if value is None and name == "options":
        return {}
    if not isinstance(value, Mapping):
        return value  # refused by the check of the result
    where = f"{LABELS['chart' if name == 'options' else 'workflow']} {one_line(item['name'])!r} ({item['id']})"
    secrets: list[str] = []

    def refer(path: str) -> dict[str, str]:
        return {"from_variable": reference_variable_key(item["name"], item["id"], path)}

    kept = _cleaned(value, name, 1, where, secrets, refer)
    if secrets:
        keys = ", ".join(f"{path} from {refer(path)['from_variable']!r}" for path in secrets)
        left_out.append(f"{where}: {keys}")
    return kept


def reference_variable_key(name: str, ident: str, path: str) -> str:
    """The Airflow variable a secret of a chart's options or a workflow's configuration refers to once exported:
    ``analytics_<the object's name>_<the field's path>``, as slugs.

    :param name: the object's name.
    :param ident: its id (the slug when the name has no letter or digit).
    :param path: the secret's path: ``configuration.auth.api_token``.
    """
    return f"{reference_connection_id(name, ident)}_{_NOT_SLUG.sub('_', path.lower()).strip('_')}"[:250]


def _cleaned(
    value: Any, path: str, depth: int, where: str, secrets: list[str], refer: Callable[[str], Any] | None = None
) -> Any:
    """``value`` with each secret-looking key's value replaced by ``refer(its path)`` (left out without ``refer``),
    each such path added to ``secrets``, and the keys of every mapping sorted so that a re-export writes the same
    text."""
    if depth > MAX_DEPTH:
        raise UnexpectedResponseError(
            f"the platform's {where} holds a value nested more than {MAX_DEPTH} levels deep, which definitions"
            " cannot carry: export the other objects (kinds=, names=)"
        )
    if isinstance(value, Mapping):
        kept = {}
        for key in sorted(value, key=str):
            inner = f"{path}.{key}"
            if is_secret_field(key):
                secrets.append(inner)
                if refer is not None:
                    kept[key] = refer(inner)
            else:
                kept[key] = _cleaned(value[key], inner, depth + 1, where, secrets, refer)
        return kept
    if isinstance(value, list):
        return [
            _cleaned(item, f"{path}[{index}]", depth + 1, where, secrets, refer) for index, item in enumerate(value)
        ]
    return value
