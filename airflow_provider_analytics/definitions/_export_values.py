"""What an export writes for the values the platform answered: the secrets it holds as references to fill in,
and the values in a reference's shape as literals. No I/O; ``_export`` builds the definitions with it.

The platform's answers are data written by someone else, and an apply is where Airflow's secrets leave for the
platform, so (``_export``'s docstring says it for users):

- every secret of the one rule (``wire/_secret_rule.py``) becomes a reference: in a connection, the whole field
  that holds it, ``{from_connection: analytics_<name>, field: <key>}`` (:func:`connection_written`); in chart
  options or a workflow's configuration, the secret in its place, ``{from_variable: analytics_<name>_<path>}``
  (:func:`free_form_written`); elsewhere (a query, a description) it fails the export (:func:`no_credentials`);
- a mapping loading would read as a reference, an escape or a misspelt reference is written inside
  ``{$literal: ...}`` (``_references.LITERAL``), which an apply sends as the value it holds, reading nothing; one
  with a secret inside fails the export, naming the object and the place.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

from airflow_provider_analytics.definitions._allowed import DEFAULT_OWN_CONNECTIONS
from airflow_provider_analytics.definitions._compare import is_masked
from airflow_provider_analytics.definitions._model import LABELS, MAX_DEPTH, is_secret_field
from airflow_provider_analytics.definitions._problems import one_line
from airflow_provider_analytics.definitions._references import LITERAL, needs_literal
from airflow_provider_analytics.wire._redaction import holds_remembered, scrub_text
from airflow_provider_analytics.wire._secret_rule import Path, map_secrets, secret_units
from airflow_provider_analytics.wire.errors import UnexpectedResponseError

__all__ = [
    "Said",
    "connection_written",
    "free_form_written",
    "no_credentials",
    "no_known_secrets",
    "reference_connection_id",
    "reference_variable_key",
]

# Connection keys that name a user: such a connection has a password the platform never returns.
_USER_KEYS = frozenset({"user", "username", "login", "user_name"})
_NOT_SLUG = re.compile(r"[^a-z0-9]+")
_MOST_SLUG = 60


@dataclass(frozen=True)
class Said:
    """Where an export's values are noted, one phrase per object: references to variables (``left_out``) and to
    connections (``referred``), values escaped as literals (``escaped``); and the connections no reference names
    (``own``: the provider's own, ``_allowed.py``)."""

    left_out: list[str]
    referred: list[str]
    escaped: list[str]
    own: Collection[str] = DEFAULT_OWN_CONNECTIONS
    # The references written so far, and what each stands for: two secrets never share one (slugs drop what tells
    # "Prod-A" from "prod_a", or "API_KEY" from "api-key"), or an apply would send one secret for both.
    taken: dict[str, tuple[str, ...]] = field(default_factory=dict)

    def unique(self, reference: str, owner: tuple[str, ...]) -> str:
        """``reference`` for ``owner`` (what it stands for: the object and the field), or, when another owner has it,
        ``reference`` with the first 6 hex digits of the owner's SHA-256: the same owner gets the same one.

        :param reference: the connection id or variable key as derived from the names.
        :param owner: the object's kind and id, and the field's path.
        """
        while self.taken.setdefault(reference, owner) != owner:
            digest = hashlib.sha256("\x00".join(owner).encode("utf-8", "surrogatepass")).hexdigest()[:6]
            reference = f"{reference[:243]}_{digest}"
            owner = (*owner, digest)  # a name that was itself taken takes one more digest
        return reference


def reference_connection_id(name: str, ident: str, own: Collection[str] = DEFAULT_OWN_CONNECTIONS) -> str:
    """The Airflow connection a data source's exported secret fields refer to: ``analytics_<its name as a slug>``;
    for a name that would give a connection the provider itself uses (a data source named ``Default`` would give
    ``analytics_default``, whose password is the API token), ``analytics_<slug>_<its id>``.

    :param name: the data source's name.
    :param ident: its id (the slug when the name has no letter or digit).
    :param own: the ids of the connections the provider itself uses.
    """
    slug = _NOT_SLUG.sub("_", unicodedata.normalize("NFKC", name).lower()).strip("_")[:_MOST_SLUG].strip("_")
    conn_id = f"analytics_{slug or ident.lower()}"
    return f"{conn_id}_{ident.lower()}" if conn_id in own else conn_id


def reference_variable_key(name: str, ident: str, path: str) -> str:
    """The Airflow variable a secret of a chart's options or a workflow's configuration refers to once exported:
    ``analytics_<the object's name>_<the field's path>``, as slugs.

    :param name: the object's name.
    :param ident: its id (the slug when the name has no letter or digit).
    :param path: the secret's path: ``configuration.auth.api_token``.
    """
    place = _NOT_SLUG.sub("_", unicodedata.normalize("NFKC", path).lower()).strip("_")
    return f"{reference_connection_id(name, ident)}_{place}"[:250]


def no_credentials(fields: Mapping[str, Any], where: str) -> None:
    """Refuse a secret in a field that cannot hold a reference (a chart's query, a description, a tag).

    :param fields: an exported object's fields.
    :param where: the object, for the message.
    :raises UnexpectedResponseError: naming the object and the fields that hold one.
    """
    free = ("connection", "options", "configuration")
    found = sorted({str(path[0]) for path in secret_units({k: v for k, v in fields.items() if k not in free})})
    if found:
        raise UnexpectedResponseError(
            f"the platform's {where} holds a credential (a URL's or DSN's password, a Bearer token, a header's or an"
            f" assignment's secret) in its {', '.join(found)}, which definitions can neither keep out of the files"
            " nor refer to: remove it on the platform, or export the other objects (kinds=, names=)"
        )


def no_known_secrets(fields: Mapping[str, Any], ident: str, label: str) -> None:
    """Refuse an exported object that holds, anywhere, a secret this process knows (the analytics connection's token,
    a secret it was handed to send), where the one rule sees none: the listings are read as the platform holds them
    (data, never masked), and a file must get neither the secret nor ``***`` in its place.

    :param fields: the object's fields as exported (its name included; references and escapes in place).
    :param ident: its id, which names it in the message (its name may be what holds the secret).
    :param label: its kind, as messages say it.
    :raises UnexpectedResponseError: naming the object's id and the first field that holds one, never the value.
    """
    pending: list[tuple[Any, str]] = [(value, str(key)) for key, value in fields.items()]
    while pending:  # a loop: the values nest up to the definitions' limit, checked before this
        value, path = pending.pop()
        if isinstance(value, str) and holds_remembered(value):
            found = path
        elif isinstance(value, Mapping):
            keys = [key for key in value if isinstance(key, str) and holds_remembered(key)]
            if not keys:
                pending += [(item, f"{path}.{key}") for key, item in value.items()]
                continue
            found = f"a key of {path}"
        else:
            if isinstance(value, list):
                pending += [(item, f"{path}[{index}]") for index, item in enumerate(value)]
            continue
        raise UnexpectedResponseError(
            scrub_text(
                f"the platform's {label} {ident} holds, in {one_line(found)[:200]}, the text of a secret this task"
                " knows (the analytics connection's token, or a secret it was given to send), which an export never"
                " writes, neither as it is nor masked: remove it on the platform, or export the other objects"
                " (kinds=, names=)"
            )
        )


def connection_written(item: Mapping[str, Any], where: str, said: Said) -> object:
    """A data source's connection as exported: secret fields as references, every other as written.

    :param item: the data source as the platform listed it.
    :param where: the object, for messages.
    :param said: where the references and escapes are noted.
    """
    held = item.get("connection")
    if held is None:
        return {}
    if not isinstance(held, Mapping):
        return held  # refused by the check of the result
    conn_id = said.unique(reference_connection_id(item["name"], item["id"], said.own), ("connection", item["id"]))
    written: dict[str, Any] = {}
    escaped: list[str] = []
    for key in sorted(held):
        value = held[key]
        if is_secret_field(key) or is_masked(value) or secret_units(value):
            # a secret anywhere in the field makes the whole field a reference: a connection holds one only there
            written[key] = {"from_connection": conn_id, "field": key}
        else:
            written[key] = _cleaned(value, f"connection.{key}", 2, where, escaped)
    has_reference = any(isinstance(value, Mapping) and "from_connection" in value for value in written.values())
    if not has_reference and _USER_KEYS & {key.lower() for key in written if isinstance(key, str)}:
        written["password"] = {"from_connection": conn_id, "field": "password"}
    refs = sorted(key for key, value in written.items() if isinstance(value, Mapping) and "from_connection" in value)
    if refs:
        said.referred.append(f"{where}: {', '.join(refs)} from {conn_id!r}")
    if escaped:
        said.escaped.append(f"{where}: {', '.join(escaped)}")
    return written


class _Secret:
    """Where a secret was, until :func:`_cleaned` writes the reference to its variable there."""

    def __init__(self, variable: str) -> None:
        self.reference = {"from_variable": variable}


def free_form_written(value: object, name: str, item: Mapping[str, Any], said: Said) -> object:
    """A chart's options or a workflow's configuration as exported: secrets as references, in their place.

    :param value: the value as the platform answered it.
    :param name: ``options`` or ``configuration``.
    :param item: the object as the platform listed it.
    :param said: where the references and escapes are noted.
    """
    if value is None and name == "options":
        return {}
    if not isinstance(value, Mapping):
        return value  # refused by the check of the result
    where = f"{LABELS['chart' if name == 'options' else 'workflow']} {one_line(item['name'])!r} ({item['id']})"
    secrets: list[str] = []
    escaped: list[str] = []

    def refer(path: Path, _secret: Any) -> _Secret:
        place = _path_text(name, path)
        variable = said.unique(reference_variable_key(item["name"], item["id"], place), ("variable", item["id"], place))
        secrets.append(f"{one_line(place)[:200]} from {variable!r}")
        return _Secret(variable)

    kept = _cleaned(map_secrets(value, refer), name, 1, where, escaped, top=True)
    if secrets:
        said.left_out.append(f"{where}: {', '.join(secrets)}")
    if escaped:
        said.escaped.append(f"{where}: {', '.join(escaped)}")
    return kept


def _path_text(name: str, path: Path) -> str:
    text = name
    for step in path:
        text = f"{text}[{step}]" if isinstance(step, int) else f"{text}.{step}"
    return text


def _cleaned(value: Any, path: str, depth: int, where: str, escaped: list[str], top: bool = False) -> Any:
    """``value`` as written: the keys of every mapping sorted, so that a re-export writes the same text; each
    secret found before (a :class:`_Secret`) as the reference to its variable; each mapping loading would not read
    back as itself (``_references.needs_literal``) inside the escape ``{$literal: ...}``, its path added to
    ``escaped``. ``top``: the free-form value itself (a mapping of fields, never a reference)."""
    if depth > MAX_DEPTH:
        raise UnexpectedResponseError(
            f"the platform's {where} holds a value nested more than {MAX_DEPTH} levels deep, which definitions"
            " cannot carry: export the other objects (kinds=, names=)"
        )
    if isinstance(value, _Secret):
        return value.reference
    if isinstance(value, Mapping):
        if not top and needs_literal(value):
            if _holds_secret(value):
                raise UnexpectedResponseError(
                    f"the platform's {where} holds, at {one_line(path)[:200]}, a value in the shape of a secret"
                    " reference with a secret inside, which an export can neither write as it is nor escape: change"
                    " it on the platform, or export the other objects (kinds=, names=)"
                )
            escaped.append(one_line(path)[:200])  # the platform's keys: one line in the WARNING
            return {LITERAL: _sorted(value, depth + 1, where)}
        return {key: _cleaned(value[key], f"{path}.{key}", depth + 1, where, escaped) for key in sorted(value, key=str)}
    if isinstance(value, list):
        return [_cleaned(item, f"{path}[{index}]", depth + 1, where, escaped) for index, item in enumerate(value)]
    return value


def _holds_secret(value: Any) -> bool:
    if isinstance(value, _Secret):
        return True
    if isinstance(value, Mapping):
        return any(_holds_secret(item) for item in value.values())
    return isinstance(value, list) and any(_holds_secret(item) for item in value)


def _sorted(value: Any, depth: int, where: str) -> Any:
    """A value held by an escape: the keys of every mapping sorted, and nothing else read into it."""
    if depth > MAX_DEPTH:
        raise UnexpectedResponseError(
            f"the platform's {where} holds a value nested more than {MAX_DEPTH} levels deep, which definitions"
            " cannot carry: export the other objects (kinds=, names=)"
        )
    if isinstance(value, Mapping):
        return {key: _sorted(value[key], depth + 1, where) for key in sorted(value, key=str)}
    if isinstance(value, list):
        return [_sorted(item, depth + 1, where) for item in value]
    return value
