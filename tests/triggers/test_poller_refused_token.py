"""A poller whose re-read token was refused too reads its connection again later, not on every poll, not never.

Found by reading the poller after a soak: a watcher polls for ever, so a token rotated in the secrets backend only
after the old one was refused (the re-read found a token that was refused as well) must not leave it refused
until the triggerer restarts.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time

import pytest

from airflow_provider_analytics.hooks.async_analytics import AnalyticsAsyncHook
from airflow_provider_analytics.sandbox.server import SandboxServer
from airflow_provider_analytics.triggers._polling import PlatformPoller
from airflow_provider_analytics.wire import _endpoints as endpoints
from airflow_provider_analytics.wire.errors import UnauthenticatedError
from tests.support.names import CONN_ENV, DATA_SOURCE
from tests.support.triggers import requests_to

# Long enough that the three quick polls after the first re-read fit in it on a loaded 2-core CI machine.
AGAIN_AFTER = 3.0
PATH = f"/v1/data-sources/{DATA_SOURCE}/sync"


def test_a_refused_reread_is_tried_again_after_a_while(sandbox: SandboxServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(CONN_ENV, sandbox.connection_json())
    log = logging.getLogger("test.poller")

    async def scenario() -> list[str]:
        outcomes = []
        async with AnalyticsAsyncHook() as hook:
            poller = PlatformPoller(hook, log, "the sync status", reload_again_after=AGAIN_AFTER)

            async def poll() -> str:
                try:
                    status = await poller.poll(lambda h: h.call(endpoints.get_sync_status(DATA_SOURCE)), budget=10)
                except UnauthenticatedError:
                    return "refused"
                return "answered" if status is not None else "transient"

            outcomes.append(await poll())
            new, _ = sandbox.state.tokens.rotate(sandbox.token, 0, sandbox.state.now())
            os.environ[CONN_ENV] = sandbox.connection_json(token="a-token-the-platform-never-issued")
            outcomes.append(await poll())  # 401, re-read: another refused token
            outcomes.append(await poll())  # 401 at once: no re-read so soon after the last
            os.environ[CONN_ENV] = sandbox.connection_json(token=new)
            outcomes.append(await poll())  # still too soon: the secrets backend's new token is not read yet
            await asyncio.sleep(AGAIN_AFTER + 0.1)
            outcomes.append(await poll())  # 401, re-read, the new token: answered
            outcomes.append(await poll())
        return outcomes

    started = time.monotonic()
    outcomes = asyncio.run(scenario())

    assert outcomes == ["answered", "refused", "refused", "refused", "answered", "answered"]
    assert requests_to(sandbox, PATH) == [200, 401, 401, 401, 401, 401, 200, 200]
    assert time.monotonic() - started < 20
