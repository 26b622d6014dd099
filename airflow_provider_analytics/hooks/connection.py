"""Turn an Airflow connection into a :class:`~airflow_provider_analytics.wire.core.ClientConfig`.

Works for connections in JSON form (extras keep their types) and URI form (extras arrive as strings).
Every field is checked here, when the connection is read, so a bad one fails before any request with an
:class:`~airflow_provider_analytics.wire.errors.AnalyticsInputError` that names the field to fix. No
message repeats the token or the ``user:password@`` part of a URL.
"""

from __future__ import annotations

import contextlib
import ipaddress
import re
import unicodedata
from collections.abc import Callable, Mapping
from typing import Any, Protocol
from urllib.parse import SplitResult, urlsplit

import httpx

from airflow_provider_analytics.wire.core import (
    DEFAULT_MAX_DOWNLOAD_BYTES,
    DEFAULT_MAX_RESPONSE_BYTES,
    DEFAULT_TIMEOUT,
    MAX_TIMEOUT,
    ClientConfig,
)
from airflow_provider_analytics.wire.endpoints import validate_id
from airflow_provider_analytics.wire.errors import AnalyticsInputError
from airflow_provider_analytics.wire.retry import MAX_RETRIES_LIMIT, RetryPolicy
from airflow_provider_analytics.wire.tls import tls_context

_TRUE = {"true", "1", "yes", "on"}
_FALSE = {"false", "0", "no", "off"}
_HOSTNAME = re.compile(r"[\w.-]+")  # letters (IDNA names too), digits, '.', '-', '_'
_USERINFO = re.compile(r"[^\s/'\"@]+@")


class ConnectionLike(Protocol):
    """The parts of an Airflow ``Connection`` this module reads."""

    conn_id: str | None
    host: str | None
    port: int | None
    schema: str | None
    password: str | None

    @property
    def extra_dejson(self) -> dict[str, Any]: ...


def _bad(conn: ConnectionLike, field: str, problem: str) -> AnalyticsInputError:
    return AnalyticsInputError(f"connection {conn.conn_id!r}: {field} {problem}")


def _has_blanks(text: str) -> bool:
    """Whether ``text`` holds whitespace or a control, format or unassigned character (CR, LF, NUL, U+200B...)."""
    return any(char.isspace() or unicodedata.category(char).startswith("C") for char in text)


def _url(conn: ConnectionLike, field: str, text: str, default_scheme: str | None = "https") -> SplitResult:
    """Split an http(s) URL, refusing credentials, blanks, a query, a fragment, a bad port or host name.

    Credentials are refused before anything else, so the messages after that may quote ``text``.

    :param conn: the connection, for the message.
    :param field: the field's name, for the message.
    :param text: the URL (stripped).
    :param default_scheme: the scheme of a URL without one; ``None`` requires one.
    """
    if "@" in text:
        raise _bad(conn, field, "must not carry credentials (user:password@): put the API token in the password")
    if _has_blanks(text):
        raise _bad(conn, field, f"must not contain spaces or control characters, got {text!r}")
    if "?" in text or "#" in text:
        raise _bad(conn, field, f"must be a base URL without a query or a fragment, got {text!r}")
    if "://" not in text and default_scheme:
        text = f"{default_scheme}://{text}"
    try:
        parts = urlsplit(text)
    except ValueError:  # unbalanced [ ]
        raise _bad(conn, field, f"must be a base URL like https://api.example.com, got {text!r}") from None
    if parts.scheme not in ("http", "https") or "://" not in text:
        raise _bad(conn, field, f"must be a base URL starting with https:// or http://, got {text!r}")
    try:
        port = parts.port
    except ValueError:  # not a number, or over 65535
        port = 0
    if port == 0:
        raise _bad(conn, field, f"has a port that is not a number from 1 to 65535, got {text!r}")
    name = parts.hostname or ""
    try:
        valid_name = ipaddress.ip_address(name).version == 6 if ":" in name else bool(_HOSTNAME.fullmatch(name))
    except ValueError:
        valid_name = False
    if not valid_name:
        raise _bad(conn, field, f"has no valid host name (a DNS name or an IP address), got {text!r}")
    return parts


def _port(conn: ConnectionLike) -> int | None:
    port: Any = conn.port
    if port is None or port == "":
        return None
    if isinstance(port, str) and port.strip().isdigit():
        port = int(port)
    if isinstance(port, bool) or not isinstance(port, int) or not 1 <= port <= 65535:
        raise _bad(conn, "port", f"must be a whole number from 1 to 65535, got {port!r}")
    return port


def base_url_of(conn: ConnectionLike) -> str:
    """The API base URL: ``host`` (with or without a scheme; https when it has none), ``port``, ``schema``.

    ``host`` usually carries everything (``https://api.example.com/prefix``); URI-form connections split it
    into host, port and schema (the path prefix).

    :param conn: the connection.
    :raises AnalyticsInputError: naming ``host``, ``port`` or ``schema`` when one cannot be used.
    """
    host = (conn.host or "").strip()
    if not host:
        raise AnalyticsInputError(
            f"connection {conn.conn_id!r} has no host: set it to the platform's base URL, e.g. https://api.example.com"
        )
    parts = _url(conn, "host (the base URL)", host)
    prefix = (conn.schema or "").strip()
    if _has_blanks(prefix) or any(char in prefix for char in "?#@\\"):
        raise _bad(conn, "schema (the path prefix)", f"must be a plain path like tenant/api, got {prefix!r}")
    port, netloc = _port(conn), parts.netloc.rstrip(":")
    if port is not None and parts.port is None:
        netloc = f"{netloc}:{port}"
    path = "/".join(part for part in (parts.path.strip("/"), prefix.strip("/")) if part)
    url = f"{parts.scheme}://{netloc}" + (f"/{path}" if path else "")
    try:
        httpx.URL(url)  # what the client will parse: catch here what the checks above let through
    except httpx.InvalidURL:
        raise _bad(conn, "host (the base URL)", f"is not a URL the client can use, got {host!r}") from None
    return url


def _extras(conn: ConnectionLike) -> Mapping[str, Any]:
    extras = conn.extra_dejson
    if not isinstance(extras, Mapping):
        raise _bad(conn, "extra", f"must be a JSON object, got {type(extras).__name__}")
    return extras


def _flag(conn: ConnectionLike, key: str, default: bool) -> bool:
    value = _extras(conn).get(key)
    if value is None or value == "":
        return default
    if isinstance(value, bool):
        return value
    if str(value).strip().lower() in _TRUE:
        return True
    if str(value).strip().lower() in _FALSE:
        return False
    raise _bad(conn, f"extra {key!r}", f"must be true or false, got {value!r}")


def _number(conn: ConnectionLike, key: str, default: Any, rule: str, accept: Callable[[Any], bool]) -> Any:
    """A numeric extra: a JSON number or, in URI form, its text; whole when ``rule`` says so.

    :param conn: the connection.
    :param key: the extra's name.
    :param default: the value when the extra is unset or empty.
    :param rule: what the value must be, for the message (``"a whole number ..."`` asks for an integer).
    :param accept: whether a parsed value is in range.
    """
    value = _extras(conn).get(key)
    if value is None or (isinstance(value, str) and not value.strip()):
        return default
    whole = rule.startswith("a whole number")
    number: Any = None
    if isinstance(value, int) and not isinstance(value, bool):
        number = value
    elif isinstance(value, (str, float)):
        with contextlib.suppress(ValueError):
            number = float(value)
        if whole and number is not None:
            number = int(number) if number.is_integer() else None  # nan and inf are not whole
    why = f"({key} must be {rule})"
    if number is None:
        raise _bad(conn, f"extra {key!r}", f"must be {'a whole number' if whole else 'a number'}, got {value!r} {why}")
    if number < 0:
        raise _bad(conn, f"extra {key!r}", f"must not be negative, got {value!r} {why}")
    if not accept(number):  # nan fails every comparison, so it lands here
        raise _bad(conn, f"extra {key!r}", f"is out of range, got {value!r} {why}")
    return number


def _verify(conn: ConnectionLike) -> bool | str:
    value = _extras(conn).get("verify")
    if isinstance(value, str) and value.strip().lower() not in _TRUE | _FALSE and value.strip():
        path = value.strip()  # a CA bundle: loaded once per process into the shared context, named if it fails
        try:
            tls_context(path)
        except AnalyticsInputError as error:
            raise AnalyticsInputError(f"connection {conn.conn_id!r}: {error}") from None
        return path
    return _flag(conn, "verify", True)


def _token(conn: ConnectionLike) -> str:
    token = (conn.password or "").strip()  # a pasted token often ends in a newline
    if not token:
        raise AnalyticsInputError(f"connection {conn.conn_id!r} has no API token: set it as the password")
    if _has_blanks(token) or not token.isascii():
        raise _bad(conn, "password (the API token)", "must be printable ASCII without spaces: paste the token again")
    return token


def _workspace(conn: ConnectionLike) -> str | None:
    value = _extras(conn).get("workspace_id")
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    text = value.strip() if isinstance(value, str) else value
    if isinstance(text, int) and not isinstance(text, bool):
        text = str(text)
    try:
        return validate_id(text, "extra 'workspace_id'")
    except AnalyticsInputError as error:
        raise AnalyticsInputError(f"connection {conn.conn_id!r}: {error}") from None


def client_config_from_connection(conn: ConnectionLike) -> ClientConfig:
    """Build the client configuration, failing with a message that says which field to fix.

    :param conn: an Airflow connection of type ``analytics``.
    :raises AnalyticsInputError: naming the field when one cannot be used; nothing has been sent yet.
    """
    token, workspace_id = _token(conn), _workspace(conn)
    ui_url_of(conn)  # checked now, so a bad link setting fails here and not halfway through a task
    max_bytes = "a whole number of bytes, at least 1024"
    settings: dict[str, Any] = {
        "timeout": float(
            _number(
                conn,
                "timeout",
                DEFAULT_TIMEOUT,
                f"a positive number of seconds, at most {MAX_TIMEOUT:g}",
                lambda n: 0 < n <= MAX_TIMEOUT,
            )
        ),
        "retry": RetryPolicy(
            max_retries=_number(
                conn,
                "max_retries",
                RetryPolicy.max_retries,
                f"a whole number from 0 to {MAX_RETRIES_LIMIT}",
                lambda n: n <= MAX_RETRIES_LIMIT,
            )
        ),
        "max_response_bytes": _number(
            conn, "max_response_bytes", DEFAULT_MAX_RESPONSE_BYTES, max_bytes, lambda n: n >= 1024
        ),
        "max_download_bytes": _number(
            conn, "max_download_bytes", DEFAULT_MAX_DOWNLOAD_BYTES, max_bytes, lambda n: n >= 1024
        ),
        "verify": _verify(conn),
        "allow_insecure_http": _flag(conn, "allow_insecure_http", False),
    }
    base_url = base_url_of(conn)
    try:
        return ClientConfig(base_url=base_url, token=token, workspace_id=workspace_id, **settings)
    except AnalyticsInputError as error:  # e.g. plain http:// to a remote host
        raise AnalyticsInputError(f"connection {conn.conn_id!r}: {error}") from None


def ui_url_of(conn: ConnectionLike) -> str | None:
    """The platform UI's base URL from the ``ui_url`` extra (used for task links), or ``None``.

    :param conn: the connection.
    :raises AnalyticsInputError: when ``ui_url`` is set but is not an http(s) URL.
    """
    value = _extras(conn).get("ui_url")
    if value is None or not str(value).strip():
        return None
    text = str(value).strip()
    _url(conn, "extra 'ui_url'", text, default_scheme=None)
    return text.rstrip("/")


def redact(text: str, conn: ConnectionLike | None = None) -> str:
    """``text`` without the connection's token and without the ``user:password@`` part of any URL in it.

    :param text: a message that may quote a URL or a secret.
    :param conn: the connection whose password to hide, when it could be read.
    """
    secret = ((conn.password if conn is not None else None) or "").strip()
    if len(secret) >= 5:
        text = text.replace(secret, "***")
    return _USERINFO.sub("***@", text)
