"""How a definition compares with the platform's object: the normalisation ``_plan``'s docstring decides.

No I/O. Values here are plain JSON as the platform answered them, and definitions as ``_load`` checked them.
A connection's values never leave this module: a differing connection field is reported as :data:`HIDDEN`.
Nor does any other secret: a definition is compared with the platform's answers as they were sent (``_read``
reads them unmasked: they are data), and a secret by the one rule (``wire/_secret_rule.py``), in any section, is
shown only as :data:`SECRET_CHANGED` or :data:`SECRET_KEPT` (:func:`without_secret_values`), in the plan's table
and in its XCom value.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from airflow_provider_analytics.definitions._model import (
    LABELS,
    ChartDef,
    DashboardDef,
    DataSourceDef,
    Definition,
    Kind,
    SecretRef,
    WorkflowDef,
    is_secret_field,
    without_secrets,
)
from airflow_provider_analytics.wire._redaction import MASK, ScrubbedRepr
from airflow_provider_analytics.wire._secret_rule import Path, map_secrets, mask_credentials, secret_units
from airflow_provider_analytics.wire.errors import UnexpectedResponseError

__all__ = [
    "HIDDEN",
    "PLACED",
    "SECRET_CHANGED",
    "SECRET_KEPT",
    "FieldChange",
    "Pending",
    "Ref",
    "describe",
    "describe_hidden",
    "differences",
    "is_masked",
    "jsonable",
    "kept_layout",
    "version_of",
    "without_secret_values",
]

HIDDEN = "(not shown)"
# The fields of a layout item that definitions set and plans compare.
PLACED = ("chart_id", "x", "y", "w", "h")
_MASKS = frozenset({"[redacted]", "<redacted>", "redacted", "[hidden]", "<hidden>", "[secret]", "<secret>"})
# What the plan shows for a value under a secret-looking key (without_secret_values), in the table and in XCom.
SECRET_CHANGED = "(secret changed)"
SECRET_KEPT = "(secret)"


@dataclass(frozen=True)
class Pending:
    """An object this plan creates, referred to before it has an id."""

    kind: Kind
    name: str

    def __str__(self) -> str:
        return f"(new {LABELS[self.kind]} {self.name!r})"


Ref = str | Pending


@dataclass(frozen=True, repr=False)
class FieldChange(ScrubbedRepr):
    """One field that differs: what the platform holds (``before``) and what the definition says (``after``)."""

    field: str
    before: Any
    after: Any

    def to_dict(self) -> dict[str, Any]:
        """JSON-compatible form."""
        return {"field": self.field, "before": jsonable(self.before), "after": jsonable(self.after)}


def differences(
    definition: Definition, current: Mapping[str, Any], refs: tuple[Ref, ...]
) -> tuple[tuple[FieldChange, ...], list[str]]:
    """The fields that differ, and (data sources) the connection fields that could not be compared.

    :param definition: the definition.
    :param current: the platform's object of the same name.
    :param refs: the definition's resolved references (a chart's data source; a dashboard's layout items).
    """
    unseen: list[str] = []
    wanted: dict[str, Any]
    if isinstance(definition, DataSourceDef):
        wanted = {"type": definition.type}
    elif isinstance(definition, ChartDef):
        wanted = {
            "type": definition.type,
            "data_source_id": refs[0],
            "query": definition.query,
            "options": _as_held(definition.options, _current_value(current, "options"), "options", unseen),
        }
    elif isinstance(definition, DashboardDef):
        places = zip(refs, definition.layout, strict=True)  # one resolved reference per layout item
        layout = [{"chart_id": ref, "x": i.x, "y": i.y, "w": i.w, "h": i.h} for ref, i in places]
        wanted = {"description": definition.description, "tags": _tags(definition.tags), "layout": layout}
    else:
        assert isinstance(definition, WorkflowDef)
        held_configuration = current.get("configuration")
        configuration = _as_held(definition.configuration, held_configuration, "configuration", unseen)
        wanted = {"description": definition.description, "configuration": configuration}
    changes = [
        FieldChange(name, _current_value(current, name), value)
        for name, value in wanted.items()
        if not _same(value, _current_value(current, name))
    ]
    if isinstance(definition, DataSourceDef):
        held = current.get("connection")
        held = held if isinstance(held, Mapping) else {}
        for key, value in definition.connection.items():
            # A reference is read only by an apply (its value never enters a plan): like a secret, not compared.
            if is_secret_field(key) or isinstance(value, SecretRef) or key not in held or is_masked(held[key]):
                unseen.append(f"connection.{key}")
            elif not _same(without_secrets(value), without_secrets(held[key])):  # a secret may sit deeper too
                changes.append(FieldChange(f"connection.{key}", HIDDEN, HIDDEN))
    return tuple(changes), unseen


def _current_value(current: Mapping[str, Any], name: str) -> Any:
    value = current.get(name)
    if name == "description":
        return "" if value is None else value
    if name == "options":
        return {} if value is None else value
    if name in ("tags", "layout") and value is None:
        return []
    if name == "tags" and isinstance(value, list):
        return _tags(value)
    if name == "layout" and isinstance(value, list):
        # A layout item's other fields are the platform's own: not compared, and kept by an update (kept_layout).
        return [{key: item.get(key) for key in PLACED} if isinstance(item, Mapping) else item for item in value]
    return value


def kept_layout(layout: Sequence[Mapping[str, Any]], held: Any) -> list[dict[str, Any]]:
    """``layout`` (a definition's items, ids resolved) with every other field the platform holds on the same chart's
    item kept: an update is a ``PUT``, a full replacement, so what it leaves out the platform drops.

    The definitions set only :data:`PLACED`; a tile's title, its display settings or anything the platform adds
    must survive an update that changes, say, the description (and is not shown in the plan, as it is not
    changed). Items pair by chart, in order (the n-th item of a chart with the platform's n-th item of that
    chart), so moving a tile keeps its title while putting another chart in its place does not inherit it.

    :param layout: the items the update sends: ``chart_id``, ``x``, ``y``, ``w`` and ``h``.
    :param held: the platform's ``layout`` as the plan read it (anything: the platform's answer).
    """
    by_chart: dict[str, list[Mapping[str, Any]]] = {}
    for item in held if isinstance(held, list) else []:
        if isinstance(item, Mapping) and isinstance(item.get("chart_id"), str):
            by_chart.setdefault(item["chart_id"], []).append(item)
    kept: list[dict[str, Any]] = []
    for item in layout:
        same = by_chart.get(item["chart_id"])
        platform = same.pop(0) if same else {}
        kept.append({**item, **{key: value for key, value in platform.items() if key not in PLACED}})
    return kept


def _tags(tags: Sequence[Any]) -> list[Any]:
    return list(tags)  # ordered, as the contract shows them (_plan's docstring); sorted() here would make them a set


def version_of(current: Mapping[str, Any]) -> int:
    """A dashboard's ``version``, which an update's ``If-Match`` carries; never guessed.

    :param current: the dashboard as listed.
    :raises UnexpectedResponseError: it has no positive whole ``version``.
    """
    version = current.get("version")
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise UnexpectedResponseError(
            f"dashboard {current.get('id')} has no valid 'version' ({version!r}), so it cannot be updated safely"
        )
    return version


_ABSENT = object()
# What a reference the platform has no value for stands for in a comparison (and in the plan's fields).
FROM_AIRFLOW = "(read from Airflow)"


def _as_held(wanted: Any, held: Any, path: str, unseen: list[str]) -> Any:
    """``wanted`` with each reference to a secret kept in Airflow (a :class:`SecretRef`, anywhere in chart options
    or a workflow's configuration) replaced by what the platform holds in its place: a plan never reads Airflow's
    secrets, so a reference is not compared (it is named in ``unseen``), as a connection field kept there is not.
    Where the platform holds nothing, the key is still a difference (the platform's object lacks it)."""
    if isinstance(wanted, SecretRef):
        unseen.append(path)
        return FROM_AIRFLOW if held is _ABSENT else held
    if isinstance(wanted, Mapping):
        inner = held if isinstance(held, Mapping) else {}
        return {key: _as_held(item, inner.get(key, _ABSENT), f"{path}.{key}", unseen) for key, item in wanted.items()}
    if isinstance(wanted, list):
        items = held if isinstance(held, list) else []
        return [
            _as_held(item, items[index] if index < len(items) else _ABSENT, f"{path}[{index}]", unseen)
            for index, item in enumerate(wanted)
        ]
    return wanted


def is_masked(value: object) -> bool:
    """Whether the platform answered a value masked (``***``, ``[redacted]``...): it keeps it secret.

    :param value: a value as the platform answered it.
    """
    return isinstance(value, str) and bool(value) and (set(value) == {"*"} or value.lower() in _MASKS)


def _same(wanted: Any, held: Any) -> bool:
    """JSON equality: numbers by value (``2 == 2.0``), booleans only with booleans, a pending id with nothing."""
    if isinstance(wanted, bool) or isinstance(held, bool):
        return type(wanted) is type(held) and wanted == held
    if isinstance(wanted, (int, float)) and isinstance(held, (int, float)):
        return wanted == held
    if isinstance(wanted, Mapping) and isinstance(held, Mapping):
        return wanted.keys() == held.keys() and all(_same(wanted[key], held[key]) for key in wanted)
    if isinstance(wanted, (list, tuple)) and isinstance(held, list):
        return len(wanted) == len(held) and all(map(_same, wanted, held))
    return type(wanted) is type(held) and bool(wanted == held)


def jsonable(value: Any) -> Any:
    """``value`` with every :class:`Pending` written as text, tuples as lists: fit for JSON and XCom.

    :param value: a compared value.
    """
    if isinstance(value, Pending):
        return str(value)
    if isinstance(value, Mapping):
        return {str(key): jsonable(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(item) for item in value]
    return value


def describe(change: FieldChange) -> str:
    """One short phrase for a plan's table: ``description: "a" -> "b"``, ``layout: 2 -> 3 charts``.

    :param change: the differing field.
    """
    if change.before == HIDDEN:
        return f"{change.field} differs (values not shown)"
    if change.field == "layout" and isinstance(change.before, list) and isinstance(change.after, list):
        moved = [str(i) for i, (a, b) in enumerate(zip(change.before, change.after, strict=False)) if not _same(b, a)]
        counts = f"{len(change.before)} -> {len(change.after)} charts"
        return f"layout: {counts}" + (f", item {', '.join(moved)} changed" if moved else "")
    return f"{change.field}: {_short(change.before)} -> {_short(change.after)}"


def _short(value: Any, limit: int = 60) -> str:
    text = json.dumps(jsonable(value), ensure_ascii=False, default=str)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def without_secret_values(change: FieldChange) -> FieldChange:
    """``change`` with every secret of the one rule (at any depth: a workflow's ``configuration.api_token``, a
    chart's ``options.auth.password``, a password pair) replaced by :data:`SECRET_CHANGED` where it differs and
    :data:`SECRET_KEPT` where it does not (a URL's password masked within its text). The plan's table and its
    XCom value are made from what is left: a secret is never shown, and whether it changed is."""
    if is_secret_field(change.field.rsplit(".", 1)[-1]):
        return FieldChange(change.field, SECRET_CHANGED, SECRET_CHANGED)
    before, after = hide_secret_pair(change.before, change.after, SECRET_CHANGED, SECRET_KEPT)
    return FieldChange(change.field, before, after)


def describe_hidden(change: FieldChange) -> str:
    """The table's phrase for one field: only ``(secret changed)`` when nothing else in it differs."""
    if change.before == change.after and SECRET_CHANGED in json.dumps(jsonable(change.before), default=str):
        return f"{change.field}: {SECRET_CHANGED}"
    return describe(change)


def hide_secret_pair(before: Any, after: Any, changed: str, kept: str) -> tuple[Any, Any]:
    """Both sides of a difference with every secret (the one rule of ``wire/_secret_rule.py``, at any depth: a
    secret key's value, a secret pair's second item, a named secret's ``value``) hidden: each becomes ``changed``
    where the other side has no equal secret at the same place and ``kept`` where it has; a credential inside a
    text (a URL's password) is masked within the text.

    :param before: what the platform holds.
    :param after: what the definition says.
    :param changed: what a secret that differs is shown as.
    :param kept: what a secret that is the same on both sides is shown as.
    """
    secrets_before, secrets_after = secret_units(before), secret_units(after)

    def hidden(value: Any, other: dict[Path, Any]) -> Any:
        def word(path: Path, secret: Any) -> str:
            return kept if path in other and _same(other[path], secret) else changed

        return map_secrets(value, word, lambda _path, text, _found: mask_credentials(text, MASK))

    return hidden(before, secrets_after), hidden(after, secrets_before)
