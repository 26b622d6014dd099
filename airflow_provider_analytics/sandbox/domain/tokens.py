"""The bearer tokens a sandbox accepts now, and their rotation: a new token, the old one kept for a grace period.

A platform that rotates a credential rarely cuts the old one off at once: clients that still hold it (a
running task, a trigger that read its connection an hour ago) get a grace period to pick up the new one.
:meth:`TokenBook.rotate` gives the new token the old one's access and lets the old one expire
``grace_seconds`` later; from then on it gets 401 like any unknown token.

The sandbox's admin token is another kind of credential: it opens the ``/_sandbox`` control routes and is
never an API token (``/v1`` refuses it, and no API token opens the control routes). It is random for each
server unless the user fixes it (``--admin-token``, :data:`ADMIN_TOKEN_ENV_VAR`, ``SandboxServer(admin_token=)``).
"""

from __future__ import annotations

import secrets
import threading
from collections.abc import Iterable, Mapping
from datetime import datetime, timedelta

from airflow_provider_analytics.sandbox.domain.config import TokenGrant

ROTATED_TOKEN_PREFIX = "sandbox-token-"
# Read by ``python -m airflow_provider_analytics.sandbox`` (``--admin-token`` wins): a script that starts the
# sandbox fixes the admin token here, then calls the control routes with it.
ADMIN_TOKEN_ENV_VAR = "ANALYTICS_SANDBOX_ADMIN_TOKEN"


def new_admin_token() -> str:
    """A fresh random admin token (256 bits, URL-safe)."""
    return secrets.token_urlsafe(32)


def token_problem(token: str) -> str | None:
    """What makes ``token`` unusable in an ``Authorization: Bearer`` header, or None.

    :param token: a candidate API or admin token.
    """
    if not token or not token.isascii() or not token.isprintable() or " " in token:
        return "must be printable ASCII without spaces"
    return None


def admin_token_problem(token: str, api_tokens: Iterable[str]) -> str | None:
    """What makes ``token`` unusable as the admin token, or None.

    :param token: the candidate admin token.
    :param api_tokens: the server's configured API tokens (the admin token must be none of them).
    """
    problem = token_problem(token)
    if problem is None and token in set(api_tokens):
        problem = "must differ from every API token (the admin token is a credential of its own)"
    return problem


class TokenBook:
    """Accepted tokens, what each may access, and when a rotated-out one stops working.

    :param tokens: the configured tokens (the starting point, and what :meth:`reset` returns to).
    """

    def __init__(self, tokens: Mapping[str, TokenGrant]) -> None:
        self._configured = dict(tokens)
        self._grants: dict[str, TokenGrant] = {}
        self._expires: dict[str, datetime] = {}
        self._lock = threading.Lock()
        self.reset()

    def reset(self) -> None:
        """Back to the configured tokens, none of them expiring."""
        with self._lock:
            self._grants = dict(self._configured)
            self._expires.clear()

    def grant(self, token: str, now: datetime) -> TokenGrant | None:
        """What ``token`` may access at ``now``; None when it is unknown or its grace period is over.

        :param token: the bearer token of a request.
        :param now: the sandbox time of the request.
        """
        with self._lock:
            expires = self._expires.get(token)
            if expires is not None and now >= expires:
                return None
            return self._grants.get(token)

    def rotate(self, old: str, grace_seconds: float, now: datetime, new: str | None = None) -> tuple[str, datetime]:
        """Add a token with ``old``'s access; ``old`` keeps working for ``grace_seconds``, then gets 401.

        :param old: the token being replaced (it must be accepted now).
        :param grace_seconds: how long the old token stays valid (0: refused from now on).
        :param now: the sandbox time of the rotation.
        :param new: the new token (a fresh random one when None).
        :returns: the new token and the moment the old one expires.
        :raises ValueError: ``old`` is not accepted now, ``new`` is already in use or not a usable token,
            or ``grace_seconds`` is negative.
        """
        if not 0 <= grace_seconds < 86400:
            raise ValueError(f"grace_seconds must be from 0 to under a day, not {grace_seconds!r}")
        new = new if new is not None else ROTATED_TOKEN_PREFIX + secrets.token_urlsafe(18)
        problem = token_problem(new)
        if problem is not None:
            raise ValueError(f"a token {problem}")
        grant = self.grant(old, now)
        if grant is None:
            raise ValueError("the old token is not accepted now, so there is nothing to rotate")
        expires = now + timedelta(seconds=grace_seconds)
        with self._lock:
            if new in self._grants:
                raise ValueError("the new token is already in use")
            self._grants[new] = grant
            self._expires[old] = min(expires, self._expires.get(old, expires))
        return new, expires
