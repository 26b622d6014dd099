"""The ``/v1`` API, one module per resource (``charts``, ``dashboards``, ``data_sources``, ``reports``,
``workflows``), with what they share: the caller's workspace and JSON answers (``support``), the strict
request bodies and their field messages (``schemas``) and report downloads with ranges (``downloads``).

Routes turn requests into calls on the domain (``sandbox.domain``); the HTTP edge (``sandbox.http``)
mounts them behind its gateway. Importing this package without the ``sandbox`` extra raises
:class:`~airflow_provider_analytics.sandbox.SandboxDependencyError`, which says what to install.
"""

from __future__ import annotations

from airflow_provider_analytics.sandbox import require_dependencies

require_dependencies()  # before any route module imports FastAPI, Starlette or pydantic
