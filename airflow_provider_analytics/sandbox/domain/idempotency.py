"""``Idempotency-Key`` bookkeeping: replay the original answer, refuse a reused key with another body."""

from __future__ import annotations

import json
import re
import threading
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from enum import Enum

KEY_PATTERN = re.compile(r"^[\x20-\x7e]{1,255}$")
RETENTION = timedelta(hours=24)


def request_fingerprint(method: str, path: str, body: bytes) -> str:
    """What must match for a repeat to count as "the same request": method, path and canonical JSON.

    Key order and whitespace do not matter; an empty body counts as ``{}`` (no inputs).

    :param method: the request method.
    :param path: the URL path.
    :param body: the raw request body.
    """
    try:
        parsed = json.loads(body) if body.strip() else {}
        canonical = json.dumps(parsed, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    except ValueError:
        canonical = body.decode("utf-8", errors="replace")
    return f"{method.upper()} {path}\n{canonical}"


@dataclass(frozen=True)
class StoredResponse:
    """An answer kept for replay."""

    status: int
    headers: list[tuple[bytes, bytes]]
    body: bytes


@dataclass
class _Entry:
    fingerprint: str
    created_at: datetime
    response: StoredResponse | None = None
    in_flight: bool = field(default=True)


class Verdict(Enum):
    """What to do with a request that carries an ``Idempotency-Key``."""

    PROCEED = "proceed"
    REPLAY = "replay"
    MISMATCH = "mismatch"
    IN_FLIGHT = "in_flight"


class IdempotencyStore:
    """Records of keyed POSTs, per workspace, kept for 24 hours of sandbox time."""

    def __init__(self) -> None:
        self._entries: dict[tuple[str, str], _Entry] = {}
        self._lock = threading.Lock()

    def begin(
        self, workspace_id: str, key: str, fingerprint: str, now: datetime
    ) -> tuple[Verdict, StoredResponse | None]:
        """Look a key up and, when it is new, reserve it for this request.

        :param workspace_id: the workspace the key is scoped to.
        :param key: the ``Idempotency-Key`` value.
        :param fingerprint: the request's fingerprint (``request_fingerprint``).
        :param now: the sandbox time.
        """
        with self._lock:
            entry = self._entries.get((workspace_id, key))
            if entry is not None and now - entry.created_at >= RETENTION:
                entry = None
            if entry is None:
                self._entries[(workspace_id, key)] = _Entry(fingerprint, now)
                return Verdict.PROCEED, None
            if entry.fingerprint != fingerprint:
                return Verdict.MISMATCH, None
            if entry.in_flight or entry.response is None:
                return Verdict.IN_FLIGHT, None
            return Verdict.REPLAY, entry.response

    def complete(self, workspace_id: str, key: str, response: StoredResponse) -> None:
        """Keep the answer of a reserved key for replay.

        :param workspace_id: the workspace the key is scoped to.
        :param key: the ``Idempotency-Key`` value.
        :param response: the answer to replay.
        """
        with self._lock:
            entry = self._entries.get((workspace_id, key))
            if entry is not None:
                entry.response, entry.in_flight = response, False

    def release(self, workspace_id: str, key: str) -> None:
        """Forget a reserved key whose request did not succeed, so that a retry runs again.

        :param workspace_id: the workspace the key is scoped to.
        :param key: the ``Idempotency-Key`` value.
        """
        with self._lock:
            entry = self._entries.get((workspace_id, key))
            if entry is not None and entry.in_flight:
                del self._entries[(workspace_id, key)]

    def clear(self) -> None:
        """Forget every key."""
        with self._lock:
            self._entries.clear()
