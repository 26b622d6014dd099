"""The sandbox's HTTP edge: the uvicorn server, the FastAPI application and everything in front of the routes.

``server`` runs uvicorn on a real socket; ``app`` assembles the application and its contract error
handlers; ``gateway`` is the ASGI layer that logs each request and applies faults, size limits,
authentication, rate limits and idempotency, and checks the admin token in front of ``/_sandbox``; ``errors``
writes the contract's error bodies; ``admin`` and ``ui`` are the ``/_sandbox`` control endpoints and the
``/ui`` pages. The ``/v1`` routes themselves are in ``sandbox.routes``.

Importing this package without the ``sandbox`` extra raises
:class:`~airflow_provider_analytics.sandbox.SandboxDependencyError`, which says what to install.
"""

from __future__ import annotations

from airflow_provider_analytics.sandbox import require_dependencies

require_dependencies()  # before any module here imports FastAPI, Starlette or uvicorn
