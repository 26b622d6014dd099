"""The httpx transports the clients send through: httpcore connection pools that keep the request's deadline.

httpx's own ``HTTPTransport`` offers no way to choose its pool's network backend, and the network backend is
where :mod:`~airflow_provider_analytics.wire._deadline` bounds every blocking connect, read and write by the
request's deadline; the asyncio transport runs each request and each read of its body under
:func:`asyncio.timeout_at` instead (``_deadline.AsyncRequestDeadline``). So the transports are built here from
public parts only: httpcore's pools take ``network_backend=`` and a ``trace`` extension, and httpx sends through
any ``BaseTransport`` / ``AsyncBaseTransport``. This is what httpx's ``HTTPTransport`` does (request in, response
and its stream out, httpcore's errors turned into httpx's), so the clients, their error mapping and their tests
see the same requests, answers and exceptions.

Proxies are read from the environment as httpx reads them for a client built without a transport
(``HTTP_PROXY``, ``HTTPS_PROXY``, ``ALL_PROXY``, ``NO_PROXY``, through :func:`urllib.request.getproxies`), and
each proxy gets a pool on the same backend, so the deadline holds through a proxy too.
"""

from __future__ import annotations

import ipaddress
import ssl
from collections.abc import AsyncIterable, AsyncIterator, Iterable, Iterator
from dataclasses import dataclass
from types import TracebackType
from typing import Any
from urllib.request import getproxies

import httpcore
import httpx

from airflow_provider_analytics.wire._deadline import DEADLINE_BACKEND, AsyncRequestDeadline, RequestPhase

# httpcore's exceptions and httpx's public ones for them (the table httpx's HTTPTransport keeps). A subclass
# maps to the entry of its nearest listed ancestor (see httpx_error), so a ConnectTimeout never becomes a
# mere TimeoutException.
HTTPCORE_TO_HTTPX: dict[type[Exception], type[httpx.TransportError]] = {
    httpcore.TimeoutException: httpx.TimeoutException,
    httpcore.ConnectTimeout: httpx.ConnectTimeout,
    httpcore.ReadTimeout: httpx.ReadTimeout,
    httpcore.WriteTimeout: httpx.WriteTimeout,
    httpcore.PoolTimeout: httpx.PoolTimeout,
    httpcore.NetworkError: httpx.NetworkError,
    httpcore.ConnectError: httpx.ConnectError,
    httpcore.ReadError: httpx.ReadError,
    httpcore.WriteError: httpx.WriteError,
    httpcore.ProxyError: httpx.ProxyError,
    httpcore.UnsupportedProtocol: httpx.UnsupportedProtocol,
    httpcore.ProtocolError: httpx.ProtocolError,
    httpcore.LocalProtocolError: httpx.LocalProtocolError,
    httpcore.RemoteProtocolError: httpx.RemoteProtocolError,
}


def httpx_error(exc: BaseException) -> httpx.TransportError | None:
    """httpx's exception for an httpcore one (same message), or ``None`` for anything else.

    :param exc: what the pool or a response stream raised.
    """
    for kind in type(exc).__mro__:  # most derived first: the most specific httpx class wins
        mapped = HTTPCORE_TO_HTTPX.get(kind)
        if mapped is not None:
            return mapped(str(exc))
    return None


class _HttpxErrors:
    """``with HTTPX_ERRORS:`` re-raises an httpcore exception as httpx's, the original as its cause.

    One stateless instance serves every request, so mapping costs no object per request (a
    ``@contextmanager`` would build a generator each time).
    """

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        if exc is None:
            return
        mapped = httpx_error(exc)
        if mapped is not None:
            raise mapped from exc


HTTPX_ERRORS = _HttpxErrors()


def httpcore_request(request: httpx.Request, trace: RequestPhase | None = None) -> httpcore.Request:
    """The httpcore form of an httpx request; the body stream and extensions (timeouts) pass as they are.

    :param request: the request httpx built.
    :param trace: the ``trace`` extension to send it with instead of its own (which it calls on).
    """
    url = request.url
    return httpcore.Request(
        method=request.method,
        url=httpcore.URL(scheme=url.raw_scheme, host=url.raw_host, port=url.port, target=url.raw_path),
        headers=request.headers.raw,
        content=request.stream,
        extensions=request.extensions if trace is None else {**request.extensions, "trace": trace},
    )


@dataclass(frozen=True)
class PoolSettings:
    """What every connection pool of one client is built with.

    :param ssl_context: the shared TLS context (:mod:`~airflow_provider_analytics.wire._tls`).
    :param limits: connection counts and keep-alive.
    """

    ssl_context: ssl.SSLContext
    limits: httpx.Limits

    def options(self) -> dict[str, Any]:
        """Keyword arguments every httpcore pool and proxy takes alike (HTTP/1.1 only, no connect retries)."""
        return {
            "ssl_context": self.ssl_context,
            "max_connections": self.limits.max_connections,
            "max_keepalive_connections": self.limits.max_keepalive_connections,
            "keepalive_expiry": self.limits.keepalive_expiry,
        }


@dataclass(frozen=True)
class _PoolKinds:
    """httpcore's pool classes and network backend for one I/O flavour (blocking or asyncio)."""

    direct: type[Any]
    http_proxy: type[Any]
    socks_proxy: type[Any]
    backend: httpcore.NetworkBackend | None  # None: httpcore's own (AnyIO on asyncio)


_SYNC_POOLS = _PoolKinds(httpcore.ConnectionPool, httpcore.HTTPProxy, httpcore.SOCKSProxy, DEADLINE_BACKEND)
_ASYNC_POOLS = _PoolKinds(httpcore.AsyncConnectionPool, httpcore.AsyncHTTPProxy, httpcore.AsyncSOCKSProxy, None)


def _pool(kinds: _PoolKinds, settings: PoolSettings, proxy: httpx.Proxy | None) -> Any:
    """One connection pool: direct, through an HTTP(S) proxy, or through a SOCKS proxy (needs ``socksio``)."""
    options = settings.options() if kinds.backend is None else {**settings.options(), "network_backend": kinds.backend}
    if proxy is None:
        return kinds.direct(**options)
    url = httpcore.URL(
        scheme=proxy.url.raw_scheme, host=proxy.url.raw_host, port=proxy.url.port, target=proxy.url.raw_path
    )
    if proxy.url.scheme in ("socks5", "socks5h"):
        return kinds.socks_proxy(proxy_url=url, proxy_auth=proxy.raw_auth, **options)
    return kinds.http_proxy(proxy_url=url, proxy_auth=proxy.raw_auth, proxy_headers=proxy.headers.raw, **options)


def environment_proxies() -> dict[str, str | None]:
    """The proxy of each URL pattern, as httpx reads the environment (``None``: no proxy for it).

    Patterns are httpx's mount keys: ``http://``, ``https://``, ``all://`` for the proxies, and one
    ``all://<host>`` (or ``all://*<domain>``) for each ``NO_PROXY`` entry; ``NO_PROXY=*`` turns every proxy off.
    """
    found = getproxies()
    patterns: dict[str, str | None] = {}
    for scheme in ("http", "https", "all"):
        if found.get(scheme):
            patterns[f"{scheme}://"] = found[scheme] if "://" in found[scheme] else f"http://{found[scheme]}"
    for entry in (host.strip() for host in found.get("no", "").split(",")):
        if entry == "*":
            return {}
        if entry:
            patterns[_no_proxy_pattern(entry)] = None
    return patterns


def _no_proxy_pattern(entry: str) -> str:
    # curl's NO_PROXY rules, as httpx applies them: an address or localhost alone; a name with its subdomains.
    if "://" in entry:
        return entry
    try:
        address = ipaddress.ip_address(entry.split("/")[0])
    except ValueError:
        return f"all://{entry}" if entry.lower() == "localhost" else f"all://*{entry}"
    return f"all://[{entry}]" if address.version == 6 else f"all://{entry}"


def _transports(kinds: _PoolKinds, wrap: type[Any], settings: PoolSettings) -> dict[str, Any]:
    direct = wrap(_pool(kinds, settings, None))
    mounts = {
        pattern: None if proxy is None else wrap(_pool(kinds, settings, httpx.Proxy(proxy)))
        for pattern, proxy in environment_proxies().items()
    }
    return {"transport": direct, "mounts": mounts}


class DeadlineTransport(httpx.BaseTransport):
    """A blocking httpx transport over an httpcore pool whose every network operation keeps the deadline.

    :param pool: an httpcore ``ConnectionPool``, ``HTTPProxy`` or ``SOCKSProxy``.
    """

    def __init__(self, pool: httpcore.ConnectionPool | httpcore.HTTPProxy | httpcore.SOCKSProxy) -> None:
        self.pool = pool

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        """Send ``request``; the answer's body is read later, through :class:`_Body`.

        :param request: the request httpx built.
        """
        with HTTPX_ERRORS:
            answer = self.pool.handle_request(httpcore_request(request))
        stream = answer.stream
        assert isinstance(stream, Iterable)  # a blocking pool's answers always are
        return httpx.Response(answer.status, headers=answer.headers, stream=_Body(stream), extensions=answer.extensions)

    def close(self) -> None:
        """Close the pool's connections."""
        self.pool.close()


class _Body(httpx.SyncByteStream):
    def __init__(self, stream: Iterable[bytes]) -> None:
        self._stream = stream

    def __iter__(self) -> Iterator[bytes]:
        with HTTPX_ERRORS:
            yield from self._stream

    def close(self) -> None:
        close = getattr(self._stream, "close", None)  # httpcore's streams release their connection here
        if close is not None:
            close()


class AsyncDeadlineTransport(httpx.AsyncBaseTransport):
    """An asyncio httpx transport over an httpcore pool that ends each request, and each read of its body, by the
    request's deadline (``_deadline.AsyncRequestDeadline``).

    :param pool: an httpcore ``AsyncConnectionPool``, ``AsyncHTTPProxy`` or ``AsyncSOCKSProxy``.
    """

    def __init__(self, pool: httpcore.AsyncConnectionPool | httpcore.AsyncHTTPProxy | httpcore.AsyncSOCKSProxy) -> None:
        self.pool = pool

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        """Send ``request``; the answer's body is read later, through :class:`_AsyncBody`.

        :param request: the request httpx built.
        """
        phase = RequestPhase(request.extensions.get("trace"))
        with HTTPX_ERRORS:
            async with AsyncRequestDeadline(phase):
                answer = await self.pool.handle_async_request(httpcore_request(request, phase))
        stream = answer.stream
        assert isinstance(stream, AsyncIterable)  # an asyncio pool's answers always are
        return httpx.Response(
            answer.status, headers=answer.headers, stream=_AsyncBody(stream), extensions=answer.extensions
        )

    async def aclose(self) -> None:
        """Close the pool's connections."""
        await self.pool.aclose()


class _AsyncBody(httpx.AsyncByteStream):
    def __init__(self, stream: AsyncIterable[bytes]) -> None:
        self._stream = stream

    async def __aiter__(self) -> AsyncIterator[bytes]:
        parts = aiter(self._stream)
        with HTTPX_ERRORS:
            while True:
                async with AsyncRequestDeadline():  # each read by the deadline of the request that is reading
                    part = await anext(parts, None)
                if part is None:
                    return
                yield part

    async def aclose(self) -> None:
        aclose = getattr(self._stream, "aclose", None)  # httpcore's streams release their connection here
        if aclose is not None:
            await aclose()


def sync_transports(settings: PoolSettings) -> dict[str, Any]:
    """``transport`` and ``mounts`` for an ``httpx.Client``: the direct pool and one per environment proxy.

    :param settings: TLS and limits for every pool.
    """
    return _transports(_SYNC_POOLS, DeadlineTransport, settings)


def async_transports(settings: PoolSettings) -> dict[str, Any]:
    """``transport`` and ``mounts`` for an ``httpx.AsyncClient``, as :func:`sync_transports`.

    :param settings: TLS and limits for every pool.
    """
    return _transports(_ASYNC_POOLS, AsyncDeadlineTransport, settings)
