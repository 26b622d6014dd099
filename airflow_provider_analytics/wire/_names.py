"""Names instead of ids: the one id a name stands for among the objects a listing returned.

A pure function, no Airflow and no request: the operators, the sensor and the event trigger list the objects
(one listing per try) and hand them here. The match is exact and case-sensitive on ``name``. The listing is
checked before any name is matched: an entry without an id the contract allows is the platform's error, never an
id to act on (``str(None)`` would send ``POST /v1/workflows/None/execute``); an entry listed twice (a page
boundary that moved while the listing was read) is one object, not two.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from airflow_provider_analytics.wire._contract import ID_PATTERN
from airflow_provider_analytics.wire.errors import AnalyticsInputError, UnexpectedResponseError, clean_text

__all__ = ["ids_for_names", "one_of", "resolve_name"]

# How many existing names a "no match" message lists at most.
SHOWN_NAMES = 10


def one_of(id_value: object, name_value: object, id_parameter: str, name_parameter: str) -> None:
    """Check that exactly one of an id parameter and its name parameter was given (``None`` is not given).

    :param id_value: the id parameter's value.
    :param name_value: the name parameter's value.
    :param id_parameter: the id parameter's name, for the message.
    :param name_parameter: the name parameter's name, for the message.
    :raises AnalyticsInputError: both or neither were given.
    """
    if (id_value is None) == (name_value is None):
        given = "both" if id_value is not None else "neither"
        raise AnalyticsInputError(f"give exactly one of {id_parameter} and {name_parameter}, got {given}")


def resolve_name(kind: str, objects: Iterable[Mapping[str, Any]], name: object) -> str:
    """The id of the one object named ``name``.

    :param kind: what the objects are, for the message (``workflow``, ``dashboard``, ``data source``).
    :param objects: the objects as listed (each with ``id`` and ``name``).
    :param name: the name looked for (exact, case-sensitive).
    :raises AnalyticsInputError: no object has that name (the message lists names that exist, closest first),
        or several have (it lists their ids).
    :raises UnexpectedResponseError: a listed object has no id the contract allows.
    """
    return ids_for_names(kind, objects, [name])[0]


def ids_for_names(kind: str, objects: Iterable[Mapping[str, Any]], names: Sequence[object]) -> list[str]:
    """The id of the one object for each name, in the order of ``names``; every problem is reported at once.

    :param kind: what the objects are, for the message.
    :param objects: the objects as listed (each with ``id`` and ``name``).
    :param names: the names looked for.
    :raises AnalyticsInputError: a name is not a non-empty string, matches no object, or matches several.
    :raises UnexpectedResponseError: a listed object has no id the contract allows (a string of its pattern).
    """
    by_name: dict[str, list[str]] = {}
    for item in objects:
        object_id = item.get("id") if isinstance(item, Mapping) else None
        if not isinstance(object_id, str) or not ID_PATTERN.fullmatch(object_id):
            # Never str() it: None would become the id "None", 7 the id "7", and the task would act on them.
            raise UnexpectedResponseError(
                f"the platform listed a {kind} without a valid id: {clean_text(repr(item), 200)}; no name was "
                f"resolved and nothing was sent (ids are strings of 1-64 letters, digits, '_' or '-')"
            )
        if isinstance(item.get("name"), str):
            found = by_name.setdefault(item["name"], [])
            if object_id not in found:  # listed twice (a page boundary moved): one object, not two
                found.append(object_id)
    ids: list[str] = []
    problems: list[str] = []
    for name in names:
        if not isinstance(name, str) or not name:
            problems.append(f"{kind} name must be a non-empty string, got {name!r}")
            continue
        found = by_name.get(name, [])
        if len(found) == 1:
            ids.append(found[0])
        elif not found:
            problems.append(f"no {kind} is named {name!r}; {_existing(kind, list(by_name), name)}")
        else:
            problems.append(f"{len(found)} {kind}s are named {name!r} (ids {', '.join(sorted(found))}): pass the id")
    if problems:
        raise AnalyticsInputError("; ".join(problems))
    return ids


def _existing(kind: str, names: list[str], wanted: str) -> str:
    """The names that exist, closest to ``wanted`` first, at most :data:`SHOWN_NAMES` of them."""
    if not names:
        return f"there is no {kind} at all"
    ranked = sorted(names, key=lambda name: (-difflib.SequenceMatcher(None, wanted, name).ratio(), name))
    shown = ", ".join(repr(name) for name in ranked[:SHOWN_NAMES])
    more = f" and {len(names) - SHOWN_NAMES} more" if len(names) > SHOWN_NAMES else ""
    return f"{kind}s that exist, closest first: {shown}{more}"
