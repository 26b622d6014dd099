"""What the sync and async clients share, written once: the retry loop as a generator of I/O steps.

:class:`BaseAnalyticsClient` builds each request (base URL, headers, the token), runs the retry loop, tells a
missing resource from a base URL without the API (one probe request), turns failed attempts into the
:mod:`~airflow_provider_analytics.wire.errors` tree and decodes answers with the call's own parser. The loop
(``_exchange``) does no I/O: it *yields* steps (:class:`Send` this request by this deadline, :class:`Sleep` this
long) and is sent what came of each (:data:`Reply`), so the two clients in
:mod:`~airflow_provider_analytics.wire.client` only carry the steps out, one with ``await`` and one without (as
httpx's own clients share ``BaseClient``). The client's settings are
:class:`~airflow_provider_analytics.wire.config.ClientConfig`; the status-to-exception table is in
:mod:`~airflow_provider_analytics.wire.errors`.
"""

from __future__ import annotations

import logging
import random
import time
import weakref
from collections.abc import Generator
from typing import Any, TypeVar

import httpx

from airflow_provider_analytics import __version__
from airflow_provider_analytics.wire._accounts import limiter_for, shared_limiter_for
from airflow_provider_analytics.wire._bodies import ACCEPT_ENCODING, BoundedBody
from airflow_provider_analytics.wire._contract import HEADER_REQUEST_ID, HEADER_WORKSPACE
from airflow_provider_analytics.wire._deadline import current_call_deadline
from airflow_provider_analytics.wire._endpoints import RequestSpec, list_workflows
from airflow_provider_analytics.wire._error_answers import api_error_from_response, platform_error_object
from airflow_provider_analytics.wire._lifecycle_notices import LIFECYCLE_NOTICES
from airflow_provider_analytics.wire._observer import CallRecord, PauseSource, observer, status_class
from airflow_provider_analytics.wire._pace import Turn
from airflow_provider_analytics.wire._rate_headers import Pause
from airflow_provider_analytics.wire._redaction import remember_secret, scrub_body
from airflow_provider_analytics.wire._request_json import encoded
from airflow_provider_analytics.wire._shared_limiter import SharedTurn
from airflow_provider_analytics.wire._steps import Answer, Exchange, Reply, Send, Sleep, Step
from airflow_provider_analytics.wire._tls import root_cause, tls_context, transport_error
from airflow_provider_analytics.wire._transports import PoolSettings
from airflow_provider_analytics.wire.config import ClientConfig
from airflow_provider_analytics.wire.errors import (
    AnalyticsError,
    AnalyticsTimeoutError,
    AnalyticsTLSError,
    AnalyticsTransportError,
    UnexpectedResponseError,
    clean_text,
)
from airflow_provider_analytics.wire.retry import parse_retry_after

log = logging.getLogger("airflow_provider_analytics.wire")

T = TypeVar("T")
USER_AGENT = f"airflow-provider-analytics/{__version__}"
KEEPALIVE_SECONDS = 120.0
# A request waiting for its turn gives it up this long before its call's deadline: sent later, it could not be
# answered in time, and would spend a place in the platform's window for nothing.
LEAST_SEND_SECONDS = 0.25


class BaseAnalyticsClient:
    """Everything a client does that is not I/O.

    :param config: the client configuration.
    """

    def __init__(self, config: ClientConfig) -> None:
        self.config = config
        remember_secret(config.token)  # masked in every text read back from now on (wire/_redaction.py)
        # Shared by every client of the same account in this process (wire/_throttle.py).
        self.rate_limiter = limiter_for(config.base_url, config.token, config.connection_id)
        # With a store named: the limiter every process on the token shares (wire/_shared_limiter.py), over this one.
        self.shared_limiter = shared_limiter_for(config, self.rate_limiter)
        self._account = config.connection_id or "none"  # what metrics name the account by: never its token
        # Set by the first successful answer: the base URL then provably serves the API, so a later 404
        # means a missing resource and needs no probe (see _route_unknown).
        self._api_answered = False
        # The reader of each error answer's body, while its answer lives: one over the size limit was not read,
        # and its error says so rather than call the body empty.
        self._error_bodies: weakref.WeakKeyDictionary[httpx.Response, BoundedBody] = weakref.WeakKeyDictionary()

    def __repr__(self) -> str:
        return f"{type(self).__name__}(base_url={self.config.base_url!r}, workspace_id={self.config.workspace_id!r})"

    def _httpx_options(self) -> dict[str, Any]:
        headers = {"User-Agent": USER_AGENT, "Accept": "application/json", "Accept-Encoding": ACCEPT_ENCODING}
        if self.config.workspace_id:
            headers[HEADER_WORKSPACE] = self.config.workspace_id
        return {
            "base_url": self.config.base_url,
            "headers": headers,
            "timeout": httpx.Timeout(self.config.timeout),
            "follow_redirects": False,
        }

    def expected_wait(self, now: float) -> float:
        """Seconds a request asking now would wait for its turn: in the fleet's queue when the store is used, else in
        this process's own.

        :param now: monotonic seconds.
        """
        shared = self.shared_limiter
        if shared is not None and shared.usable(now):
            return shared.expected_wait(now)
        return self.rate_limiter.expected_wait(now)

    def pool_settings(self) -> PoolSettings:
        """TLS and limits of the connection pools under both clients (wire/_transports.py builds them)."""
        # httpx closes idle connections after 5 s: a wait polling every 5 s or more would pay a new TLS
        # handshake on every poll. A dead kept connection is noticed and replaced before it is reused.
        limits = httpx.Limits(max_connections=100, max_keepalive_connections=20, keepalive_expiry=KEEPALIVE_SECONDS)
        return PoolSettings(tls_context(self.config.verify), limits)

    def _build_request(self, http: httpx.Client | httpx.AsyncClient, spec: RequestSpec) -> httpx.Request:
        headers = {"Authorization": f"Bearer {self.config.token}", **spec.headers}
        if spec.json_body is None:
            return http.build_request(spec.method, spec.path, params=spec.params, headers=headers)
        # Encoded here, one way on every httpx (wire/_request_json.py): the bytes sent are the bytes measured.
        content = encoded(spec.json_body)
        headers["Content-Type"] = "application/json"
        return http.build_request(spec.method, spec.path, params=spec.params, content=content, headers=headers)

    def body_reader(self, response: httpx.Response) -> BoundedBody:
        """What collects an answer's body: raw bytes in, decoded and bounded by ``max_response_bytes``.

        A transport that built the answer in memory (``httpx.MockTransport``) has already decoded it: the
        driver feeds ``response.content`` then, and nothing is decoded twice.
        """
        request = response.request
        encoding = None if response.is_stream_consumed else response.headers.get("Content-Encoding")
        reader = BoundedBody(encoding, self.config.max_response_bytes, f"{request.method} {request.url.path}")
        if response.is_error:
            self._error_bodies[response] = reader
        return reader

    def _exchange(self, http: httpx.Client | httpx.AsyncClient, spec: RequestSpec, *, stream: bool = False) -> Exchange:
        """One call: the retry loop (:meth:`_attempts`), then the whole call reported to the observer, answered or
        failed (a generator closed part-way, its task cancelled, reports nothing: no span of a call never ended)."""
        call = CallRecord(self._account, spec.method, spec.route, time.time_ns())
        try:
            answer = yield from self._attempts(http, spec, stream, call)
        except Exception as exc:  # any failure ends the call; it is re-raised as it was
            call.error = type(exc).__name__
            observer().called(call)
            raise
        observer().called(call)
        return answer

    def _attempts(
        self, http: httpx.Client | httpx.AsyncClient, spec: RequestSpec, stream: bool, call: CallRecord
    ) -> Exchange:
        """The retry loop: yields steps, receives replies, returns the first successful answer.

        Each attempt has ``timeout`` seconds in all; a :func:`~._deadline.call_deadline` in force also bounds
        the attempts and the waits between them together. A 429 does not use up the policy's retries: the
        request waits its account's turn (:mod:`._throttle`) for up to ``max_rate_limited_seconds``.
        """
        policy = self.config.retry
        retries = refusals = 0
        first_refusal: float | None = None
        turn: Turn | SharedTurn | None = None  # kept after a 429: the request keeps its place in the queue
        while True:
            sent_at, turn = yield from self._wait_for_turn(spec, turn)
            call_deadline = current_call_deadline()
            deadline = (
                sent_at + self.config.timeout
                if call_deadline is None
                else min(sent_at + self.config.timeout, call_deadline)
            )
            reply = yield from self._attempt_step(spec, Send(self._build_request(http, spec), deadline, stream), call)
            error: AnalyticsError
            if isinstance(reply, httpx.TransportError):
                turn = None
                error = self._transport_error(spec, reply)
                # A failed TLS handshake is a setting (the scheme, the certificate, 'verify'): a repeat fails alike.
                reason = None
                if not isinstance(error, AnalyticsTLSError):
                    reason = policy.retry_reason(retries_done=retries, idempotent=spec.idempotent, transport_error=True)
                # Process-wide jitter: a Random per client would cost each of a triggerer's waits 2.5 KB.
                wait = None if reason is None else policy.backoff(retries, random.random())
                reason = f"{reason}: {str(error).split('. ', 1)[0]}"  # what went wrong, and what to check
                cause = "timeout" if isinstance(error, AnalyticsTimeoutError) else "connection"
            elif isinstance(reply, Answer):
                # A JSON answer or an error body (never a report's content, which is streamed), masked unless it is a
                # successful answer the caller takes as data (RequestSpec.mask_answer).
                if reply.body and (spec.mask_answer or not reply.response.is_success):
                    reply = Answer(reply.response, scrub_body(reply.body))
                response = reply.response
                LIFECYCLE_NOTICES.note(spec, response)
                now = max(time.monotonic(), sent_at)  # the clock _wait_for_turn keeps: real, or moved by sleeps
                if isinstance(turn, SharedTurn) and self.shared_limiter is not None:
                    yield from self.shared_limiter.answered(
                        response.status_code, response.headers, now, policy.max_retry_after
                    )
                else:
                    self.rate_limiter.answered(response.status_code, response.headers, now, policy.max_retry_after)
                if response.is_success:
                    self._api_answered = True
                    return reply
                if not response.is_error:
                    raise UnexpectedResponseError(
                        f"{spec.method} {spec.path} answered {response.status_code}, which no request of this "
                        "client expects (redirects are not followed)",
                        request_id=clean_text(response.headers.get(HEADER_REQUEST_ID, ""), 200) or None,
                    )
                retry_after = parse_retry_after(response.headers.get("Retry-After"))
                unknown_route = yield from self._route_unknown(http, spec, response.status_code, reply.body or b"")
                error = api_error_from_response(
                    response.status_code,
                    response.headers,
                    reply.body or b"",
                    method=spec.method,
                    path=spec.path,
                    retry_after=retry_after,
                    unknown_route=unknown_route,
                    connection_id=self.config.connection_id,
                    body_over_limit=self._body_over_limit(response),
                    workspace_id=self.config.workspace_id,
                )
                if response.status_code == 429:
                    observer().rate_limited(self._account, spec.method, spec.route)
                    first_refusal = now if first_refusal is None else first_refusal
                    pause = policy.backoff(refusals, random.random()) if retry_after is None else retry_after
                    source = PauseSource.RETRY_AFTER if retry_after is not None else PauseSource.BACKOFF
                    if isinstance(turn, SharedTurn) and self.shared_limiter is not None:
                        yield from self.shared_limiter.refused(pause, turn, now, policy.max_retry_after, source)
                    else:
                        self.rate_limiter.refused(pause, sent_at, now, policy.max_retry_after, source)
                    self._refused(spec, error, pause, now, now - first_refusal)
                    observer().retried(self._account, spec.method, spec.route, "rate_limited")
                    refusals += 1
                    continue
                turn = None
                reason = policy.retry_reason(
                    retries_done=retries, idempotent=spec.idempotent, status=response.status_code
                )
                wait = None if reason is None else policy.wait_before_retry(retries, retry_after, random.random())
                reason = f"{reason}, request id {getattr(error, 'request_id', None) or 'unknown'}"
                cause = "server_error"
            else:  # pragma: no cover - a driver bug, not a platform answer
                raise TypeError(f"the transport driver sent {reply!r}")
            if wait is None or (call_deadline is not None and time.monotonic() + wait >= call_deadline):
                if isinstance(reply, httpx.TransportError):  # the socket's or TLS's error, not httpx's wrappings
                    raise error from root_cause(reply)
                raise error
            retries += 1
            observer().retried(self._account, spec.method, spec.route, cause)
            log.warning(
                "%s %s%s failed (%s); retry %d of %d in %.2f s",
                spec.method,
                self.config.base_url,
                spec.path,
                reason,
                retries,
                policy.max_retries,
                wait,
            )
            yield Sleep(wait)

    def _attempt_step(
        self, spec: RequestSpec, step: Send, call: CallRecord | None = None
    ) -> Generator[Step, Reply, Reply]:
        """Send one attempt and tell the observer what came of it (``_observer.py``): its status class, its time.

        :param call: the call the attempt belongs to, which it updates (``None`` for the probe of a route).
        """
        started = time.monotonic()
        reply = yield step
        status = reply.response.status_code if isinstance(reply, Answer) else None
        observer().answered(self._account, spec.method, spec.route, status_class(status), time.monotonic() - started)
        if call is not None:
            call.attempts, call.status, call.request_id = call.attempts + 1, status, None
            if isinstance(reply, Answer):
                call.request_id = clean_text(reply.response.headers.get(HEADER_REQUEST_ID, ""), 200) or None
        return reply

    def _body_over_limit(self, response: httpx.Response) -> int | None:
        """The size limit an error answer's body passed (it was then not read), or ``None``."""
        reader = self._error_bodies.pop(response, None)
        return self.config.max_response_bytes if reader is not None and reader.over_limit else None

    def _refused(self, spec: RequestSpec, error: AnalyticsError, pause: float, now: float, refused_for: float) -> None:
        """After a 429 paused the account's requests: give up and raise ``error``, or wait for the next turn.

        The request is sent again when its turn comes; it gives up when the platform asks for a longer wait
        than the policy honours, when that wait would pass the call's deadline, or after
        ``max_rate_limited_seconds`` of refusals. Without a ``Retry-After`` the pause is the policy's backoff.
        """
        policy = self.config.retry
        call_deadline = current_call_deadline()
        if (
            pause > policy.max_retry_after
            or refused_for > policy.max_rate_limited_seconds
            or (call_deadline is not None and now + pause >= call_deadline)
        ):
            raise error
        log.debug(
            "%s %s%s was refused (429, request id %s); it waits for the connection's next turn",
            spec.method,
            self.config.base_url,
            spec.path,
            getattr(error, "request_id", None) or "unknown",
        )

    def _wait_for_turn(
        self, spec: RequestSpec, kept: Turn | SharedTurn | None = None
    ) -> Generator[Step, Reply, tuple[float, Turn | SharedTurn | None]]:
        """Wait until the account's rate limiter lets this request go; return when it goes (monotonic) and its turn.

        With a store, the turn is one of the fleet's queue (``_shared_limiter.py``: a round trip, and one per look
        while it waits); while the store is away, and without one, of this process's own limiter. Not throttled,
        that is one attribute read. Throttled, the request takes a turn (or keeps ``kept``, the turn it was refused
        on) and sleeps until it comes; the clock moves on by each sleep asked for, so a test's instant ``sleep``
        still ends the wait.

        :raises RateLimitedError: a pause would hold it past the call's deadline or ``max_retry_after`` (at once).
        :raises AnalyticsTimeoutError: the call's deadline comes before the turn (or has passed).
        """
        now = asked = time.monotonic()
        call_deadline = current_call_deadline()
        shared = self.shared_limiter
        if shared is not None and not isinstance(kept, Turn) and shared.usable(now):

            def checks(at: float, delay: float, paused_by: Pause | None) -> float:
                return self._may_wait(spec, at, delay, paused_by, call_deadline)

            shared_turn = yield from shared.wait_for_turn(kept, checks)
            if shared_turn is not None:
                now = time.monotonic()
                if shared_turn.number >= 0:
                    observer().queued(self._account, now - asked)
                return now, shared_turn
            now = time.monotonic()  # the store is away: this process's own limiter from here
        turn = self.rate_limiter.take_turn(now, kept if isinstance(kept, Turn) else None)
        while True:
            delay = 0.0 if turn is None else self.rate_limiter.delay(turn, now)
            paused_by = None if delay <= 0 else self.rate_limiter.pause_in_force(now)
            try:
                sleep = self._may_wait(spec, now, delay, paused_by, call_deadline)
            except AnalyticsError:
                if turn is not None:  # it gives its place up: the turns after it move up
                    self.rate_limiter.forget(turn)
                raise
            if delay <= 0:
                break
            yield Sleep(sleep)
            now = max(time.monotonic(), now + sleep)
        if turn is not None:
            self.rate_limiter.sent(turn, now)
            observer().queued(self._account, now - asked)
        return now, turn

    def _may_wait(
        self, spec: RequestSpec, now: float, delay: float, paused_by: Pause | None, call_deadline: float | None
    ) -> float:
        """How long a request waiting ``delay`` for its turn sleeps before it asks again; raises when it may not wait:
        held by a pause longer than this client allows, or its call's deadline is (nearly) there.

        A wait in the queue past the deadline is not given up at once: turns ahead of it are given up too when their
        own deadlines come (a fleet of short calls would otherwise give up every turn, each behind the others, and
        none would go). It sleeps until :data:`LEAST_SEND_SECONDS` before the deadline, then gives its turn up if it
        has not come.
        """
        refusal = paused_by.refusal(spec.method, spec.path, now, call_deadline, self.config) if paused_by else None
        if refusal is not None:
            raise refusal
        if call_deadline is None or now + max(0.0, delay) < call_deadline:
            return delay
        left = call_deadline - now - LEAST_SEND_SECONDS
        if delay > 0 and left > 0:
            return left
        waiting = "for the connection's turn under the platform's rate limit " if delay > 0 else ""
        raise AnalyticsTimeoutError(
            f"{spec.method} {spec.path} was not sent: the time allowed for it had run out {waiting}".rstrip(),
            method=spec.method,
            path=spec.path,
        )

    def _route_unknown(
        self, http: httpx.Client | httpx.AsyncClient, spec: RequestSpec, status: int, body: bytes
    ) -> Generator[Step, Reply, bool]:
        """Whether a 404 or 405 means that the base URL serves no /v1 API (a wrong host or path prefix), not
        that a resource is missing; decided by status and shape, never by the message.

        A body that is not the contract's error object came from something other than the platform (the
        contract's routes all take this client's methods, so such a 405 too). A route without ids (a list, a
        create) exists wherever the API does. For a route with ids the answer alone cannot tell, so, unless an
        earlier answer already proved the base URL right, the route ``test_connection()`` probes is asked once
        (``GET /v1/workflows?limit=1``): a 404 there too means no API. Only failures pay for that request.
        """
        if status not in (404, 405):
            return False
        if platform_error_object(body) is None or ("{" not in spec.route and status == 404):
            return True
        if status == 405 or self._api_answered:
            return False
        now, call_deadline = time.monotonic(), current_call_deadline()
        if call_deadline is not None and call_deadline <= now:
            return False
        probe = list_workflows(page_size=1).page(None).spec
        try:
            now, _ = yield from self._wait_for_turn(probe)
        except AnalyticsTimeoutError:
            return False
        deadline = now + self.config.timeout if call_deadline is None else min(now + self.config.timeout, call_deadline)
        reply = yield from self._attempt_step(probe, Send(self._build_request(http, probe), deadline))
        if not isinstance(reply, Answer):
            return False
        self._api_answered = self._api_answered or reply.response.is_success
        return reply.response.status_code == 404

    def _transport_error(self, spec: RequestSpec, exc: httpx.TransportError) -> AnalyticsTransportError:
        config = self.config
        return transport_error(
            exc,
            method=spec.method,
            path=spec.path,
            base_url=config.base_url,
            timeout=config.timeout,
            connection_id=config.connection_id,
        )
