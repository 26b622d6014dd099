"""Keeping API tokens out of everything the platform (or a proxy in front of it) says back.

A platform that repeats a request's ``Authorization`` header in an error message would otherwise put the token,
whole, into the exception text, the task log, the trigger event Airflow stores in its database and XCom. Every
client remembers its token here when it is built; every body it reads (JSON answers and error bodies, never a
downloaded report) and every text quoted in an error passes through :func:`scrub_text` (or its byte-level
twin :func:`scrub_body`), which replaces each remembered token, and anything shaped like ``Bearer <token>``,
with ``***``.

Tokens are remembered for the life of the process, across connections: a triggerer serving many connections
hides every one of them in every connection's texts.
"""

from __future__ import annotations

import re
import threading
from typing import Any

MASK = "***"
# Shorter secrets would mask ordinary words; a real token is far longer (Airflow's own masker skips them too).
MIN_SECRET_LENGTH = 5
# A credential in the Authorization header's own shape, whoever's it is; the scheme is kept ("Bearer ***").
# At least 8 characters, so that prose such as "send a Bearer token" stays as written.
_BEARER = r"(?P<scheme>(?i:bearer)[ \t]+)[A-Za-z0-9\-._~+/=]{8,}"

_lock = threading.Lock()
_secrets: set[str] = set()
_text_pattern = re.compile(_BEARER)
_bytes_pattern = re.compile(_BEARER.encode())


def remember_secret(secret: str | None) -> None:
    """Mask ``secret`` in every text :func:`scrub_text` and :func:`scrub_body` see from now on, in this process.

    :param secret: an API token (ignored when empty or shorter than :data:`MIN_SECRET_LENGTH`).
    """
    global _text_pattern, _bytes_pattern
    secret = (secret or "").strip()
    if len(secret) < MIN_SECRET_LENGTH or secret in _secrets:
        return
    with _lock:
        _secrets.add(secret)
        # Longest first, so a token that contains another is masked whole; also the JSON-escaped form of "/".
        forms = {form for known in _secrets for form in (known, known.replace("/", "\\/"))}
        alternatives = [re.escape(form) for form in sorted(forms, key=len, reverse=True)]
        _text_pattern = re.compile("|".join([_BEARER, *alternatives]))
        _bytes_pattern = re.compile("|".join([_BEARER, *alternatives]).encode())


def scrub_text(text: str) -> str:
    """``text`` with every remembered token, and every ``Bearer <credential>``, replaced by ``***``.

    :param text: a message, reason or body that came from the platform or the network.
    """
    return _text_pattern.sub(_mask_text, text)


def scrub_body(body: bytes) -> bytes:
    """:func:`scrub_text` on a body's raw bytes: one pass however large the body.

    A token hidden behind JSON ``\\u`` escapes survives this pass; :func:`scrub_value` then catches it in the
    decoded values.

    :param body: a decoded (not compressed) answer body.
    """
    return _bytes_pattern.sub(_mask_bytes, body)


def scrub_value(value: Any) -> Any:
    """A decoded JSON value with :func:`scrub_text` applied to every string in it (keys included).

    Walked without recursion: ``json.loads`` accepts nesting almost as deep as the interpreter's recursion
    limit, which a recursive walk on top of the caller's frames would pass.

    :param value: what ``json.loads`` returned.
    """
    if not isinstance(value, (list, dict)):
        return scrub_text(value) if isinstance(value, str) else value
    result: list[Any] | dict[str, Any] = [] if isinstance(value, list) else {}
    pending: list[tuple[Any, Any]] = [(value, result)]
    while pending:
        source, target = pending.pop()
        for key, item in enumerate(source) if isinstance(source, list) else source.items():
            if isinstance(item, (list, dict)):
                copy: Any = [] if isinstance(item, list) else {}
                pending.append((item, copy))  # filled later: it is already in place in its parent
            else:
                copy = scrub_text(item) if isinstance(item, str) else item
            if isinstance(target, list):
                target.append(copy)
            else:
                target[scrub_text(str(key))] = copy
    return result


def _mask_text(match: re.Match[str]) -> str:
    return (match.group("scheme") or "") + MASK


def _mask_bytes(match: re.Match[bytes]) -> bytes:
    return (match.group("scheme") or b"") + MASK.encode()


def may_hide_escapes(body: bytes) -> bool:
    """Whether a JSON body has ``\\u`` escapes, behind which a token could pass :func:`scrub_body` unseen.

    :param body: the body as :func:`scrub_body` returned it.
    """
    return b"\\u" in body
