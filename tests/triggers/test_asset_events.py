"""DataSourceSyncedEventTrigger against the sandbox over real sockets, run as Airflow's triggerer runs it.

Asset watchers exist from Airflow 3.0. The asset state store (the persisted watermark) and shared streams
are Airflow 3.3's: those tests skip before it, while what a watcher does without a store (docs/events.md:
a restart starts from now) runs on every Airflow 3. The store is Airflow's own ``AssetStateStoreAccessors``;
only the supervisor behind it (the triggerer's link to the database) is a dict here
(``tests/triggers/watching.py``). A "restart" cancels the watcher and builds a fresh one from its stored
form against the same store.
"""

from __future__ import annotations

import asyncio
import itertools
from typing import Any

import pytest

from airflow_provider_analytics.version_compat import AIRFLOW_V_3_0_PLUS, AIRFLOW_V_3_3_PLUS

if not AIRFLOW_V_3_0_PLUS:
    pytest.skip("asset watchers need Airflow 3.0", allow_module_level=True)

from airflow.triggers.base import TriggerEvent

from airflow_provider_analytics.hooks.analytics import AnalyticsHook
from airflow_provider_analytics.sandbox.faults import Fault
from airflow_provider_analytics.sandbox.server import SandboxServer
from airflow_provider_analytics.triggers.asset_events import DataSourceSyncedEventTrigger, watermark_key
from airflow_provider_analytics.wire._times import parse_time
from tests.support.names import DATA_SOURCE, POLL
from tests.support.triggers import requests_to, set_connection
from tests.triggers.watching import (
    StateStoreSupervisor,
    Watching,
    as_the_triggerer_builds_it,
    install_state_store,
    until,
)

NEEDS_STATE_STORE = pytest.mark.skipif(
    not AIRFLOW_V_3_3_PLUS, reason="asset_state_store (the persisted watermark) needs Airflow 3.3"
)
NEEDS_SHARED_STREAMS = pytest.mark.skipif(
    not AIRFLOW_V_3_3_PLUS, reason="shared streams (one poll for several watchers) need Airflow 3.3"
)
SYNC_PATH = f"/v1/data-sources/{DATA_SOURCE}/sync"
ASSET = "warehouse_synced"
KEY = watermark_key("analytics_default", DATA_SOURCE)


@pytest.fixture
def store(monkeypatch: pytest.MonkeyPatch) -> StateStoreSupervisor:
    return install_state_store(monkeypatch)


@pytest.fixture(
    params=[pytest.param(True, id="state-store", marks=NEEDS_STATE_STORE), pytest.param(False, id="no-state-store")]
)
def maybe_store(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> StateStoreSupervisor | None:
    """The asset state store (Airflow 3.3), or none: what a watcher does either way."""
    return install_state_store(monkeypatch) if request.param else None


def watcher(poll_interval: float = POLL, data_source_id: str = DATA_SOURCE) -> DataSourceSyncedEventTrigger:
    return DataSourceSyncedEventTrigger(data_source_id=data_source_id, poll_interval=poll_interval)


def polls(sandbox: SandboxServer, path: str = SYNC_PATH) -> int:
    return len(requests_to(sandbox, path))


async def more_polls(sandbox: SandboxServer, count: int, path: str = SYNC_PATH) -> None:
    seen = polls(sandbox, path)
    await until(f"{count} more polls", lambda: polls(sandbox, path) >= seen + count)


async def synced(sandbox: SandboxServer, outcome: str = "synced") -> None:
    """Start a sync and let it finish (the fast sandbox's sync takes 0.3 s)."""
    started = sandbox.state.start_sync(DATA_SOURCE, outcome=outcome)["last_attempt_at"]

    def done() -> bool:
        status = next(s["sync"] for s in sandbox.state.data_sources() if s["id"] == DATA_SOURCE)
        return bool(status["status"] == outcome and (outcome == "failed" or status["last_synced_at"] > started))

    await until(f"the sync {outcome}", done)


def logged(capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture, level: str, text: str) -> list[str]:
    """The trigger's log lines at ``level`` containing ``text``.

    Airflow 3.1+ logs through structlog, which writes them to stdout; 3.0 through the standard library.
    """
    printed = [line for line in capsys.readouterr().out.splitlines() if f"[{level}" in line and text in line]
    recorded = [
        record.getMessage()
        for record in caplog.records
        if record.levelname == level.upper() and text in record.getMessage()
    ]
    return printed + recorded


def later(payloads: list[dict[str, Any]]) -> bool:
    times = [parse_time(p["last_synced_at"]) for p in payloads]
    return all(a is not None and b is not None and a < b for a, b in itertools.pairwise(times))


def test_fires_once_for_each_new_sync_and_never_for_an_old_one(
    sandbox: SandboxServer, hook: AnalyticsHook, maybe_store: StateStoreSupervisor | None
) -> None:
    seeded = hook.get_sync_status(DATA_SOURCE)
    assets = (ASSET,) if maybe_store is not None else ()

    async def scenario() -> list[dict[str, Any]]:
        async with Watching(as_the_triggerer_builds_it(watcher(), *assets)) as watching:
            await more_polls(sandbox, 3)
            assert watching.events == []  # yesterday's seeded sync happened before the watcher existed
            await synced(sandbox)
            await until("the event", lambda: len(watching.events) == 1)
            await more_polls(sandbox, 5)
            assert len(watching.events) == 1  # the same sync, polled again, is no new event
            await synced(sandbox)
            await until("the second event", lambda: len(watching.events) == 2)
            await more_polls(sandbox, 3)
        return watching.payloads

    payloads = asyncio.run(scenario())

    assert len(payloads) == 2
    assert payloads[1] == hook.get_sync_status(DATA_SOURCE)  # the payload is the sync status itself
    assert payloads[1]["status"] == "synced"
    assert later([dict(seeded), *payloads])
    if maybe_store is not None:
        assert maybe_store.values[(ASSET, KEY)] == {"last_synced_at": payloads[1]["last_synced_at"]}


def test_a_failed_sync_is_no_event_and_is_logged_once(
    sandbox: SandboxServer, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    async def scenario() -> list[dict[str, Any]]:
        async with Watching(as_the_triggerer_builds_it(watcher())) as watching:
            await more_polls(sandbox, 2)
            await synced(sandbox, "failed")
            await more_polls(sandbox, 8)
            assert watching.events == []
            await synced(sandbox)
            await until("the event for the successful sync", lambda: len(watching.events) == 1)
        return watching.payloads

    [payload] = asyncio.run(scenario())

    assert payload["status"] == "synced"
    [failure] = logged(capsys, caplog, "warning", "not an event")  # once, though polled many times while failed
    assert "sync_failed" in failure  # the platform's error type, so the log says why


@NEEDS_STATE_STORE
def test_a_restart_repeats_nothing_and_loses_nothing(sandbox: SandboxServer, store: StateStoreSupervisor) -> None:
    async def scenario() -> list[list[dict[str, Any]]]:
        async with Watching(as_the_triggerer_builds_it(watcher(), ASSET)) as before:
            await more_polls(sandbox, 2)
            await synced(sandbox)
            await until("the event", lambda: len(before.events) == 1)
        # The triggerer is down; a sync finishes meanwhile. The new triggerer starts from the stored kwargs.
        await synced(sandbox)
        async with Watching(as_the_triggerer_builds_it(watcher(), ASSET)) as after:
            await until("the event for the sync missed while down", lambda: len(after.events) == 1)
            await more_polls(sandbox, 5)
        async with Watching(as_the_triggerer_builds_it(watcher(), ASSET)) as again:  # nothing new since
            await more_polls(sandbox, 5)
        return [before.payloads, after.payloads, again.payloads]

    before, after, again = asyncio.run(scenario())

    assert (len(before), len(after), len(again)) == (1, 1, 0)
    assert later([*before, *after])


def test_without_a_state_store_a_restart_starts_from_now(sandbox: SandboxServer) -> None:
    """The documented fallback (Airflow before 3.3): never a repeated event; a sync while down is not one."""

    async def scenario() -> list[list[dict[str, Any]]]:
        async with Watching(as_the_triggerer_builds_it(watcher())) as before:
            await more_polls(sandbox, 2)
            await synced(sandbox)
            await until("the event", lambda: len(before.events) == 1)
        await synced(sandbox)  # while the triggerer is down
        async with Watching(as_the_triggerer_builds_it(watcher())) as after:
            await more_polls(sandbox, 5)
            assert after.events == []
            await synced(sandbox)
            await until("the event for a sync after the restart", lambda: len(after.events) == 1)
        return [before.payloads, after.payloads]

    before, after = asyncio.run(scenario())

    assert (len(before), len(after)) == (1, 1)
    assert later([*before, *after])


@NEEDS_SHARED_STREAMS
def test_watchers_of_one_source_share_one_poll(sandbox: SandboxServer, store: StateStoreSupervisor) -> None:
    interval, window = 0.5, 3.0

    async def count_polls(*watchings: Watching) -> int:
        await more_polls(sandbox, 1)
        seen = polls(sandbox)
        await asyncio.sleep(window)
        return polls(sandbox) - seen

    async def scenario() -> tuple[int, int, list[list[dict[str, Any]]]]:
        from airflow.triggers.shared_stream import SharedStreamManager

        manager = SharedStreamManager()
        first = as_the_triggerer_builds_it(watcher(interval), "asset_a")
        second = as_the_triggerer_builds_it(watcher(interval), "asset_b")
        assert first.shared_stream_key() == second.shared_stream_key()
        async with Watching(first, manager) as a, Watching(second, manager) as b:
            shared = await count_polls(a, b)
            await synced(sandbox)
            await until("both events", lambda: len(a.events) == 1 and len(b.events) == 1)
        # The control: the same two watchers without shared streams (Airflow before 3.3) poll twice as often.
        first, second = (as_the_triggerer_builds_it(watcher(interval), name) for name in ("asset_c", "asset_d"))
        async with Watching(first) as c, Watching(second) as d:
            alone = await count_polls(c, d)
        return shared, alone, [a.payloads, b.payloads]

    shared, alone, payloads = asyncio.run(scenario())

    most = int(window / interval) + 1
    assert 2 <= shared <= most, f"{shared} polls in {window} s for two watchers sharing one stream"
    assert alone > most, f"the control made only {alone} polls"
    assert payloads[0] == payloads[1]
    assert store.values[("asset_a", KEY)] == store.values[("asset_b", KEY)]


def test_stream_keys_never_join_two_connections_or_sources() -> None:
    def key(**kwargs: Any) -> object:
        return DataSourceSyncedEventTrigger(**{"data_source_id": DATA_SOURCE, **kwargs}).shared_stream_key()

    assert key() == key(analytics_conn_id="analytics_default", poll_interval=60)
    assert key(analytics_conn_id="analytics_eu") != key(analytics_conn_id="analytics_us")
    assert key(data_source_id="ds_events") != key()
    assert key(poll_interval=10) != key(poll_interval=300)  # a watcher is never slowed to another's pace


@NEEDS_STATE_STORE
def test_one_trigger_for_two_assets_keeps_the_watermark_of_each(
    sandbox: SandboxServer, store: StateStoreSupervisor
) -> None:
    """Assets whose watchers serialize alike share one trigger; Airflow hands it both assets' stores."""

    async def scenario() -> list[list[dict[str, Any]]]:
        async with Watching(as_the_triggerer_builds_it(watcher(), "asset_a", "asset_b")) as both:
            await more_polls(sandbox, 2)
            await synced(sandbox)
            await until("the event", lambda: len(both.events) == 1)
            await more_polls(sandbox, 3)
        # Restarted with a third asset added meanwhile: the others' watermark holds for it too.
        async with Watching(as_the_triggerer_builds_it(watcher(), "asset_a", "asset_b", "asset_c")) as three:
            await more_polls(sandbox, 5)
        return [both.payloads, three.payloads]

    both, three = asyncio.run(scenario())

    assert (len(both), len(three)) == (1, 0)
    expected = {"last_synced_at": both[0]["last_synced_at"]}
    assert store.values[("asset_a", KEY)] == store.values[("asset_b", KEY)] == expected


@NEEDS_STATE_STORE
def test_a_refused_watermark_write_delays_the_event_instead_of_risking_a_repeat(
    sandbox: SandboxServer, store: StateStoreSupervisor
) -> None:
    async def scenario() -> list[dict[str, Any]]:
        async with Watching(as_the_triggerer_builds_it(watcher(), ASSET)) as watching:
            await more_polls(sandbox, 2)
            store.refuse_sets = 2
            await synced(sandbox)
            await until("the event once the store takes the watermark", lambda: len(watching.events) == 1)
            await more_polls(sandbox, 5)
        return watching.payloads

    [payload] = asyncio.run(scenario())

    assert store.refuse_sets == 0
    assert store.values[(ASSET, KEY)] == {"last_synced_at": payload["last_synced_at"]}


def test_a_missing_data_source_is_logged_once_and_the_watcher_keeps_polling(
    sandbox: SandboxServer, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    path = "/v1/data-sources/ds_missing/sync"

    async def scenario() -> list[TriggerEvent]:
        async with Watching(as_the_triggerer_builds_it(watcher(data_source_id="ds_missing"))) as watching:
            await more_polls(sandbox, 6, path)  # Watching's exit fails the test if the watcher had ended
        return watching.events

    assert asyncio.run(scenario()) == []
    assert set(requests_to(sandbox, path)) == {404}
    [error] = logged(capsys, caplog, "error", "ds_missing")
    assert "not found" in error
    assert "keep polling" in error


def test_transient_errors_keep_the_watcher_polling(
    sandbox: SandboxServer, maybe_store: StateStoreSupervisor | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    set_connection(monkeypatch, sandbox, max_retries=0)  # each 503 reaches the trigger, not the client's retries

    assets = (ASSET,) if maybe_store is not None else ()

    async def scenario() -> list[dict[str, Any]]:
        async with Watching(as_the_triggerer_builds_it(watcher(), *assets)) as watching:
            await more_polls(sandbox, 2)
            sandbox.state.inject(Fault.status(503, path=SYNC_PATH + "$", times=4))
            await synced(sandbox)
            await until("the event after the outage", lambda: len(watching.events) == 1, seconds=15)
        return watching.payloads

    [payload] = asyncio.run(scenario())

    assert payload["status"] == "synced"
    assert requests_to(sandbox, SYNC_PATH).count(503) == 4
