"""Operators that compose :class:`~airflow_provider_analytics.hooks.analytics.AnalyticsHook` into DAG tasks.

The operator and sensor modules hold configuration; what their tasks use once they run is reached as
``operators._runtime.<name>`` (``operators/_runtime.py``), the one seam between the DAG-parse path and the layers
below. This package imports that module on the first such lookup (PEP 562), in the task's process: parsing a DAG
file never does.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from airflow_provider_analytics.operators import _runtime as _runtime

__all__: list[str] = []


def __getattr__(name: str) -> Any:
    """Import the runtime seam when a task first looks it up.

    :param name: the attribute looked up on this package.
    :raises AttributeError: for any other name.
    """
    if name != "_runtime":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    _runtime = importlib.import_module("airflow_provider_analytics.operators._runtime")  # the package's own module
    return _runtime
