"""A local HTTP server that implements the Analytics Platform /v1 API for tests and demos.

The sandbox needs the ``sandbox`` extra (``pip install "airflow-provider-analytics[sandbox]"``: FastAPI,
Starlette, pydantic, uvicorn); the provider's runtime modules never import it.

Its parts: ``domain`` (records, state machines, the store and the platform's rules; plain Python),
``faults`` (what a misbehaving platform answers; plain Python), ``routes`` (the ``/v1`` resources) and
``http`` (the uvicorn server, the application, its gateway, admin endpoints and UI pages). ``server``
and ``config`` keep the documented import paths of ``SandboxServer``, ``SandboxConfig`` and ``Timings``.

Importing this package is cheap: the server, its configuration and the fault helpers are loaded
on first attribute access, so that the pytest plugin (registered for every user of the provider)
never imports FastAPI or uvicorn unless a sandbox fixture is actually used. Without the extra,
importing ``http`` or ``routes`` (and so ``server``) raises :class:`SandboxDependencyError`, which
says what to install, instead of a bare ``No module named 'uvicorn'`` from deep inside the server;
each of the two packages checks that itself before it imports anything of the server stack.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import importlib.util
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from airflow_provider_analytics.sandbox.domain.config import SandboxConfig, Timings
    from airflow_provider_analytics.sandbox.faults.kinds import Fault
    from airflow_provider_analytics.sandbox.http.server import SandboxServer

__all__ = [
    "EXTRA_MODULES",
    "INSTALL_EXTRA",
    "Fault",
    "SandboxConfig",
    "SandboxDependencyError",
    "SandboxServer",
    "Timings",
    "missing_dependencies",
    "require_dependencies",
]

INSTALL_EXTRA = 'pip install "airflow-provider-analytics[sandbox]"'
# The top-level modules the sandbox imports, one per requirement of the `sandbox` extra in pyproject.toml
# (tests/test_packaging.py keeps the two equal).
EXTRA_MODULES = ("fastapi", "pydantic", "starlette", "uvicorn")

_LAZY_EXPORTS = {
    "Fault": "airflow_provider_analytics.sandbox.faults",
    "SandboxConfig": "airflow_provider_analytics.sandbox.config",
    "SandboxServer": "airflow_provider_analytics.sandbox.server",
    "Timings": "airflow_provider_analytics.sandbox.config",
}


class SandboxDependencyError(ModuleNotFoundError):
    """The ``sandbox`` extra is not installed: the message names what is missing and what to install.

    A :class:`ModuleNotFoundError`, so code that guards an optional import with ``except ImportError``
    keeps working.

    :param missing: the top-level modules that cannot be found.
    """

    def __init__(self, missing: Sequence[str]) -> None:
        self.missing = tuple(missing)
        super().__init__(
            f"the Analytics sandbox needs the 'sandbox' extra, which is not installed "
            f"(missing: {', '.join(self.missing)}): {INSTALL_EXTRA}",
            name=self.missing[0] if self.missing else None,
        )


def missing_dependencies() -> list[str]:
    """The modules of the ``sandbox`` extra that cannot be found (without importing any of them)."""
    return [module for module in EXTRA_MODULES if _find(module) is None]


def require_dependencies() -> None:
    """Raise :class:`SandboxDependencyError` unless every module of the ``sandbox`` extra can be found."""
    missing = missing_dependencies()
    if missing:
        raise SandboxDependencyError(missing)


def _find(module: str) -> importlib.machinery.ModuleSpec | None:
    try:
        return importlib.util.find_spec(module)
    except (ImportError, ValueError):  # a broken or half-removed install counts as missing
        return None


def __getattr__(name: str) -> Any:
    module_name = _LAZY_EXPORTS.get(name)
    if module_name is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(module_name), name)


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
