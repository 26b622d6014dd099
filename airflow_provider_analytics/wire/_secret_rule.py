"""The one rule for "this value is a secret", for every input and every use: masking and registration
(``_redaction.py``), and the definitions' digests, ``Idempotency-Key`` bodies, plan tables and exports.

A value is secret when, at any depth of a JSON value, it is:

- under a **secret key** (:func:`is_secret_key`: its name holds a marker, or ends in a short one): the whole value,
  whatever it holds (``proxy: {host: ...}`` is one secret, not a mapping whose ``host`` is plain);
- after a secret key's name at the head of a list: the items after the first of a **secret pair** or row
  (``[["user", "svc"], ["password", "..."]]``, the shape of query parameters and header lists, whatever the other
  items of the list are), and the item after a **secret flag** in a list of texts (``["--password", "..."]``, a
  command's arguments);
- the value of a **named secret**: a mapping whose ``name``, ``key``, ``header``, ``field``, ``param``,
  ``parameter``, ``variable``, ``var``, ``env`` or ``k`` is a secret key's name, and its ``value``, ``val``, ``v``
  or ``content`` (``{"name": "X-Api-Key", "value": "..."}``, ``{"header": "Authorization", "value": "..."}``: the
  shapes of header and environment lists);
- a **credential inside a text** (``_text_credentials.py``): a URL's password (``postgres://svc:<password>@db``,
  the password running to the URL's last ``@``), an assignment to a credential's name (``password=``,
  ``sslpassword=``, ``DB_PASSWORD=``, ``?api_key=``, ``PWD={...};``), a header line (``X-Api-Key: ...``,
  ``Authorization: Basic ...``) and ``Bearer <token>``. The text holds it; the rest of the text is not secret.

:func:`map_secrets` is the walk every use shares: it hands each secret to the caller, which hides, hashes, drops
or refers to it. No Airflow here: the wire layer, the definitions and the hooks apply the same rule on every
release. docs/hook.md ("Secrets") documents it.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Mapping
from typing import Any

from airflow_provider_analytics.wire._text_credentials import credential_spans, normalized_name

__all__ = [
    "DROP",
    "SECRET_KEY_MARKERS",
    "SECRET_LAST_WORDS",
    "Path",
    "credentials_in_text",
    "is_secret_key",
    "map_secrets",
    "mask_credentials",
    "secret_units",
    "secret_values",
]

# A key's name (as _text_credentials.normalized_name writes it: folded, lower-cased, every run of non-word characters
# made "_") holds a secret when it contains one of these, separators aside (privateKey, privatekey, private-key).
# They are Airflow 3.3's own sensitive field names (DEFAULT_SENSITIVE_FIELDS of its secrets masker, which Airflow
# applies to connection extras and variable names) and the write-only connection fields of the contract ("password,
# private_key, token, anything the platform marks secret"), plus the names key material goes by. Kept here, without
# Airflow, so that every layer applies the same rule on every release (2.11's list is shorter). "pwd" is ODBC's
# password field; "cookie", "creds", "jwt" and "client_assertion" carry sessions and signed credentials.
SECRET_KEY_MARKERS = (
    "access_key",
    "access_token",
    "api_key",
    "apikey",
    "auth_header",
    "authorization",
    "bearer",
    "client_assertion",
    "connection_string",
    "cookie",
    "credential",
    "creds",
    "dsn",
    "jwt",
    "key_file",
    "keyfile",
    "passphrase",
    "passwd",
    "password",
    "private_key",
    "pwd",
    "proxy",
    "secret",
    "service_account",
    "service_key",
    "session_id",
    "signing_key",
    "ssh_key",
    "sslkey",
    "ssl_key",
    "token",
    "totp",
    "webhook_url",
)
# Short names that are credentials only as a key's last word (``db_pass``, ``user_pin``, ``mfa_otp``): contained
# anywhere they would catch ``bypass``, ``compass`` or ``spinner``. Not ``auth``: ``auth: {type, user, password}``
# is a mapping of settings whose credentials sit under keys of their own, and hiding all of it would hide what a
# plan shows changed.
SECRET_LAST_WORDS = ("otp", "pass", "pin")
_COMPACT_MARKERS = tuple(marker.replace("_", "") for marker in SECRET_KEY_MARKERS)
# The fields of a named secret: a mapping naming a secret in one of _NAME_FIELDS holds it in its _VALUE_FIELDS.
_NAME_FIELDS = ("name", "key", "header", "field", "param", "parameter", "variable", "var", "env", "k")
_VALUE_FIELDS = ("value", "val", "v", "content")
# A command's flag naming a secret (``--password``), whose value is the next argument.
_FLAG = re.compile(r"-{1,2}([A-Za-z][\w.-]*)")

# Where a secret is: the keys and list positions from the top of the value walked.
Path = tuple[str | int, ...]
# What a ``replace`` callback of :func:`map_secrets` returns to drop a mapping's key altogether.
DROP: Any = object()


def is_secret_key(name: object) -> bool:
    """Whether a value under this key is a secret (:data:`SECRET_KEY_MARKERS`): ``password``, ``api_token``,
    ``X-Api-Key``, ``sslkey``, ``client_secret``, ``dbPassword``, ``privatekey``...

    The key is compared as ``_text_credentials.normalized_name`` writes it (compatibility characters folded, so
    ``password`` in fullwidth letters is ``password``), separators aside.

    :param name: a mapping key, in any section (connection fields, chart options, workflow configuration).
    """
    return isinstance(name, str) and _names_secret(name)


@functools.lru_cache(maxsize=4096)  # every walk asks about every key; a workspace repeats a few hundred names
def _names_secret(name: str) -> bool:
    normalized = normalized_name(name)
    compact = normalized.replace("_", "")
    if any(marker in compact for marker in _COMPACT_MARKERS):
        return True
    words = normalized.strip("_").rsplit("_", 1)
    return words[-1] in SECRET_LAST_WORDS


def credentials_in_text(text: str) -> list[str]:
    """The credentials a text holds (``_text_credentials.py``): a URL's password, an assignment's or a header
    line's value under a credential's name, a bearer token.

    :param text: any text.
    """
    return [text[start:end] for start, end in credential_spans(text)]


def mask_credentials(text: str, mask: str) -> str:
    """``text`` with each credential in it (:func:`credentials_in_text`) replaced by ``mask``.

    :param text: any text.
    :param mask: what stands in each credential's place.
    """
    pieces: list[str] = []
    done = 0
    for start, end in credential_spans(text):
        pieces += [text[done:start], mask]
        done = end
    return "".join([*pieces, text[done:]])


def _secret_row(item: object) -> bool:
    """Whether a list's item is a secret pair or row: a list of two or more items, the first a secret key's name."""
    return isinstance(item, (list, tuple)) and len(item) >= 2 and isinstance(item[0], str) and is_secret_key(item[0])


def _secret_flag(item: object) -> bool:
    """Whether a list's item is a command's flag naming a secret (``--password``): the next item is its value."""
    if not isinstance(item, str):
        return False
    flag = _FLAG.fullmatch(item)
    return flag is not None and is_secret_key(flag.group(1))


def _named_secret(value: Mapping[Any, Any]) -> bool:
    """Whether a mapping is a named secret: a ``value`` (or ``val``, ``v``) beside a ``name``, ``key``, ``header``...
    that names a secret."""
    return any(field in value for field in _VALUE_FIELDS) and any(
        is_secret_key(value.get(field)) for field in _NAME_FIELDS
    )


def map_secrets(
    value: Any,
    replace: Callable[[Path, Any], Any],
    in_text: Callable[[Path, str, list[str]], Any] | None = None,
) -> Any:
    """A copy of a JSON value with each secret (the module's rule) replaced by what the caller makes of it.

    Walked without recursion (as ``_redaction.scrub_value`` is): a value handed to a hook method may nest as deep
    as ``json.loads`` allows, deeper than a recursive walk on top of the caller's frames could go.

    :param value: a connection, chart options, a workflow's configuration, or anything made of those.
    :param replace: given a secret's path and its whole value, what to put in its place (:data:`DROP` drops a
        mapping's key; in a list it leaves ``None``).
    :param in_text: given a text's path, the text and the credentials it holds, what to put in its place;
        ``None``: ``replace(path, text)``.
    """

    def plain(item: Any, path: Path) -> Any:
        """A value that is no container, as it is copied (a text holding credentials handed over)."""
        if isinstance(item, str):
            found = credentials_in_text(item)
            if found:
                return in_text(path, item, found) if in_text is not None else replace(path, item)
        return item

    def container(item: Any) -> dict[Any, Any] | list[Any] | None:
        return {} if isinstance(item, Mapping) else [] if isinstance(item, (list, tuple)) else None

    top = container(value)
    if top is None:
        return plain(value, ())
    pending: list[tuple[Any, Any, Path]] = [(value, top, ())]
    while pending:
        source, target, path = pending.pop()
        if isinstance(source, Mapping):
            named = _named_secret(source)
            for key, item in source.items():
                inner = (*path, key)
                if is_secret_key(key) or (named and key in _VALUE_FIELDS):
                    made = replace(inner, item)
                    if made is not DROP:
                        target[key] = made
                    continue
                child = container(item)
                target[key] = plain(item, inner) if child is None else child
                if child is not None:
                    pending.append((item, child, inner))
            continue
        flagged = False  # the item before was a secret flag: this one is its value
        for index, item in enumerate(source):
            inner = (*path, index)
            if flagged and not isinstance(item, (Mapping, list, tuple)):
                made = replace(inner, item)
                target.append(None if made is DROP else made)
                flagged = False
                continue
            flagged = _secret_flag(item)
            if _secret_row(item):
                row = [item[0]]
                for place, secret in enumerate(item[1:], start=1):
                    made = replace((*inner, place), secret)
                    row.append(None if made is DROP else made)
                target.append(row)
                continue
            child = container(item)
            target.append(plain(item, inner) if child is None else child)
            if child is not None:
                pending.append((item, child, inner))
    return top


def secret_units(value: Any) -> dict[Path, Any]:
    """Every secret of a JSON value by its path: the whole value (a credential's text: the whole text).

    :param value: any JSON value.
    """
    found: dict[Path, Any] = {}

    def keep(path: Path, secret: Any) -> Any:
        found[path] = secret
        return secret

    map_secrets(value, keep)
    return found


def secret_values(value: Any) -> list[str]:
    """Every secret of a JSON value as the texts to mask: each text and whole number a secret holds, at any depth,
    and each credential inside a text (not the text around it).

    :param value: a connection, chart options, a workflow's configuration, or anything made of those.
    """
    found: list[str] = []

    def whole(_path: Path, secret: Any) -> Any:
        pending = [secret]
        while pending:  # a loop: a secret may nest deeply
            item = pending.pop()
            if isinstance(item, Mapping):
                pending += item.values()
            elif isinstance(item, (list, tuple)):
                pending += item
            elif isinstance(item, str):
                found.append(item)
                found.extend(credentials_in_text(item))
            elif isinstance(item, int) and not isinstance(item, bool):
                found.append(str(item))  # YAML reads `password: 12345678` as a number; it is sent as one
        return secret

    def inside(_path: Path, text: str, credentials: list[str]) -> str:
        found.extend(credentials)
        return text

    map_secrets(value, whole, inside)
    return found
