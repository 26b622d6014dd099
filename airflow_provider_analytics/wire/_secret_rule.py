"""The one rule for "this value is a secret", for every input and every use: masking and registration
(``_redaction.py``), and the definitions' digests, ``Idempotency-Key`` bodies, plan tables and exports.

A value is secret when, at any depth of a JSON value, it is:

- under a **secret key** (:func:`is_secret_key`): the whole value, whatever it holds (``proxy: {host: ...}`` is one
  secret, not a mapping whose ``host`` is plain);
- the second item of a **secret pair** in an association list, a list whose every item is a two-item list with
  a text first (``[["user", "svc"], ["password", "..."]]``, the shape of query parameters and header lists);
- the ``value`` of a **named secret**: a mapping whose ``name`` (or ``key``) is a secret key's name
  (``{"name": "X-Api-Key", "value": "..."}``, the shape of header and environment lists);
- a **credential inside a text**: the password of a URL with userinfo (``postgres://svc:<password>@db/sales``)
  and of a key-value DSN (``host=db password=<password>``, ``PWD=<password>;``, written without spaces around
  ``=``: a query's ``where password = 'x'`` is not a DSN). The text holds it; the rest of the text is not secret.

:func:`map_secrets` is the walk every use shares: it hands each secret to the caller, which hides, hashes, drops
or refers to it. No Airflow here: the wire layer, the definitions and the hooks apply the same rule on every
release. docs/hook.md ("Secrets") documents it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import urlsplit

__all__ = [
    "DROP",
    "SECRET_KEY_MARKERS",
    "Path",
    "credentials_in_text",
    "is_secret_key",
    "map_secrets",
    "mask_credentials",
    "secret_units",
    "secret_values",
]

# A key's name, lower-cased with every run of non-word characters made "_", holds a secret when it contains one of
# these. They are Airflow 3.3's own sensitive field names (DEFAULT_SENSITIVE_FIELDS of its secrets masker, which
# Airflow applies to connection extras and variable names) and the write-only connection fields of the contract
# ("password, private_key, token, anything the platform marks secret"), plus the names key material goes by.
# Kept here, without Airflow, so that every layer applies the same rule on every release (2.11's list is shorter).
SECRET_KEY_MARKERS = (
    "access_key",
    "access_token",
    "api_key",
    "apikey",
    "auth_header",
    "authorization",
    "bearer",
    "connection_string",
    "credential",
    "dsn",
    "key_file",
    "keyfile",
    "passphrase",
    "passwd",
    "password",
    "private_key",
    "proxy",
    "secret",
    "service_account",
    "service_key",
    "sslkey",
    "ssl_key",
    "token",
    "webhook_url",
)
_NON_WORD = re.compile(r"\W+")
_URL_USERINFO = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s@/]*@")
_URL_PASSWORD = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*://[^\s:@/]*:)[^\s@/]*@")
# A DSN's password: libpq's ``password=``, ODBC's ``PWD=`` (either quoted, or braced, or up to a space or ";").
_DSN_PASSWORD = re.compile(r"""(?i)(?<![\w.])(?:password|passwd|pwd)=('(?:[^'\\]|\\.)*'|"[^"]*"|\{[^}]*\}|[^\s;'"]+)""")
_NAME_FIELDS = ("name", "key")

# Where a secret is: the keys and list positions from the top of the value walked.
Path = tuple[str | int, ...]
# What a ``replace`` callback of :func:`map_secrets` returns to drop a mapping's key altogether.
DROP: Any = object()


def is_secret_key(name: object) -> bool:
    """Whether a value under this key is a secret (:data:`SECRET_KEY_MARKERS`): ``password``, ``api_token``,
    ``X-Api-Key``, ``sslkey``, ``client_secret``...

    :param name: a mapping key, in any section (connection fields, chart options, workflow configuration).
    """
    if not isinstance(name, str):
        return False
    normalized = _NON_WORD.sub("_", name.strip().lower())
    return any(marker in normalized for marker in SECRET_KEY_MARKERS)


def credentials_in_text(text: str) -> list[str]:
    """The passwords a text holds: of each URL with userinfo, and of each key-value DSN's ``password=``.

    :param text: any text.
    """
    found: list[str] = []
    if "@" in text and "://" in text:
        for candidate in _URL_USERINFO.findall(text):
            try:
                password = urlsplit(candidate).password
            except ValueError:
                continue
            if password:
                found.append(password)
    if "=" in text:
        for match in _DSN_PASSWORD.finditer(text):
            password = match.group(1)
            if password[:1] in ("'", '"', "{"):
                password = password[1:-1]
            if password:
                found.append(password)
    return found


def mask_credentials(text: str, mask: str) -> str:
    """``text`` with the password of each URL and DSN in it (:func:`credentials_in_text`) replaced by ``mask``.

    :param text: any text.
    :param mask: what stands in each password's place.
    """
    text = _URL_PASSWORD.sub(lambda match: f"{match.group(1)}{mask}@", text)
    return _DSN_PASSWORD.sub(lambda match: match.group(0)[: match.start(1) - match.start(0)] + mask, text)


def _pairs(value: list[Any] | tuple[Any, ...]) -> bool:
    """Whether a list is an association list: every item a two-item list whose first item is a text."""
    return bool(value) and all(
        isinstance(item, (list, tuple)) and len(item) == 2 and isinstance(item[0], str) for item in value
    )


def _named_secret(value: Mapping[Any, Any]) -> bool:
    """Whether a mapping is a named secret: a ``value`` beside a ``name`` or ``key`` that names a secret."""
    return "value" in value and any(is_secret_key(value.get(field)) for field in _NAME_FIELDS)


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
        mapping's key; in a pair it leaves ``None``).
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
                if is_secret_key(key) or (named and key == "value"):
                    made = replace(inner, item)
                    if made is not DROP:
                        target[key] = made
                    continue
                child = container(item)
                target[key] = plain(item, inner) if child is None else child
                if child is not None:
                    pending.append((item, child, inner))
            continue
        pairs = _pairs(source)
        for index, item in enumerate(source):
            inner = (*path, index)
            if pairs and is_secret_key(item[0]):
                made = replace((*inner, 1), item[1])
                target.append([item[0], None if made is DROP else made])
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
