"""The transport-free core shared by the sync and async clients (the way httpx's ``BaseClient`` works).

Request building, the retry loop, error mapping and decoding live here once. The retry loop is a
generator that *yields* what to do next (send this request, sleep this long) and receives the outcome,
so :mod:`airflow_provider_analytics.wire.client` only has to carry the steps out, with or without ``await``.
"""

from __future__ import annotations

import ipaddress
import json
import logging
import os
import random
import ssl
import threading
from collections.abc import Generator
from dataclasses import dataclass, field
from typing import Any, TypeAlias, TypeVar
from urllib.parse import urlsplit

import httpx

from airflow_provider_analytics import __version__
from airflow_provider_analytics.wire.contract import HEADER_REQUEST_ID, HEADER_WORKSPACE, LIFECYCLE_HEADERS
from airflow_provider_analytics.wire.endpoints import Call, RequestSpec, validate_id
from airflow_provider_analytics.wire.errors import (
    AnalyticsConnectionError,
    AnalyticsInputError,
    AnalyticsTimeoutError,
    AnalyticsTLSError,
    AnalyticsTransportError,
    UnexpectedResponseError,
    api_error_from_response,
    is_tls_failure,
)
from airflow_provider_analytics.wire.retry import RetryPolicy, parse_retry_after

log = logging.getLogger("airflow_provider_analytics.wire")

T = TypeVar("T")
USER_AGENT = f"airflow-provider-analytics/{__version__}"
DEFAULT_TIMEOUT = 30.0
MAX_TIMEOUT = 3600.0
# JSON answers are small (a page is at most 100 items); the cap keeps a hostile or broken answer from
# taking the process's memory: the parsed objects of a body can need many times its size.
DEFAULT_MAX_RESPONSE_BYTES = 4 * 1024 * 1024
# Reports are files of a few MB to a few GB; a download that claims more is refused, not written.
DEFAULT_MAX_DOWNLOAD_BYTES = 10 * 1024**3
_LOOPBACK_NAMES = frozenset({"localhost", "localhost.localdomain", "ip6-localhost"})


@dataclass(frozen=True)
class ClientConfig:
    """Everything a client needs; the token is kept out of ``repr``.

    :param base_url: scheme, host, optional port and optional path prefix, without ``/v1``.
    :param token: the API token sent as ``Authorization: Bearer``.
    :param workspace_id: the workspace to act in (``X-Workspace-Id``); ``None`` uses the token's default.
    :param timeout: seconds one HTTP request may take in all (connecting, sending, reading the answer).
    :param verify: ``True``, ``False`` or the path of a CA bundle.
    :param retry: the retry policy.
    :param allow_insecure_http: allow plain ``http://`` to a host that is not loopback.
    :param max_response_bytes: the largest JSON answer (after decompression) the client reads.
    :param max_download_bytes: the largest report file the client downloads.
    """

    base_url: str
    token: str = field(repr=False)
    workspace_id: str | None = None
    timeout: float = DEFAULT_TIMEOUT
    verify: bool | str = True
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    allow_insecure_http: bool = False
    max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES
    max_download_bytes: int = DEFAULT_MAX_DOWNLOAD_BYTES

    def __post_init__(self) -> None:
        object.__setattr__(self, "base_url", _check_base_url(self.base_url, self.allow_insecure_http))
        if not isinstance(self.token, str) or not self.token.strip():
            raise AnalyticsInputError("the API token is empty: set it as the connection's password")
        if self.workspace_id is not None:
            validate_id(self.workspace_id, "workspace_id")
        if isinstance(self.timeout, bool) or not isinstance(self.timeout, (int, float)):
            raise AnalyticsInputError(f"timeout must be a number of seconds, got {self.timeout!r}")
        if not 0 < self.timeout <= MAX_TIMEOUT:
            raise AnalyticsInputError(f"timeout must be over 0 and at most {MAX_TIMEOUT:g} s, got {self.timeout!r}")
        for name in ("max_response_bytes", "max_download_bytes"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1024:
                raise AnalyticsInputError(f"{name} must be a whole number of bytes, at least 1024, got {value!r}")


def _check_base_url(url: str, allow_insecure_http: bool) -> str:
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise AnalyticsInputError(f"the base URL must look like https://api.example.com (scheme and host), got {url!r}")
    if parts.query or parts.fragment or parts.username or parts.password:
        raise AnalyticsInputError("the base URL must not carry a query, a fragment or credentials")
    if parts.scheme == "http" and not allow_insecure_http and not is_loopback(parts.hostname):
        raise AnalyticsInputError(
            f"refusing plain http:// to {parts.hostname}: the token would travel unencrypted. Use https://, "
            'or set the connection extra "allow_insecure_http": true for a trusted private network'
        )
    path = parts.path.rstrip("/")
    if path.endswith("/v1"):
        path = path[: -len("/v1")]
    return f"{parts.scheme}://{parts.netloc}{path}"


def _tls_verification(verify: bool | str) -> bool | ssl.SSLContext:
    # httpx 0.28 deprecates a CA path as verify=<str>; an SSL context is the supported form.
    if isinstance(verify, bool):
        return verify
    if os.path.isdir(verify):
        return ssl.create_default_context(capath=verify)
    return ssl.create_default_context(cafile=verify)


def is_loopback(hostname: str) -> bool:
    """Whether ``hostname`` names this machine (``localhost``, 127.0.0.0/8, ``::1``)."""
    if hostname.lower() in _LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(hostname.strip("[]")).is_loopback
    except ValueError:
        return False


@dataclass(frozen=True)
class Send:
    """Step: send ``request``; with ``stream`` the body is left unread (error bodies are always read)."""

    request: httpx.Request
    stream: bool = False


@dataclass(frozen=True)
class Sleep:
    """Step: wait before the next attempt."""

    seconds: float


Step: TypeAlias = Send | Sleep
Outcome: TypeAlias = httpx.Response | httpx.TransportError | None
Exchange: TypeAlias = Generator[Step, Outcome, httpx.Response]


class _LifecycleNotices:
    """Logs each ``Deprecation``/``Sunset`` header once per process for each (header, route)."""

    def __init__(self) -> None:
        self._seen: set[tuple[str, str]] = set()
        self._lock = threading.Lock()

    def note(self, spec: RequestSpec, response: httpx.Response) -> None:
        for header in LIFECYCLE_HEADERS:
            value = response.headers.get(header)
            if value is None:
                continue
            with self._lock:
                if (header, spec.route) in self._seen:
                    continue
                self._seen.add((header, spec.route))
            log.warning(
                "The Analytics Platform sent %s: %s for %s %s; plan to move off this endpoint",
                header,
                value,
                spec.method,
                spec.route,
            )


LIFECYCLE_NOTICES = _LifecycleNotices()


class BaseAnalyticsClient:
    """Everything a client does that is not I/O.

    :param config: the client configuration.
    """

    def __init__(self, config: ClientConfig) -> None:
        self.config = config
        self._random = random.Random()

    def __repr__(self) -> str:
        return f"{type(self).__name__}(base_url={self.config.base_url!r}, workspace_id={self.config.workspace_id!r})"

    def _httpx_options(self) -> dict[str, Any]:
        headers = {"User-Agent": USER_AGENT, "Accept": "application/json"}
        if self.config.workspace_id:
            headers[HEADER_WORKSPACE] = self.config.workspace_id
        return {
            "base_url": self.config.base_url,
            "headers": headers,
            "timeout": httpx.Timeout(self.config.timeout),
            "verify": _tls_verification(self.config.verify),
            "follow_redirects": False,
        }

    def _build_request(self, http: httpx.Client | httpx.AsyncClient, spec: RequestSpec) -> httpx.Request:
        headers = {"Authorization": f"Bearer {self.config.token}", **spec.headers}
        return http.build_request(spec.method, spec.path, params=spec.params, json=spec.json_body, headers=headers)

    def _exchange(self, http: httpx.Client | httpx.AsyncClient, spec: RequestSpec, *, stream: bool = False) -> Exchange:
        """The retry loop: yields steps, receives outcomes, returns the first successful response."""
        policy = self.config.retry
        retries = 0
        while True:
            outcome = yield Send(self._build_request(http, spec), stream)
            if isinstance(outcome, httpx.TransportError):
                reason = policy.retry_reason(retries_done=retries, idempotent=spec.idempotent, transport_error=True)
                if reason is None:
                    raise self._transport_error(spec, outcome) from outcome
                wait: float | None = policy.backoff(retries, self._random.random())
                reason = f"{reason}: {type(outcome).__name__}"
            elif isinstance(outcome, httpx.Response):
                LIFECYCLE_NOTICES.note(spec, outcome)
                if not outcome.is_error:
                    return outcome
                retry_after = parse_retry_after(outcome.headers.get("Retry-After"))
                error = api_error_from_response(
                    outcome.status_code,
                    outcome.headers,
                    outcome.content,
                    method=spec.method,
                    path=spec.path,
                    retry_after=retry_after,
                )
                reason = policy.retry_reason(
                    retries_done=retries, idempotent=spec.idempotent, status=outcome.status_code
                )
                wait = None if reason is None else policy.wait_before_retry(retries, retry_after, self._random.random())
                if wait is None:
                    raise error
                reason = f"{reason}, request id {error.request_id or 'unknown'}"
            else:  # pragma: no cover - a driver bug, not a platform answer
                raise TypeError(f"the transport driver sent {outcome!r}")
            if wait is None:  # pragma: no cover - every branch above has set it or raised
                raise AssertionError("no wait computed")
            retries += 1
            log.warning(
                "%s %s failed (%s); retry %d of %d in %.2f s",
                spec.method,
                spec.path,
                reason,
                retries,
                policy.max_retries,
                wait,
            )
            yield Sleep(wait)

    def _transport_error(self, spec: RequestSpec, exc: httpx.TransportError) -> AnalyticsTransportError:
        where = f"{spec.method} {self.config.base_url}{spec.path}"
        if isinstance(exc, httpx.TimeoutException):
            return AnalyticsTimeoutError(
                f"{where} timed out after {self.config.timeout:g} s ({type(exc).__name__})",
                method=spec.method,
                path=spec.path,
            )
        if is_tls_failure(exc):
            return AnalyticsTLSError(
                f"{where}: TLS handshake failed ({exc}); check the certificate or the 'verify' extra",
                method=spec.method,
                path=spec.path,
            )
        return AnalyticsConnectionError(
            f"{where}: connection failed ({type(exc).__name__}: {exc})", method=spec.method, path=spec.path
        )

    @staticmethod
    def _decode(call: Call[T], response: httpx.Response) -> T:
        if response.status_code == 204 or not response.content:
            return call.parse(None)
        try:
            body = json.loads(response.content)
        except ValueError as exc:
            raise UnexpectedResponseError(
                f"{call.spec.method} {call.spec.path} answered {response.status_code} with a body that is not "
                f"JSON (request id {response.headers.get(HEADER_REQUEST_ID, 'unknown')})"
            ) from exc
        return call.parse(body)
