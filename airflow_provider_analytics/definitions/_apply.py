"""Read the platform, plan, and apply a plan through the hook: the only part of definitions that sends requests.

Reading is one list call per kind (pages followed), so a plan costs four listings however many objects it names.
Applying writes in dependency order (data sources, charts, dashboards, workflows), a reference to an object
created earlier in the same apply taking the id its create returned. It is safe to repeat:

- a create carries an ``Idempotency-Key`` derived from ``key_seed``, the kind, the name and a hash of what is
  sent, so a retried task (the same plan applied again under the same seed) gets the first create back within
  the platform's 24 hours instead of a second object, while a changed definition gets a fresh key. Secret
  connection values are left out of the hash: the key travels in a header that proxies log, and a fast hash of
  a password could be guessed back. (A data source created, then given another password and created again
  under the same seed within 24 hours, is therefore refused with 409 ``conflict`` rather than created twice.)
  The seed should name the task instance (the operator passes DAG, run, task and map index, not the try
  number, so its retries share keys): within 24 hours the platform answers a key it has seen with the first
  answer, even for an object deleted since, so only the retries of one task instance should share keys.
  ``AnalyticsHook.apply_plan`` without a seed uses one unique to the call. Every write's answer is checked
  against what was asked (kind and name) before it is logged as written or used as a reference.
- a dashboard update keeps what the platform holds on its layout items beyond the definition's fields (a tile's
  title, its settings): a ``PUT`` is a full replacement (``_compare.kept_layout``).
- a dashboard update carries ``If-Match`` with the version the plan read: an edit made on the platform between
  plan and apply fails the task with :class:`PreconditionFailedError` instead of being overwritten. A repeat of
  the very same update (an answer lost, a retried task) is recognised by the hook and not a conflict.

Nothing else is sent: unchanged objects and those no definition names get no request, and nothing is deleted.
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from airflow_provider_analytics.connection._config import register_secrets
from airflow_provider_analytics.definitions._compare import kept_layout
from airflow_provider_analytics.definitions._load import DefinitionsSource, load_definitions
from airflow_provider_analytics.definitions._model import (
    KINDS,
    LABELS,
    ChartDef,
    DashboardDef,
    DataSourceDef,
    Kind,
    WorkflowDef,
    without_secrets,
)
from airflow_provider_analytics.definitions._plan import Change, Existing, Pending, Plan, Ref, make_plan
from airflow_provider_analytics.definitions._problems import Problems, one_line
from airflow_provider_analytics.wire._contract import ID_PATTERN
from airflow_provider_analytics.wire.errors import AnalyticsInputError, UnexpectedResponseError, clean_text

if TYPE_CHECKING:
    from airflow_provider_analytics.hooks.analytics import AnalyticsHook
    from airflow_provider_analytics.wire._endpoints import Call
    from airflow_provider_analytics.wire._models import LayoutItem

__all__ = ["AppliedPlan", "Written", "apply_plan", "idempotency_key", "plan_definitions", "read_existing"]

# Stands for the id of an object created earlier in the same apply, while the writes are checked before the first.
_PLACEHOLDER_ID = "pending"


def read_existing(hook: AnalyticsHook) -> Existing:
    """The platform's data sources, charts, dashboards and workflows: one listing each, every page read.

    :param hook: the hook to read through.
    :raises UnexpectedResponseError: an object without a string ``id``.
    """
    return Existing(
        data_sources=_objects(hook.list_data_sources(), "data source"),
        charts=_objects(hook.list_charts(), "chart"),
        dashboards=_objects(hook.list_dashboards(), "dashboard"),
        workflows=_objects(hook.list_workflows(), "workflow"),
    )


def _objects(items: Iterable[Mapping[str, Any]], label: str) -> tuple[dict[str, Any], ...]:
    objects = tuple(dict(item) if isinstance(item, Mapping) else item for item in items)
    for item in objects:
        if not isinstance(item, dict) or not isinstance(item.get("id"), str):
            raise UnexpectedResponseError(f"the platform listed a {label} without a string 'id': {item!r:.120}")
    return objects


def plan_definitions(hook: AnalyticsHook, source: DefinitionsSource) -> Plan:
    """Load and check the definitions (before any request), read the platform, and plan; the plan is logged.

    :param hook: the hook to read through.
    :param source: a path or glob of ``.yaml``/``.yml``/``.json`` files, a mapping, or a list of those.
    :raises AnalyticsInputError: invalid definitions (no request sent), or a dangling or ambiguous reference or
        name (only the listings sent).
    """
    definitions = load_definitions(source)
    register_secrets(definitions.free_form())  # before the first request, for the masker's log lines too
    plan = make_plan(definitions, read_existing(hook))
    hook.log.info("%s", plan.table())
    return plan


@dataclass(frozen=True)
class Written:
    """One object an apply created or updated.

    :param kind: ``data_source``, ``chart``, ``dashboard`` or ``workflow``.
    :param name: its name.
    :param id: its id on the platform.
    :param action: ``create`` or ``update``.
    :param version: a dashboard's version after the write (``None`` for the other kinds).
    """

    kind: Kind
    name: str
    id: str
    action: str
    version: int | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-compatible form."""
        return {"kind": self.kind, "name": self.name, "id": self.id, "action": self.action, "version": self.version}


@dataclass(frozen=True)
class AppliedPlan:
    """What an apply wrote, in the order written.

    :param written: one entry per create or update.
    """

    written: tuple[Written, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """JSON-compatible form, for XCom."""
        counts = {action: sum(item.action == action for item in self.written) for action in ("create", "update")}
        return {"counts": counts, "written": [item.to_dict() for item in self.written]}


def idempotency_key(key_seed: str, kind: Kind, name: str, body: Mapping[str, Any]) -> str:
    """The ``Idempotency-Key`` of a create: the same seed, kind, name and body give the same key.

    :param key_seed: what identifies the task whose retries must not create twice (the operator passes its
        DAG, task and run).
    :param kind: the object's kind.
    :param name: the object's name.
    :param body: what the create sends (references resolved); secret connection values are not hashed.
    """
    hashed = {**body, "connection": without_secrets(body["connection"], "(secret)")} if "connection" in body else body
    canonical = json.dumps([key_seed, kind, name, hashed], sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return f"apa-def-{kind}-{hashlib.sha256(canonical.encode()).hexdigest()[:48]}"


def apply_plan(hook: AnalyticsHook, plan: Plan, *, key_seed: str) -> AppliedPlan:
    """Send the plan's creates and updates, in dependency order; every check is made before the first write.

    :param hook: the hook to write through.
    :param plan: a plan from :func:`plan_definitions` (made in this process: it holds the definitions).
    :param key_seed: the seed of the creates' idempotency keys; the same seed makes a repeat of this apply
        create nothing twice.
    :raises AnalyticsInputError: the plan has ``cannot_apply`` entries, or a write would be refused before sending
        (nothing written).
    :raises PreconditionFailedError: a dashboard changed on the platform after the plan read it.
    """
    if not isinstance(key_seed, str) or not key_seed.strip():
        raise AnalyticsInputError(f"key_seed must be a non-empty string, got {key_seed!r}")
    if plan.blocked:
        listed = "\n".join(f"  - {LABELS[c.kind]} {one_line(c.name)!r}: {one_line(c.detail)}" for c in plan.blocked)
        raise AnalyticsInputError(
            f"The plan has {len(plan.blocked)} object(s) that differ from the platform's and that the API cannot"
            f" update, so nothing was applied (no write sent):\n{listed}"
        )
    writes = [change for change in plan.changes if change.action in ("create", "update")]
    writes.sort(key=lambda change: KINDS.index(change.kind))  # dependency order, whatever order the plan lists
    _check_writes(writes)
    created: dict[Pending, str] = {}
    written: list[Written] = []
    for change in writes:
        body = _body(change, functools.partial(_resolved, created, change))
        result = _checked_answer(change, body, _write(hook, change, body, key_seed))
        ident = result["id"]
        version = result.get("version") if change.kind == "dashboard" else None
        if change.action == "create":
            created[Pending(change.kind, change.name)] = ident
            hook.log.info("Created %s %r: %s", LABELS[change.kind], change.name, ident)
        else:
            hook.log.info(
                "Updated dashboard %r (%s) from version %s to %s: %s",
                change.name,
                ident,
                change.version,
                version,
                ", ".join(field.field for field in change.fields),
            )
        written.append(Written(change.kind, change.name, ident, change.action, version))
    if not written:
        hook.log.info("Nothing to apply: every definition matches the platform")
    return AppliedPlan(tuple(written))


def _check_writes(writes: list[Change]) -> None:
    """Build every write's request without sending it, so a body the client would refuse fails before any write."""
    problems = Problems("The definitions")
    for change in writes:
        try:
            _request(change, _body(change, lambda ref: ref if isinstance(ref, str) else _PLACEHOLDER_ID))
        except AnalyticsInputError as error:
            where = change.definition.origin if change.definition is not None else f"{change.kind} {change.name!r}"
            problems.add(f"{where}: {error}")
    problems.raise_if_any()


def _request(change: Change, body: dict[str, Any]) -> Call[Any]:
    """The write as the request builders make it: checked, not sent (the idempotency key is left random)."""
    from airflow_provider_analytics.wire import _endpoints as endpoints

    layout = cast("list[LayoutItem]", body.get("layout", []))
    if change.kind == "dashboard" and change.action == "update":
        assert change.id is not None
        return endpoints.update_dashboard(
            change.id, body["name"], body["description"], body["tags"], layout, if_match=change.version
        )
    if change.kind == "dashboard":
        return endpoints.create_dashboard(body["name"], body["description"], body["tags"], layout)
    if change.kind == "data_source":
        return endpoints.connect_data_source(body["name"], body["type"], body["connection"])
    if change.kind == "chart":
        return endpoints.create_chart(
            body["name"], body["type"], body["data_source_id"], body["query"], body["options"]
        )
    return endpoints.create_workflow(body["name"], body["configuration"], body["description"])


def _resolved(created: Mapping[Pending, str], change: Change, ref: Ref) -> str:
    if isinstance(ref, str):
        return ref
    if ref not in created:  # only a plan put together by hand, out of order, gets here
        raise AnalyticsInputError(f"{change.kind} {change.name!r} refers to {ref}, which this apply did not create")
    return created[ref]


def _write(hook: AnalyticsHook, change: Change, body: dict[str, Any], key_seed: str) -> Any:
    """Send one create or update through the hook (which retries safely and recognises a repeated update)."""
    layout = cast("list[LayoutItem]", body.get("layout", []))
    if change.kind == "dashboard" and change.action == "update":
        assert change.id is not None
        return hook.update_dashboard(
            change.id, body["name"], body["description"], body["tags"], layout, if_match=change.version
        )
    key = idempotency_key(key_seed, change.kind, change.name, body)
    if change.kind == "dashboard":
        return hook.create_dashboard(body["name"], body["description"], body["tags"], layout, idempotency_key=key)
    if change.kind == "data_source":
        return hook.connect_data_source(body["name"], body["type"], body["connection"], idempotency_key=key)
    if change.kind == "chart":
        return hook.create_chart(
            body["name"], body["type"], body["data_source_id"], body["query"], body["options"], idempotency_key=key
        )
    return hook.create_workflow(body["name"], body["configuration"], body["description"], idempotency_key=key)


# The fields of each kind's answer that must echo what its create or update sent: they tell the kinds apart
# (opaque ids do not), so an answer about another kind of object fails here instead of being taken as ours.
_ECHOED: dict[Kind, tuple[str, ...]] = {
    "data_source": ("type",),
    "chart": ("type", "data_source_id"),
    "dashboard": (),
    "workflow": (),
}


def _checked_answer(change: Change, sent: Mapping[str, Any], answer: Any) -> dict[str, Any]:
    """``answer`` when it is the object the write asked for: its kind, name (and, for an update, id).

    A platform replaying an ``Idempotency-Key`` answers with whatever the key first created; a wrong answer taken
    as ours would be logged as created and its id put into the charts and dashboards written next.
    """
    label = LABELS[change.kind]
    wrong: list[str] = []
    document: dict[str, Any] = dict(answer) if isinstance(answer, Mapping) else {}
    ident = document.get("id")
    if not isinstance(ident, str) or not ID_PATTERN.fullmatch(ident):
        wrong.append(f"its id is {clean_text(repr(ident), 80)}, not a valid id")
    elif change.action == "update" and ident != change.id:
        wrong.append(f"it is {clean_text(ident, 80)}, not {change.id}")
    if document.get("name") != change.name:
        wrong.append(f"it is named {clean_text(repr(document.get('name')), 120)}")
    for key in _ECHOED[change.kind]:
        if document.get(key) != sent[key]:
            wrong.append(f"its {key} is {clean_text(repr(document.get(key)), 120)}, not {sent[key]!r}")
    if change.kind == "dashboard":
        version = document.get("version")
        if isinstance(version, bool) or not isinstance(version, int) or version < 1:
            wrong.append(f"it has no valid dashboard 'version' ({clean_text(repr(version), 80)})")
    if change.kind == "workflow" and not isinstance(document.get("configuration"), Mapping):
        wrong.append("it has no workflow 'configuration'")
    if not wrong:
        return document
    where = change.definition.origin if change.definition is not None else f"{label} {change.name!r}"
    why = (
        "A platform that keeps Idempotency-Keys answers a key with the object it first created: apply under a"
        " key_seed that names this task instance only, and check"
        if change.action == "create"
        else "Check"
    )
    raise UnexpectedResponseError(
        f"{where}: the platform answered the {change.action} of {label} {one_line(change.name)!r} with another"
        f" object ({'; '.join(wrong)}), so it was not taken as written and nothing after it was sent. {why} the"
        f" platform's {label}s named {one_line(change.name)!r} (the next plan shows what exists)"
    )


def _body(change: Change, resolved: Callable[[Ref], str]) -> dict[str, Any]:
    """What a create or update sends, references resolved with ``resolved``."""
    definition = change.definition
    if isinstance(definition, DataSourceDef):
        return {"name": definition.name, "type": definition.type, "connection": definition.connection}
    if isinstance(definition, ChartDef):
        return {
            "name": definition.name,
            "type": definition.type,
            "data_source_id": resolved(change.refs[0]),
            "query": definition.query,
            "options": definition.options,
        }
    if isinstance(definition, DashboardDef):
        places = zip(change.refs, definition.layout, strict=True)
        layout = [{"chart_id": resolved(ref), "x": i.x, "y": i.y, "w": i.w, "h": i.h} for ref, i in places]
        if change.action == "update" and change.held is not None:
            layout = kept_layout(layout, change.held.get("layout"))  # a PUT drops what it does not carry
        tags = list(definition.tags)
        return {"name": definition.name, "description": definition.description, "tags": tags, "layout": layout}
    if isinstance(definition, WorkflowDef):
        configuration, description = definition.configuration, definition.description
        return {"name": definition.name, "configuration": configuration, "description": description}
    raise AnalyticsInputError(f"{change.kind} {change.name!r}: a {change.action} without its definition")
