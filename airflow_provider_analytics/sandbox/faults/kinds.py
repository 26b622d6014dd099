"""Injected faults: answers a misbehaving platform or network would give, queued by tests and demos."""

from __future__ import annotations

import base64
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from airflow_provider_analytics.sandbox.faults import arguments
from airflow_provider_analytics.sandbox.faults.arguments import HeaderInput, HeaderPairs

FAULT_KINDS = ("status", "drop", "truncate", "bad_digest", "delay", "respond", "stream", "gzip", "headers", "pages")
# Kinds that answer instead of the route (before authentication); "gzip" and "headers" rewrite its answer.
ANSWERING_KINDS = ("respond", "stream", "pages")
DOWNLOAD_PATH = r"/download$"


@dataclass(frozen=True)
class Fault:
    """One fault, applied to the next ``times`` requests whose method and path match.

    Build faults with the constructors (``Fault.status``, ``Fault.drop``, ...) rather than directly.

    :param kind: one of ``status drop truncate bad_digest delay respond stream gzip headers pages``.
    :param method: HTTP method to match (any when None).
    :param path: regular expression searched (``re.search``) in the URL path.
    :param times: how many matching requests the fault applies to.
    :param code: for ``status``: the status code to answer with.
    :param retry_after: for ``status``: ``Retry-After`` value (seconds, or an HTTP-date string).
    :param body: for ``status``: a raw body to send instead of the contract error body.
    :param content_type: for ``status`` with a raw ``body``: its content type.
    :param after_processing: for ``drop``: process the request fully before dropping the answer.
    :param at_bytes: for ``truncate``: how many body bytes to send before closing.
    :param seconds: for ``delay``: how long to wait before handling the request; for ``stream``: the interval.
    :param answer_headers: for ``respond`` and ``stream``: the answer's headers, sent verbatim.
    :param raw: for ``respond``: the body; for ``stream``: ``(prefix, chunk, suffix)``.
    :param chunk_count: for ``stream``: how often ``chunk`` is sent.
    :param content_length: for ``stream``: a ``Content-Length`` to announce (true or not); None is chunked.
    :param force: for ``gzip``: compress even when the request did not accept gzip.
    :param set_headers: for ``headers``: headers added or replaced on the route's answer.
    :param remove_headers: for ``headers``: headers dropped from the route's answer.
    :param cycle: for ``pages``: the cursor comes back to ``cur_1`` after this many pages.
    :param items: for ``pages``: the JSON ``data`` of every page.
    :param extra: for ``pages``: more JSON fields of every page.
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
    answer_headers: HeaderPairs = ()
    raw: tuple[bytes, ...] = ()
    chunk_count: int = 0
    content_length: int | None = None
    force: bool = False
    set_headers: tuple[tuple[str, str], ...] = ()
    remove_headers: tuple[str, ...] = ()
    cycle: int | None = None
    items: Any = field(default=None, hash=False)
    extra: Any = field(default=None, hash=False)
    _pattern: re.Pattern[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.kind not in FAULT_KINDS:
            raise ValueError(f"fault kind must be one of {', '.join(FAULT_KINDS)}, not {self.kind!r}")
        if isinstance(self.times, bool) or not isinstance(self.times, int) or self.times < 1:
            raise ValueError(f"a fault must apply at least once (times >= 1), not times={self.times!r}")
        if self.method is not None and not isinstance(self.method, str):
            raise ValueError(f"method must be a string or None, not {self.method!r}")
        if self.kind == "status" and (self.code is None or not 400 <= self.code <= 599):
            raise ValueError("a status fault needs a code between 400 and 599")
        if self.kind == "truncate" and (self.at_bytes is None or self.at_bytes < 0):
            raise ValueError("a truncate fault needs at_bytes >= 0")
        if self.kind == "delay" and (self.seconds is None or self.seconds < 0):
            raise ValueError("a delay fault needs seconds >= 0")
        if self.kind in ("respond", "stream"):
            arguments.status_code(self.code, self.kind, 200)
        if self.kind == "stream":
            arguments.whole_number(self.chunk_count, "chunk_count", 0)
            arguments.seconds(self.seconds, "interval")
            if self.content_length is not None:
                arguments.whole_number(self.content_length, "content_length", 0)
        if self.kind == "pages" and self.cycle is not None:
            arguments.whole_number(self.cycle, "a pages fault's cycle", 1)
        object.__setattr__(self, "method", self.method.upper() if self.method else None)
        if not isinstance(self.path, str):
            raise ValueError(f"path must be a regular expression string, not {self.path!r}")
        try:
            object.__setattr__(self, "_pattern", re.compile(self.path))
        except re.error as error:
            raise ValueError(f"path {self.path!r} is not a valid regular expression: {error}") from None

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
        """Send the full headers (true ``Content-Length``) but only ``at_bytes`` of the body, then close (all but
        its last byte when ``at_bytes`` reaches the body's end: a truncate always cuts).

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
    def respond(
        cls,
        code: int,
        *,
        headers: HeaderInput = None,
        body: str | bytes = b"",
        method: str | None = None,
        path: str = ".*",
        times: int = 1,
    ) -> Fault:
        """Answer with any status, exactly these headers and this body, before anything is processed.

        ``X-Request-Id`` is added unless the headers carry one, and ``Content-Length`` unless they carry one
        (or ``Transfer-Encoding``). A given ``Content-Length`` is sent as given: when it promises more than
        the body, the connection closes after the body; when it promises less, only that much is sent.
        A 204 or 304 has no body.

        :param code: status code, 200-599 (204, 206 and redirects included).
        :param headers: a dict or (name, value) pairs, sent verbatim (``str`` as latin-1, ``bytes`` raw).
        :param body: the body (``str`` as UTF-8).
        :param method: HTTP method to match (any when None).
        :param path: regular expression searched in the URL path.
        :param times: how many matching requests get this answer.
        """
        raw = arguments.raw_bytes(body, "body")
        pairs = arguments.header_pairs(headers)
        return cls("respond", method, path, times, code=code, answer_headers=pairs, raw=(raw,))

    @classmethod
    def stream(
        cls,
        code: int = 200,
        *,
        headers: HeaderInput = None,
        prefix: bytes = b"",
        chunk: bytes = b" ",
        chunk_count: int = 1000,
        interval: float = 0.0,
        content_length: int | None = None,
        suffix: bytes = b"",
        method: str | None = None,
        path: str = ".*",
        times: int = 1,
    ) -> Fault:
        """Stream ``prefix``, ``chunk`` x ``chunk_count`` (``interval`` s apart) and ``suffix``: big or slow bodies.

        Stops quietly when the client goes away. ``X-Request-Id`` is added unless the headers carry one.

        :param code: status code, 200-599.
        :param headers: a dict or (name, value) pairs, sent verbatim (a ``Content-Length`` among them too).
        :param prefix: bytes sent first.
        :param chunk: bytes repeated.
        :param chunk_count: how many chunks.
        :param interval: seconds between chunks (a trickle).
        :param content_length: announced ``Content-Length``, sent as given (``10**15``); when more than was
            sent, the connection closes after ``suffix``; when less, the body stops there. None: chunked.
        :param suffix: bytes sent last.
        :param method: HTTP method to match (any when None).
        :param path: regular expression searched in the URL path.
        :param times: how many matching requests get this answer.
        """
        parts = tuple(arguments.raw_bytes(part, name) for part, name in
                      ((prefix, "prefix"), (chunk, "chunk"), (suffix, "suffix")))  # fmt: skip
        return cls(
            "stream", method, path, times, code=code, answer_headers=arguments.header_pairs(headers), raw=parts,
            chunk_count=chunk_count, seconds=interval, content_length=content_length,
        )  # fmt: skip

    @classmethod
    def gzip(cls, *, force: bool = False, method: str | None = None, path: str = ".*", times: int = 1) -> Fault:
        """Gzip the route's whole answer (``Content-Encoding: gzip``, its ``Content-Length``), other headers unchanged.

        :param force: compress even when the request's ``Accept-Encoding`` does not admit gzip (hostile);
            without it, only when it does (``gzip`` or ``*`` with a q-value over 0; ``identity`` is plain).
        :param method: HTTP method to match (any when None).
        :param path: regular expression searched in the URL path.
        :param times: how many matching requests are compressed.
        """
        if not isinstance(force, bool):
            raise ValueError(f"force must be true or false, not {force!r}")
        return cls("gzip", method, path, times, force=force)

    @classmethod
    def headers(
        cls,
        *,
        set: Mapping[str, str] | None = None,
        remove: Sequence[str] = (),
        method: str | None = None,
        path: str = ".*",
        times: int = 1,
    ) -> Fault:
        """Rewrite the route's answer's headers: add or replace ``set``, drop ``remove`` (case-insensitive).

        ``X-Request-Id`` and the rate-limit headers can be replaced or removed too. A ``Content-Length`` in
        ``set`` is sent as given (the body is cut, or the connection closed, as for ``respond``).

        :param set: headers to add or replace (name to value).
        :param remove: header names to drop (without ``Content-Length`` the body is sent chunked).
        :param method: HTTP method to match (any when None).
        :param path: regular expression searched in the URL path.
        :param times: how many matching requests are rewritten.
        """
        if set is not None and not isinstance(set, Mapping):
            raise ValueError("set must be a mapping of header names to values")
        pairs = tuple((name, arguments.as_text(value)) for name, value in arguments.header_pairs(set, "set"))
        removed = arguments.header_names(remove)
        return cls("headers", method, path, times, set_headers=pairs, remove_headers=removed)

    @classmethod
    def pages(
        cls,
        *,
        cycle: int | None = None,
        items: list[Any] | None = None,
        extra: dict[str, Any] | None = None,
        method: str | None = None,
        path: str = ".*",
        times: int = 1,
    ) -> Fault:
        """Answer list pages ``{"data": items, "next_cursor": "cur_<k>", **extra}``, k counting this fault's uses.

        :param cycle: after ``cur_<cycle>`` the cursor is ``cur_1`` again (a cursor cycle); None never ends.
        :param items: every page's ``data``.
        :param extra: more fields of every page (``columns`` for chart data).
        :param method: HTTP method to match (any when None).
        :param path: regular expression searched in the URL path.
        :param times: how many pages are answered.
        """
        items, extra = arguments.page_parts(items, extra)
        return cls("pages", method, path, times, cycle=cycle, items=items, extra=extra)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Fault:
        """Build a fault from the admin endpoint's JSON (``{"kind": "status", "code": 503, ...}``).

        Bytes are strings (``body`` as UTF-8; ``prefix``, ``chunk``, ``suffix`` too) or base64 in the same
        name with ``_b64`` (``body_b64``, ``chunk_b64``, ...).

        :param data: ``kind`` plus the keyword arguments of the matching constructor.
        :raises ValueError: for an unknown kind or field, or an argument the constructor refuses.
        """
        options = dict(data)
        kind = options.pop("kind", None)
        allowed = {
            "status": {"code", "method", "path", "times", "retry_after", "body", "content_type"},
            "drop": {"method", "path", "times", "after_processing"},
            "truncate": {"method", "path", "times", "at_bytes"},
            "bad_digest": {"method", "path", "times"},
            "delay": {"seconds", "method", "path", "times"},
            "respond": {"code", "headers", "body", "body_b64", "method", "path", "times"},
            "stream": {"code", "headers", "prefix", "chunk", "chunk_count", "interval", "content_length", "suffix",
                       "prefix_b64", "chunk_b64", "suffix_b64", "method", "path", "times"},
            "gzip": {"force", "method", "path", "times"},
            "headers": {"set", "remove", "method", "path", "times"},
            "pages": {"cycle", "items", "extra", "method", "path", "times"},
        }  # fmt: skip
        if kind not in allowed:
            raise ValueError(f"kind must be one of {', '.join(FAULT_KINDS)}")
        unknown = set(options) - allowed[kind]
        if unknown:
            raise ValueError(f"unknown field(s) for a {kind} fault: {', '.join(sorted(unknown))}")
        for name in ("body", "prefix", "chunk", "suffix"):
            if f"{name}_b64" in options:
                if name in options:
                    raise ValueError(f"give {name} or {name}_b64, not both")
                options[name] = arguments.from_base64(options.pop(f"{name}_b64"), f"{name}_b64")
            elif kind == "stream" and isinstance(options.get(name), str):
                options[name] = options[name].encode()
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
        if self.kind in ("respond", "stream"):
            view["headers"] = [[name, arguments.as_text(value)] for name, value in self.answer_headers]
            names = ("body",) if self.kind == "respond" else ("prefix", "chunk", "suffix")
            view.update(
                {f"{name}_b64": base64.b64encode(part).decode() for name, part in zip(names, self.raw, strict=True)}
            )
        if self.kind == "stream":
            view.update(chunk_count=self.chunk_count, interval=self.seconds, content_length=self.content_length)
        if self.kind == "gzip":
            view["force"] = self.force
        if self.kind == "headers":
            view.update(set=dict(self.set_headers), remove=list(self.remove_headers))
        if self.kind == "pages":
            view.update(cycle=self.cycle, items=self.items, extra=self.extra)
        return view
