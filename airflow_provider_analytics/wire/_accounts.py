"""The rate limiters of this process, one per platform account (base URL and token).

The contract limits requests per token, so every client of one token in a process shares one
:class:`~airflow_provider_analytics.wire._throttle.RateLimiter` (the workspaces of one token share its limit, so
they share the limiter too). The registry holds no token: it keys by a digest.
"""

from __future__ import annotations

import hashlib
import os
import threading
import time
from typing import Any

from airflow_provider_analytics.wire._shared_limiter import SharedLimiter
from airflow_provider_analytics.wire._store_clients import close_store_clients
from airflow_provider_analytics.wire._store_link import store_key
from airflow_provider_analytics.wire._throttle import RateLimiter
from airflow_provider_analytics.wire.config import ClientConfig


class _Registry:
    """The limiters of this process, one per account; emptied in a forked child (its parent's are not its)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._limiters: dict[tuple[str, str], RateLimiter] = {}
        self._shared: dict[tuple[str, str, object], SharedLimiter] = {}

    def get(self, base_url: str, token: str, name: str, account: str) -> RateLimiter:
        # The token is kept as a digest: the registry never holds a secret a dump could show.
        key = (base_url, hashlib.sha256(token.encode()).hexdigest())
        limiter = self._limiters.get(key)
        if limiter is None:
            with self._lock:
                limiter = self._limiters.setdefault(key, RateLimiter(name, account))
        return limiter

    def shared(self, config: ClientConfig, local: RateLimiter) -> SharedLimiter | None:
        store = config.rate_limit_store
        if store is None:
            return None
        key = (config.base_url, hashlib.sha256(config.token.encode()).hexdigest(), store)
        shared = self._shared.get(key)
        if shared is None:
            with self._lock:
                shared = self._shared.setdefault(
                    key, SharedLimiter(store, store_key(config.base_url, config.token), local)
                )
        return shared

    def clear(self) -> None:
        self._lock = threading.Lock()
        self._limiters = {}
        self._shared = {}


_REGISTRY = _Registry()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_REGISTRY.clear)


def limiter_for(base_url: str, token: str, connection_id: str | None = None) -> RateLimiter:
    """The process's limiter of one account (base URL and token), made on first use.

    :param base_url: the client's base URL.
    :param token: its token.
    :param connection_id: the Airflow connection that first uses it, named in log lines.
    """
    name = base_url if connection_id is None else f"{base_url} (connection {connection_id!r})"
    return _REGISTRY.get(base_url, token, name, connection_id or "none")


def shared_limiter_for(config: ClientConfig, local: RateLimiter) -> SharedLimiter | None:
    """The limiter every process on the config's account shares through its store, or ``None`` without a store.

    :param config: the client's config (``rate_limit_store``).
    :param local: the process's own limiter of the account (``limiter_for``), which paces while the store is away.
    """
    return _REGISTRY.shared(config, local)


def limiter_snapshots() -> list[dict[str, Any]]:
    """What every limiter of this process learnt (``scope`` ``process``), and what it last read of each shared one's
    state (``scope`` ``store``): for diagnosis and benchmarks. No token, no key of the store."""
    with _REGISTRY._lock:
        local, shared = list(_REGISTRY._limiters.values()), list(_REGISTRY._shared.values())
    states = [{"scope": "process", "name": limiter.name, **limiter.snapshot()} for limiter in local]
    for limiter in shared:
        learned = limiter.learned
        states.append(
            {
                "scope": "store",
                "name": limiter.local.name,
                "throttled": learned.throttled,
                "rate": learned.rate,
                "queued": limiter.queued,
                "usable": limiter.usable(time.monotonic()),
            }
        )
    return states


def reset_rate_limiters() -> None:
    """Forget every account's limiter and close the store's clients (tests, so that one test's 429s do not pace
    the next)."""
    _REGISTRY.clear()
    close_store_clients()
