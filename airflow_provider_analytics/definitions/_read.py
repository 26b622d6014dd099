"""Read the platform through a client: the listings a plan starts from, and the export built on them.

Reading is one list call per kind (pages followed), so a plan or an export costs four listings however many objects
it names. :func:`export` turns what they answered into definitions (``_export``) and plans those against the same
answers, so that an export that would not plan as unchanged says why. Nothing here writes.

The platform is reached through a :class:`~airflow_provider_analytics.wire._calls.Sender` (the hook hands over
its client), never through the hook: this module is what the hook's ``export_definitions`` calls, and what
``_apply.plan_definitions`` reads the platform with.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Collection, Iterable, Mapping
from typing import Any

from airflow_provider_analytics.definitions._allowed import DEFAULT_OWN_CONNECTIONS
from airflow_provider_analytics.definitions._export import Exported, export_definitions
from airflow_provider_analytics.definitions._load import load_definitions
from airflow_provider_analytics.definitions._model import LABELS, MAX_DEPTH, Kind
from airflow_provider_analytics.definitions._plan import Existing, make_plan
from airflow_provider_analytics.definitions._problems import listed, one_line
from airflow_provider_analytics.wire import _endpoints as endpoints
from airflow_provider_analytics.wire._calls import Sender
from airflow_provider_analytics.wire._pagination import listing
from airflow_provider_analytics.wire._redaction import scrub_text
from airflow_provider_analytics.wire.errors import AnalyticsInputError, UnexpectedResponseError, clean_text

__all__ = ["export", "read_existing"]

# Where the summary and the notes of an export are logged when the caller names no logger (the hook names its own).
_LOG = logging.getLogger(__name__)


def read_existing(sender: Sender) -> Existing:
    """The platform's data sources, charts, dashboards and workflows: one listing each, every page read.

    :param sender: what sends the requests (a client).
    :raises UnexpectedResponseError: an object without a string ``id``.
    """
    # Each listing is checked before the next is sent: a malformed answer costs no further request. Each is read
    # as the platform sent it (unmasked): it is data a plan compares and an export writes, and masking a secret
    # remembered from the definitions would rewrite it (a workflow named "churn-scoring" read as "***-scoring"
    # beside a secret "churn" would be planned as a create at every run). Messages and log lines are masked.
    budget = _Budget()
    data_sources = sender.call(endpoints.list_data_sources().unmasked())
    existing_sources = _objects(data_sources, "data source", budget)
    charts = sender.call(endpoints.list_charts().unmasked())
    existing_charts = _objects(charts, "chart", budget)
    dashboards = listing(sender, endpoints.list_dashboards().unmasked())  # lazy: each page sent as _objects reads it
    existing_dashboards = _objects(dashboards, "dashboard", budget)
    workflows = listing(sender, endpoints.list_workflows().unmasked())
    return Existing(existing_sources, existing_charts, existing_dashboards, _objects(workflows, "workflow", budget))


# What a plan or an export holds of the platform's listings, all four together: objects, and their bytes as compact
# JSON. A listing may run to 10,000 pages (wire/_contract.py), each within the answer cap: far more than a worker's
# memory or a plan's XCom holds. A workspace past these is refused, naming them, before the plan is made.
MOST_LISTED_OBJECTS = 100_000
MOST_LISTED_BYTES = 64 * 1024 * 1024


class _Budget:
    """What the listings read so far hold; :meth:`take` refuses an object past either bound."""

    def __init__(self) -> None:
        self.objects = 0
        self.bytes = 0

    def take(self, item: Mapping[str, Any], label: str) -> None:
        self.objects += 1
        self.bytes += len(json.dumps(item, separators=(",", ":"), ensure_ascii=False, default=str))
        if self.objects > MOST_LISTED_OBJECTS or self.bytes > MOST_LISTED_BYTES:
            raise UnexpectedResponseError(
                f"the platform's listings hold over {MOST_LISTED_OBJECTS:,} objects or {MOST_LISTED_BYTES // 2**20}"
                f" MiB of JSON (reached at a {label}), more than a plan or an export reads: stopped reading them."
                " Split the workspace, or remove objects no definition needs"
            )


def _objects(items: Iterable[Mapping[str, Any]], label: str, budget: _Budget) -> tuple[dict[str, Any], ...]:
    objects = []
    for listed_item in items:  # pages are sent as this reads them: one past the budget is never asked for
        item = dict(listed_item) if isinstance(listed_item, Mapping) else listed_item
        if not isinstance(item, dict) or not isinstance(item.get("id"), str):
            shown = clean_text(repr(item), 120)  # masked: the listing is not
            raise UnexpectedResponseError(f"the platform listed a {label} without a string 'id': {shown}")
        if _nested_too_deep(item.values()):
            raise UnexpectedResponseError(
                f"the platform listed a {label} ({clean_text(item['id'], 64)}, named "
                f"{clean_text(repr(item.get('name')), 100)}) holding a value nested more than {MAX_DEPTH} levels "
                "deep, which definitions can neither hold nor compare: flatten it on the platform"
            )
        budget.take(item, label)  # measured once known to nest within MAX_DEPTH
        objects.append(item)
    return tuple(objects)


def _nested_too_deep(fields: Iterable[Any]) -> bool:
    """Whether a field's value nests deeper than the definitions' :data:`MAX_DEPTH` (the value itself is level 1).

    The JSON parser reads nearly a thousand levels; the plan's comparisons, which recurse, must never meet them.
    Walked with a stack of its own, so the check itself recurses at no depth.
    """
    stack = [(value, 1) for value in fields if isinstance(value, (dict, list))]
    while stack:
        value, depth = stack.pop()
        if depth >= MAX_DEPTH:  # a container at the last level allowed holds values one level deeper
            return True
        inner = value.values() if isinstance(value, dict) else value
        stack += [(item, depth + 1) for item in inner if isinstance(item, (dict, list)) and item]
    return False


def export(
    sender: Sender,
    kinds: Collection[Kind],
    names: Collection[str] | None,
    log: Any = _LOG,
    *,
    own: Collection[str] = DEFAULT_OWN_CONNECTIONS,
) -> Exported:
    """Read the platform (four listings) and export; the export is planned against what was read, and every note
    (and any object that would not plan as unchanged) is logged at WARNING.

    :param sender: what sends the listings (a client).
    :param kinds: which kinds to export (:func:`checked_filters`).
    :param names: only objects of these names; ``None``: every object.
    :param log: where the summary (INFO) and the notes (WARNING) go: a logger, or a hook's ``self.log``.
    :param own: the ids of the connections the provider itself uses, which no reference the export writes names
        (``_allowed.py``).
    :raises AnalyticsInputError: a name in ``names`` that no object of ``kinds`` has.
    """
    existing = read_existing(sender)
    exported = export_definitions(existing, kinds, names, own)
    if names is not None:
        found = {entry["name"] for entries in exported.definitions.values() for entry in entries}
        missing = sorted(set(names) - found)
        if missing:
            labels = " or ".join(f"{LABELS[kind]}s" for kind in kinds)
            raise AnalyticsInputError(
                f"names: no {labels} on the platform named {', '.join(repr(one_line(name)) for name in missing)}"
                " (names are matched exactly): correct the names, or widen kinds"
            )
    notes = [*exported.notes, *_round_trip(exported, existing)]
    counts = ", ".join(f"{len(entries)} {section}" for section, entries in exported.definitions.items())
    log.info("Exported %s", counts)
    for note in notes:  # the notes quote the listings, which were read unmasked
        log.warning("%s", scrub_text(note))
    return Exported(exported.definitions, tuple(notes))


def _round_trip(exported: Exported, existing: Existing) -> list[str]:
    """What a plan of the export against the platform it was read from would change: nothing, unless an object
    holds a secret left out, or the platform answered something a plan refuses (a dangling reference)."""
    try:
        plan = make_plan(load_definitions(dict(exported.definitions)), existing)
    except AnalyticsInputError as error:
        return [f"the exported definitions do not plan against this workspace as they are: {error}"]
    moved = [
        f"{LABELS[change.kind]} {one_line(change.name)!r}: {change.action} ({one_line(change.detail)[:300]})"
        for change in plan.changes
        if change.action not in ("unchanged", "not_managed")
    ]
    return [f"{len(moved)} exported object(s) would not plan as unchanged: {listed(moved)}"] if moved else []
