"""Run event triggers the way Airflow's triggerer does (3.0 on), in a test's event loop.

- :func:`as_the_triggerer_builds_it` stores a watcher as the DAG processor does and rebuilds it from the
  ``Trigger`` row as the triggerer does, on every Airflow 3 release (``tests/support/triggers.py``).
- :class:`StateStoreSupervisor` (Airflow 3.3's ``asset_state_store``) answers the asset state store messages
  that Airflow's own ``AssetStateStoreAccessors`` send (in the triggerer they go to its supervisor and on to
  the database), so the trigger talks to the real accessor classes and a test can restart a watcher against
  the same store.
- :class:`Watching` runs one watcher in the background: through ``run()``, or, given a
  ``SharedStreamManager``, through ``shared_stream_key`` / ``subscribe`` / ``filter_shared_stream`` exactly as
  ``TriggerRunner.run_trigger`` does (3.3); it collects the events and cancels the watcher on exit (a restart).

The 3.3-only names (the state store's messages and accessors, shared streams) are imported where used, so
the rest works on 3.0 to 3.2.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import time
from collections.abc import Callable, Hashable
from typing import TYPE_CHECKING, Any

import pytest
from airflow.triggers.base import BaseEventTrigger, TriggerEvent

from tests.support.triggers import encode_watcher_trigger, instantiate, triggerer_kwargs

if TYPE_CHECKING:
    from airflow.triggers.shared_stream import SharedStreamManager

_trigger_ids = itertools.count(1)


class StateStoreSupervisor:
    """The asset state store behind the triggerer's supervisor: values by (asset name, key)."""

    def __init__(self) -> None:
        self.values: dict[tuple[str, str], Any] = {}
        self.sets: list[tuple[str, str, Any]] = []
        self.refuse_sets = 0  # answer this many set requests with an error, as an unreachable API would

    async def asend(self, msg: object) -> object:
        from airflow.sdk.exceptions import ErrorType
        from airflow.sdk.execution_time.comms import (
            AssetStateStoreResult,
            ErrorResponse,
            GetAssetStateStoreByName,
            OKResponse,
            SetAssetStateStoreByName,
        )

        if isinstance(msg, GetAssetStateStoreByName):
            if (msg.name, msg.key) in self.values:
                return AssetStateStoreResult(value=self.values[(msg.name, msg.key)])
            return ErrorResponse(error=ErrorType.ASSET_STORE_NOT_FOUND)
        if isinstance(msg, SetAssetStateStoreByName):
            if self.refuse_sets:
                self.refuse_sets -= 1
                raise ConnectionError("the API server is unreachable")
            self.values[(msg.name, msg.key)] = msg.value
            self.sets.append((msg.name, msg.key, msg.value))
            return OKResponse(ok=True)
        raise AssertionError(f"unexpected message to the supervisor: {msg!r}")


def install_state_store(monkeypatch: pytest.MonkeyPatch) -> StateStoreSupervisor:
    """A supervisor for the asset state store, installed where Airflow's accessors look for it (3.3)."""
    from airflow.sdk.execution_time import task_runner

    supervisor = StateStoreSupervisor()
    monkeypatch.setattr(task_runner, "SUPERVISOR_COMMS", supervisor, raising=False)
    return supervisor


def as_the_triggerer_builds_it(trigger: BaseEventTrigger, *asset_names: str) -> BaseEventTrigger:
    """A fresh instance from the trigger's stored form, given the state store of its watched assets.

    The DAG processor encodes the watcher's trigger and stores it in an encrypted ``Trigger`` row; the
    triggerer decrypts and decodes the kwargs, instantiates, then (Airflow 3.3) sets ``asset_state_store``
    for the assets that watch it. No asset names: no state store, as on Airflow 3.0 to 3.2.
    """
    from airflow.models.trigger import Trigger

    encoded = encode_watcher_trigger(trigger)
    row = Trigger(classpath=encoded["classpath"], kwargs=encoded["kwargs"])
    rebuilt: BaseEventTrigger = instantiate(row.classpath, triggerer_kwargs(row))
    if asset_names:
        from airflow.sdk import Asset
        from airflow.sdk.execution_time.context import AssetStateStoreAccessors

        rebuilt.asset_state_store = AssetStateStoreAccessors(inlets=[Asset(name=name) for name in asset_names])
    return rebuilt


class Watching:
    """One watcher running in the background of the test's event loop, its events collected.

    :param trigger: the watcher.
    :param shared: the triggerer's shared-stream manager, to run it as a shared-stream subscriber.
    """

    def __init__(self, trigger: BaseEventTrigger, shared: SharedStreamManager | None = None) -> None:
        self.trigger = trigger
        self.shared = shared
        self.events: list[TriggerEvent] = []
        self._task: asyncio.Task[None] | None = None
        self._key: Hashable | None = None
        self._id = next(_trigger_ids)

    async def __aenter__(self) -> Watching:
        self._task = asyncio.create_task(self._drain())
        return self

    async def _drain(self) -> None:
        if self.shared is not None and (key := self.trigger.shared_stream_key()) is not None:
            self._key = key
            stream = self.shared.subscribe(trigger_id=self._id, trigger=self.trigger, key=key)
            events = self.trigger.filter_shared_stream(stream)
        else:
            events = self.trigger.run()
        try:
            async for event in events:
                self.events.append(event)
        finally:
            if self.shared is not None and self._key is not None:
                await self.shared.unsubscribe(self._id, self._key)

    async def __aexit__(self, *exc_info: object) -> None:
        assert self._task is not None
        if self._task.done():
            self._task.result()  # a watcher must never end: surface why it did
            raise AssertionError("the watcher ended")
        self._task.cancel()  # what a triggerer restart does
        with contextlib.suppress(asyncio.CancelledError):
            await self._task

    @property
    def payloads(self) -> list[dict[str, Any]]:
        return [event.payload for event in self.events]


async def until(what: str, check: Callable[[], bool], seconds: float = 10.0) -> None:
    """Let the loop run until ``check()`` holds; fail naming ``what`` after ``seconds``."""
    deadline = time.monotonic() + seconds
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} did not happen within {seconds:g} s")
        await asyncio.sleep(0.02)
