"""Injected faults: answers a misbehaving platform or network would give, queued by tests and demos."""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass, field
from typing import Any

FAULT_KINDS = ("status", "drop", "truncate", "bad_digest", "delay")
DOWNLOAD_PATH = r"/download$"


@dataclass(frozen=True)
class Fault:
    """One fault, applied to the next ``times`` requests whose method and path match.

    Build faults with the constructors (``Fault.status``, ``Fault.drop``, ...) rather than directly.

    :param kind: one of ``status drop truncate bad_digest delay``.
    :param method: HTTP method to match (any when None).
    :param path: regular expression searched (``re.search``) in the URL path.
    :param times: how many matching requests the fault applies to.
    :param code: for ``status``: the status code to answer with.
    :param retry_after: for ``status``: ``Retry-After`` value (seconds, or an HTTP-date string).
    :param body: for ``status``: a raw body to send instead of the contract error body.
    :param content_type: for ``status`` with a raw ``body``: its content type.
    :param after_processing: for ``drop``: process the request fully before dropping the answer.
    :param at_bytes: for ``truncate``: how many body bytes to send before closing.
    :param seconds: for ``delay``: how long to wait before handling the request.
    """

    kind: str
    method: str | None = None
    path: str = ".*"
    times: int = 1
    code: int | None = None
    retry_after: int | str | None = None
    body: str | None = None
    content_type: str | None = None
    after_processing: bool = False
    at_bytes: int | None = None
    seconds: float | None = None
    _pattern: re.Pattern[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.kind not in FAULT_KINDS:
            raise ValueError(f"fault kind must be one of {', '.join(FAULT_KINDS)}, not {self.kind!r}")
        if self.times < 1:
            raise ValueError("a fault must apply at least once (times >= 1)")
        if self.kind == "status" and (self.code is None or not 400 <= self.code <= 599):
            raise ValueError("a status fault needs a code between 400 and 599")
        if self.kind == "truncate" and (self.at_bytes is None or self.at_bytes < 0):
            raise ValueError("a truncate fault needs at_bytes >= 0")
        if self.kind == "delay" and (self.seconds is None or self.seconds < 0):
            raise ValueError("a delay fault needs seconds >= 0")
        object.__setattr__(self, "method", self.method.upper() if self.method else None)
        object.__setattr__(self, "_pattern", re.compile(self.path))

    @classmethod
    def status(
        cls,
        code: int,
        *,
        method: str | None = None,
        path: str = ".*",
        times: int = 1,
        retry_after: int | str | None = None,
        body: str | None = None,
        content_type: str | None = None,
    ) -> Fault:
        """Answer with ``code`` before the request is processed (nothing is created or started).

        :param code: status code, 400-599.
        :param method: HTTP method to match (any when None).
        :param path: regular expression searched in the URL path.
        :param times: how many matching requests get this answer.
        :param retry_after: ``Retry-After`` header: delta-seconds (int) or a string sent verbatim.
        :param body: raw body (e.g. a proxy's HTML page, or ``""``); None sends the contract error body.
        :param content_type: content type of a raw body (default ``text/plain; charset=utf-8``).
        """
        return cls(
            "status", method, path, times, code=code, retry_after=retry_after, body=body, content_type=content_type
        )

    @classmethod
    def drop(
        cls, *, method: str | None = None, path: str = ".*", times: int = 1, after_processing: bool = False
    ) -> Fault:
        """Drop the connection so the client sees a transport error.

        :param method: HTTP method to match (any when None).
        :param path: regular expression searched in the URL path.
        :param times: how many matching requests are dropped.
        :param after_processing: handle the request fully first (create, store the idempotency record),
            then drop the answer: the "it worked but the client never heard" case.
        """
        return cls("drop", method, path, times, after_processing=after_processing)

    @classmethod
    def truncate(
        cls, *, method: str | None = None, path: str = DOWNLOAD_PATH, at_bytes: int = 0, times: int = 1
    ) -> Fault:
        """Send the full headers (true ``Content-Length``) but only ``at_bytes`` of the body, then close.

        :param method: HTTP method to match (any when None).
        :param path: regular expression searched in the URL path (default: report downloads).
        :param at_bytes: body bytes sent before the connection closes.
        :param times: how many matching requests are truncated.
        """
        return cls("truncate", method, path, times, at_bytes=at_bytes)

    @classmethod
    def bad_digest(cls, *, method: str | None = None, path: str = DOWNLOAD_PATH, times: int = 1) -> Fault:
        """Answer normally but with a ``Repr-Digest`` that does not match the body.

        :param method: HTTP method to match (any when None).
        :param path: regular expression searched in the URL path (default: report downloads).
        :param times: how many matching requests get a wrong digest.
        """
        return cls("bad_digest", method, path, times)

    @classmethod
    def delay(cls, seconds: float, *, method: str | None = None, path: str = ".*", times: int = 1) -> Fault:
        """Wait ``seconds`` (without blocking the server) before handling the request.

        :param seconds: the delay.
        :param method: HTTP method to match (any when None).
        :param path: regular expression searched in the URL path.
        :param times: how many matching requests are delayed.
        """
        return cls("delay", method, path, times, seconds=seconds)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Fault:
        """Build a fault from the admin endpoint's JSON (``{"kind": "status", "code": 503, ...}``).

        :param data: ``kind`` plus the keyword arguments of the matching constructor.
        """
        options = dict(data)
        kind = options.pop("kind", None)
        allowed = {
            "status": {"code", "method", "path", "times", "retry_after", "body", "content_type"},
            "drop": {"method", "path", "times", "after_processing"},
            "truncate": {"method", "path", "times", "at_bytes"},
            "bad_digest": {"method", "path", "times"},
            "delay": {"seconds", "method", "path", "times"},
        }
        if kind not in allowed:
            raise ValueError(f"kind must be one of {', '.join(FAULT_KINDS)}")
        unknown = set(options) - allowed[kind]
        if unknown:
            raise ValueError(f"unknown field(s) for a {kind} fault: {', '.join(sorted(unknown))}")
        constructor = getattr(cls, kind)
        try:
            return constructor(**options)  # type: ignore[no-any-return]
        except TypeError as error:
            raise ValueError(str(error)) from error

    def matches(self, method: str, path: str) -> bool:
        """Whether this fault applies to a request.

        :param method: the request method.
        :param path: the URL path.
        """
        return (self.method is None or self.method == method.upper()) and bool(self._pattern.search(path))

    def as_json(self) -> dict[str, Any]:
        """The fault as the admin endpoint shows it."""
        fields = ("kind", "method", "path", "times", "code", "retry_after", "body", "content_type")
        view = {name: getattr(self, name) for name in fields}
        view.update(after_processing=self.after_processing, at_bytes=self.at_bytes, seconds=self.seconds)
        return view


class FaultQueue:
    """Faults in injection order; each matching request consumes one use of the first match."""

    def __init__(self) -> None:
        self._entries: list[list[Any]] = []
        self._lock = threading.Lock()

    def add(self, fault: Fault) -> None:
        """Queue a fault.

        :param fault: the fault to queue.
        """
        with self._lock:
            self._entries.append([fault, fault.times])

    def take(self, method: str, path: str) -> Fault | None:
        """Consume one use of the first queued fault that matches, if any.

        :param method: the request method.
        :param path: the URL path.
        """
        with self._lock:
            for entry in self._entries:
                fault: Fault = entry[0]
                if fault.matches(method, path):
                    entry[1] -= 1
                    if entry[1] <= 0:
                        self._entries.remove(entry)
                    return fault
        return None

    def pending(self) -> list[tuple[Fault, int]]:
        """Queued faults with their remaining uses."""
        with self._lock:
            return [(entry[0], entry[1]) for entry in self._entries]

    def clear(self) -> None:
        """Forget every queued fault."""
        with self._lock:
            self._entries.clear()
