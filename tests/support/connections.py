"""Helpers for connection and hook tests: connections in their forms, hooks that get closed, secret checks."""

from __future__ import annotations

import json
import os
import socket
import traceback
from typing import Any

import pytest
from airflow.providers.common.compat.sdk import BaseHook, Connection

from airflow_provider_analytics.hooks.analytics import AnalyticsHook
from airflow_provider_analytics.sandbox.server import SandboxServer
from tests.support.names import CONN_ENV

LIMITED_TOKEN = "sandbox-token-limited"
# A token no sandbox accepts, distinctive enough to search for in messages.
BOGUS_TOKEN = "tok-Zq81-never-print-me-7Hx"


def new_hook(hooks: list[AnalyticsHook], conn_id: str = "analytics_default") -> AnalyticsHook:
    """A hook on ``conn_id``, added to the ``hooks`` fixture's list so it is closed after the test."""
    hook = AnalyticsHook(analytics_conn_id=conn_id)
    hooks.append(hook)
    return hook


def set_json_connection(monkeypatch: pytest.MonkeyPatch, env: str = CONN_ENV, **fields: Any) -> None:
    monkeypatch.setenv(env, json.dumps({"conn_type": "analytics", **fields}))


def conn(**fields: Any) -> Connection:
    """An in-memory connection for the pure parsing helpers (no lookup, no request)."""
    extra = fields.pop("extra", None)
    return Connection(
        conn_id=fields.pop("conn_id", "analytics_test"),
        conn_type="analytics",
        extra=json.dumps(extra) if extra is not None else None,
        **fields,
    )


def uri_connection(uri: str, conn_id: str = "analytics_test") -> Any:
    """A connection read from its URI form exactly as Airflow reads ``AIRFLOW_CONN_<ID>`` on this release.

    ``Connection.from_uri`` exists only from Airflow 3.1 on; the environment lookup is the same on every
    release, and it is the route a URI-form connection takes in a deployment.
    """
    env = f"AIRFLOW_CONN_{conn_id.upper()}"
    previous = os.environ.get(env)
    os.environ[env] = uri
    try:
        return BaseHook.get_connection(conn_id)
    finally:
        if previous is None:
            del os.environ[env]
        else:
            os.environ[env] = previous


def closed_loopback_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def api_requests(sandbox: SandboxServer, path_suffix: str = "") -> list[Any]:
    return [entry for entry in sandbox.state.requests if entry.path.endswith(path_suffix)]


def whole_text(exc: BaseException) -> str:
    """Everything a log or a UI could show of an exception: message, repr, args and the traceback."""
    return "\n".join([str(exc), repr(exc), repr(exc.args), "".join(traceback.format_exception(exc))])
