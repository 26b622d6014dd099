"""Which Airflow secrets a definitions file may name: the analytics connection's extra ``secret_sources``, glob
patterns of connection ids and variable keys, read here into a tuple (``definitions/_references.SecretSources``
matches them). Checked when the connection is read (``_config.client_config_from_connection``), so a malformed one
fails every task of the connection, not only an apply; docs/guides/apply-definitions.md ("The trust boundary").
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from airflow_provider_analytics.connection._notes import connection_name
from airflow_provider_analytics.connection._protocol import ConnectionLike
from airflow_provider_analytics.wire.errors import AnalyticsInputError

__all__ = ["SECRET_SOURCES_EXTRA", "secret_sources_of"]

SECRET_SOURCES_EXTRA = "secret_sources"
# Airflow's own bound on connection ids and variable keys (ID_LEN); a pattern naming them is bounded the same.
_MOST_PATTERN_LENGTH = 250
_MOST_PATTERNS = 100
_SECRET_SOURCES_SHAPE = (
    'a list of glob patterns of Airflow connection ids and variable keys, e.g. ["analytics_*", "warehouse_db"]'
    " (or, in a URI or the form, that JSON list, or the patterns separated by commas)"
)


def secret_sources_of(conn: ConnectionLike, extras: Mapping[str, Any] | None = None) -> tuple[str, ...] | None:
    """The glob patterns of the Airflow connections and variables a definition's references may name (the
    ``secret_sources`` extra), or ``None`` when unset (the default, ``analytics_*``, applies).

    An empty list allows no reference at all. A pattern is matched case-sensitively against a connection's id or a
    variable's key (``definitions/_references.py``, ``SecretSources``).

    :param conn: the connection.
    :param extras: its extras, when they were read already.
    :raises AnalyticsInputError: naming the extra, when it is not a list of patterns.
    """
    extras = conn.extra_dejson if extras is None else extras
    if not isinstance(extras, Mapping):
        return None  # the connection's own check refuses it (connection/_config.py)
    value = extras.get(SECRET_SOURCES_EXTRA)
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if isinstance(value, str):
        text = value.strip()
        if text.startswith("["):
            try:
                value = json.loads(text)
            except ValueError:
                raise _bad(conn, f"is not valid JSON: it must be {_SECRET_SOURCES_SHAPE}") from None
        else:
            value = [part.strip() for part in text.split(",") if part.strip()]
    if not isinstance(value, list) or len(value) > _MOST_PATTERNS or not all(isinstance(item, str) for item in value):
        shown = json.dumps(value, default=str)[:200] if isinstance(value, (list, dict)) else repr(value)[:200]
        raise _bad(conn, f"must be {_SECRET_SOURCES_SHAPE}, at most {_MOST_PATTERNS}; got {shown}")
    patterns = tuple(item.strip() for item in value)
    for pattern in patterns:
        if not pattern or _blank(pattern) or len(pattern) > _MOST_PATTERN_LENGTH:
            raise _bad(
                conn,
                f"has the pattern {pattern[:80]!r}: a pattern is a non-empty connection id or variable key of at most"
                f" {_MOST_PATTERN_LENGTH} characters, without spaces or control characters, in which * and ? match"
                " any characters",
            )
    return patterns


def _bad(conn: ConnectionLike, problem: str) -> AnalyticsInputError:
    return AnalyticsInputError(f"{connection_name(conn.conn_id)}: extra {SECRET_SOURCES_EXTRA!r} {problem}")


def _blank(text: str) -> bool:
    """Whether ``text`` holds whitespace or an unprintable character."""
    return any(char.isspace() or not char.isprintable() for char in text)
