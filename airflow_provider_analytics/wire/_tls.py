"""The connection below HTTP: one SSL context per distinct ``verify`` setting for the whole process, and what
a request that got no HTTP answer says (:func:`transport_error`).

Building a context loads a CA bundle: tens of milliseconds of CPU and most of a client's memory. httpx
builds one per client (with ``verify=True`` even for ``http://``), so a triggerer starting a thousand waits
spent a minute of its event loop on it. Contexts are built once here and shared by every client; they
are safe to share, since nothing changes them after they are built.

A failed connection is told by the exceptions under httpx's (an :class:`ssl.SSLError`'s ``reason``, a
``socket.gaierror``, a ``ConnectionRefusedError``), never by a message, and its error says first
which setting of which connection to change.
"""

from __future__ import annotations

import os
import socket
import ssl
import threading
from urllib.parse import urlsplit

import httpx

from airflow_provider_analytics.wire.errors import (
    AnalyticsConnectionError,
    AnalyticsInputError,
    AnalyticsTimeoutError,
    AnalyticsTLSError,
    AnalyticsTransportError,
    clean_text,
)

_CacheKey = tuple[object, ...]
_contexts: dict[_CacheKey, ssl.SSLContext] = {}
_lock = threading.Lock()


def _key(verify: bool | str) -> _CacheKey:
    if verify is True:  # the default trust store follows the environment, as httpx's does
        return (True, os.environ.get("SSL_CERT_FILE"), os.environ.get("SSL_CERT_DIR"))
    return (verify,)


def tls_context(verify: bool | str) -> ssl.SSLContext:
    """The shared context for ``verify``, built on first use (blocking: call it off an event loop).

    :param verify: ``True`` (the system's or certifi's trust store), ``False`` (no verification), or the
        path of a CA bundle file or folder.
    :raises AnalyticsInputError: the CA bundle cannot be loaded.
    """
    key = _key(verify)
    context = _contexts.get(key)
    if context is None:
        with _lock:
            context = _contexts.get(key)
            if context is None:
                context = _contexts[key] = _build(verify)
    return context


def _build(verify: bool | str) -> ssl.SSLContext:
    if verify is False:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        return context
    if verify is True:
        cafile, capath = os.environ.get("SSL_CERT_FILE"), os.environ.get("SSL_CERT_DIR")
        if cafile or capath:
            return ssl.create_default_context(cafile=cafile or None, capath=None if cafile else capath)
        import certifi

        return ssl.create_default_context(cafile=certifi.where())
    try:
        if os.path.isdir(verify):
            return ssl.create_default_context(capath=verify)
        return ssl.create_default_context(cafile=verify)
    except (OSError, ssl.SSLError) as error:
        raise AnalyticsInputError(
            f"connection extra 'verify' must be true, false or the path of a readable CA bundle; {verify!r} "
            f"cannot be loaded ({error})"
        ) from None


# OpenSSL's reasons when the answer to the TLS hello is not TLS at all: a plain-HTTP server's "HTTP/1.1 400"
# read as a record header. OpenSSL 3.0 and 1.1 say WRONG_VERSION_NUMBER; 3.2 and later report their record
# layer's failure over it.
_NOT_TLS_REASONS = frozenset({"WRONG_VERSION_NUMBER", "RECORD_LAYER_FAILURE"})
_CHAIN_LIMIT = 20


def exception_chain(exc: BaseException) -> list[BaseException]:
    """``exc`` and what it was raised from or during, outermost first, with the members of exception groups
    (anyio raises a group when every address of a host name failed); at most 20.

    :param exc: the exception to read.
    """
    found: list[BaseException] = []
    pending = [exc]
    while pending and len(found) < _CHAIN_LIMIT:
        seen = pending.pop(0)
        if any(seen is known for known in found):
            continue
        found.append(seen)
        if isinstance(seen, BaseExceptionGroup):
            pending.extend(seen.exceptions)
        below = seen.__cause__ or seen.__context__
        if below is not None:
            pending.append(below)
    return found


def root_cause(exc: BaseException) -> BaseException:
    """The innermost exception ``exc`` was raised from: what to chain an error to, so a traceback shows the
    socket's or TLS's own failure without the layers httpx and httpcore wrapped it in.

    :param exc: the exception to read.
    """
    for _ in range(_CHAIN_LIMIT):
        below = exc.__cause__ or exc.__context__
        if below is None:
            break
        exc = below
    return exc


def is_tls_failure(exc: BaseException) -> bool:
    """Tell whether a transport error was caused by TLS (an :class:`ssl.SSLError` in its chain).

    :param exc: the transport error.
    """
    return any(isinstance(seen, ssl.SSLError) for seen in exception_chain(exc))


def transport_error(
    exc: httpx.TransportError, *, method: str, path: str, base_url: str, timeout: float, connection_id: str | None
) -> AnalyticsTransportError:
    """The typed error for a request that got no HTTP answer, saying first what to change; the request and
    httpx's exception follow as a short suffix.

    :param exc: what the transport raised.
    :param method: the request's method.
    :param path: the request's path.
    :param base_url: the client's base URL.
    :param timeout: the seconds one attempt may take.
    :param connection_id: the connection the client was built from, named in the message.
    """
    chain = exception_chain(exc)
    connection = f"connection {clean_text(connection_id, 250)!r}" if connection_id else ""
    named, aside = (f" for {connection}", f" ({connection})") if connection else ("", "")
    host = "`host`" if connection else "the base URL"
    text = clean_text(exc, 300)
    failed = f"{method} {path} failed with {type(exc).__name__}" + (f": {text}" if text else "")
    where = {"method": method, "path": path}
    if isinstance(exc, httpx.ConnectTimeout):
        return AnalyticsTimeoutError(
            f"Could not reach {base_url}{named}: no connection within {timeout:g} s (is {host} right? does a "
            f"firewall drop the packets?). {method} {path} timed out after {timeout:g} s (ConnectTimeout)",
            **where,
        )
    if isinstance(exc, httpx.TimeoutException):
        return AnalyticsTimeoutError(
            f"{base_url}{aside} did not answer in time: {method} {path} timed out after {timeout:g} s "
            f"({type(exc).__name__})",
            **where,
        )
    reasons = [seen.reason for seen in chain if isinstance(seen, ssl.SSLError)]
    if reasons and reasons[0] in _NOT_TLS_REASONS:
        target = f"as the host of {connection}" if connection else "as the base URL"
        return AnalyticsTLSError(
            f"{base_url} speaks plain HTTP, not HTTPS: write {_plain_http_url(base_url)} {target} (and set the "
            f"extra allow_insecure_http if it is not on loopback). {failed}",
            **where,
        )
    if reasons:
        return AnalyticsTLSError(
            f"The TLS handshake with {base_url}{aside} failed: check the certificate, or the 'verify' extra. {failed}",
            **where,
        )
    if isinstance(exc, httpx.ConnectError):
        unresolved = [seen for seen in chain if isinstance(seen, socket.gaierror)]
        if unresolved and unresolved[0].errno == socket.EAI_AGAIN:  # the resolver did not answer: maybe no DNS
            why = f"the host name could not be resolved just now (is a DNS server reachable? is {host} right?)"
        elif unresolved:
            why = f"the host name does not resolve (check {host})"
        elif any(isinstance(seen, ConnectionRefusedError) for seen in chain):
            why = "nothing listens on that port (is the platform up? is the port right?)"
        else:
            why = f"check {host}, and that this machine may connect to it"
        return AnalyticsConnectionError(f"Could not reach {base_url}{named}: {why}. {failed}", **where)
    if isinstance(exc, httpx.ProxyError):
        return AnalyticsConnectionError(
            f"The proxy refused the way to {base_url}{aside}: check HTTPS_PROXY, HTTP_PROXY, ALL_PROXY and "
            f"NO_PROXY in the environment. {failed}",
            **where,
        )
    return AnalyticsConnectionError(
        f"The exchange with {base_url}{aside} broke off before an answer (closed by the platform or a proxy in "
        f"between). {failed}",
        **where,
    )


def _plain_http_url(base_url: str) -> str:
    """``base_url`` with ``http://``, keeping the port it was reached on (443 when it named none)."""
    parts = urlsplit(base_url)
    netloc = parts.netloc if parts.port is not None else f"{parts.netloc}:443"
    return f"http://{netloc}{parts.path}"
