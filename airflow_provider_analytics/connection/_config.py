"""Turn an Airflow connection into a :class:`~airflow_provider_analytics.wire.config.ClientConfig`.

Works for connections in JSON form (extras keep their types) and URI form (extras arrive as strings).
Every field is checked here, when the connection is read, so a bad one fails before any request with an
:class:`~airflow_provider_analytics.wire.errors.AnalyticsInputError` that names the connection and the
field to fix; an unknown extra and a token's ``Bearer`` prefix are warnings instead (``_notes.py``).
No message repeats the token or the ``user:password@`` part of a URL. :func:`masked_config` and
:func:`prepared_config` are what the hooks call: the config, its token registered with Airflow's secrets masker.
"""

from __future__ import annotations

import ipaddress
import logging
import math
import re
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import SplitResult, urlsplit

from airflow_provider_analytics.connection._notes import (
    connection_name,
    connection_notes,
    is_generated_test_id,
    warn_once,
    without_bearer_prefix,
)
from airflow_provider_analytics.connection._protocol import ConnectionLike
from airflow_provider_analytics.connection._secret_sources import secret_sources_of
from airflow_provider_analytics.connection._store import rate_limit_store_id, rate_limit_store_of
from airflow_provider_analytics.wire._tls import tls_context
from airflow_provider_analytics.wire.config import (
    DEFAULT_MAX_DOWNLOAD_BYTES,
    DEFAULT_MAX_RESPONSE_BYTES,
    DEFAULT_MIN_DOWNLOAD_RATE,
    DEFAULT_TIMEOUT,
    MAX_TIMEOUT,
    ClientConfig,
)
from airflow_provider_analytics.wire.errors import AnalyticsInputError
from airflow_provider_analytics.wire.retry import MAX_RETRIES_LIMIT, RetryPolicy

_TRUE = {"true", "1", "yes", "on"}
_FALSE = {"false", "0", "no", "off"}
_HOST_NAME = re.compile(r"[\w.-]+")  # a DNS name (IDNA letters too) or an IPv4 address


def _bad(conn: ConnectionLike, field: str, problem: str) -> AnalyticsInputError:
    return AnalyticsInputError(f"{connection_name(conn.conn_id)}: {field} {problem}")


def _blank(text: str) -> bool:
    """Whether ``text`` holds whitespace or an unprintable character (CR, LF, NUL, U+200B...)."""
    return any(char.isspace() or not char.isprintable() for char in text)


def _url(conn: ConnectionLike, field: str, text: str, default_scheme: str | None) -> SplitResult:
    """Split an http(s) URL; refuse credentials, blanks, a query, a fragment, a bad host name or port.

    :param conn: the connection, for messages.
    :param field: the field's name, for messages.
    :param text: the URL, stripped.
    :param default_scheme: the scheme of a URL given without one; ``None`` requires one.
    """
    if "@" in text:  # refused first, so that no message below can quote a user or a password
        raise _bad(conn, field, "must not carry credentials before '@': the API token goes in the password")
    if _blank(text) or "?" in text or "#" in text:
        raise _bad(conn, field, f"must not contain spaces, control characters, '?' or '#', got {text!r}")
    if default_scheme and "://" not in text:
        text = f"{default_scheme}://{text}"
    shape = f"must be an http(s) URL like https://api.example.com (a DNS name or an IP address), got {text!r}"
    try:
        parts = urlsplit(text)
    except ValueError:  # brackets that hold no IPv6 address
        raise _bad(conn, field, shape) from None
    name = parts.hostname or ""
    # Brackets must hold an IPv6 address (the only name with ':'). urlsplit checks that itself only from
    # Python 3.11.4 on; before, "https://[zz]" parses with the host name "zz".
    if "[" in parts.netloc and not _is_ipv6(name):
        raise _bad(conn, field, shape)
    if parts.scheme not in ("http", "https") or not (":" in name or _HOST_NAME.fullmatch(name)):
        raise _bad(conn, field, shape)
    try:
        port = parts.port
    except ValueError:  # not a number, or over 65535
        port = 0
    if port == 0:
        raise _bad(conn, field, f"has a port that is not a number from 1 to 65535, got {text!r}")
    return parts


def _is_ipv6(name: str) -> bool:
    try:
        return isinstance(ipaddress.ip_address(name), ipaddress.IPv6Address)
    except ValueError:
        return False


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
            f"{connection_name(conn.conn_id)} has no host: set it to the platform's base URL, e.g. https://api.example.com"
        )
    parts = _url(conn, "host (the base URL)", host, default_scheme="https")
    prefix = (conn.schema or "").strip()
    if _blank(prefix) or any(char in prefix for char in "?#@\\"):
        raise _bad(conn, "schema (the path prefix)", f"must be a plain path like tenant/api, got {prefix!r}")
    port, netloc = _port(conn), parts.netloc.rstrip(":")
    if port is not None and parts.port is None:
        netloc = f"{netloc}:{port}"
    path = "/".join(part for part in (parts.path.strip("/"), prefix.strip("/")) if part)
    return f"{parts.scheme}://{netloc}" + (f"/{path}" if path else "")


def _extras(conn: ConnectionLike) -> Mapping[str, Any]:
    extras = conn.extra_dejson  # parsed on each access: read once per config
    if not isinstance(extras, Mapping):
        raise _bad(conn, "extra", f"must be a JSON object, got {type(extras).__name__}")
    return extras


def _unset(value: Any) -> bool:
    return value is None or (isinstance(value, str) and not value.strip())


def _flag(conn: ConnectionLike, extras: Mapping[str, Any], key: str, default: bool) -> bool:
    value = extras.get(key)
    if _unset(value):
        return default
    if isinstance(value, bool):
        return value
    if str(value).strip().lower() in _TRUE | _FALSE:
        return str(value).strip().lower() in _TRUE
    raise _bad(conn, f"extra {key!r}", f"must be true or false, got {value!r}")


def _number(
    conn: ConnectionLike,
    extras: Mapping[str, Any],
    key: str,
    default: float,
    rule: str,
    accept: Callable[[float], bool],
    *,
    whole: bool = False,
) -> float:
    """A numeric extra: a JSON number or, in URI form, its text.

    :param conn: the connection, for messages.
    :param extras: its extras.
    :param key: the extra's name.
    :param default: the value when the extra is unset or empty.
    :param rule: what the value must be, for messages.
    :param accept: whether a number is in range (``inf`` must fail it; ``nan`` never gets there).
    :param whole: whether the value must be a whole number (``3``, ``"3"``, ``3.0``; not ``3.5`` or ``true``).
    """
    value: Any = extras.get(key)
    if _unset(value):
        return default
    try:
        number = math.nan if isinstance(value, bool) else float(value)
    except (TypeError, ValueError, OverflowError):
        number = math.nan
    field, why = f"extra {key!r}", f"got {value!r} ({key} must be {rule})"
    if math.isnan(number) or (whole and not number.is_integer()):  # inf is not whole either
        raise _bad(conn, field, f"must be {'a whole number' if whole else 'a number'}, {why}")
    if number < 0:
        raise _bad(conn, field, f"must not be negative, {why}")
    if not accept(number):
        raise _bad(conn, field, f"is out of range, {why}")
    return number


def _whole(conn: ConnectionLike, extras: Mapping[str, Any], key: str, default: int, low: int, high: float) -> int:
    rule = f"a whole number from {low} to {high:g}" if high < math.inf else f"a whole number, at least {low}"
    return int(_number(conn, extras, key, default, rule, lambda number: low <= number <= high, whole=True))


def _verify(conn: ConnectionLike, extras: Mapping[str, Any]) -> bool | str:
    value = extras.get("verify")
    if not isinstance(value, str) or _unset(value) or value.strip().lower() in _TRUE | _FALSE:
        return _flag(conn, extras, "verify", True)
    path = value.strip()  # a CA bundle, loaded once per process into the shared context (wire/_tls.py)
    try:
        tls_context(path)
    except AnalyticsInputError as error:
        raise AnalyticsInputError(f"{connection_name(conn.conn_id)}: {error}") from None
    return path


def _token(conn: ConnectionLike) -> str:
    token = (conn.password or "").strip()  # a pasted token often ends in a newline
    token = without_bearer_prefix(token)  # else sent as "Bearer Bearer ..." (connection_notes says so)
    if not token:
        raise AnalyticsInputError(f"{connection_name(conn.conn_id)} has no API token: set it as the password")
    if _blank(token) or not token.isascii():
        raise _bad(conn, "password (the API token)", "must be printable ASCII without spaces: paste the token again")
    return token


def _workspace(conn: ConnectionLike, extras: Mapping[str, Any]) -> str | None:
    value = extras.get("workspace_id")
    if _unset(value):
        return None
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise _bad(conn, "extra 'workspace_id'", f"must be an id like ws_marketing, got {value!r}")
    return str(value).strip()  # its characters are checked by ClientConfig


def client_config_from_connection(conn: ConnectionLike, store_conn: ConnectionLike | None = None) -> ClientConfig:
    """Build the client configuration, failing with a message that says which field to fix.

    :param conn: an Airflow connection of type ``analytics``.
    :param store_conn: the Airflow connection of type ``redis`` its extra ``rate_limit_redis_conn_id`` names, looked
        up by the hook (:func:`store_connection`); ``None``: no store.
    :raises AnalyticsInputError: naming the field when one cannot be used; nothing has been sent yet.
    """
    base_url, token, extras = base_url_of(conn), _token(conn), _extras(conn)
    rate_limit_store_id(conn, extras)  # checked even where no store is used (the connection test's probe)
    warn_once(conn.conn_id, connection_notes(conn, extras))
    ui_url_of(conn, extras)  # checked now, so a bad link setting fails here and not halfway through a task
    secret_sources_of(conn, extras)  # checked now too: a malformed one fails every task, not only an apply
    seconds = f"a positive number of seconds, at most {MAX_TIMEOUT:g}"
    settings: dict[str, Any] = {
        "workspace_id": _workspace(conn, extras),
        "timeout": _number(conn, extras, "timeout", DEFAULT_TIMEOUT, seconds, lambda n: 0 < n <= MAX_TIMEOUT),
        "retry": RetryPolicy(
            max_retries=_whole(conn, extras, "max_retries", RetryPolicy.max_retries, 0, MAX_RETRIES_LIMIT)
        ),
        "max_response_bytes": _whole(conn, extras, "max_response_bytes", DEFAULT_MAX_RESPONSE_BYTES, 1024, math.inf),
        "max_download_bytes": _whole(conn, extras, "max_download_bytes", DEFAULT_MAX_DOWNLOAD_BYTES, 1024, math.inf),
        "min_download_rate": _whole(conn, extras, "min_download_rate", DEFAULT_MIN_DOWNLOAD_RATE, 0, math.inf),
        "verify": _verify(conn, extras),
        "allow_insecure_http": _flag(conn, extras, "allow_insecure_http", False),
        # Named by errors that a setting of this connection causes; not Airflow's random id for a test.
        "connection_id": None if is_generated_test_id(conn.conn_id) else conn.conn_id,
        "rate_limit_store": None if store_conn is None else rate_limit_store_of(store_conn, conn.conn_id),
    }
    try:
        return ClientConfig(base_url=base_url, token=token, **settings)
    except AnalyticsInputError as error:  # plain http:// to a remote host, a workspace id with bad characters
        raise AnalyticsInputError(f"{connection_name(conn.conn_id)}: {error}") from None


def store_connection(conn: ConnectionLike, lookup: Callable[[str], Any]) -> Any:
    """The Redis connection ``conn`` names as its rate limit store, looked up with ``lookup``; ``None`` when unset.

    :param conn: the analytics connection.
    :param lookup: the hook's connection lookup (it raises Airflow's not-found error for an unknown id).
    :raises AnalyticsInputError: the extra names a connection Airflow does not have.
    """
    store_id = rate_limit_store_id(conn)
    if store_id is None:
        return None
    from airflow.providers.common.compat.sdk import AirflowNotFoundException

    try:
        return lookup(store_id)
    except AirflowNotFoundException:
        raise missing_store(conn, store_id) from None


def missing_store(conn: ConnectionLike, store_id: str) -> AnalyticsInputError:
    """The error of a rate limit store that names a connection Airflow does not have.

    :param conn: the analytics connection.
    :param store_id: the id its extra names.
    """
    return AnalyticsInputError(
        f"{connection_name(conn.conn_id)}: extra 'rate_limit_redis_conn_id' names the connection {store_id!r}, "
        "which Airflow does not have: define it (type redis: host, port, password, extra db and ssl settings), "
        "or remove the extra to let each process pace on its own"
    )


def ui_url_of(conn: ConnectionLike, extras: Mapping[str, Any] | None = None) -> str | None:
    """The platform UI's base URL from the ``ui_url`` extra (used for task links), or ``None``.

    :param conn: the connection.
    :param extras: its extras, when they were read already.
    :raises AnalyticsInputError: when ``ui_url`` is set but is not an http(s) URL.
    """
    value = (_extras(conn) if extras is None else extras).get("ui_url")
    if _unset(value):
        return None
    text = str(value).strip()
    _url(conn, "extra 'ui_url'", text, default_scheme=None)
    return text.rstrip("/")


def masked_config(conn: Any, store_conn: Any = None) -> ClientConfig:
    """The client config of an Airflow connection, its token registered with Airflow's secrets masker.

    :param conn: an Airflow connection of type ``analytics``.
    :param store_conn: the Redis connection its extra ``rate_limit_redis_conn_id`` names (the hook looks it up).
    :raises AnalyticsInputError: naming the field when one cannot be used.
    """
    config = client_config_from_connection(conn, store_conn)
    # Airflow masks connection passwords itself; registering again covers tokens from URI or env forms.
    from airflow.providers.common.compat.sdk import mask_secret

    mask_secret(config.token)
    if config.rate_limit_store is not None and config.rate_limit_store.password:
        mask_secret(config.rate_limit_store.password)
    quiet_httpx_request_lines()
    return config


def quiet_httpx_request_lines() -> None:
    """Set the ``httpx`` logger to WARNING, unless the deployment configured it.

    httpx logs one INFO line per request (``HTTP Request: GET ... "HTTP/1.1 200 OK"``): a line per poll of
    every wait, which floods a fleet's task and trigger logs. Airflow 3's logging configuration sets that
    logger to WARNING ("too chatty even at info"); Airflow 2.11's leaves it at INFO. A level set by the
    deployment (anything but ``NOTSET``) is kept.
    """
    logger = logging.getLogger("httpx")
    if logger.level == logging.NOTSET:
        logger.setLevel(logging.WARNING)


def prepared_config(conn: Any, store_conn: Any = None) -> ClientConfig:
    """The masked config with its TLS context built: everything blocking a client needs, done at once.

    :param conn: an Airflow connection of type ``analytics``.
    :param store_conn: the Redis connection its extra ``rate_limit_redis_conn_id`` names (the hook looks it up).
    """
    config = masked_config(conn, store_conn)
    tls_context(config.verify)
    return config
