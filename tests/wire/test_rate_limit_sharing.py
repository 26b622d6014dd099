"""A fleet on one token, over real sockets: the sandbox's real per-token limit and the clients' shared limiter."""

from __future__ import annotations

import asyncio
import threading
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from airflow_provider_analytics.hooks.analytics import AnalyticsAsyncHook, AnalyticsHook
from airflow_provider_analytics.sandbox.faults import Fault
from airflow_provider_analytics.sandbox.server import SandboxServer
from airflow_provider_analytics.wire import _endpoints as endpoints
from airflow_provider_analytics.wire._accounts import limiter_for
from airflow_provider_analytics.wire._learning import MIN_PAUSE
from airflow_provider_analytics.wire.client import AnalyticsClient
from tests.support.connections import LIMITED_TOKEN
from tests.support.fixtures import Api, ApiFactory, make_config
from tests.support.reports import ready_report
from tests.support.triggers import set_connection

JSON_HEADERS = {"Content-Type": "application/json"}


def received(sandbox: SandboxServer) -> list[tuple[datetime, int]]:
    return [(datetime.fromisoformat(r.received_at.replace("Z", "+00:00")), r.status) for r in sandbox.state.requests]


def test_hooks_of_one_connection_in_one_loop_share_a_pause(sandbox: SandboxServer) -> None:
    """A 429 with Retry-After: 2 to one trigger's hook holds back every other hook of the connection in the
    triggerer's loop until it has passed: none of their requests reaches the platform sooner."""
    sandbox.state.inject(Fault.status(429, path="/v1/charts$", retry_after=2))

    async def scenario() -> None:
        hooks = [AnalyticsAsyncHook() for _ in range(10)]
        try:
            first = asyncio.ensure_future(hooks[0].call(endpoints.list_charts()))
            while not any(r.status == 429 for r in sandbox.state.requests):  # noqa: ASYNC110 - another process's log
                await asyncio.sleep(0.01)
            await asyncio.sleep(0.1)  # the refusal has reached the client by now
            await asyncio.gather(first, *(hook.call(endpoints.list_data_sources()) for hook in hooks[1:]))
        finally:
            for hook in hooks:
                await hook.aclose()

    asyncio.run(scenario())
    log = received(sandbox)
    refused_at = next(at for at, status in log if status == 429)
    later = [(at - refused_at).total_seconds() for at, status in log if at > refused_at]
    assert len(later) == 10
    assert min(later) >= 1.9, f"requests went out during the pause: {sorted(later)[:3]} s after the 429"
    assert all(status == 200 for _, status in log if _ > refused_at)


@pytest.mark.analytics_sandbox(rate_limit=10, rate_limit_headers=False)
def test_two_tokens_do_not_slow_each_other(sandbox: SandboxServer, api_factory: ApiFactory) -> None:
    config = make_config(sandbox)
    with AnalyticsClient(config) as crowd:  # real sleeps: it waits out the limit of its token
        threads = [threading.Thread(target=crowd.call, args=(endpoints.list_charts(),)) for _ in range(25)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert limiter_for(config.base_url, config.token).snapshot()["throttled"]
    assert sandbox.rate_limit_stats()["refused"] > 0

    other: Api = api_factory(token=LIMITED_TOKEN)
    for _ in range(3):
        other.call(endpoints.list_charts())
    assert other.sleeps == [], "the other token's requests waited for nothing"
    assert not limiter_for(config.base_url, LIMITED_TOKEN).snapshot()["throttled"]


@pytest.mark.analytics_sandbox(rate_limit=4, rate_limit_headers=False)
def test_a_throttled_start_and_download_on_the_worker_succeed(
    sandbox: SandboxServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """With no retries allowed at all, 429s alone fail nothing: each request waits its turn."""
    set_connection(monkeypatch, sandbox, max_retries=0)
    hook = AnalyticsHook()
    try:
        for _ in range(6):  # more than the token may send in a second: the start comes while it is throttled
            hook.list_charts()
        execution = hook.execute_workflow("wf_nightly_enrichment", idempotency_key="rate-limit-test")
        report = ready_report(hook, sandbox)  # polls as fast as it can: far over 4 requests a second
        written = hook.download_report(report["id"], str(tmp_path / "report.pdf"))
    finally:
        hook.close()
    assert execution["status"] == "queued"
    assert written.sha256 == report["sha256"]
    assert sandbox.rate_limit_stats()["refused"] > 0, "the test must meet the limit to show anything"
    assert sandbox.rate_limit_stats()["allowed"] >= 10
    executions = [e for e in sandbox.state.executions() if e["workflow_id"] == "wf_nightly_enrichment"]
    assert len(executions) == 1


@pytest.mark.parametrize("retry_after", ["0", "Wed, 21 Oct 2015 07:28:00 GMT"])
def test_a_platform_that_says_retry_now_cannot_make_the_client_spin(
    api: Api, sandbox: SandboxServer, retry_after: str
) -> None:
    sandbox.state.inject(
        Fault.respond(429, headers={**JSON_HEADERS, "Retry-After": retry_after}, body="{}", path="/v1/charts$", times=5)
    )
    assert isinstance(api.call(endpoints.list_charts()), list)
    assert len(sandbox.state.requests) == 6
    assert sum(api.sleeps) >= 5 * MIN_PAUSE * 0.99


@pytest.mark.parametrize(
    "headers",
    [
        {"X-RateLimit-Limit": "100", "X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "32503680000"},
        {"X-RateLimit-Limit": "0", "X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "1"},
        {"X-RateLimit-Limit": "-1", "X-RateLimit-Remaining": "-1", "X-RateLimit-Reset": "soon"},
    ],
)
def test_absurd_rate_headers_do_not_put_the_client_to_sleep(
    api: Api, sandbox: SandboxServer, headers: dict[str, Any]
) -> None:
    sandbox.state.inject(Fault.headers(set=headers, path="/v1/charts$", times=3))
    for _ in range(4):
        api.call(endpoints.list_charts())
    assert api.sleeps == []
