"""What is said about a connection besides refusing a field: how messages name it, and the notes on what the
hook ignores or repairs rather than refusing it (an unknown or misspelled extra, a token's ``Bearer`` prefix).

The hook logs the notes at WARNING once per connection in a process, and ``test_connection()`` ends with them.
Nothing here repeats the token or the ``user:password@`` part of a URL (:func:`redact`).
"""

from __future__ import annotations

import difflib
import logging
import os
import re
import threading
from collections.abc import Mapping
from functools import cache
from typing import TYPE_CHECKING, Any

from airflow_provider_analytics.connection._form import connection_type_info
from airflow_provider_analytics.wire._redaction import remember_secret, scrub_text

if TYPE_CHECKING:
    from airflow_provider_analytics.connection._protocol import ConnectionLike

_USERINFO = re.compile(r"[^\s/'\"@]+@")
# "Bearer abc..." copied whole from a curl line or an Authorization header: the client adds the scheme itself.
_BEARER_PREFIX = re.compile(r"\Abearer(?:\s+|\Z)", re.IGNORECASE)
# Where new users put the API token when they miss that it is the password.
_TOKEN_LIKE = {"token", "api_token", "api_key", "apikey", "access_token", "bearer", "bearer_token", "password"}
# Airflow's REST connection test (POST /api/v2/connections/test: the UI's Test button) tests a copy of the
# connection under utils.strings.get_random_string(), exported as AIRFLOW_CONN_<ID>; the user's id is not passed on.
_GENERATED_ID = re.compile(r"[A-Za-z0-9]{8}")

log = logging.getLogger(__name__)
_warned: set[tuple[str | None, str]] = set()
_warned_lock = threading.Lock()


def is_generated_test_id(conn_id: str | None) -> bool:
    """Whether ``conn_id`` is the throw-away id of Airflow's REST connection test, known by its shape (8 letters and
    digits, a capital among them: 1.3% of random ids have none, and are named) and its ``AIRFLOW_CONN_<ID>``.

    :param conn_id: the connection's id.
    """
    if conn_id is None or not _GENERATED_ID.fullmatch(conn_id) or conn_id == conn_id.lower():
        return False
    return f"AIRFLOW_CONN_{conn_id.upper()}" in os.environ


def connection_name(conn_id: str | None) -> str:
    """How messages name a connection: ``connection 'analytics_default'``, or ``this connection`` for an id the
    user never saw (:func:`is_generated_test_id`).

    :param conn_id: the connection's id.
    """
    if conn_id is None or is_generated_test_id(conn_id):
        return "this connection"
    return f"connection {conn_id!r}"


def without_bearer_prefix(token: str) -> str:
    """``token`` without a leading ``Bearer`` (else sent as ``Bearer Bearer ...``; :func:`connection_notes` says so).

    :param token: the API token, stripped.
    """
    return _BEARER_PREFIX.sub("", token, count=1)


def connection_notes(conn: ConnectionLike, extras: Any = None) -> list[str]:
    """What the hook ignores or repairs in ``conn`` rather than refusing it, one sentence each: extras this
    provider does not know (with the nearest known name), a token given with its ``Bearer`` prefix. The hook logs
    them at WARNING once per connection in a process (:func:`warn_once`); ``test_connection()`` ends with them
    (:func:`with_notes`).

    :param conn: the connection.
    :param extras: its extras, when they were read already.
    """
    name, notes = connection_name(conn.conn_id), []
    if _BEARER_PREFIX.match((conn.password or "").strip()):
        notes.append(f"The API token of {name} began with 'Bearer ': the prefix was removed (the hook adds it).")
    extras = conn.extra_dejson if extras is None else extras
    if isinstance(extras, Mapping):
        notes.extend(_unknown_extra(name, str(key)) for key in sorted(extras, key=str) if key not in known_extras())
    return notes


@cache
def known_extras() -> tuple[str, ...]:
    """The extras the hook reads: the connection form's fields, in its order. Any other key is ignored with a
    warning, not refused: connections outlive provider versions."""
    return tuple(connection_type_info("analytics")["conn-fields"])


def _unknown_extra(name: str, key: str) -> str:
    shown = key if len(key) <= 64 else f"{key[:61]}..."  # a key is the user's text, not a secret, but may be long
    start = f"Extra {shown!r} of {name} is not a setting of this provider and is ignored"
    if key.lower() in _TOKEN_LIKE:
        return f"{start}: the API token goes in the password field."
    wanted = key.lower().removeprefix("extra__analytics__")  # how Airflow 2.2's form stored its fields
    nearest = difflib.get_close_matches(wanted, known_extras(), n=1)
    if nearest:
        return f"{start}: did you mean {nearest[0]!r}?"
    return f"{start}; the known extras are {', '.join(known_extras())}."


def warn_once(conn_id: str | None, notes: list[str]) -> None:
    """Log each note at WARNING once per connection in this process: hooks are built per task and per trigger.

    :param conn_id: the connection's id.
    :param notes: its notes (:func:`connection_notes`).
    """
    for note in notes:
        with _warned_lock:
            if (conn_id, note) in _warned:
                continue
            if not is_generated_test_id(conn_id):  # a test's random id never comes back: nothing to remember
                _warned.add((conn_id, note))
        log.warning("%s", note)


def with_notes(message: str, conn: ConnectionLike | None) -> str:
    """``message`` and then :func:`connection_notes`: a connection test that passes still says what is ignored.

    :param message: the test's outcome.
    :param conn: the connection, when it could be read.
    """
    notes = connection_notes(conn) if conn is not None else []
    return " ".join([message if not notes or message.endswith((".", "?", "!")) else f"{message}.", *notes])


def not_the_api(conn: ConnectionLike | None, base_url: str, content_type: str | None, detail: str) -> str:
    """``test_connection()``'s answer to a probe that got what no Analytics API sends (Airflow 3's web server
    answers any unknown path with 200 and its UI's HTML page).

    :param conn: the connection, for its name.
    :param base_url: the base URL the probe went to.
    :param content_type: the answer's ``Content-Type``, when it had one.
    :param detail: what was wrong with the answer, said unless it was an HTML page.
    """
    name = connection_name(conn.conn_id if conn is not None else None)
    ask = f"not the Analytics API: is the host of {name} the platform's API address?"
    if "html" in (content_type or "").lower():
        return f"{base_url} answered with an HTML page, {ask}"
    return f"{base_url} answered, but {ask} ({detail})"


def redact(text: str, conn: ConnectionLike | None = None) -> str:
    """``text`` without the connection's token and without the ``user:password@`` part of any URL in it.

    :param text: a message that may quote a URL or a secret.
    :param conn: the connection whose password to hide, when it could be read.
    """
    remember_secret(conn.password if conn is not None else None)
    return _USERINFO.sub("***@", scrub_text(text))
