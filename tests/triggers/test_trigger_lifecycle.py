"""What a triggerer does to triggers besides running them: kill, cleanup, restart; and their clients' lives."""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Callable
from typing import Any

import pytest

from airflow_provider_analytics.hooks.analytics import AnalyticsAsyncHook, AnalyticsHook
from airflow_provider_analytics.sandbox.config import LIMITED_TOKEN
from airflow_provider_analytics.sandbox.faults import Fault
from airflow_provider_analytics.sandbox.server import SandboxServer
from airflow_provider_analytics.triggers.base import AnalyticsPollTrigger
from airflow_provider_analytics.triggers.executions import ExecutionTrigger
from airflow_provider_analytics.triggers.reports import ReportTrigger
from airflow_provider_analytics.wire import _endpoints as endpoints
from airflow_provider_analytics.wire.errors import ForbiddenError
from tests.support.context import SLOW
from tests.support.names import CONN_ENV, WORKFLOW
from tests.support.sockets import connections_to
from tests.support.triggers import execution_path, execution_view, report_view, soon


def _cancels(sandbox: SandboxServer) -> list[str]:
    return [r.path for r in sandbox.state.requests if r.method == "POST" and r.path.endswith("/cancel")]


def _execution_trigger(execution_id: str, **kwargs: Any) -> ExecutionTrigger:
    return ExecutionTrigger(workflow_id=WORKFLOW, execution_id=execution_id, poll_interval=0.1, **kwargs)


@pytest.fixture
def slow_sandbox(sandbox: SandboxServer) -> SandboxServer:
    sandbox.state.set_timings(SLOW)
    return sandbox


def test_on_kill_cancels_the_execution(slow_sandbox: SandboxServer, hook: AnalyticsHook) -> None:
    execution = hook.execute_workflow(WORKFLOW)
    asyncio.run(_execution_trigger(execution["id"], cancel_on_kill=True).on_kill())
    assert execution_view(slow_sandbox, execution["id"])["status"] == "cancelled"
    assert _cancels(slow_sandbox) == [execution_path(WORKFLOW, execution["id"]) + "/cancel"]


def test_on_kill_cancels_the_report(slow_sandbox: SandboxServer, hook: AnalyticsHook) -> None:
    report = hook.generate_report(["db_sales"], "pdf")
    asyncio.run(ReportTrigger(report_id=report["id"], poll_interval=0.1, cancel_on_kill=True).on_kill())
    view = report_view(slow_sandbox, report["id"])
    assert view["status"] == "failed"
    assert view["error"]["type"] == "cancelled"
    assert _cancels(slow_sandbox) == [f"/v1/reports/{report['id']}/cancel"]


def test_on_kill_without_cancel_on_kill_sends_nothing(slow_sandbox: SandboxServer, hook: AnalyticsHook) -> None:
    execution = hook.execute_workflow(WORKFLOW)
    before = len(slow_sandbox.state.requests)
    asyncio.run(_execution_trigger(execution["id"]).on_kill())
    assert len(slow_sandbox.state.requests) == before
    assert execution_view(slow_sandbox, execution["id"])["status"] in ("queued", "running")


def test_on_kill_of_finished_work_is_quiet(sandbox: SandboxServer, hook: AnalyticsHook) -> None:
    execution = hook.execute_workflow(WORKFLOW)
    sandbox.state.advance(60)
    asyncio.run(_execution_trigger(execution["id"], cancel_on_kill=True).on_kill())  # a 409, logged
    assert execution_view(sandbox, execution["id"])["status"] == "succeeded"


def test_a_triggerer_restart_cancels_nothing(slow_sandbox: SandboxServer, hook: AnalyticsHook) -> None:
    """A restart cancels the run() task and calls cleanup(); the remote work must go on."""
    execution = hook.execute_workflow(WORKFLOW)
    trigger = _execution_trigger(execution["id"], cancel_on_kill=True, deadline=soon(30))

    async def restart() -> None:
        task = asyncio.ensure_future(_first_event(trigger))
        await _until(
            lambda: any(r.path == execution_path(WORKFLOW, execution["id"]) for r in slow_sandbox.state.requests)
        )
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await trigger.cleanup()

    asyncio.run(restart())
    assert _cancels(slow_sandbox) == []
    assert execution_view(slow_sandbox, execution["id"])["status"] in ("queued", "running")


async def _until(condition: Callable[[], bool], seconds: float = 10.0) -> None:
    for _ in range(int(seconds / 0.02)):
        if condition():
            return
        await asyncio.sleep(0.02)
    raise AssertionError("the condition never came true")


async def _first_event(trigger: AnalyticsPollTrigger) -> Any:
    async for event in trigger.run():
        return event
    return None


def test_every_trigger_kwarg_round_trips_cancel_on_kill() -> None:
    trigger = ReportTrigger(report_id="rp_1", poll_interval=5, cancel_on_kill=True)
    path, kwargs = trigger.serialize()
    assert kwargs["cancel_on_kill"] is True
    assert ReportTrigger(**kwargs).serialize() == (path, kwargs)


# --- the async hook's client ------------------------------------------------------------------------


def test_a_closed_client_is_never_reused(sandbox: SandboxServer) -> None:
    async def scenario() -> None:
        hook = AnalyticsAsyncHook()
        first = await hook.get_client()
        await hook.call(endpoints.get_sync_status("ds_warehouse"))
        assert connections_to(sandbox.port) == 1  # the client's kept connection
        await hook.aclose()
        assert connections_to(sandbox.port) == 0  # closed with it
        second = await hook.get_client()
        assert second is not first
        assert (await hook.call(endpoints.get_sync_status("ds_warehouse")))["data_source_id"] == "ds_warehouse"
        assert connections_to(sandbox.port) == 1
        await hook.aclose()
        assert connections_to(sandbox.port) == 0

    asyncio.run(scenario())


def test_two_connections_never_share_credentials(sandbox: SandboxServer, monkeypatch: pytest.MonkeyPatch) -> None:
    full = json.loads(sandbox.connection_json())
    limited = json.loads(sandbox.connection_json(token=LIMITED_TOKEN))
    full["extra"]["workspace_id"] = limited["extra"]["workspace_id"] = "ws_marketing"
    monkeypatch.setenv("AIRFLOW_CONN_FULL", json.dumps(full))
    monkeypatch.setenv("AIRFLOW_CONN_LIMITED", json.dumps(limited))

    async def scenario() -> tuple[Any, Any]:
        async with AnalyticsAsyncHook("full") as one, AnalyticsAsyncHook("limited") as two:
            allowed = await one.list_workflows(page_size=1)
            refused = await two.list_workflows(page_size=1)
            first = [item async for item in allowed]
            try:
                return first, [item async for item in refused]
            except ForbiddenError as exc:
                return first, exc

    allowed, refused = asyncio.run(scenario())
    assert allowed  # the full token may use ws_marketing
    assert getattr(refused, "status", None) == 403  # the limited one may not, on its own client


def test_a_rotated_token_is_picked_up(
    sandbox: SandboxServer, hook: AnalyticsHook, monkeypatch: pytest.MonkeyPatch
) -> None:
    sandbox.state.set_timings(SLOW)
    execution = hook.execute_workflow(WORKFLOW)
    trigger = _execution_trigger(execution["id"], deadline=soon(30))
    rotated = sandbox.connection_json(token=LIMITED_TOKEN)

    async def scenario() -> Any:
        task = asyncio.ensure_future(_first_event(trigger))
        path = execution_path(WORKFLOW, execution["id"])
        await _until(lambda: any(r.path == path for r in sandbox.state.requests))
        # The secret store now holds a new token and the old one is refused (once, by the fault).
        os.environ[CONN_ENV] = rotated
        sandbox.state.inject(Fault.status(401, path=path))
        await _until(lambda: any(r.path == path and r.status == 401 for r in sandbox.state.requests))
        sandbox.state.advance(3600)
        return await asyncio.wait_for(task, 20)

    monkeypatch.setenv(CONN_ENV, sandbox.connection_json())
    event = asyncio.run(scenario())
    assert event.payload["status"] == "success"


def test_reload_uses_the_new_token(sandbox: SandboxServer, monkeypatch: pytest.MonkeyPatch) -> None:
    async def scenario() -> tuple[bool, bool, str]:
        async with AnalyticsAsyncHook() as hook:
            await hook.call(endpoints.get_sync_status("ds_warehouse"))
            unchanged = await hook.reload_connection()
            assert connections_to(sandbox.port) == 1  # an unchanged connection keeps its client and pool
            monkeypatch.setenv(CONN_ENV, sandbox.connection_json(token=LIMITED_TOKEN))
            changed = await hook.reload_connection()
            assert connections_to(sandbox.port) == 0  # the old client was closed, not left to the GC
            return unchanged, changed, (await hook.get_client()).config.token

    assert asyncio.run(scenario()) == (False, True, LIMITED_TOKEN)
