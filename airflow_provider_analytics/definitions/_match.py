"""Match definitions to the platform's objects, and resolve references to them. No I/O.

Definitions are matched to platform objects of their kind by ``name`` (the platform does not keep names unique:
a definition whose name several objects share is an error, listing their ids), or, when a definition gives one, by
``id`` ("pinned": what an export writes for objects whose name others share; definitions pinned to different
objects may then share a name, and a reference to that name is refused as ambiguous).

References (a chart's ``data_source``, a layout item's ``chart``) are a name (of a definition, or of a platform
object) or a platform object's id. A name defined in these definitions wins; otherwise an id, then a platform
name. A reference that is one platform object's id and another's name is refused, naming both. A reference to
an object this plan creates stays :class:`Pending` until the apply has its id.

Every problem found is added to the caller's :class:`~airflow_provider_analytics.definitions._problems.Problems`,
so that ``_plan.make_plan`` reports them all at once.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from airflow_provider_analytics.definitions._compare import Ref
from airflow_provider_analytics.definitions._model import LABELS, SECTIONS, Definition, Kind
from airflow_provider_analytics.definitions._problems import Problems

__all__ = ["Index", "ReferenceResolver", "managed_object", "name_of"]

_MOST_IDS_LISTED = 10


class Index:
    """The platform's objects of one kind, by id (those with a string id) and by name (those with a string id and
    name).

    :param items: the objects, as the platform listed them.
    """

    def __init__(self, items: Sequence[dict[str, Any]]) -> None:
        self.by_id = {item["id"]: item for item in items if isinstance(item.get("id"), str)}
        self.by_name: dict[str, list[dict[str, Any]]] = {}
        for item in items:
            if isinstance(item.get("name"), str) and isinstance(item.get("id"), str):
                self.by_name.setdefault(item["name"], []).append(item)


def managed_object(definition: Definition, index: Index, problems: Problems) -> dict[str, Any] | None:
    """The platform object ``definition`` manages: the one its ``id`` pins, else the one of its name (``None``:
    none, to create). A pinned id the platform does not list, and a name several objects share, are problems."""
    label = LABELS[definition.kind]
    if definition.id is not None:
        held = index.by_id.get(definition.id)
        if held is None:
            problems.add(
                f"{definition.origin}: id: the platform lists no {label} {definition.id!r}; an id pins a definition"
                f" to a {label} that exists: correct it, or leave it out to create this {label}"
            )
        return held
    same = index.by_name.get(definition.name, [])
    if len(same) > 1:
        problems.add(
            f"{definition.origin}: name: {len(same)} {label}s on the platform are named {definition.name!r}"
            f" ({_ids(same)}), so this definition cannot tell which it manages: give it the 'id' of the one it"
            " manages, rename the others on the platform, or give the definition another name"
        )
    return same[0] if len(same) == 1 else None


class ReferenceResolver:
    """Resolves references by name or id to an id (or a :class:`Pending` object), recording each problem.

    :param indexes: the platform's objects, per kind.
    :param targets: what a reference by name to a definition means: its platform id, or the object this plan
        creates; ``None`` where several (pinned) definitions share the name.
    :param problems: where a dangling or ambiguous reference is recorded.
    """

    def __init__(
        self, indexes: dict[Kind, Index], targets: dict[tuple[Kind, str], Ref | None], problems: Problems
    ) -> None:
        self.indexes = indexes
        self.targets = targets
        self.problems = problems

    def resolve(self, kind: Kind, ref: str, where: str) -> Ref:
        """The id (or pending object) ``ref`` names; a dangling or ambiguous one is recorded as a problem."""
        label = LABELS[kind]
        index = self.indexes[kind]
        if (kind, ref) in self.targets and self.targets[(kind, ref)] is None:
            self.problems.add(
                f"{where}: {ref!r} is the name of several {label}s in the definitions (each pinned by its 'id');"
                f" refer to the one meant by its id"
            )
            return ref
        defined = self.targets.get((kind, ref))
        by_id = index.by_id.get(ref)
        if defined is not None:
            if by_id is not None and defined != ref:
                self.problems.add(
                    f"{where}: {ref!r} is both the name of a {label} in the definitions and the id of another"
                    f" {label} on the platform (named {name_of(by_id)!r}); rename the definition"
                )
            return defined
        named = index.by_name.get(ref, [])
        if by_id is not None:
            # One object's id and another's name: taking the id silently could wire the other object in.
            others = [item for item in named if item["id"] != ref]
            if others:
                self.problems.add(
                    f"{where}: {ref!r} is both the id of the {label} named {name_of(by_id)!r} and the name of"
                    f" another {label} on the platform ({_ids(others)}); use that one's id to mean it, or rename it"
                    f" on the platform to keep meaning {ref}"
                )
            return ref
        if len(named) == 1:
            return str(named[0]["id"])
        if named:
            self.problems.add(
                f"{where}: {ref!r} names {len(named)} {label}s on the platform ({_ids(named)}) and none in the"
                f" definitions; use the id of the one meant"
            )
        else:
            self.problems.add(
                f"{where}: {ref!r} names no {label} in the definitions or on the platform (by name or id); define"
                f" it under {SECTIONS[kind]}, or correct the reference"
            )
        return ref


def name_of(item: Mapping[str, Any]) -> str:
    """A platform object's name as shown in a plan: ``(no name)`` when it has no string name."""
    name = item.get("name")
    return name if isinstance(name, str) else "(no name)"


def _ids(items: Sequence[Mapping[str, Any]]) -> str:
    ids = [str(item.get("id")) for item in items]
    more = len(ids) - _MOST_IDS_LISTED
    return ", ".join(ids[:_MOST_IDS_LISTED]) + (f" and {more} more" if more > 0 else "")
