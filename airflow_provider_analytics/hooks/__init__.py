"""Hooks: an Airflow connection turned into a configured Analytics Platform client.

What a hook's methods send with is reached as ``hooks._sending.<name>`` (``hooks/_sending.py``): this package
imports that module on the first such lookup (PEP 562), in the process that sends; parsing a DAG file never does.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from airflow_provider_analytics.hooks import _sending as _sending

# Defined here, not in hooks/base.py, so that the operators and sensors name it without importing a hook module
# (nor Airflow's BaseHook) every time a DAG file that uses them is parsed.
DEFAULT_CONN_ID = "analytics_default"

__all__ = ["DEFAULT_CONN_ID"]


def __getattr__(name: str) -> Any:
    """Import the sending seam when a hook first looks it up.

    :param name: the attribute looked up on this package.
    :raises AttributeError: for any other name.
    """
    if name != "_sending":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    _sending = importlib.import_module("airflow_provider_analytics.hooks._sending")  # the package's own module
    return _sending
