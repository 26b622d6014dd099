"""DataSourceSyncedEventTrigger(data_source_name=...) against the sandbox over real sockets (issue 27).

The stored form keeps the name, never the id it resolves to; the watcher looks the name up once when it starts
polling and then fires exactly as a watcher given the id. A name that matches none or several is a permanent
error: logged at ERROR once, looked up again at every interval, never an event.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from airflow_provider_analytics.version_compat import AIRFLOW_V_3_0_PLUS

if not AIRFLOW_V_3_0_PLUS:
    pytest.skip("asset watchers need Airflow 3.0", allow_module_level=True)

from airflow_provider_analytics.hooks.analytics import AnalyticsHook
from airflow_provider_analytics.sandbox.server import SandboxServer
from airflow_provider_analytics.triggers.asset_events import DataSourceSyncedEventTrigger
from airflow_provider_analytics.wire.errors import AnalyticsInputError
from tests.support.names import DATA_SOURCE, POLL
from tests.support.triggers import rebuilt_through_trigger_row, requests_to
from tests.triggers.test_asset_events import SYNC_PATH, logged, more_polls, synced
from tests.triggers.watching import Watching, as_the_triggerer_builds_it, until

CLASSPATH = "airflow_provider_analytics.triggers.asset_events.DataSourceSyncedEventTrigger"
LIST_PATH = "/v1/data-sources"


def by_name(name: str = "warehouse") -> DataSourceSyncedEventTrigger:
    return DataSourceSyncedEventTrigger(data_source_name=name, poll_interval=POLL)


def test_the_stored_form_keeps_the_name() -> None:
    classpath, kwargs = by_name().serialize()
    assert classpath == CLASSPATH
    assert kwargs == {"data_source_name": "warehouse", "analytics_conn_id": "analytics_default", "poll_interval": POLL}
    rebuilt = rebuilt_through_trigger_row(by_name())
    assert rebuilt.serialize() == by_name().serialize()
    assert rebuilt.data_source_id is None  # not looked up at parse time, nor when rebuilt
    # A watcher given the id stores exactly what it always did.
    assert list(DataSourceSyncedEventTrigger(data_source_id=DATA_SOURCE).serialize()[1]) == [
        "data_source_id",
        "analytics_conn_id",
        "poll_interval",
    ]


@pytest.mark.parametrize(
    "kwargs",
    [{}, {"data_source_id": DATA_SOURCE, "data_source_name": "warehouse"}, {"data_source_name": ""}],
    ids=["neither", "both", "empty-name"],
)
def test_exactly_one_of_id_and_name(kwargs: dict[str, Any]) -> None:
    with pytest.raises(AnalyticsInputError, match="data_source_name"):
        DataSourceSyncedEventTrigger(**kwargs)


def test_a_watcher_by_name_looks_it_up_once_and_fires_as_one_by_id(
    sandbox: SandboxServer, hook: AnalyticsHook, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    async def scenario() -> list[list[dict[str, Any]]]:
        by_id = DataSourceSyncedEventTrigger(data_source_id=DATA_SOURCE, poll_interval=POLL)
        async with (
            Watching(as_the_triggerer_builds_it(by_name())) as named,
            Watching(as_the_triggerer_builds_it(by_id)) as plain,
        ):
            await more_polls(sandbox, 4)
            await synced(sandbox)
            await until("both events", lambda: len(named.events) == 1 and len(plain.events) == 1)
            await more_polls(sandbox, 4)
        return [named.payloads, plain.payloads]

    named, plain = asyncio.run(scenario())

    assert named == plain == [dict(hook.get_sync_status(DATA_SOURCE))]
    assert len(requests_to(sandbox, LIST_PATH)) == 1  # one lookup, however many polls followed
    assert len(logged(capsys, caplog, "info", f"Resolved data source name 'warehouse' to {DATA_SOURCE}")) == 1


def test_a_name_that_matches_none_or_several_is_logged_once_and_looked_up_again(
    sandbox: SandboxServer, hook: AnalyticsHook, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    hook.connect_data_source("warehouse", "postgres", {"host": "db", "database": "x", "user": "u"})

    async def scenario() -> list[dict[str, Any]]:
        async with Watching(as_the_triggerer_builds_it(by_name())) as watching:
            await until("three lookups", lambda: len(requests_to(sandbox, LIST_PATH)) >= 3)
        return watching.payloads

    assert asyncio.run(scenario()) == []
    assert requests_to(sandbox, SYNC_PATH) == []  # nothing polled without an id
    [error] = logged(capsys, caplog, "error", "2 data sources are named 'warehouse'")  # once, though looked up again
    assert DATA_SOURCE in error
