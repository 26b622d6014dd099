"""The wire layer: HTTP and the /v1 contract, with no Airflow imports.

Endpoints are pure request builders (:mod:`._endpoints`); :class:`AnalyticsClient` and
:class:`AsyncAnalyticsClient` send them with the shared retry policy and error mapping.

The names below are loaded on first use (PEP 562): a DAG file that imports an operator imports a few
modules of this package, and must not pay for the client, its transports and its limiter at every parse.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from airflow_provider_analytics.wire.client import AnalyticsClient, AsyncAnalyticsClient
    from airflow_provider_analytics.wire.config import ClientConfig
    from airflow_provider_analytics.wire.retry import RetryPolicy

__all__ = ["AnalyticsClient", "AsyncAnalyticsClient", "ClientConfig", "RetryPolicy"]
_HOMES = {
    "AnalyticsClient": "client",
    "AsyncAnalyticsClient": "client",
    "ClientConfig": "config",
    "RetryPolicy": "retry",
}


def __getattr__(name: str) -> Any:
    """Import a public name's module when the name is first looked up.

    :param name: the attribute looked up on this package.
    :raises AttributeError: for a name this package does not export.
    """
    if name not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{_HOMES[name]}"), name)
    globals()[name] = value
    return value
