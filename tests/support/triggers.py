"""Shared helpers for tests of triggers and the operators that defer to them: run a trigger, check its one
event, build an event by hand, point the connection, read the request log."""

from __future__ import annotations

import asyncio
import importlib
import json
import time
from typing import Any

import pytest
from airflow.triggers.base import TriggerEvent

from airflow_provider_analytics.sandbox.server import SandboxServer
from airflow_provider_analytics.triggers.base import AnalyticsPollTrigger
from airflow_provider_analytics.triggers.wait_events import EVENT_STATUSES
from tests.support.names import CONN_ENV, WORKFLOW

# An execution a task started, as its task state store remembers it.
STARTED = {"workflow_id": WORKFLOW, "execution_id": "ex_started0001"}


def drain(trigger: AnalyticsPollTrigger) -> list[TriggerEvent]:
    """Every event the trigger yields until its ``run()`` returns."""

    async def collect() -> list[TriggerEvent]:
        return [event async for event in trigger.run()]

    return asyncio.run(collect())


def only_event(trigger: AnalyticsPollTrigger) -> dict[str, Any]:
    """Drain the trigger, check it fired exactly one plain-JSON event of the documented shape, return it."""
    events = drain(trigger)
    assert len(events) == 1, events
    payload = events[0].payload
    assert set(payload) == {"status", "kind", "target", "resource", "message"}
    assert payload["status"] in EVENT_STATUSES
    assert payload["kind"] == type(trigger).kind
    assert payload["target"] == trigger.target
    assert json.loads(json.dumps(payload)) == payload  # plain JSON, so Airflow can store and resume with it
    assert isinstance(payload["message"], str)
    assert payload["message"]
    return payload


def run_as_triggerer(trigger: AnalyticsPollTrigger) -> list[dict[str, Any]]:
    """Rebuild the trigger from its serialized form (as the triggerer does), run it, return event payloads."""
    classpath, kwargs = trigger.serialize()
    module_name, _, class_name = classpath.rpartition(".")
    rebuilt = getattr(importlib.import_module(module_name), class_name)(**json.loads(json.dumps(kwargs)))

    async def collect() -> list[dict[str, Any]]:
        return [event.payload async for event in rebuilt.run()]

    return asyncio.run(collect())


def triggerer_event(trigger: AnalyticsPollTrigger) -> dict[str, Any]:
    """The payload of the one event :func:`run_as_triggerer` gets."""
    events = run_as_triggerer(trigger)
    assert len(events) == 1, events
    return events[0]


def event_for(target: dict[str, Any], status: str = "success", kind: str = "execution", **extra: Any) -> dict[str, Any]:
    """A trigger event's payload built by hand, for ``execute_complete`` checks without a trigger."""
    return {
        "status": status,
        "kind": kind,
        "target": target,
        "resource": {"status": "succeeded"},
        "message": "m",
        **extra,
    }


def soon(seconds: float = 10.0) -> float:
    return time.time() + seconds


def set_connection(
    monkeypatch: pytest.MonkeyPatch, sandbox: SandboxServer, token: str | None = None, **extra: Any
) -> None:
    """Point ``analytics_default`` at the sandbox with extra settings (e.g. ``max_retries=0``)."""
    conn = json.loads(sandbox.connection_json(token=token))
    conn["extra"].update(extra)
    monkeypatch.setenv(CONN_ENV, json.dumps(conn))


def requests_to(sandbox: SandboxServer, path: str, method: str = "GET") -> list[int]:
    """Statuses of every recorded request with this method and path, in order."""
    return [r.status for r in sandbox.state.requests if r.method == method and r.path == path]


def requests_summary(sandbox: SandboxServer) -> list[tuple[str, str, int]]:
    """``(method, path, status)`` of every recorded request, in order."""
    return [(r.method, r.path, r.status) for r in sandbox.state.requests]


def execution_path(workflow_id: str, execution_id: str) -> str:
    return f"/v1/workflows/{workflow_id}/executions/{execution_id}"


def execution_view(sandbox: SandboxServer, execution_id: str) -> dict[str, Any]:
    return next(item for item in sandbox.state.executions() if item["id"] == execution_id)


def report_view(sandbox: SandboxServer, report_id: str) -> dict[str, Any]:
    return next(item for item in sandbox.state.reports() if item["id"] == report_id)


def rebuilt_through_trigger_row(trigger: Any) -> Any:
    """The paths Airflow really uses: serde at defer time, the encrypted ``Trigger`` row, then re-import.

    Checks each step keeps the kwargs; returns the trigger rebuilt from the row.
    """
    from airflow.models.trigger import Trigger
    from airflow.sdk.serde import deserialize, serialize

    classpath, kwargs = trigger.serialize()
    assert deserialize(serialize(kwargs)) == kwargs

    row = Trigger.from_object(trigger)
    assert row.classpath == classpath
    assert row.encrypted_kwargs != json.dumps(kwargs)  # stored encrypted
    assert row.kwargs == kwargs
    module_name, _, class_name = row.classpath.rpartition(".")
    rebuilt = getattr(importlib.import_module(module_name), class_name)(**row.kwargs)
    assert rebuilt.serialize() == (classpath, kwargs)
    return rebuilt
