"""The ASGI layer in front of the ``/v1`` routes.

It does what a platform's edge does before a route runs, in this order: log the request, apply an
injected fault, refuse an oversized body, authenticate, rate-limit, and honour ``Idempotency-Key``.
It also stamps every answer with ``X-Request-Id``, the rate-limit headers and deprecation headers.

In front of the ``/_sandbox`` control routes it checks only the sandbox's admin token (``admin.py``): a request
without it, with a wrong one or with an API token is answered 401 before any route runs.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import logging
import secrets
from urllib.parse import parse_qsl

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from airflow_provider_analytics.sandbox.domain.clock import rfc3339
from airflow_provider_analytics.sandbox.domain.idempotency import (
    KEY_PATTERN,
    StoredResponse,
    Verdict,
    request_fingerprint,
)
from airflow_provider_analytics.sandbox.domain.rate_limits import RateDecision
from airflow_provider_analytics.sandbox.domain.store import SandboxState
from airflow_provider_analytics.sandbox.faults import hostile
from airflow_provider_analytics.sandbox.faults.chaos import InjectedFault
from airflow_provider_analytics.sandbox.faults.hostile import REWRITING_KINDS, ConnectionDropped
from airflow_provider_analytics.sandbox.faults.kinds import ANSWERING_KINDS, Fault
from airflow_provider_analytics.sandbox.http.admin import needs_admin_token
from airflow_provider_analytics.sandbox.http.errors import DEFAULT_MESSAGES, error_body, new_request_id
from airflow_provider_analytics.sandbox.routes.support import WORKSPACE_KEY

REQUEST_ID_KEY = "sandbox.request_id"
_PASS_THROUGH_PREFIXES = ("/_sandbox", "/ui")
_WRONG_DIGEST = "sha-256=:" + base64.b64encode(hashlib.sha256(b"not this file").digest()).decode() + ":"
ADMIN_REALM = "analytics-sandbox-admin"
# Where the admin token is, in every 401 of a control route.
ADMIN_TOKEN_HELP = (
    "the /_sandbox control routes need 'Authorization: Bearer <admin token>' with the sandbox's admin token, "
    "which is not an API token. The sandbox prints it when it starts (the line 'export "
    "ANALYTICS_SANDBOX_ADMIN_TOKEN=...' and the '# sandbox at' line); it is fixed with --admin-token or the "
    "ANALYTICS_SANDBOX_ADMIN_TOKEN environment variable, and in Python it is SandboxServer.admin_token"
)
logger = logging.getLogger(__name__)


def _is_api_path(path: str) -> bool:
    return path == "/v1" or path.startswith("/v1/")


class Gateway:
    """ASGI middleware wrapping the FastAPI app.

    :param app: the FastAPI application.
    :param state: the sandbox state.
    :param admin_token: the credential of the ``/_sandbox`` control routes.
    """

    def __init__(self, app: ASGIApp, state: SandboxState, admin_token: str) -> None:
        self.app = app
        self.state = state
        self._admin_token = admin_token.encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and needs_admin_token(scope["path"]):
            problem = self._admin_problem(scope)
            if problem is not None:
                await _refuse(problem, receive, send)
                return
        if scope["type"] != "http" or scope["path"].startswith(_PASS_THROUGH_PREFIXES):
            await self.app(scope, receive, send)
        elif _is_api_path(scope["path"]):
            await _Exchange(self.app, self.state, scope, receive, send).run()
        else:
            request_id = new_request_id()

            async def send_with_request_id(message: Message) -> None:
                if message["type"] == "http.response.start":
                    headers = [*message.get("headers", []), (b"x-request-id", request_id.encode())]
                    message = {**message, "headers": headers}
                await send(message)

            await self.app({**scope, REQUEST_ID_KEY: request_id}, receive, send_with_request_id)

    def _admin_problem(self, scope: Scope) -> str | None:
        """Why a control route's request is refused (its credential is not the admin token), or None."""
        values = [value.decode("latin-1") for name, value in scope["headers"] if name.lower() == b"authorization"]
        token = _bearer_token(values[0]) if len(values) == 1 else None
        if token is None:
            return "missing admin token" if not values else "the admin token goes in one 'Authorization: Bearer' header"
        if secrets.compare_digest(token.encode("latin-1"), self._admin_token):
            return None
        if self.state.tokens.grant(token, self.state.now()) is not None:
            return "an API token is not the admin token"
        return "invalid admin token"


async def _refuse(problem: str, receive: Receive, send: Send) -> None:
    """Answer a control route's request 401 (its body read first, so the connection stays usable)."""
    while True:
        message = await receive()
        if message["type"] != "http.request" or not message.get("more_body", False):
            break
    request_id = new_request_id()
    body = error_body(401, f"{problem}: {ADMIN_TOKEN_HELP}", request_id)
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        (b"www-authenticate", f'Bearer realm="{ADMIN_REALM}"'.encode()),
        (b"x-request-id", request_id.encode()),
    ]
    await send({"type": "http.response.start", "status": 401, "headers": headers})
    await send({"type": "http.response.body", "body": body, "more_body": False})


class _Exchange:
    """One ``/v1`` request on its way through the gateway."""

    def __init__(self, app: ASGIApp, state: SandboxState, scope: Scope, receive: Receive, send: Send) -> None:
        self.app = app
        self.state = state
        self.request_id = new_request_id()
        self.scope: Scope = {**scope, REQUEST_ID_KEY: self.request_id}
        self.receive = receive
        self.send = send
        self.method: str = scope["method"]
        self.path: str = scope["path"]
        self.headers: dict[str, str] = {}
        for raw_name, raw_value in scope["headers"]:
            name, value = raw_name.decode("latin-1").lower(), raw_value.decode("latin-1")
            self.headers[name] = f"{self.headers[name]}, {value}" if name in self.headers else value
        self.token = _bearer_token(self.headers.get("authorization", ""))
        self.rate: RateDecision | None = None
        self.fault: Fault | None = None
        self.sent_body_bytes = 0
        self.body_length: int | None = None  # the answer's Content-Length, once its start is sent

    async def run(self) -> None:
        body, too_large = await self._read_body()
        query = dict(parse_qsl(self.scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True))
        self.entry = self.state.request_log.record(
            self.method, self.path, query, dict(self.headers), body, self.request_id, rfc3339(self.state.now()) or ""
        )
        self.fault, use = self._take_fault()
        if self.fault is not None:
            if self.fault.kind in ANSWERING_KINDS:
                self.state.request_log.set_status(self.entry, self.fault.code or 200)
                await hostile.answer(self.fault, use, self.send, self.receive, self.request_id)
                return
            if self.fault.kind == "status":
                await self._answer_fault_status(self.fault)
                return
            if self.fault.kind == "drop" and not self.fault.after_processing:
                await self._drop()
                return
            if self.fault.kind == "delay" and self.fault.seconds:
                await asyncio.sleep(self.fault.seconds)
        if too_large:
            limit = self.state.config.max_body_bytes
            await self._error(413, f"request body is larger than {limit} bytes")
            return
        workspace_id = await self._authorize()
        if workspace_id is None:
            return
        self.scope[WORKSPACE_KEY] = workspace_id
        await self._dispatch(workspace_id, body)

    def _take_fault(self) -> tuple[Fault | None, int]:
        """A scripted fault for this request if one matches, else a random one (chaos); recorded either way."""
        fault, use = self.state.faults.take_use(self.method, self.path)
        kind, source = (fault.kind, "script") if fault is not None else ("", "chaos")
        if fault is None:
            drawn = self.state.chaos.fault_for(self.method, self.path)
            if drawn is not None:
                (kind, fault), use = drawn, 1
        if fault is not None:
            at = rfc3339(self.state.now()) or ""
            self.state.injected.record(InjectedFault(self.request_id, kind, source, self.method, self.path, at))
        return fault, use

    async def _read_body(self) -> tuple[bytes, bool]:
        """The whole body (drained even when too large, so the client can read the 413)."""
        limit = self.state.config.max_body_bytes
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await self.receive()
            if message["type"] != "http.request":
                break
            chunk = message.get("body", b"")
            size += len(chunk)
            if size <= limit:
                chunks.append(chunk)
            if not message.get("more_body", False):
                break
        return b"".join(chunks), size > limit

    async def _authorize(self) -> str | None:
        """The workspace the request acts in, or None after answering 401/403/429."""
        grant = self.state.tokens.grant(self.token, self.state.now()) if self.token else None
        if grant is None:
            message = "missing bearer token" if not self.token else "invalid bearer token"
            await self._error(401, message, headers=[("www-authenticate", 'Bearer realm="analytics"')])
            return None
        workspace_id = self.headers.get("x-workspace-id", "").strip() or grant.default_workspace
        if workspace_id not in grant.workspaces:
            await self._error(403, f"this token has no access to workspace {workspace_id}")
            return None
        assert self.token is not None
        self.rate = self.state.rate_limits.hit(self.token, self.state.now())
        if not self.rate.allowed:
            retry_after = [("retry-after", str(self.rate.retry_after))]
            await self._error(429, self.rate.refusal_message(), headers=retry_after)
            return None
        return workspace_id

    async def _dispatch(self, workspace_id: str, body: bytes) -> None:
        key = self.headers.get("idempotency-key") if self.method == "POST" else None
        drop_after = self.fault is not None and self.fault.kind == "drop"
        if key is not None:
            if not KEY_PATTERN.match(key):
                problem = "must be 1 to 255 printable ASCII characters"
                await self._error(400, f"Idempotency-Key {problem}", {"fields": {"Idempotency-Key": problem}})
                return
            fingerprint = request_fingerprint(self.method, self.path, body)
            verdict, stored = self.state.idempotency.begin(workspace_id, key, fingerprint, self.state.now())
            if verdict is Verdict.MISMATCH:
                await self._error(409, "Idempotency-Key was already used with a different request")
                return
            if verdict is Verdict.IN_FLIGHT:
                await self._error(409, "a request with this Idempotency-Key is still being processed")
                return
            if verdict is Verdict.REPLAY and stored is not None:
                replayed = StoredResponse(
                    stored.status, [*stored.headers, (b"idempotent-replayed", b"true")], stored.body
                )
                await (self._drop() if drop_after else self._send_stored(replayed))
                return
        rewriting = self.fault is not None and self.fault.kind in REWRITING_KINDS
        if key is None and not drop_after and not rewriting:
            await self.app(self.scope, self._replay_receive(body), self._forward)
            return
        response = await self._call_buffered(body)
        if key is not None:
            if 200 <= response.status < 300:
                self.state.idempotency.complete(workspace_id, key, response)
            else:
                self.state.idempotency.release(workspace_id, key)
        await (self._drop() if drop_after else self._send_stored(response))

    def _replay_receive(self, body: bytes) -> Receive:
        delivered = False

        async def receive() -> Message:
            nonlocal delivered
            if not delivered:
                delivered = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await self.receive()

        return receive

    async def _call_buffered(self, body: bytes) -> StoredResponse:
        """Run the route and keep its whole answer (for idempotent replay, to drop or to rewrite it afterwards)."""
        start: Message | None = None
        chunks: list[bytes] = []

        async def capture(message: Message) -> None:
            nonlocal start
            if message["type"] == "http.response.start":
                start = message
            elif message["type"] == "http.response.body":
                chunks.append(message.get("body", b""))

        try:
            await self.app(self.scope, self._replay_receive(body), capture)
        except Exception:
            logger.exception("sandbox route failed for %s %s", self.method, self.path)
        if start is None:
            error = error_body(500, "internal error", self.request_id)
            return StoredResponse(500, [(b"content-type", b"application/json")], error)
        return StoredResponse(start["status"], list(start.get("headers", [])), b"".join(chunks))

    # --- answering ------------------------------------------------------------------------------

    def _decorate(self, headers: list[tuple[bytes, bytes]]) -> list[tuple[bytes, bytes]]:
        extra = [("x-request-id", self.request_id)]
        rate = self.rate or self.state.rate_limits.peek(self.token, self.state.now())
        extra += rate.headers()  # none when rate_limit_headers is off
        extra += self.state.deprecation_headers(self.path)
        if self.fault is not None and self.fault.kind == "bad_digest":
            headers = [(name, value) for name, value in headers if name.lower() != b"repr-digest"]
            extra.append(("repr-digest", _WRONG_DIGEST))
        present = {name.lower() for name, _ in headers}
        return headers + [(n.encode(), v.encode("latin-1")) for n, v in extra if n.encode() not in present]

    async def _forward(self, message: Message) -> None:
        """Send one ASGI message to the client, decorated, and cut short when a truncate fault applies."""
        if message["type"] == "http.response.start":
            self.state.request_log.set_status(self.entry, message["status"])
            lengths = [value for name, value in message.get("headers", []) if name.lower() == b"content-length"]
            self.body_length = int(lengths[0]) if lengths and lengths[0].isdigit() else None
            await self.send({**message, "headers": self._decorate(list(message.get("headers", [])))})
            if self.fault is not None and self.fault.kind == "truncate" and self.fault.at_bytes == 0:
                raise ConnectionDropped("truncated download")
            return
        if message["type"] == "http.response.body" and self.fault is not None and self.fault.kind == "truncate":
            chunk: bytes = message.get("body", b"")
            at_bytes = self.fault.at_bytes or 0
            if self.body_length is not None:
                # A cut at or past the body's end still cuts its last byte: a truncate that delivered the whole
                # body would be no fault at all (chaos draws its cut without knowing the body's length).
                at_bytes = min(at_bytes, max(0, self.body_length - 1))
            allowed = at_bytes - self.sent_body_bytes
            if len(chunk) >= allowed:
                await self.send({"type": "http.response.body", "body": chunk[:allowed], "more_body": True})
                raise ConnectionDropped("truncated download")
            self.sent_body_bytes += len(chunk)
        await self.send(message)

    async def _send_stored(self, response: StoredResponse) -> None:
        headers = [(n, v) for n, v in response.headers if n.lower() != b"content-length"]
        if self.fault is not None and self.fault.kind in REWRITING_KINDS:
            self.state.request_log.set_status(self.entry, response.status)
            request = {"method": self.method, "accept_encoding": self.headers.get("accept-encoding", "")}
            await hostile.send_rewritten(
                self.fault, self.send, self.receive, response.status, self._decorate(headers), response.body, request
            )
            return
        headers.append((b"content-length", str(len(response.body)).encode()))
        await self._forward({"type": "http.response.start", "status": response.status, "headers": headers})
        await self._forward({"type": "http.response.body", "body": response.body, "more_body": False})

    async def _error(
        self,
        status: int,
        message: str,
        details: dict[str, object] | None = None,
        headers: list[tuple[str, str]] | None = None,
    ) -> None:
        raw_headers = [(b"content-type", b"application/json")]
        raw_headers += [(name.encode(), value.encode("latin-1")) for name, value in headers or []]
        await self._send_stored(
            StoredResponse(status, raw_headers, error_body(status, message, self.request_id, details))
        )

    async def _answer_fault_status(self, fault: Fault) -> None:
        assert fault.code is not None
        headers: list[tuple[bytes, bytes]] = []
        if fault.retry_after is not None:
            headers.append((b"retry-after", str(fault.retry_after).encode("latin-1")))
        if fault.body is None:
            message = DEFAULT_MESSAGES.get(fault.code, f"injected error {fault.code}")
            body = error_body(fault.code, message, self.request_id)
            headers.append((b"content-type", b"application/json"))
        else:
            body = fault.body.encode()
            headers.append((b"content-type", (fault.content_type or "text/plain; charset=utf-8").encode()))
        await self._send_stored(StoredResponse(fault.code, headers, body))

    async def _drop(self) -> None:
        """Start an answer that promises a body, then close the connection without sending it."""
        self.state.request_log.set_status(self.entry, 0)
        headers = [(b"content-type", b"application/json"), (b"content-length", b"64")]
        await self.send({"type": "http.response.start", "status": 200, "headers": self._decorate(headers)})
        raise ConnectionDropped("connection dropped by an injected fault")


def _bearer_token(authorization: str) -> str | None:
    scheme, _, credentials = authorization.strip().partition(" ")
    if scheme.lower() != "bearer" or not credentials.strip():
        return None
    return credentials.strip()
