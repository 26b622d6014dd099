"""Compare definitions with what the platform holds and decide what applying would do, per object. No I/O.

Which platform object each definition manages (by name, or by a pinned ``id``) and what each reference names are
decided in ``_match``; a pinned definition whose name differs from its object's is a change of ``name``. The
contract leaves open what counts as "the same"; these are the decisions, and each is one place to change:

- **What the platform fills in is never compared**: ``id``, ``created_at``, ``updated_at``, a dashboard's
  ``version``, a data source's ``sync``, and any field a definition does not have (the platform may add fields;
  the wire layer keeps them). Inside a layout item only ``chart_id``, ``x``, ``y``, ``w`` and ``h`` are compared;
  an update keeps the item's other fields as the platform holds them (``_compare.kept_layout``).
- **Absent means empty**: a ``description`` missing or ``null`` is ``""``, ``options`` missing or ``null`` is
  ``{}``, ``tags``/``layout`` missing or ``null`` are ``[]`` (the create endpoints make them optional, and the
  contract's examples show ``""`` and ``{}``).
- **Tags and layout keep their order.** The contract shows both as arrays and nowhere says tags are a set; a
  ``PUT`` sends them as written, and the platform answers them as given. A repeated tag is refused when loading.
  (A platform that sorted tags would show its dashboards changed on every run: ``_compare._tags`` is the
  place to change.)
- **Numbers** compare by value (``2`` equals ``2.0``); ``true`` is not ``1``. Strings compare exactly.
- **Data source connections**: secret fields (by name, ``is_secret_field``) are write-only on the platform and
  are never compared, shown or logged; a field the platform does not return, or returns masked (``***``), was
  marked secret by the platform and is not compared either; the plan names both kinds ("not compared"), never
  their values. Fields only the platform has (its defaults, such as a port) are ignored. Connection values are
  never shown: a plan says which connection fields differ, not how. So a changed password cannot be seen:
  to rotate one, give the data source a new name (or change it on the platform).
- **Secrets elsewhere** (a workflow's ``configuration``, a chart's ``options``): a secret by the one rule of
  ``wire/_secret_rule.py`` (a secret-looking key's value, a secret pair's or named secret's value, a URL's or
  DSN's password; at any depth) is compared, but shown, in the table and in the plan's XCom value, only as
  ``(secret changed)`` (or ``(secret)`` beside another change of the same field): never its value. A row's
  digest holds it only through the deployment's keyed hash (``_digests.py``).
- **No update for charts, workflows and data sources**: the contract has none, so one that differs from the
  platform's is ``cannot_apply``, with what to do; the apply refuses a plan that has any (it never deletes and
  recreates, which would break every dashboard and report that uses the object).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from airflow_provider_analytics.definitions._compare import (
    FieldChange,
    Pending,
    Ref,
    describe_hidden,
    differences,
    version_of,
    without_secret_values,
)
from airflow_provider_analytics.definitions._digests import DigestKey, digest_of
from airflow_provider_analytics.definitions._match import Index, ReferenceResolver, managed_object, name_of
from airflow_provider_analytics.definitions._model import (
    KINDS,
    LABELS,
    Action,
    ChartDef,
    DashboardDef,
    DataSourceDef,
    Definition,
    Definitions,
    Kind,
)
from airflow_provider_analytics.definitions._problems import Problems, one_line
from airflow_provider_analytics.definitions._references import reads_of
from airflow_provider_analytics.wire._redaction import ScrubbedRepr, scrub_value

__all__ = [
    "ACTIONS",
    "Action",
    "Change",
    "Existing",
    "FieldChange",
    "Pending",
    "Plan",
    "Ref",
    "make_plan",
]

ACTIONS: tuple[Action, ...] = ("create", "update", "unchanged", "cannot_apply", "not_managed")
_ACTION_WORDS = {
    "create": "to create",
    "update": "to update",
    "unchanged": "unchanged",
    "cannot_apply": "cannot apply",
    "not_managed": "not managed here",
}
_MOST_NAMES_SHOWN = 5


@dataclass(frozen=True, repr=False)
class Existing(ScrubbedRepr):
    """What the platform holds, as its four lists answered."""

    data_sources: tuple[dict[str, Any], ...] = ()
    charts: tuple[dict[str, Any], ...] = ()
    dashboards: tuple[dict[str, Any], ...] = ()
    workflows: tuple[dict[str, Any], ...] = ()

    def of_kind(self, kind: Kind) -> tuple[dict[str, Any], ...]:
        """The platform's objects of one kind.

        :param kind: ``data_source``, ``chart``, ``dashboard`` or ``workflow``.
        """
        return {
            "data_source": self.data_sources,
            "chart": self.charts,
            "dashboard": self.dashboards,
            "workflow": self.workflows,
        }[kind]


@dataclass(frozen=True, repr=False)
class Change(ScrubbedRepr):
    """What applying does to one object.

    :param kind: ``data_source``, ``chart``, ``dashboard`` or ``workflow``.
    :param name: the object's name.
    :param action: ``create``, ``update``, ``unchanged``, ``cannot_apply`` or ``not_managed``.
    :param id: the platform object's id, when it exists.
    :param version: for a dashboard that exists, the ``version`` read (what an update's ``If-Match`` sends).
    :param fields: the fields that differ (``update`` and ``cannot_apply``).
    :param detail: one line for the plan's table.
    :param definition: the definition (not in :meth:`to_dict`: it may hold secrets).
    :param refs: the resolved references: a chart's data source, or one per layout item of a dashboard.
    :param held: a dashboard's object as the platform answered it, when it exists (not in :meth:`to_dict`): an
        update keeps what it holds beyond the definition's fields.
    :param digest: the digest of what writing the definition would hold (``_digests.digest_of``), made with the
        plan (it needs the deployment's key).
    """

    kind: Kind
    name: str
    action: Action
    id: str | None = None
    version: int | None = None
    fields: tuple[FieldChange, ...] = ()
    detail: str = ""
    definition: Definition | None = field(default=None, repr=False, compare=False)
    refs: tuple[Ref, ...] = ()
    held: dict[str, Any] | None = field(default=None, repr=False, compare=False)
    digest: str | None = None

    @property
    def reads(self) -> list[dict[str, str]]:
        """The secrets kept in Airflow that applying this change reads (a create's references; nothing else reads
        any): where each goes and what it names, never a value."""
        return reads_of(self.definition) if self.action == "create" and self.definition is not None else []

    def to_dict(self) -> dict[str, Any]:
        """JSON-compatible form (for XCom): no definition, no connection value."""
        return {
            "kind": self.kind,
            "name": self.name,
            "action": self.action,
            "id": self.id,
            "version": self.version,
            "fields": [change.to_dict() for change in self.fields],
            "detail": self.detail,
            "defined_in": None if self.definition is None else str(self.definition.origin),
            "pinned_id": None if self.definition is None else self.definition.id,
            "digest": self.digest,
            "reads": self.reads,
        }


@dataclass(frozen=True, repr=False)
class Plan(ScrubbedRepr):
    """Every definition's change, in apply order (data sources, charts, dashboards, workflows), and the
    platform's objects no definition names (``not_managed``) after those of their kind.

    :param changes: one per object.
    :param sources: what the definitions were read from.
    :param digest_key: the id of the key the digests were made with (``_digests.DigestKey.id``): a reviewed plan
        made under another key cannot match a row that holds a secret.
    """

    changes: tuple[Change, ...]
    sources: tuple[str, ...] = ()
    digest_key: str = ""

    @property
    def counts(self) -> dict[str, int]:
        """How many objects each action has (every action listed, zeros included)."""
        return {action: sum(change.action == action for change in self.changes) for action in ACTIONS}

    @property
    def writes(self) -> bool:
        """Whether applying would send anything (a create or an update)."""
        return any(change.action in ("create", "update") for change in self.changes)

    @property
    def blocked(self) -> tuple[Change, ...]:
        """The ``cannot_apply`` changes: while there is one, the plan is not applied."""
        return tuple(change for change in self.changes if change.action == "cannot_apply")

    @property
    def secrets(self) -> list[dict[str, str]]:
        """Every secret kept in Airflow that applying this plan reads: the object (``kind``, ``name``), where the
        value goes (``at``) and what it names (``connection`` and ``field``, or ``variable``); never a value."""
        return [{"kind": c.kind, "name": c.name, **read} for c in self.changes for read in c.reads]

    def summary(self) -> str:
        """One line: how many objects each action has."""
        return "Definitions plan: " + ", ".join(f"{n} {_ACTION_WORDS[a]}" for a, n in self.counts.items())

    def to_dict(self) -> dict[str, Any]:
        """JSON-compatible form, for XCom and logs; holds no connection value. It is output, so every secret this
        process remembers is masked in it (``wire/_redaction.py``): the rows quote the platform's listings, which a
        plan reads unmasked (they are data it compares). A reviewed plan is compared in this form with one made
        again in the same way (``_review.py``)."""
        plan = {
            "summary": self.summary(),
            "counts": self.counts,
            "writes": self.writes,
            "sources": list(self.sources),
            "changes": [change.to_dict() for change in self.changes],
            "secrets": self.secrets,
            "digest_key": self.digest_key,
        }
        masked: dict[str, Any] = scrub_value(plan)
        return masked

    def table(self) -> str:
        """The plan as fixed-width text: a summary line, one row per object (kind, name, action, detail), then
        every secret the apply reads from Airflow (what it names and where it goes; "none" when none).

        Objects no definition names get one row per kind, not one each: a workspace of thousands would
        otherwise log thousands of lines at every run (:meth:`to_dict` lists every one).
        """
        rows = [("KIND", "NAME", "ACTION", "DETAIL")]
        managed = [change for change in self.changes if change.action != "not_managed"]
        rows += [(c.kind, _cell(c.name, 40), c.action, _cell(c.detail or "-", 160)) for c in managed]
        for kind in KINDS:
            names = [change.name for change in self.changes if change.kind == kind and change.action == "not_managed"]
            if names:
                shown = ", ".join(_cell(name, 40) for name in names[:_MOST_NAMES_SHOWN])
                more = f" and {len(names) - _MOST_NAMES_SHOWN} more" if len(names) > _MOST_NAMES_SHOWN else ""
                rows.append((kind, f"({len(names)} objects)", "not_managed", f"{shown}{more}"))
        widths = [max(len(row[column]) for row in rows) for column in range(3)]
        lines = ["  ".join([*(row[column].ljust(widths[column]) for column in range(3)), row[3]]) for row in rows]
        return "\n".join([self.summary(), *lines, *self._secrets_read()])

    def _secrets_read(self) -> list[str]:
        read = self.secrets
        if not read:
            return ["Secrets this apply reads from Airflow: none"]
        lines = [f"Secrets this apply reads from Airflow ({len(read)}):"]
        for item in read:
            named = (
                f"Airflow variable {item['variable']!r}"
                if "variable" in item
                else f"field {item['field']!r} of Airflow connection {item['connection']!r}"
            )
            lines.append(f"  {item['kind']} {_cell(item['name'], 40)!r} {_cell(item['at'], 80)}: {one_line(named)}")
        return lines


def make_plan(definitions: Definitions, existing: Existing, key: DigestKey | None = None) -> Plan:
    """Compare ``definitions`` with ``existing`` and list what applying would do.

    :param definitions: what :func:`~airflow_provider_analytics.definitions._load.load_definitions` returned.
    :param existing: the platform's objects.
    :param key: the key secrets enter the digests through (the hook passes the deployment's); ``None``: one of
        this process only.
    :raises AnalyticsInputError: listing every dangling or ambiguous reference, and every definition whose name
        several platform objects share (nothing has been written).
    """
    problems = Problems()
    indexes = {kind: Index(existing.of_kind(kind)) for kind in KINDS}
    # Keyed by (kind, position in its section): a name is no key, since pinned definitions may share one.
    current: dict[tuple[Kind, int], dict[str, Any]] = {}
    targets: dict[tuple[Kind, str], Ref | None] = {}  # what a reference by name means; None: several definitions
    for kind in KINDS:
        for position, definition in enumerate(definitions.of_kind(kind)):
            held = managed_object(definition, indexes[kind], problems)
            if held is not None:
                current[(kind, position)] = held
            target: Ref = held["id"] if held is not None else Pending(kind, definition.name)
            targets[(kind, definition.name)] = None if (kind, definition.name) in targets else target
    resolve = ReferenceResolver(indexes, targets, problems).resolve
    refs: dict[tuple[Kind, int], tuple[Ref, ...]] = {}
    for position, chart in enumerate(definitions.charts):
        refs[("chart", position)] = (resolve("data_source", chart.data_source, f"{chart.origin}: data_source"),)
    for position, board in enumerate(definitions.dashboards):
        places = (
            resolve("chart", item.chart, f"{board.origin}: layout[{i}].chart") for i, item in enumerate(board.layout)
        )
        refs[("dashboard", position)] = tuple(places)
    problems.raise_if_any()
    key = DigestKey.of_this_process() if key is None else key
    changes: list[Change] = []
    for kind in KINDS:
        named = {definition.name for definition in definitions.of_kind(kind) if definition.id is None}
        pinned = {definition.id for definition in definitions.of_kind(kind) if definition.id is not None}
        for position, definition in enumerate(definitions.of_kind(kind)):
            change = _compare(definition, current.get((kind, position)), refs.get((kind, position), ()))
            changes.append(replace(change, digest=digest_of(definition, change.refs, key)))
        for item in existing.of_kind(kind):
            if item.get("name") not in named and item.get("id") not in pinned:
                ident = item.get("id")
                detail = f"{ident}: no definition names it; left as it is"
                changes.append(Change(kind, name_of(item), "not_managed", ident, detail=detail))
    return Plan(tuple(changes), definitions.sources, key.id)


def _compare(definition: Definition, current: dict[str, Any] | None, refs: tuple[Ref, ...]) -> Change:
    kind, label = definition.kind, LABELS[definition.kind]
    if current is None:
        detail = _create_detail(definition, refs)
        return Change(kind, definition.name, "create", detail=detail, definition=definition, refs=refs)
    ident = str(current["id"])
    found, unseen = differences(definition, current, refs)
    if definition.id is not None and current.get("name") != definition.name:  # found by id: its name may differ
        found = (FieldChange("name", current.get("name"), definition.name), *found)
    fields = tuple(without_secret_values(change) for change in found)
    version = version_of(current) if kind == "dashboard" else None
    held = current if kind == "dashboard" else None  # what an update must keep (_compare.kept_layout)
    base = Change(
        kind, definition.name, "unchanged", ident, version, fields, definition=definition, refs=refs, held=held
    )
    if not fields:
        detail = f"{ident}" + (f"; not compared: {', '.join(unseen)}" if unseen else "")
        return _with(base, "unchanged", detail)
    described = "; ".join(describe_hidden(change) for change in fields)
    if kind == "dashboard":
        return _with(base, "update", f"{ident} at version {version}: {described}")
    differ = ", ".join(change.field for change in fields)
    return _with(
        base,
        "cannot_apply",
        f"{ident}: {differ} differ{'s' if len(fields) == 1 else ''} ({described}); the API has no update for a"
        f" {label}: give the definition a new name to create another (the platform's stays, nothing is deleted),"
        f" or change the platform's {label} to match",
    )


def _with(change: Change, action: Action, detail: str) -> Change:
    return replace(change, action=action, detail=detail)


def _create_detail(definition: Definition, refs: tuple[Ref, ...]) -> str:
    if isinstance(definition, DataSourceDef):
        return f"type {definition.type}"
    if isinstance(definition, ChartDef):
        return f"{definition.type} chart on data source {refs[0]}"
    if isinstance(definition, DashboardDef):
        new = sum(isinstance(ref, Pending) for ref in refs)
        return f"{len(refs)} charts" + (f" ({new} created by this plan)" if new else "")
    return ""


def _cell(text: str, width: int) -> str:
    text = one_line(text)
    return text if len(text) <= width else text[: width - 3] + "..."
