"""``SandboxServer`` under the name the docs give it; the server lives in ``sandbox.http.server``.

Importing it without the ``sandbox`` extra raises
:class:`~airflow_provider_analytics.sandbox.SandboxDependencyError`, which says what to install.
"""

from __future__ import annotations

from airflow_provider_analytics.sandbox.http.server import SandboxServer

__all__ = ["SandboxServer"]
