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

from airflow_provider_analytics._jobs.events import EVENT_STATUSES
from airflow_provider_analytics.sandbox.server import SandboxServer
from airflow_provider_analytics.triggers.base import AnalyticsPollTrigger
from airflow_provider_analytics.version_compat import AIRFLOW_V_3_0_PLUS, AIRFLOW_V_3_2_PLUS
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
    payload: dict[str, Any] = events[0].payload
    # An error event also says which API error ended the wait (operators/errors.py: RemoteWaitError).
    extra = {"api_error"} if payload["status"] == "error" else set()
    assert set(payload) == {"status", "kind", "target", "resource", "message", *extra}
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


def event_for(
    target: dict[str, Any], status: str | None = "success", kind: str = "execution", **extra: Any
) -> dict[str, Any]:
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


def deferred_trigger_row(trigger: Any) -> Any:
    """The ``Trigger`` row a deferral to this trigger stores, made the way this Airflow release makes it.

    Airflow 3: the task runner sends a ``DeferTask`` message (kwargs encoded with ``airflow.sdk.serde`` first
    from 3.2; by the message itself with ``BaseSerialization`` in 3.0 and 3.1), it crosses the supervisor as
    JSON, and the execution API stores its kwargs as they came. Airflow 2 defers in-process:
    ``Trigger.from_object``, encrypted.
    """
    from airflow.models.trigger import Trigger

    if not AIRFLOW_V_3_0_PLUS:
        return Trigger.from_object(trigger)
    from airflow.sdk.execution_time.comms import DeferTask

    classpath, kwargs = trigger.serialize()
    if AIRFLOW_V_3_2_PLUS:
        from airflow.sdk.serde import serialize

        kwargs = serialize(kwargs)
    sent = DeferTask(classpath=classpath, trigger_kwargs=kwargs, next_method="execute_complete")
    received = json.loads(sent.model_dump_json())
    row = Trigger(classpath=received["classpath"], kwargs={})
    row.encrypted_kwargs = json.dumps(received["trigger_kwargs"])
    return row


def triggerer_kwargs(row: Any) -> dict[str, Any]:
    """The kwargs this release's triggerer passes to the trigger class, read from a ``Trigger`` row.

    Every release decrypts them (``row.kwargs``); Airflow 3 also decodes each value (``smart_decode_trigger_kwargs``:
    in ``serialization.decoders`` from 3.2, ``serialized_objects`` before, looked up by name for mypy's sake).
    """
    stored = dict(row.kwargs)  # the row's public property decrypts them
    if not AIRFLOW_V_3_0_PLUS:
        return stored
    decoders = "airflow.serialization.decoders" if AIRFLOW_V_3_2_PLUS else "airflow.serialization.serialized_objects"
    smart_decode_trigger_kwargs = vars(importlib.import_module(decoders))["smart_decode_trigger_kwargs"]
    return {key: smart_decode_trigger_kwargs(value) for key, value in stored.items()}


def encode_watcher_trigger(trigger: Any) -> dict[str, Any]:
    """An asset watcher's trigger as the DAG processor stores and hashes it (Airflow 3 only).

    ``airflow.serialization.encoders.encode_trigger`` from 3.2, ``serialized_objects._encode_trigger`` in
    3.0 and 3.1 (the name ``dag_processing/collection.py`` of each release imports).
    """
    # Looked up by name: mypy checks against 3.3, where the 3.0/3.1 name does not exist.
    module, name = (
        ("airflow.serialization.encoders", "encode_trigger")
        if AIRFLOW_V_3_2_PLUS
        else ("airflow.serialization.serialized_objects", "_encode_trigger")
    )
    return dict(vars(importlib.import_module(module))[name](trigger))


def instantiate(classpath: str, kwargs: dict[str, Any]) -> Any:
    """Import the class a trigger row names and build it from the kwargs, as the triggerer does."""
    module_name, _, class_name = classpath.rpartition(".")
    return getattr(importlib.import_module(module_name), class_name)(**kwargs)


def rebuilt_through_trigger_row(trigger: Any) -> Any:
    """The paths this Airflow release really uses, from ``serialize()`` to a trigger rebuilt in the triggerer.

    Two rows, as Airflow makes them: the one a deferral stores (:func:`deferred_trigger_row`), and the
    encrypted one ``Trigger(kwargs=...)`` writes (asset watchers; 2.x deferrals). Checks each keeps the
    kwargs; returns the trigger rebuilt from the encrypted row.
    """
    from airflow.models.trigger import Trigger

    classpath, kwargs = trigger.serialize()

    deferred = deferred_trigger_row(trigger)
    assert deferred.classpath == classpath
    assert triggerer_kwargs(deferred) == kwargs

    row = Trigger(classpath=classpath, kwargs=kwargs)
    assert row.encrypted_kwargs != json.dumps(kwargs)  # stored encrypted
    assert row.kwargs == kwargs
    rebuilt = instantiate(row.classpath, triggerer_kwargs(row))
    assert rebuilt.serialize() == (classpath, kwargs)
    return rebuilt
