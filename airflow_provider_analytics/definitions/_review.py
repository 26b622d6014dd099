"""A reviewed plan against the plan made again at apply time: apply only what someone saw. No I/O.

A plan task's return value reaches the apply task through XCom (``reviewed_plan=plan_task.output``), so it is
read as hostile: it must be a plan's dict (or the operator's whole return value, which holds one under
``"plan"``) of a bounded size, and every row it lists must have the fields a plan writes, of the right types.
A malformed one is refused before any request (:func:`check_reviewed`), saying what is wrong and where; so is
one nested deeper or holding more values than a plan can (a reviewed plan 5,000 levels deep ended the task in a
``RecursionError`` when its rows were compared).

What must be the same is every row that writes or blocks the apply (``create``, ``update``, ``cannot_apply``),
matched by kind and name (and pinned id): its action, the platform object's id, the dashboard version the
update's ``If-Match`` will send, the fields that differ (secrets only as ``(secret changed)``), the digest of
what would be sent (:func:`~airflow_provider_analytics.definitions._digests.digest_of`: every field, each secret
through the deployment's keyed hash, each reference as what it names), and the secrets kept in Airflow it reads
(``reads``: each connection and field, or variable). So each of these moves the plan, and nothing is written:

- a definition edited after the review, wherever (a create of other content: another digest), a secret included;
- a reference changed or added after the review (another secret read: ``reads`` differ);
- an object created, edited or renamed on the platform meanwhile (a create that became an update or
  ``unchanged``; an update with other fields; a dashboard at another version);
- an object that was ``unchanged`` and now differs (a row the reviewer never saw).

A plan's names are masked (it is output), so objects whose names differ only in a secret (``n-***`` as written and
``n-<secret>``) share a key: all the rows of a key must be the same, or the plan moved.

Rows that write nothing (``unchanged``, ``not_managed``) may differ: an object created on the platform that no
definition names does not change what the apply does. A row that holds a secret matches only a plan made under
the same deployment key (``digest_key``): when the two keys differ, the failure says so.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from airflow_provider_analytics.definitions._model import MAX_DEPTH, MAX_VALUES
from airflow_provider_analytics.definitions._plan import ACTIONS
from airflow_provider_analytics.definitions._problems import one_line
from airflow_provider_analytics.wire.errors import AnalyticsInputError

__all__ = ["MOST_REVIEWED_DEPTH", "MOST_REVIEWED_ROWS", "MOST_REVIEWED_VALUES", "check_reviewed", "moved_since"]

# A plan lists every object of the workspace (not_managed ones too); more rows than this is no plan we made.
MOST_REVIEWED_ROWS = 200_000
# A plan's deepest values are a field's before and after, six levels down (the operator's result, the plan, its
# changes, a row, its fields, one field), and nest at most MAX_DEPTH deep themselves; the values a plan holds are at
# most the definitions' (MAX_VALUES) and as many of the platform's they are compared with, and a few a row.
MOST_REVIEWED_DEPTH = MAX_DEPTH + 6
MOST_REVIEWED_VALUES = 4 * MAX_VALUES
# An integer a plan could hold (a version, a field's value) has at most a few dozen digits; this is 3,900.
_MOST_INTEGER_BITS = 13_000
_WRITING = ("create", "update", "cannot_apply")
_ROW_FIELDS = {"kind": str, "name": str, "action": str}
_MOST_SHOWN = 20


def moved_since(reviewed: object, plan: Mapping[str, Any]) -> list[str]:
    """What differs between the reviewed plan and ``plan`` (made now): one line per object; empty: the same.

    :param reviewed: the reviewed plan: :meth:`Plan.to_dict`'s form, or the apply operator's return value.
    :param plan: the plan made again, from the platform and the definitions as they are now, in
        :meth:`Plan.to_dict`'s form (the apply task's return value holds it already).
    :raises AnalyticsInputError: ``reviewed`` is not a plan (the message says what is wrong with it).
    """
    before = _writing_rows(_rows_of(reviewed))
    now = _writing_rows(plan["changes"])
    lines = []
    digests_moved = False
    for key in sorted(before.keys() | now.keys()):
        was_all, is_all = before.get(key, ()), now.get(key, ())
        if was_all == is_all:
            continue
        where = f"{key[0]} {one_line(key[1])!r}" + (f" ({one_line(key[2])})" if key[2] else "")
        if len(was_all) > 1 or len(is_all) > 1:  # rows whose names differ only where a secret is masked
            lines.append(
                f"{where}: {max(len(was_all), len(is_all))} objects of this name once its secrets are masked, and"
                " one of them changed since the review (give them names that differ outside their secrets)"
            )
            digests_moved = True
            continue
        if not was_all:
            lines.append(f"{where}: not in the reviewed plan, now {_said(is_all[0])}")
            continue
        if not is_all:
            lines.append(f"{where}: reviewed as {_said(was_all[0])}, now nothing to do")
            continue
        was, is_ = was_all[0], is_all[0]
        if was["reads"] != is_["reads"]:
            lines.append(f"{where}: reviewed reading {_reads(was)} from Airflow, now reading {_reads(is_)}")
        else:
            said_was, said_now = _said(was), _said(is_)
            other = " (the same fields, other values)" if said_was == said_now else ""
            lines.append(f"{where}: reviewed as {said_was}, now {said_now}{other}")
            digests_moved = digests_moved or was["digest"] != is_["digest"]
    if len(lines) > _MOST_SHOWN:
        lines = [*lines[:_MOST_SHOWN], f"and {len(lines) - _MOST_SHOWN} more"]
    reviewed_key = _plan_of(reviewed).get("digest_key")
    if digests_moved and reviewed_key != plan.get("digest_key"):
        lines.append(
            "the reviewed plan was made under another deployment key than this one, so no row holding a secret can"
            " match it: the key is derived from Airflow's [core] fernet_key, which must be set, and the same, on"
            " every worker (a rotation since the review changes it too); plan again and review that plan"
        )
    return lines


def check_reviewed(reviewed: object) -> None:
    """Refuse, before any request, a reviewed plan that is not a plan: its shape, its rows, its depth and size.

    :param reviewed: the reviewed plan, as the apply task was given it.
    :raises AnalyticsInputError: what is wrong, and where (``reviewed_plan['plan']['changes'][3]...``).
    """
    _rows_of(reviewed)


def _plan_of(reviewed: object) -> Mapping[str, Any]:
    """The plan in a reviewed value: the value, or what it holds under ``plan`` (the operator's return value)."""
    plan = reviewed.get("plan") if isinstance(reviewed, Mapping) and "plan" in reviewed else reviewed
    return plan if isinstance(plan, Mapping) else {}


def _rows_of(reviewed: object) -> list[Mapping[str, Any]]:
    """The reviewed plan's rows, each checked for the fields :func:`_comparable` reads."""
    _check_bounded(reviewed)
    plan = reviewed.get("plan") if isinstance(reviewed, Mapping) and "plan" in reviewed else reviewed
    if not isinstance(plan, Mapping) or not isinstance(plan.get("changes"), list):
        raise AnalyticsInputError(
            f"reviewed_plan must be a plan (a plan task's return value, e.g. plan_task.output), got "
            f"{_shape(reviewed)}: a mapping with a 'changes' list, or one that holds such a mapping under 'plan'"
        )
    changes: list[Mapping[str, Any]] = plan["changes"]
    if len(changes) > MOST_REVIEWED_ROWS:
        raise AnalyticsInputError(
            f"reviewed_plan lists {len(changes)} objects, more than the {MOST_REVIEWED_ROWS} a plan can hold"
        )
    for index, row in enumerate(changes):
        problem = _row_problem(row)
        if problem:
            raise AnalyticsInputError(f"reviewed_plan's changes[{index}] {problem}: it is not a plan's row")
    return changes


def _check_bounded(reviewed: object) -> None:
    """Refuse a value nested deeper than :data:`MOST_REVIEWED_DEPTH`, holding more than :data:`MOST_REVIEWED_VALUES`
    values, a key that is not text, or an integer too long for Python to write as text: no plan does, and the
    comparison below recurses, sorts keys and writes fields as JSON (``int`` to text raises ``ValueError`` past
    4,300 digits). Walked with a stack of its own, so the check itself recurses at no depth."""
    stack: list[tuple[object, tuple[str | int, ...]]] = [(reviewed, ())]
    count = 1
    while stack:
        value, path = stack.pop()
        if isinstance(value, int) and value.bit_length() > _MOST_INTEGER_BITS:
            raise AnalyticsInputError(
                f"{_where(path)} is an integer of about {int(value.bit_length() * math.log10(2)):,} digits, longer"
                " than any plan's (Python writes at most 4,300 as text): it is not a plan task's return value"
            )
        if not isinstance(value, (Mapping, list, tuple)):
            continue
        count += len(value)
        if count > MOST_REVIEWED_VALUES:  # before its values are taken up
            raise AnalyticsInputError(
                f"reviewed_plan holds over {MOST_REVIEWED_VALUES:,} values, more than a plan can: it is not a plan"
                " task's return value"
            )
        if len(path) >= MOST_REVIEWED_DEPTH:
            raise AnalyticsInputError(
                f"{_where(path)} nests more than {MOST_REVIEWED_DEPTH} levels deep, deeper than any plan: it is not a"
                " plan task's return value"
            )
        if isinstance(value, Mapping):
            for key, item in value.items():
                if not isinstance(key, str):
                    raise AnalyticsInputError(
                        f"{_where(path)} has the key {one_line(repr(key))[:40]}, and a plan's keys are text: it is not"
                        " a plan task's return value"
                    )
                stack.append((item, (*path, key)))
        else:
            stack.extend((item, (*path, index)) for index, item in enumerate(value))


def _where(path: tuple[str | int, ...]) -> str:
    """``reviewed_plan['changes'][0]['fields']``, the first levels of a path (a deep one is cut)."""
    shown = "".join(f"[{one_line(step)[:40]!r}]" if isinstance(step, str) else f"[{step}]" for step in path[:8])
    return f"reviewed_plan{shown}{'...' if len(path) > 8 else ''}"


def _row_problem(row: object) -> str | None:
    if not isinstance(row, Mapping):
        return f"is {_shape(row)}, not a mapping"
    for name, kind in _ROW_FIELDS.items():
        if not isinstance(row.get(name), kind):
            return f"has no {name} string"
    if row["action"] not in ACTIONS:
        return f"has the action {one_line(str(row['action']))!r}, none of {', '.join(ACTIONS)}"
    for name in ("id", "digest", "pinned_id"):
        if row.get(name) is not None and not isinstance(row[name], str):
            return f"has {name} {_shape(row[name])}, not a string or null"
    version = row.get("version")
    if version is not None and (isinstance(version, bool) or not isinstance(version, int)):
        return f"has version {_shape(version)}, not a whole number or null"
    fields = row.get("fields", [])
    if not isinstance(fields, list) or not all(
        isinstance(item, Mapping) and isinstance(item.get("field"), str) for item in fields
    ):
        return "has fields that are not a list of mappings, each naming its field"
    reads = row.get("reads", [])
    if not isinstance(reads, list) or not all(
        isinstance(read, Mapping) and all(isinstance(item, str) for item in read.values()) for read in reads
    ):
        return "has reads that are not a list of mappings of strings"
    return None


def _writing_rows(rows: list[Mapping[str, Any]]) -> dict[tuple[str, str, str], tuple[dict[str, Any], ...]]:
    """The rows that write or block, by (kind, name, pinned id), in a form two plans compare by (JSON text for
    fields); definitions pinned to different objects may share a name. A plan's names are masked, so two objects
    whose names differ only in a secret share a key: each key holds all its rows (in a fixed order), so that an
    edit of either one moves the plan rather than hiding behind the other."""
    found: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    for row in rows:
        if row["action"] in _WRITING:
            form = {
                "action": row["action"],
                "id": row.get("id"),
                "version": row.get("version"),
                "fields": json.dumps(row.get("fields", []), sort_keys=True, default=str),
                "digest": row.get("digest"),
                "reads": json.dumps(row.get("reads", []), sort_keys=True),
            }
            found.setdefault((row["kind"], row["name"], str(row.get("pinned_id") or "")), []).append(form)
    return {
        key: tuple(sorted(forms, key=lambda form: json.dumps(form, sort_keys=True))) for key, forms in found.items()
    }


def _said(row: Mapping[str, Any]) -> str:
    """A row in the words of the failure: its action, the object's id and version, and what decides it."""
    parts = [row["action"]]
    if row["id"] is not None:
        parts.append(f"of {row['id']}")
    if row["version"] is not None:
        parts.append(f"at version {row['version']}")
    fields = json.loads(row["fields"])
    if fields:
        parts.append("(" + ", ".join(str(item.get("field")) for item in fields if isinstance(item, Mapping)) + ")")
    elif row["action"] == "create":
        parts.append(f"(content {str(row['digest'])[:12]})")
    return " ".join(parts)


def _reads(row: Mapping[str, Any]) -> str:
    """The secrets a row reads, named: ``field 'password' of connection 'warehouse_db' (connection.password)``."""
    reads = json.loads(row["reads"])
    if not reads:
        return "no secret"

    def cut(read: Mapping[str, Any], name: str) -> str:  # a reviewed plan came through XCom: any length
        return one_line(str(read.get(name)))[:120]

    named = [
        f"variable {cut(read, 'variable')!r}"
        if "variable" in read
        else f"field {cut(read, 'field')!r} of connection {cut(read, 'connection')!r}"
        for read in reads
    ]
    places = [f"{name} ({cut(read, 'at')})" for name, read in zip(named, reads, strict=True)]
    return ", ".join(places[:5]) + (f" and {len(places) - 5} more" if len(places) > 5 else "")


def _shape(value: object) -> str:
    return "None" if value is None else f"a {type(value).__name__}"
