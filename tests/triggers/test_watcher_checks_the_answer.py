"""An asset watcher never reports a sync status about another data source as its own (issue 33)."""

from __future__ import annotations

import asyncio
import json

import pytest
from airflow.triggers.base import TriggerEvent

from airflow_provider_analytics.sandbox.faults import Fault
from airflow_provider_analytics.sandbox.server import SandboxServer
from tests.support.names import JSON_HEADERS
from tests.triggers.test_asset_events import SYNC_PATH, logged, more_polls, watcher
from tests.triggers.watching import Watching, as_the_triggerer_builds_it

# A sync far newer than any the watcher has seen: reported at once, if it were taken as this source's.
OTHER = {"data_source_id": "ds_OTHER", "status": "synced", "last_synced_at": "2099-01-01T00:00:00Z", "error": None}


def test_a_sync_status_about_another_data_source_is_no_event(
    sandbox: SandboxServer, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    async def scenario() -> list[TriggerEvent]:
        async with Watching(as_the_triggerer_builds_it(watcher())) as watching:
            await more_polls(sandbox, 2)  # the watcher's baseline, from real answers
            wrong = Fault.respond(200, headers=JSON_HEADERS, body=json.dumps(OTHER), path=SYNC_PATH + "$", times=50)
            sandbox.state.inject(wrong)
            await more_polls(sandbox, 3)
        return watching.events

    assert asyncio.run(scenario()) == []
    [error] = logged(capsys, caplog, "error", "ds_OTHER")
    assert "answered about another object" in error
    assert "keep polling" in error
