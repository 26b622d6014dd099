"""AnalyticsAsyncHook: sends the calls triggers make (reads, cancels), uses its own connection, raises the same tree."""

from __future__ import annotations

import pytest

from airflow_provider_analytics.hooks.analytics import AnalyticsAsyncHook, AnalyticsHook
from airflow_provider_analytics.sandbox.config import Timings
from airflow_provider_analytics.sandbox.server import SandboxServer
from airflow_provider_analytics.wire import _endpoints as endpoints
from airflow_provider_analytics.wire.errors import AnalyticsInputError, UnauthenticatedError
from tests.support.connections import BOGUS_TOKEN, new_hook, set_json_connection, whole_text
from tests.support.sockets import connections_to


@pytest.mark.anyio
async def test_async_hook_reads_execution_report_and_sync(sandbox: SandboxServer, hooks: list[AnalyticsHook]) -> None:
    sync_hook = new_hook(hooks)
    execution = sync_hook.execute_workflow("wf_nightly_enrichment")
    report = sync_hook.generate_report(["db_sales"], "pdf")
    sandbox.state.start_sync("ds_warehouse")
    sandbox.state.advance(10)

    sync_hooks_connections = connections_to(sandbox.port)
    async with AnalyticsAsyncHook() as hook:
        fetched = await hook.call(endpoints.get_execution("wf_nightly_enrichment", execution["id"]))
        assert fetched["id"] == execution["id"]
        assert fetched["status"] == "succeeded"
        assert (await hook.call(endpoints.get_report(report["id"])))["status"] in ("ready", "generating")
        sync = await hook.call(endpoints.get_sync_status("ds_warehouse"))
        assert sync["status"] == "synced"
        assert sync["data_source_id"] == "ds_warehouse"
        names = [workflow["name"] async for workflow in await hook.list_workflows(page_size=10)]
        assert len(names) == len(sandbox.state.workflows("ws_default"))
        client = await hook.get_client()
        assert await hook.get_client() is client  # one client for the hook's life
        assert connections_to(sandbox.port) == sync_hooks_connections + 1  # one kept connection for every call
    assert connections_to(sandbox.port) == sync_hooks_connections  # its client and pool closed on exit


@pytest.mark.anyio
async def test_async_hook_cancel(sandbox: SandboxServer, hooks: list[AnalyticsHook]) -> None:
    # Running for ten minutes: with the tests' timings an execution ends 0.3 s after it starts, and a CI run on busy
    # cores took longer than that to open the async hook, so the cancel met a finished execution (409).
    sandbox.state.set_timings(Timings(execution_queued=0.05, execution_running=600))
    execution = new_hook(hooks).execute_workflow("wf_churn_scoring")
    async with AnalyticsAsyncHook() as hook:
        cancelled = await hook.call(endpoints.cancel_execution("wf_churn_scoring", execution["id"]))
    assert cancelled["id"] == execution["id"]
    sandbox.state.advance(1)
    assert new_hook(hooks).get_execution("wf_churn_scoring", execution["id"])["status"] == "cancelled"


@pytest.mark.anyio
async def test_async_hook_uses_its_own_connection(sandbox: SandboxServer, monkeypatch: pytest.MonkeyPatch) -> None:
    set_json_connection(
        monkeypatch,
        env="AIRFLOW_CONN_ANALYTICS_MARKETING",
        host=sandbox.base_url,
        password=sandbox.token,
        extra={"workspace_id": "ws_marketing"},
    )
    hook = AnalyticsAsyncHook(analytics_conn_id="analytics_marketing")
    assert sandbox.state.requests == []
    try:
        assert (await hook.call(endpoints.get_sync_status("ds_ads")))["data_source_id"] == "ds_ads"
    finally:
        await hook.aclose()
    (recorded,) = sandbox.state.requests
    assert recorded.headers["x-workspace-id"] == "ws_marketing"


@pytest.mark.anyio
async def test_async_hook_errors_are_the_same_tree(sandbox: SandboxServer, monkeypatch: pytest.MonkeyPatch) -> None:
    set_json_connection(monkeypatch, host=sandbox.base_url, password=BOGUS_TOKEN)
    async with AnalyticsAsyncHook() as hook:
        with pytest.raises(UnauthenticatedError) as caught:
            await hook.call(endpoints.get_report("rp_x"))
    assert BOGUS_TOKEN not in whole_text(caught.value)
    set_json_connection(monkeypatch, host="http://remote.example", password=sandbox.token)
    async with AnalyticsAsyncHook() as hook:
        with pytest.raises(AnalyticsInputError, match="allow_insecure_http"):
            await hook.call(endpoints.get_report("rp_x"))
