"""A secret kept in Airflow: ``{from_connection: <id>, field: <name>}`` or ``{from_variable: <key>}``, read from
Airflow when a plan is applied and never written anywhere.

Loading turns each such mapping into a :class:`~airflow_provider_analytics.definitions._model.SecretRef`: a data
source's connection field (:func:`references_in`), or a value at any depth of chart options or a workflow's
configuration (:func:`nested_references_in`), and refuses one of any other shape: it would otherwise reach the
platform as the value, which is what happened before references existed. Planning never reads them (a plan made for
review must not hold a secret, and a plan task may run where the secrets are not). Applying reads every reference of
its writes before its first write (:func:`resolve_references`), through a :data:`SecretResolver` the hook layer
hands in: this package imports no Airflow. A reference that cannot be read fails the apply before anything is
written, naming the object, the field and what is missing; no message here ever holds a value read.

The trust boundary (docs/guides/apply-definitions.md, "Secrets from Airflow"): an apply is where Airflow's secrets
leave for the platform, so a reference may name only a connection or variable the deployment allowed
(``_allowed.SecretSources``, checked by ``_allowed.check_sources`` when planning, before any request, and again when
applying, before anything is read); and a value the platform wrote is never read as a reference: an export writes
one of a reference's shape inside the escape ``{$literal: <value>}`` (:data:`LITERAL`), which loading unwraps into
the plain value, reading nothing inside it.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from airflow_provider_analytics.definitions._files import type_name
from airflow_provider_analytics.definitions._model import ChartDef, DataSourceDef, Definition, SecretRef, WorkflowDef
from airflow_provider_analytics.definitions._problems import Problems
from airflow_provider_analytics.definitions._secret_budget import SecretBudget

__all__ = [
    "CONNECTION_FIELDS",
    "LITERAL",
    "MAX_REFERENCE_LENGTH",
    "REFERENCE_KEYS",
    "Missing",
    "SecretResolver",
    "free_form_of",
    "needs_literal",
    "nested_references_in",
    "path_text",
    "reads_of",
    "references_in",
    "refs_of",
    "resolve_references",
    "with_values",
]

REFERENCE_KEYS = ("from_connection", "from_variable")
_KNOWN_KEYS = (*REFERENCE_KEYS, "field")
# An Airflow connection's own fields a reference may read; any other name is a key of its extra.
CONNECTION_FIELDS = ("password", "login", "host", "port", "schema")
# Airflow's own bound on connection ids and variable keys (its ID_LEN); a field name is bounded the same.
MAX_REFERENCE_LENGTH = 250
_PLAIN_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")
# The escape of a value the platform wrote in a reference's shape: {$literal: <value>} is read as <value>, verbatim.
LITERAL = "$literal"
_UNPRINTABLE = re.compile(r"[\s\x00-\x1f\x7f-\x9f]")


@dataclass(frozen=True)
class Missing:
    """What a resolver returns for a reference it cannot read (not raised: it never leaves this package's caller).

    :param reason: what is missing (an Airflow connection, variable or field), in a phrase after the field's
        name; never a value.
    """

    reason: str


# Reads one reference: the value to send, or Missing. The hook layer's is hooks/_airflow_secrets.py.
SecretResolver = Callable[[SecretRef], Any]


def _at(path: str, key: str) -> str:
    return f"{path}.{key}" if _PLAIN_KEY.fullmatch(key) else f"{path}[{key!r}]"


def _suggest(key: str, known: Sequence[str]) -> str:
    close = difflib.get_close_matches(key, known, n=1, cutoff=0.75)
    return f"; did you mean {close[0]!r}?" if close else ""


def references_in(connection: Mapping[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """``connection`` with each reference as a :class:`SecretRef`, and the problems found (``<field>: <what>``).

    A reference is a connection's own field whose value is a mapping holding ``from_connection`` or
    ``from_variable``. Refused: any other key in it, both of those keys, ``field`` beside ``from_variable``, a
    value that is not a short printable string, a reference nested deeper (it would be sent as a value), and a
    mapping whose keys are near misses of a reference's (``form_connection``: a typo would send it as a value).

    :param connection: a data source's connection, already plain JSON (``_schemas``).
    """
    parsed: dict[str, Any] = {}
    problems: list[str] = []
    for key, value in connection.items():
        where = _at("connection", key)
        if _literal(value):
            problems += _lone_literal(where, value)
            parsed[key] = value.get(LITERAL)
        elif isinstance(value, Mapping) and any(name in value for name in REFERENCE_KEYS):
            ref, found = _reference(where, value)
            problems += found
            parsed[key] = ref
        else:
            problems += _stray(where, value, top=True)
            parsed[key] = _unwrapped(value)
    return parsed, problems


def nested_references_in(value: Mapping[str, Any], field: str) -> tuple[dict[str, Any], list[str]]:
    """A chart's ``options`` or a workflow's ``configuration`` with each reference, at any depth, as a
    :class:`SecretRef`, and the problems found (as :func:`references_in` says them).

    A value holding ``from_connection`` or ``from_variable`` is a reference wherever it is: a token kept in Airflow
    sits where the platform expects it (``configuration.auth.api_token``), not only at the top.

    :param value: the free-form value, already plain JSON (``_schemas``).
    :param field: its name, for messages: ``options`` or ``configuration``.
    """
    problems: list[str] = []

    def parsed(item: Any, where: str) -> Any:
        if _literal(item):
            problems.extend(_lone_literal(where, item))
            return item.get(LITERAL)
        if isinstance(item, Mapping):
            if any(name in item for name in REFERENCE_KEYS):
                ref, found = _reference(where, item)
                problems.extend(found)
                return ref
            near = [key for key in item if key not in REFERENCE_KEYS and _suggest(key, REFERENCE_KEYS)]
            if near and len(item) <= len(_KNOWN_KEYS):
                problems.extend(f"{_at(where, key)}: is not a secret reference's field{_suggest(key, REFERENCE_KEYS)}"
                                for key in near)  # fmt: skip
            return {key: parsed(inner, _at(where, key)) for key, inner in item.items()}
        if isinstance(item, list):
            return [parsed(inner, f"{where}[{index}]") for index, inner in enumerate(item)]
        return item

    result = {key: parsed(item, _at(field, key)) for key, item in value.items()}
    return result, problems


def refs_of(value: Any, path: tuple[str | int, ...] = ()) -> list[tuple[tuple[str | int, ...], SecretRef]]:
    """Every :class:`SecretRef` in a free-form value, with its path (keys and indexes from the top).

    :param value: a connection, chart options or a workflow's configuration, as loaded.
    :param path: where ``value`` is (for the recursion).
    """
    if isinstance(value, SecretRef):
        return [(path, value)]
    if isinstance(value, Mapping):
        return [found for key, item in value.items() for found in refs_of(item, (*path, key))]
    if isinstance(value, list):
        return [found for index, item in enumerate(value) for found in refs_of(item, (*path, index))]
    return []


def with_values(value: Any, read: Mapping[tuple[str | int, ...], Any], path: tuple[str | int, ...] = ()) -> Any:
    """``value`` with each :class:`SecretRef` replaced by what was read for its path (``read``, from
    :func:`resolve_references`): what is sent, and never kept.

    :param value: a free-form value holding references.
    :param read: the values read, by path.
    :param path: where ``value`` is (for the recursion).
    """
    if isinstance(value, SecretRef):
        return read[path]
    if isinstance(value, Mapping):
        return {key: with_values(item, read, (*path, key)) for key, item in value.items()}
    if isinstance(value, list):
        return [with_values(item, read, (*path, index)) for index, item in enumerate(value)]
    return value


def _reference(where: str, value: Mapping[str, Any]) -> tuple[SecretRef | None, list[str]]:
    problems = [
        f"{_at(where, key)}: is not a known field of a secret reference; the fields are from_connection and field,"
        f" or from_variable{_suggest(key, _KNOWN_KEYS)}"
        for key in value
        if key not in _KNOWN_KEYS
    ]
    if all(name in value for name in REFERENCE_KEYS):
        problems.append(f"{where}: has both from_connection and from_variable; a reference reads one: keep one")
        return None, problems
    source: Literal["connection", "variable"] = "connection" if "from_connection" in value else "variable"
    key_name = f"from_{source}"
    what = "an Airflow connection's id" if source == "connection" else "an Airflow variable's key"
    key = value[key_name]
    problem = _text_problem(key, what)
    if problem:
        problems.append(f"{_at(where, key_name)}: {problem}")
    field: Any = None
    if "field" in value and source == "variable":
        problems.append(f"{_at(where, 'field')}: goes with from_connection only (a variable holds one value)")
    elif source == "connection":
        field = value.get("field", "password")
        problem = _text_problem(field, f"one of {', '.join(CONNECTION_FIELDS)}, or a key of the connection's extra")
        if problem:
            problems.append(f"{_at(where, 'field')}: {problem}")
    if problems:
        return None, problems
    return SecretRef(source, key, field), []


def _text_problem(value: Any, what: str) -> str | None:
    """What is wrong with a reference's name (never quoting it: it was meant for a name, but who knows)."""
    if not isinstance(value, str):
        return f"must be {what} (a string), got {type_name(value)}"
    if not value.strip():
        return f"must not be empty: give {what}"
    if len(value) > MAX_REFERENCE_LENGTH:
        return f"is {len(value)} characters long; {what} has at most {MAX_REFERENCE_LENGTH}"
    if _UNPRINTABLE.search(value):
        return f"must not hold spaces or control characters: give {what}"
    return None


def _stray(where: str, value: Any, top: bool) -> list[str]:
    """A reference nested inside a field's value, or a near miss of one: either would be sent as a value."""
    problems: list[str] = []
    if _literal(value):
        return _lone_literal(where, value)
    if isinstance(value, Mapping):
        if not top and any(name in value for name in REFERENCE_KEYS):
            return [
                f"{where}: a reference to an Airflow secret is read only as a connection's own field"
                " (connection.<name>: {from_connection: ...}), not inside another value; move it up"
            ]
        for key, item in value.items():
            near = _suggest(key, REFERENCE_KEYS) if key not in REFERENCE_KEYS else ""
            if near and len(value) <= len(_KNOWN_KEYS):
                problems.append(f"{_at(where, key)}: is not a secret reference's field{near}")
            problems += _stray(_at(where, key), item, top=False)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            problems += _stray(f"{where}[{index}]", item, top=False)
    return problems


def _literal(value: Any) -> bool:
    return isinstance(value, Mapping) and LITERAL in value


def _lone_literal(where: str, value: Mapping[str, Any]) -> list[str]:
    """The escape's one rule: it stands alone (what else would the keys beside it mean?)."""
    others = sorted(str(key) for key in value if key != LITERAL)
    if not others:
        return []
    return [
        f"{where}: {LITERAL} stands alone: it holds a value to send as written, so a mapping with it holds nothing"
        f" else (found {', '.join(map(repr, others[:5]))}); put those keys inside the value under {LITERAL}"
    ]


def _unwrapped(value: Any) -> Any:
    """A connection field's value with each escape inside it replaced by the value it holds (read no further)."""
    if _literal(value):
        return value.get(LITERAL)
    if isinstance(value, Mapping):
        return {key: _unwrapped(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_unwrapped(item) for item in value]
    return value


def needs_literal(value: Mapping[str, Any]) -> bool:
    """Whether a mapping the platform wrote must be exported inside :data:`LITERAL` to be read back as itself:
    loading would take it for a reference (a reference's key), for an escape, or for a reference's misspelling
    (which it refuses).

    :param value: a mapping inside a connection, chart options or a workflow's configuration.
    """
    if any(key in REFERENCE_KEYS or key == LITERAL for key in value):
        return True
    return len(value) <= len(_KNOWN_KEYS) and any(
        isinstance(key, str) and _suggest(key, REFERENCE_KEYS) for key in value
    )


def reads_of(definition: Definition) -> list[dict[str, str]]:
    """What applying ``definition`` reads from Airflow, in a plan's words: one entry per reference, its place
    (``at``) and what it names (``connection`` and ``field``, or ``variable``); never a value.

    :param definition: a definition of any kind.
    """
    field, value = free_form_of(definition)
    reads = []
    for path, ref in refs_of(value):
        named = {"variable": ref.key} if ref.source == "variable" else {"connection": ref.key, "field": str(ref.field)}
        reads.append({"at": path_text(field, path), **named})
    return reads


def resolve_references(
    definitions: Sequence[Definition], resolver: SecretResolver | None
) -> dict[tuple[str, str], dict[tuple[str | int, ...], Any]]:
    """Every reference of ``definitions`` read through ``resolver``: the values by (kind, name), then by path in
    the object's free-form field (a connection, chart options, a workflow's configuration).

    All are read before the caller writes anything, and every failure is reported together.

    :param definitions: the objects an apply creates.
    :param resolver: reads one reference; ``None`` when the caller has no way to (a refusal if any is needed).
    :raises AnalyticsInputError: a reference that cannot be read, naming the object, the field and what is
        missing, or whose value is over its budget (``_secret_budget.py``: bytes, depth, what JSON carries), naming
        what to change (nothing written).
    """
    problems = Problems("The definitions' secrets from Airflow")
    resolved: dict[tuple[str, str], dict[tuple[str | int, ...], Any]] = {}
    budget = SecretBudget()
    for definition in definitions:
        field, value = free_form_of(definition)
        for path, ref in refs_of(value):
            where = f"{definition.origin}: {path_text(field, path)}"
            if resolver is None:
                problems.add(f"{where}: refers to {ref}, and this apply was given no way to read Airflow's secrets")
                continue
            read = resolver(ref)
            problem = read.reason if isinstance(read, Missing) else budget.problem(read, path)
            if problem is not None:
                problems.add(f"{where}: {problem if isinstance(read, Missing) else f'{ref} {problem}'}")
            else:
                resolved.setdefault((definition.kind, definition.name), {})[path] = read
    problems.raise_if_any()
    return resolved


def free_form_of(definition: Definition) -> tuple[str, Any]:
    """The name and value of a definition's free-form field, where references may be (dashboards have none).

    :param definition: a definition of any kind.
    """
    if isinstance(definition, DataSourceDef):
        return "connection", definition.connection
    if isinstance(definition, ChartDef):
        return "options", definition.options
    if isinstance(definition, WorkflowDef):
        return "configuration", definition.configuration
    return "", {}


def path_text(field: str, path: tuple[str | int, ...]) -> str:
    """Where a value is in a definition, as messages say it: ``configuration.auth.api_token``, ``connection[0]``.

    :param field: the free-form field's name.
    :param path: keys and indexes inside it.
    """
    text = field
    for step in path:
        text = f"{text}[{step}]" if isinstance(step, int) else _at(text, step)
    return text
