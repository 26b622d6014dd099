"""A local HTTP server that implements the Analytics Platform /v1 API for tests and demos.

Importing this package is cheap: the server, its configuration and the fault helpers are loaded
on first attribute access, so that the pytest plugin (registered for every user of the provider)
never imports FastAPI or uvicorn unless a sandbox fixture is actually used.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from airflow_provider_analytics.sandbox.config import SandboxConfig, Timings
    from airflow_provider_analytics.sandbox.faults import Fault
    from airflow_provider_analytics.sandbox.server import SandboxServer

__all__ = ["Fault", "SandboxConfig", "SandboxServer", "Timings"]

_LAZY_EXPORTS = {
    "Fault": "airflow_provider_analytics.sandbox.faults",
    "SandboxConfig": "airflow_provider_analytics.sandbox.config",
    "SandboxServer": "airflow_provider_analytics.sandbox.server",
    "Timings": "airflow_provider_analytics.sandbox.config",
}


def __getattr__(name: str) -> Any:
    module_name = _LAZY_EXPORTS.get(name)
    if module_name is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(module_name), name)


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
