"""Plan and apply a plan through a client: with ``_read`` (the listings a plan starts from, and the export), the
only part of definitions that sends requests.

A plan reads the platform once (``_read.read_existing``: four listings however many objects it names). Applying
writes in dependency order (data sources, charts, dashboards, workflows), a reference to an object created earlier
in the same apply taking the id its create returned. It is safe to repeat:

- a create carries an ``Idempotency-Key`` derived from ``key_seed``, the kind, the name and a hash of what is
  sent, so a retried task (the same plan applied again under the same seed) gets the first create back within
  the platform's 24 hours instead of a second object, while a changed definition gets a fresh key. Secrets (by
  the one rule, in every field) are left out of the hash (``_digests.key_body``): the key travels in a header
  that proxies log, and a fast hash of a password could be guessed back; a reference to a secret kept in Airflow
  (``_references.py``) is hashed as what it names, never as what it reads, so each try shares its keys. (An
  object created, then given another secret and created again under the same seed within 24 hours, is therefore
  refused with 409 ``conflict`` rather than created twice.)
  The seed should name the task instance (the operator passes DAG, run, task and map index, not the try
  number, so its retries share keys): within 24 hours the platform answers a key it has seen with the first
  answer, even for an object deleted since, so only the retries of one task instance should share keys.
  ``AnalyticsHook.apply_plan`` without a seed uses one unique to the call. Every write's answer is checked
  against what was asked (kind and name) before it is logged as written or used as a reference.
- a dashboard update keeps what the platform holds on its layout items beyond the definition's fields (a tile's
  title, its settings): a ``PUT`` is a full replacement (``_compare.kept_layout``).
- a dashboard update carries ``If-Match`` with the version the plan read: an edit made on the platform between
  plan and apply fails the task with :class:`PreconditionFailedError` instead of being overwritten. A repeat of
  the very same update (an answer lost, a retried task) is recognised and not a conflict (``wire/_conditional``).

Every secret kept in Airflow that the writes need is read (through the resolver the hook hands in), each only
when the deployment allows its name (``_references.SecretSources``, checked again here whatever the plan was
made with), logged by name and registered as a secret before the first write; a missing one fails the apply
with nothing written. Every
write's request is built once, by :func:`_call`, before the first write is sent (so a body the client would
refuse fails the apply before it writes anything), and sent as built; only a write that refers to an object the
same apply creates is built again, once that object's id is known. Nothing else is sent: unchanged objects and
those no definition names get no request, and nothing is deleted.

The platform is reached through a :class:`~airflow_provider_analytics.wire._calls.Sender` (the hook hands over
its client), never through the hook: this module is what the hook's ``plan_definitions`` and ``apply_plan`` call.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from airflow_provider_analytics.connection._masking import register_secret_values, register_secrets
from airflow_provider_analytics.definitions._allowed import SecretSources, check_sources
from airflow_provider_analytics.definitions._compare import kept_layout
from airflow_provider_analytics.definitions._digests import DigestKey, key_body
from airflow_provider_analytics.definitions._load import DefinitionsSource, load_definitions
from airflow_provider_analytics.definitions._model import (
    KINDS,
    LABELS,
    ChartDef,
    DashboardDef,
    DataSourceDef,
    Kind,
    WorkflowDef,
)
from airflow_provider_analytics.definitions._plan import Change, Pending, Plan, Ref, make_plan
from airflow_provider_analytics.definitions._problems import Problems, one_line
from airflow_provider_analytics.definitions._read import read_existing
from airflow_provider_analytics.definitions._references import SecretResolver, resolve_references, with_values
from airflow_provider_analytics.wire import _endpoints as endpoints
from airflow_provider_analytics.wire._calls import Call, Sender
from airflow_provider_analytics.wire._conditional import send_update
from airflow_provider_analytics.wire._contract import ID_PATTERN
from airflow_provider_analytics.wire._progress import InfoLog
from airflow_provider_analytics.wire._redaction import ScrubbedRepr, scrub_text, scrub_value
from airflow_provider_analytics.wire.errors import AnalyticsInputError, UnexpectedResponseError, clean_text

if TYPE_CHECKING:
    from airflow_provider_analytics.wire._models import LayoutItem

__all__ = ["AppliedPlan", "Written", "apply_plan", "idempotency_key", "plan_definitions"]

# Stands for the id of an object created earlier in the same apply, while the writes are checked before the first:
# as long as an id may be (wire/_contract.ID_PATTERN), so a body that fits the platform's bound with it fits with
# whatever id the create returns.
_PLACEHOLDER_ID = "pending" + "_" * 57
# Where the plan and the writes are logged when the caller names no logger (the hook names its own).
_LOG = logging.getLogger(__name__)
# What an apply read from Airflow: by (kind, name), the value of each reference by its path in the free-form field.
Values = Mapping[tuple[str, str], Mapping[tuple[str | int, ...], Any]]
# The free-form field of each kind's write, where secrets may be (``Definitions.free_form``).
_FREE_FORM: dict[Kind, str] = {"data_source": "connection", "chart": "options", "workflow": "configuration"}


def plan_definitions(
    sender: Sender,
    source: DefinitionsSource,
    log: InfoLog = _LOG,
    *,
    secret_sources: SecretSources | None = None,
    key: DigestKey | None = None,
) -> Plan:
    """Load and check the definitions (before any request), read the platform, and plan; the plan is logged.

    :param sender: what sends the requests (a client).
    :param source: a path or glob of ``.yaml``/``.yml``/``.json`` files, a mapping, or a list of those.
    :param log: where the plan's table is logged.
    :param secret_sources: which Airflow connections and variables a reference may name (the hook passes its
        connection's ``secret_sources``); ``None``: the default, ``analytics_*``.
    :param key: the key secrets enter the digests through (the hook passes the deployment's); ``None``: one of
        this process only.
    :raises AnalyticsInputError: invalid definitions, or a reference to a secret the deployment does not allow (no
        request sent), or a dangling or ambiguous reference or name (only the listings sent).
    """
    definitions = load_definitions(source)
    check_sources([d for kind in KINDS for d in definitions.of_kind(kind)], secret_sources or SecretSources())
    register_secrets(definitions.free_form())  # before the first request, for the masker's log lines too
    plan = make_plan(definitions, read_existing(sender), key)
    log.info("%s", scrub_text(plan.table()))  # the table quotes the listings, which were read unmasked
    return plan


@dataclass(frozen=True, repr=False)
class Written(ScrubbedRepr):
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


@dataclass(frozen=True, repr=False)
class AppliedPlan(ScrubbedRepr):
    """What an apply wrote, in the order written.

    :param written: one entry per create or update.
    """

    written: tuple[Written, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """JSON-compatible form, for XCom: output, so every secret this process remembers is masked in it (a name
        may hold one)."""
        counts = {action: sum(item.action == action for item in self.written) for action in ("create", "update")}
        masked: dict[str, Any] = scrub_value({"counts": counts, "written": [item.to_dict() for item in self.written]})
        return masked


def idempotency_key(key_seed: str, kind: Kind, name: str, body: Mapping[str, Any]) -> str:
    """The ``Idempotency-Key`` of a create: the same seed, kind, name and body give the same key.

    :param key_seed: what identifies the task whose retries must not create twice (the operator passes its
        DAG, task and run).
    :param kind: the object's kind.
    :param name: the object's name.
    :param body: what the create sends (references to other objects resolved, secrets kept in Airflow not read);
        every secret in it counts as ``(secret)`` and every reference to one as what it names
        (``_digests.key_body``), so that every try of a task shares its keys and no secret reaches the header.
    """
    canonical = json.dumps(
        [key_seed, kind, name, key_body(body)], sort_keys=True, separators=(",", ":"), ensure_ascii=True
    )
    return f"apa-def-{kind}-{hashlib.sha256(canonical.encode()).hexdigest()[:48]}"


def apply_plan(
    sender: Sender,
    plan: Plan,
    *,
    key_seed: str,
    log: InfoLog = _LOG,
    secrets: SecretResolver | None = None,
    secret_sources: SecretSources | None = None,
) -> AppliedPlan:
    """Send the plan's creates and updates, in dependency order; every check is made before the first write.

    :param sender: what sends the writes (a client).
    :param plan: a plan from :func:`plan_definitions` (made in this process: it holds the definitions).
    :param key_seed: the seed of the creates' idempotency keys; the same seed makes a repeat of this apply
        create nothing twice.
    :param log: where each write is logged.
    :param secrets: reads a secret kept in Airflow (``_references.py``); every one the writes need is read, and
        registered as a secret, before the first write.
    :param secret_sources: which Airflow connections and variables a reference may name; ``None``: the default,
        ``analytics_*``. Checked before anything is read, whatever the plan was made with.
    :raises AnalyticsInputError: the plan has ``cannot_apply`` entries, a reference to an Airflow secret is not
        allowed or cannot be read, or a write would be refused before sending (nothing written).
    :raises PreconditionFailedError: a dashboard changed on the platform after the plan read it.
    """
    if not isinstance(key_seed, str) or not key_seed.strip():
        raise AnalyticsInputError(f"key_seed must be a non-empty string, got {key_seed!r}")
    if plan.blocked:
        listed = "\n".join(f"  - {LABELS[c.kind]} {one_line(c.name)!r}: {one_line(c.detail)}" for c in plan.blocked)
        raise AnalyticsInputError(  # masked: the rows quote the platform's listings, read unmasked
            scrub_text(
                f"The plan has {len(plan.blocked)} object(s) that differ from the platform's and that the API cannot"
                f" update, so nothing was applied (no write sent):\n{listed}"
            )
        )
    writes = [change for change in plan.changes if change.action in ("create", "update")]
    writes.sort(key=lambda change: KINDS.index(change.kind))  # dependency order, whatever order the plan lists
    # Read into what is sent only: the plan (its XCom form, its digests) and the definitions never hold a value.
    creating = [c.definition for c in writes if c.definition is not None]
    check_sources(creating, secret_sources or SecretSources())
    _log_reads(plan, log)
    values = resolve_references(creating, secrets)
    register_secret_values(value for fields in values.values() for value in fields.values())
    built = _check_writes(writes, key_seed, values)
    created: dict[Pending, str] = {}
    written: list[Written] = []
    for index, change in enumerate(writes):
        body, call = built.get(index) or _built(change, functools.partial(_resolved, created, change), key_seed, values)
        result = _checked_answer(change, body, _send(sender, change, call, body, log))
        ident = result["id"]
        version = result.get("version") if change.kind == "dashboard" else None
        if change.action == "create":
            created[Pending(change.kind, change.name)] = ident
            log.info("Created %s %r: %s", LABELS[change.kind], change.name, ident)
        else:
            log.info(
                "Updated dashboard %r (%s) from version %s to %s: %s",
                change.name,
                ident,
                change.version,
                version,
                ", ".join(field.field for field in change.fields),
            )
        written.append(Written(change.kind, change.name, ident, change.action, version))
    if not written:
        log.info("Nothing to apply: every definition matches the platform")
    return AppliedPlan(tuple(written))


def _log_reads(plan: Plan, log: InfoLog) -> None:
    """One line naming every secret kept in Airflow this apply reads (never a value), before any is read."""
    read = plan.secrets
    if read:
        named = [
            f"{item['kind']} {one_line(item['name'])!r} {one_line(item['at'])} <- "
            + (f"variable {item['variable']!r}" if "variable" in item else f"{item['connection']!r}.{item['field']}")
            for item in read
        ]
        log.info("Reading %d secret(s) from Airflow for this apply: %s", len(read), "; ".join(named))


def _check_writes(writes: list[Change], key_seed: str, values: Values) -> dict[int, tuple[dict[str, Any], Call[Any]]]:
    """Build every write's request before any is sent, so a body the client would refuse fails before any write.

    :return: the body and request of each write (by its index) that refers to no object this apply creates: those
        are sent as built here. The others are built here with a stand-in id, and again once the id is known.
    """
    problems = Problems("The definitions")
    ready: dict[int, tuple[dict[str, Any], Call[Any]]] = {}
    carried = []
    for index, change in enumerate(writes):
        try:
            built = _built(change, lambda ref: ref if isinstance(ref, str) else _PLACEHOLDER_ID, key_seed, values)
        except AnalyticsInputError as error:
            where = change.definition.origin if change.definition is not None else f"{change.kind} {change.name!r}"
            problems.add(f"{where}: {error}")
            continue
        if change.kind in _FREE_FORM:
            carried.append(built[0][_FREE_FORM[change.kind]])
        if all(isinstance(ref, str) for ref in change.refs):
            ready[index] = built
    problems.raise_if_any()
    # Every secret the writes carry, as sent (a value read from Airflow may hold a URL whose password the rule
    # finds), registered at once: one past the masker's bounds fails the apply here, not after its first write.
    register_secrets(carried)
    return ready


def _built(
    change: Change, resolved: Callable[[Ref], str], key_seed: str, values: Values
) -> tuple[dict[str, Any], Call[Any]]:
    """A write's body as sent (references resolved with ``resolved``, fields kept in Airflow filled in from
    ``values``) and its request; a create's idempotency key hashes the body before those fields are filled."""
    body = _body(change, resolved)
    update = change.kind == "dashboard" and change.action == "update"  # a PUT: If-Match, no key
    key = "" if update else idempotency_key(key_seed, change.kind, change.name, body)
    if change.kind in _FREE_FORM:
        field = _FREE_FORM[change.kind]
        body[field] = with_values(body[field], values.get((change.kind, change.name), {}))
    return body, _call(change, body, key)


def _call(change: Change, body: dict[str, Any], key: str) -> Call[Any]:
    """The one request of a create or update, as the request builders make it (and check it); its answer is read
    unmasked, as data: :func:`_checked_answer` compares it with what was sent."""
    layout = cast("list[LayoutItem]", body.get("layout", []))
    call: Call[Any]
    if change.kind == "dashboard" and change.action == "update":
        assert change.id is not None
        call = endpoints.update_dashboard(
            change.id, body["name"], body["description"], body["tags"], layout, if_match=change.version
        )
    elif change.kind == "dashboard":
        call = endpoints.create_dashboard(body["name"], body["description"], body["tags"], layout, key)
    elif change.kind == "data_source":
        call = endpoints.connect_data_source(body["name"], body["type"], body["connection"], key)
    elif change.kind == "chart":
        call = endpoints.create_chart(
            body["name"], body["type"], body["data_source_id"], body["query"], body["options"], key
        )
    else:
        call = endpoints.create_workflow(body["name"], body["configuration"], body["description"], key)
    return call.unmasked()


def _send(sender: Sender, change: Change, call: Call[Any], body: dict[str, Any], log: InfoLog) -> Any:
    """Send one write; a repeat of a dashboard update that an earlier attempt applied is not a conflict."""
    if change.kind == "dashboard" and change.action == "update":
        assert change.id is not None
        return send_update(sender, call, change.id, log)
    # Registered as a hook method registers what it is handed: also for a plan not made by plan_definitions.
    register_secrets(body.get(_FREE_FORM[change.kind]) if change.kind in _FREE_FORM else None)
    return sender.call(call)


def _resolved(created: Mapping[Pending, str], change: Change, ref: Ref) -> str:
    if isinstance(ref, str):
        return ref
    if ref not in created:  # only a plan put together by hand, out of order, gets here
        raise AnalyticsInputError(f"{change.kind} {change.name!r} refers to {ref}, which this apply did not create")
    return created[ref]


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
