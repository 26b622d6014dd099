"""Turn an Airflow connection into a :class:`~airflow_provider_analytics.wire.core.ClientConfig`.

Works for connections in JSON form (extras keep their types) and URI form (extras arrive as strings).
"""

from __future__ import annotations

import os
import ssl
from collections.abc import Mapping
from typing import Any, Protocol

from airflow_provider_analytics.wire.core import DEFAULT_TIMEOUT, ClientConfig
from airflow_provider_analytics.wire.errors import AnalyticsInputError
from airflow_provider_analytics.wire.retry import RetryPolicy

_TRUE = {"true", "1", "yes", "on"}
_FALSE = {"false", "0", "no", "off"}


class ConnectionLike(Protocol):
    """The parts of an Airflow ``Connection`` this module reads."""

    conn_id: str | None
    host: str | None
    port: int | None
    schema: str | None
    password: str | None

    @property
    def extra_dejson(self) -> dict[str, Any]: ...


def base_url_of(conn: ConnectionLike) -> str:
    """The API base URL: ``host`` (with or without a scheme; https when it has none), ``port``, ``schema``.

    ``host`` usually carries everything (``https://api.example.com/prefix``); URI-form connections split it
    into host, port and schema (the path prefix).
    """
    host = (conn.host or "").strip()
    if not host:
        raise AnalyticsInputError(
            f"connection {conn.conn_id!r} has no host: set it to the platform's base URL, e.g. https://api.example.com"
        )
    if "://" not in host:
        host = f"https://{host}"
    scheme, rest = host.split("://", 1)
    authority, _, path = rest.partition("/")
    if conn.port and ":" not in authority.rsplit("]", 1)[-1]:
        authority = f"{authority}:{conn.port}"
    path = "/".join(part for part in (path.strip("/"), (conn.schema or "").strip("/")) if part)
    return f"{scheme}://{authority}" + (f"/{path}" if path else "")


def _flag(extras: Mapping[str, Any], key: str, default: bool) -> bool:
    value = extras.get(key)
    if value is None or value == "":
        return default
    if isinstance(value, bool):
        return value
    if str(value).strip().lower() in _TRUE:
        return True
    if str(value).strip().lower() in _FALSE:
        return False
    raise AnalyticsInputError(f"connection extra {key!r} must be true or false, got {value!r}")


def _number(extras: Mapping[str, Any], key: str, default: float, kind: type[int] | type[float]) -> Any:
    value = extras.get(key)
    if value is None or value == "":
        return default
    try:
        number = float(value)
    except (TypeError, ValueError):
        number = float("nan")
    if isinstance(value, bool) or number != number or (kind is int and not number.is_integer()):
        what = "a whole number" if kind is int else "a number"
        raise AnalyticsInputError(f"connection extra {key!r} must be {what}, got {value!r}") from None
    number = kind(number)
    if number < 0:
        raise AnalyticsInputError(f"connection extra {key!r} must not be negative, got {value!r}")
    return number


def _verify(extras: Mapping[str, Any]) -> bool | str:
    value = extras.get("verify")
    if isinstance(value, str) and value.strip().lower() not in _TRUE | _FALSE and value.strip():
        path = value.strip()  # a CA bundle file or directory: load it now, so a bad one is named here
        try:
            if os.path.isdir(path):
                ssl.create_default_context(capath=path)
            else:
                ssl.create_default_context(cafile=path)
        except (OSError, ssl.SSLError) as error:
            raise AnalyticsInputError(
                f"connection extra 'verify' must be true, false or the path of a readable CA bundle; "
                f"{path!r} cannot be loaded ({error})"
            ) from None
        return path
    return _flag(extras, "verify", True)


def client_config_from_connection(conn: ConnectionLike) -> ClientConfig:
    """Build the client configuration, failing with a message that says which field to fix.

    :param conn: an Airflow connection of type ``analytics``.
    """
    extras = conn.extra_dejson
    token = conn.password or ""
    if not token.strip():
        raise AnalyticsInputError(f"connection {conn.conn_id!r} has no API token: set it as the password")
    workspace = extras.get("workspace_id") or None
    return ClientConfig(
        base_url=base_url_of(conn),
        token=token,
        workspace_id=str(workspace) if workspace is not None else None,
        timeout=float(_number(extras, "timeout", DEFAULT_TIMEOUT, float)),
        verify=_verify(extras),
        retry=RetryPolicy(max_retries=int(_number(extras, "max_retries", RetryPolicy.max_retries, int))),
        allow_insecure_http=_flag(extras, "allow_insecure_http", False),
    )


def ui_url_of(conn: ConnectionLike) -> str | None:
    """The platform UI's base URL from the ``ui_url`` extra (used for task links), or ``None``."""
    value = conn.extra_dejson.get("ui_url")
    return str(value).rstrip("/") if value else None
