"""One SSL context per distinct ``verify`` setting for the whole process.

Building a context loads a CA bundle: tens of milliseconds of CPU and most of a client's memory. httpx
builds one per client (with ``verify=True`` even for ``http://``), so a triggerer starting a thousand waits
spent a minute of its event loop on it. Contexts are built once here and shared by every client; they
are safe to share, since nothing changes them after they are built.
"""

from __future__ import annotations

import os
import ssl
import threading

from airflow_provider_analytics.wire.errors import AnalyticsInputError

_CacheKey = tuple[object, ...]
_contexts: dict[_CacheKey, ssl.SSLContext] = {}
_lock = threading.Lock()


def _key(verify: bool | str) -> _CacheKey:
    if verify is True:  # the default trust store follows the environment, as httpx's does
        return (True, os.environ.get("SSL_CERT_FILE"), os.environ.get("SSL_CERT_DIR"))
    return (verify,)


def cached_tls_context(verify: bool | str) -> ssl.SSLContext | None:
    """The context for ``verify`` if it was built already, else ``None`` (never builds; cheap on a loop).

    :param verify: ``True``, ``False`` or the path of a CA bundle file or folder.
    """
    return _contexts.get(_key(verify))


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
