"""A local HTTP server that implements the Analytics Platform /v1 API for tests and demos.

The sandbox needs the ``sandbox`` extra (``pip install "airflow-provider-analytics[sandbox]"``: FastAPI,
Starlette, pydantic, uvicorn); the provider's runtime modules never import it.

Importing this package is cheap: the server, its configuration and the fault helpers are loaded
on first attribute access, so that the pytest plugin (registered for every user of the provider)
never imports FastAPI or uvicorn unless a sandbox fixture is actually used. When the extra is
missing, importing any other sandbox module raises :class:`SandboxDependencyError`, which says what
to install, instead of a bare ``No module named 'uvicorn'`` from deep inside the server.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import importlib.util
import sys
from collections.abc import Sequence
from types import ModuleType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from airflow_provider_analytics.sandbox.config import SandboxConfig, Timings
    from airflow_provider_analytics.sandbox.faults import Fault
    from airflow_provider_analytics.sandbox.server import SandboxServer

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
# Submodules that must import without the extra: pytest loads the plugin in every run where the provider
# is installed, and the command line prints the install hint itself.
# config holds plain settings (no server stack): the command line reads its limits for --help.
_IMPORTABLE_WITHOUT_EXTRA = frozenset({"pytest_plugin", "__main__", "config"})

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


class _RequireExtraFinder:
    """A meta path finder that turns the import of a sandbox module into :class:`SandboxDependencyError`.

    Installed only when the extra was missing at import time; it asks again on every import, so
    installing the extra into a running interpreter (a notebook) makes the sandbox importable.
    """

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        package, _, submodule = fullname.rpartition(".")
        if package == __name__ and submodule not in _IMPORTABLE_WITHOUT_EXTRA:
            require_dependencies()
        return None  # let the regular finders load it


if missing_dependencies():
    sys.meta_path.insert(0, _RequireExtraFinder())


def __getattr__(name: str) -> Any:
    module_name = _LAZY_EXPORTS.get(name)
    if module_name is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(module_name), name)


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
