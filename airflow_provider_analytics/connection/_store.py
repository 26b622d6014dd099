"""The store a fleet shares its rate limiter through: the analytics connection's extra ``rate_limit_redis_conn_id``
names an Airflow connection of type ``redis``, read here into a
:class:`~airflow_provider_analytics.wire.config.RateLimitStore`.

The Redis connection is read with the fields Airflow's Redis provider reads (``RedisHook``: host, port, login,
password, and the extras ``db``, ``ssl``, ``ssl_cert_reqs``, ``ssl_ca_certs``, ``ssl_certfile``, ``ssl_keyfile``,
``ssl_check_hostname``), so the deployment's own Redis connection (the Celery broker's, say) serves as it is, TLS and
password included. A setting that cannot be used fails when the connection is read, naming both connections and the
field; the hooks look the Redis connection up (:func:`rate_limit_store_id` says which), since this package reads
connections it is handed and fetches none.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from airflow_provider_analytics.connection._notes import connection_name
from airflow_provider_analytics.connection._protocol import ConnectionLike
from airflow_provider_analytics.wire.config import RateLimitStore
from airflow_provider_analytics.wire.errors import AnalyticsInputError

__all__ = ["STORE_EXTRA", "rate_limit_store_id", "rate_limit_store_of"]

STORE_EXTRA = "rate_limit_redis_conn_id"
# What Airflow accepts as a connection id (letters, digits, and - _ . ~ :), bounded.
_CONN_ID = re.compile(r"[A-Za-z0-9_.~:-]{1,250}")
_TRUE = {"true", "1", "yes", "on"}
_FALSE = {"false", "0", "no", "off"}


def rate_limit_store_id(conn: ConnectionLike, extras: Mapping[str, Any] | None = None) -> str | None:
    """The id of the Redis connection the analytics connection names as its rate limit store, or ``None``.

    :param conn: the analytics connection.
    :param extras: its extras, when they were read already.
    :raises AnalyticsInputError: the extra is set but is not a connection id.
    """
    value = (conn.extra_dejson if extras is None else extras).get(STORE_EXTRA)
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if not isinstance(value, str) or not _CONN_ID.fullmatch(value.strip()):
        raise AnalyticsInputError(
            f"{connection_name(conn.conn_id)}: extra {STORE_EXTRA!r} must be the id of an Airflow connection of type "
            f"redis (letters, digits, '-', '_', '.'), got {value!r}"
        )
    return value.strip()


def rate_limit_store_of(store_conn: ConnectionLike, analytics_conn_id: str | None) -> RateLimitStore:
    """The store a Redis connection describes, read as Airflow's Redis provider reads it.

    :param store_conn: the Airflow connection of type ``redis``.
    :param analytics_conn_id: the analytics connection that names it, for messages.
    :raises AnalyticsInputError: naming both connections and the field when one cannot be used.
    """
    where = f"{connection_name(store_conn.conn_id)} (the rate limit store of {connection_name(analytics_conn_id)})"

    def bad(field: str, problem: str) -> AnalyticsInputError:
        return AnalyticsInputError(f"{where}: {field} {problem}")

    if (store_conn.conn_type or "redis") != "redis":
        raise bad("conn_type", f"must be redis, got {store_conn.conn_type!r}")
    extras = store_conn.extra_dejson
    if not isinstance(extras, Mapping):
        raise bad("extra", "must be a JSON object")
    password = store_conn.password
    if password is not None and str(password).lower() in ("none", "false", ""):  # as RedisHook reads it
        password = None
    for field, value in (("password", password), ("login", store_conn.login)):
        if value is not None and (not isinstance(value, str) or not _encodable(value)):
            raise bad(field, "must be text that UTF-8 can encode")  # never the value: it may be the password
    settings: dict[str, Any] = {
        "host": _host(store_conn.host, bad),
        "port": _whole(store_conn.port, 6379, "port", bad),
        "db": _whole(extras.get("db"), 0, "extra 'db'", bad),
        "username": (store_conn.login or None) if isinstance(store_conn.login, (str, type(None))) else None,
        "password": password,
        "ssl": bool(_flag(extras.get("ssl"), "extra 'ssl'", bad)),
        "ssl_cert_reqs": str(extras.get("ssl_cert_reqs") or "required").strip().lower(),
        "ssl_check_hostname": _flag(extras.get("ssl_check_hostname"), "extra 'ssl_check_hostname'", bad),
        "connection_id": store_conn.conn_id,
    }
    for name in ("ssl_ca_certs", "ssl_certfile", "ssl_keyfile"):
        value = extras.get(name)
        if value is not None and (not isinstance(value, str) or "\x00" in value):
            raise bad(f"extra {name!r}", f"must be a file path, got {type(value).__name__}")
        settings[name] = value.strip() or None if isinstance(value, str) else None
    try:
        return RateLimitStore(**settings)
    except AnalyticsInputError as error:
        raise AnalyticsInputError(f"{where}: {error}") from None


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: bytes that were never UTF-8, read from the environment
        return False
    return True


def _host(value: Any, bad: Any) -> str:
    """The host, a name or an address a socket can be opened to (IDNA for names), or the error naming it."""
    if not isinstance(value, str) or not value.strip():
        raise bad("host", "must be the Redis server's host name or address")
    host = value.strip()
    if len(host) > 253 or any(char.isspace() or not char.isprintable() for char in host) or not _encodable(host):
        raise bad("host", f"must be a host name or an address, got {host[:80]!r}")
    if "/" in host or (host.count(":") == 1 and not host.startswith("[")):  # a URL, or host:port (IPv6 has more)
        raise bad(
            "host",
            f"must be the host name or address alone (the port in port, the db in extra 'db'), got {host[:80]!r}",
        )
    try:
        host.encode("idna")  # a label over 63 characters, or characters no host name holds
    except UnicodeError:
        raise bad("host", f"is not a host name a socket can reach, got {host[:80]!r}") from None
    return host


def _whole(value: Any, default: int, field: str, bad: Any) -> int:
    if value is None or (isinstance(value, str) and not value.strip()):
        return default
    if isinstance(value, str):
        text = value.strip()
        if not (text.isascii() and text.isdigit()) or len(text) > 9:  # "²" is a digit to str.isdigit
            raise bad(field, f"must be a whole number, got {text[:20]!r}")
        value = int(text)
    if isinstance(value, bool) or not isinstance(value, int):
        raise bad(field, f"must be a whole number, got {str(value)[:20]!r}")
    return value


def _flag(value: Any, field: str, bad: Any) -> bool | None:
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in _TRUE | _FALSE:
        return text in _TRUE
    raise bad(field, f"must be true or false, got {value!r}")
