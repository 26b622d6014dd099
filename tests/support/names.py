"""Names the tests share: the distribution, the connection's environment variable, seeded sandbox ids, common
headers, the sandbox server's own dependencies."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from airflow_provider_analytics.sandbox.server import SandboxServer

DISTRIBUTION = "airflow-provider-analytics"
# What the sandbox server imports; a DAG file or a worker must never pay for them.
SERVER_STACK = ("fastapi", "uvicorn", "starlette")

# Where Airflow looks up ``analytics_default``; the ``sandbox`` fixture points it at the sandbox.
CONN_ENV = "AIRFLOW_CONN_ANALYTICS_DEFAULT"

# Seeded in every fresh sandbox (``airflow_provider_analytics/sandbox/domain/seed.py``).
WORKFLOW = "wf_nightly_enrichment"
DATA_SOURCE = "ds_warehouse"
EXECUTE_PATH = "/v1/workflows/wf_churn_scoring/execute"

# A trigger's poll interval in tests: short, so a wait of a few polls stays well under a second.
POLL = 0.1

# How an operator may wait for platform work: on the worker, or deferred to the triggerer.
WAIT_MODES = ["poll", "defer"]

JSON_HEADERS = {"Content-Type": "application/json"}


def admin_headers(server: SandboxServer) -> dict[str, str]:
    """The header that opens a sandbox's ``/_sandbox`` control routes: its admin token (never an API token)."""
    return {"Authorization": f"Bearer {server.admin_token}"}
