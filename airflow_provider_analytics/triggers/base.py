"""The one poll loop every trigger runs; a concrete trigger only names its work (``_jobs/<kind>.py``).

A trigger only reads: it never starts or creates anything, so the triggerer may restart it from its
serialized kwargs at any time without side effects.
"""

from __future__ import annotations

import asyncio
import random
import time
from abc import abstractmethod
from collections.abc import AsyncIterator, Mapping
from typing import Any, ClassVar

from airflow.triggers.base import BaseTrigger, TriggerEvent

from airflow_provider_analytics._jobs.base import JobKind, RemoteJob
from airflow_provider_analytics._jobs.events import EventStatus, wait_event
from airflow_provider_analytics._jobs.pauses import ends_past, past_deadline, pause_now
from airflow_provider_analytics.hooks._metrics import waiting, work_ended
from airflow_provider_analytics.hooks.async_analytics import AnalyticsAsyncHook
from airflow_provider_analytics.hooks.base import DEFAULT_CONN_ID
from airflow_provider_analytics.triggers._polling import PlatformPoller
from airflow_provider_analytics.wire._contract import MIN_POLL_INTERVAL
from airflow_provider_analytics.wire._deadline import call_deadline
from airflow_provider_analytics.wire.errors import TRANSIENT_ERRORS as TRANSIENT_ERRORS  # 1.0.0 listed it here
from airflow_provider_analytics.wire.errors import AnalyticsError, ApiErrorFields, ConflictError, api_error_fields

# How long a kill may spend cancelling the remote work before it gives up (and logs that it did).
ON_KILL_SECONDS = 30.0
# No first poll sooner than this after the trigger starts (or one interval, when a shorter one was asked for).
# A trigger that fires within about a second of its deferral races the deferring worker's exit: the
# executor's late "success" for that try reaches a scheduler that has already queued the resumed task, and
# Airflow fails the try ("finished with state success, but the task instance's state attribute is queued";
# apache/airflow #67287, #72716, #71580; 3.2.2 fixed only the "scheduled" case, #66374). bench/deferral_race.py
# measures it; docs/troubleshooting.md, "A deferred task failed with only INFO lines", says what it costs.
FIRST_POLL_FLOOR_SECONDS = 3.0
# The status before the first poll: unlike any status (None included), so the first state seen is logged.
_NOTHING_SEEN = object()
__all__ = ["AnalyticsPollTrigger"]


class AnalyticsPollTrigger(BaseTrigger):
    """Polls one platform resource until it is done, failed, or the deadline passes.

    Its events are ``WaitEvent`` payloads (``_jobs/events.py``). What is waited on (its ids) is each subclass's
    own keyword arguments, read back by :attr:`job`.

    :param poll_interval: seconds between polls (at least ``MIN_POLL_INTERVAL``; less is raised to it, so a
        bad value can never flood the platform).
    :param deadline: epoch seconds after which the trigger gives up with a ``timeout`` event; every poll
        is bounded by the time left until then.
    :param analytics_conn_id: the Airflow connection of type ``analytics``.
    :param cancel_on_kill: cancel the remote work when a user kills the deferred task (Airflow 3.3+ calls
        :meth:`on_kill` on mark-failed, mark-success and clear; a triggerer restart never does).
    :param try_number: the task try that deferred; echoed in the event so that a later try can tell an
        event it was wrongly resumed with (Airflow 3.0) from its own.
    """

    # The kind of its work, readable from the class (the task checks an event's kind against it).
    kind: ClassVar[JobKind]

    def __init__(
        self,
        *,
        poll_interval: float,
        deadline: float | None = None,
        analytics_conn_id: str = DEFAULT_CONN_ID,
        cancel_on_kill: bool = False,
        try_number: int | None = None,
    ) -> None:
        super().__init__()  # type: ignore[no-untyped-call]  # Airflow leaves it unannotated
        interval = float(poll_interval)
        # Kwargs may come from any earlier serialization: clamp rather than fail inside the triggerer.
        self.poll_interval = interval if interval >= MIN_POLL_INTERVAL else MIN_POLL_INTERVAL
        self.deadline = deadline
        self.analytics_conn_id = analytics_conn_id
        self.cancel_on_kill = cancel_on_kill
        self.try_number = try_number

    @property
    @abstractmethod
    def job(self) -> RemoteJob:
        """What is waited on: its ids, its request, its verdict, its cancel (``_jobs/<kind>.py``)."""

    @property
    def target(self) -> dict[str, Any]:
        """The ids (and settings) that identify what is waited on; serialized as kwargs."""
        return self.job.target

    async def fetch(self, hook: AnalyticsAsyncHook) -> Mapping[str, Any]:
        """Read the work's state once, with its description's request (every poll of :meth:`run` calls this).

        :param hook: the trigger's async hook.
        """
        resource: Mapping[str, Any] = await hook.call(self.job.fetch())
        return resource

    def serialize(self) -> tuple[str, dict[str, Any]]:
        """Class path and JSON-compatible kwargs; ``__init__`` of the same class accepts them back."""
        kwargs = {
            **self.target,
            "poll_interval": self.poll_interval,
            "deadline": self.deadline,
            "analytics_conn_id": self.analytics_conn_id,
            "cancel_on_kill": self.cancel_on_kill,
        }
        if self.try_number is not None:  # absent when the task did not say (and from triggers made before)
            kwargs["try_number"] = self.try_number
        return f"{type(self).__module__}.{type(self).__qualname__}", kwargs

    @property
    def described(self) -> str:
        """What is waited on, in the words the task uses (``execution ex_1 of workflow wf_2``)."""
        return self.job.describe()

    def _event(
        self,
        status: EventStatus,
        resource: Mapping[str, Any] | None,
        message: str,
        api_error: ApiErrorFields | None = None,
    ) -> TriggerEvent:
        payload = wait_event(status, self.kind, self.target, resource, message, self.try_number, api_error)
        return TriggerEvent(payload)  # type: ignore[no-untyped-call]

    async def run(self) -> AsyncIterator[TriggerEvent]:
        """Poll until the resource is done or failed, a permanent error occurs, or the deadline passes."""
        # Counted in this process's waits in flight from the hook's opening to the event (hooks/_metrics.py).
        with waiting(self.kind):
            async with AnalyticsAsyncHook(self.analytics_conn_id) as hook:
                resource: Mapping[str, Any] | None = None
                last_status: object = _NOTHING_SEEN
                poller = PlatformPoller(hook, self.log, self.described)
                await self._stagger_start()
                while True:
                    try:
                        paused = await self._paused_past_deadline(hook)
                        # A poll gets the time left, but at least a last short look once the deadline is near.
                        fetched = None if paused is not None else await poller.poll(self.fetch, self.deadline)
                        if fetched is None and paused is None:  # a poll the client refused unsent, for a pause?
                            paused = await self._paused_past_deadline(hook)
                    except AnalyticsError as exc:
                        message = f"polling {self.described} failed: {exc}"
                        yield self._event("error", resource, message, api_error_fields(exc))
                        return
                    if paused is not None:
                        yield self._event("timeout", resource, paused)
                        return
                    if fetched is not None:
                        resource = fetched
                        outcome = self.job.outcome(resource)
                        if outcome is not None:
                            work_ended(self.kind, outcome, self.job.took(resource))
                            yield self._event(outcome, resource, self.job.state_of(resource))
                            return
                        # A state change at INFO (the first state seen counts as one), a poll that saw none at DEBUG:
                        # a wait of hours must not fill the triggerer's log with one line per poll.
                        log = self.log.info if resource.get("status") != last_status else self.log.debug
                        last_status = resource.get("status")
                        log("%s; next check in %g s", self.job.state_of(resource), self.poll_interval)
                    remaining = None if self.deadline is None else self.deadline - time.time()
                    if remaining is not None and remaining <= 0:
                        yield self._event("timeout", resource, f"gave up waiting for {self.described}")
                        return
                    await asyncio.sleep(self.poll_interval if remaining is None else min(self.poll_interval, remaining))

    async def _paused_past_deadline(self, hook: AnalyticsAsyncHook) -> str | None:
        """The timeout's message (logged) when a rate-limit pause of the token lasts past the deadline, else ``None``.

        No poll could then be answered in time: the wait ends now, naming the header, rather than at its deadline
        after polls the client refuses unsent (``_jobs/pauses.py``).

        :param hook: the trigger's hook (its current client: a re-read connection may have replaced it).
        """
        pause = pause_now(await hook.get_client())
        if pause is None or self.deadline is None or not ends_past(pause, self.deadline):
            return None
        message = f"gave up waiting for {self.described}: {past_deadline(pause, self.deadline)}"
        self.log.warning("%s", message)
        return message

    async def _stagger_start(self) -> None:
        """Wait ``FIRST_POLL_FLOOR_SECONDS`` (at most one interval), then a random part of one interval.

        The task (or the trigger before a triggerer restart) has just looked, so nothing is lost. The floor keeps
        a wait that is already over from firing inside Airflow's deferral race (see the constant); the random
        part, on top of the floor rather than clamped up to it, keeps a triggerer that starts a thousand waits at
        once polling them spread over the interval instead of all in the same instant, which would hold its event
        loop for every one of them in turn. A deadline nearer than that is kept: the first poll is then its last
        look.
        """
        remaining = None if self.deadline is None else self.deadline - time.time()
        first = min(FIRST_POLL_FLOOR_SECONDS, self.poll_interval) + self.poll_interval * random.random()
        if remaining is not None:
            first = min(first, max(0.0, remaining))
        await asyncio.sleep(first)

    async def on_kill(self) -> None:
        """A user killed the deferred task: cancel the remote work if ``cancel_on_kill`` says so.

        ``cleanup()`` keeps Airflow's default: it runs on every exit, a triggerer restart included, so it
        must never cancel anything; the client is closed when :meth:`run` ends.
        """
        cancel = self.job.cancel()
        if not self.cancel_on_kill or cancel is None:
            return
        async with AnalyticsAsyncHook(self.analytics_conn_id) as hook:
            try:
                with call_deadline(ON_KILL_SECONDS):
                    await hook.call(cancel)
            except ConflictError:
                self.log.info("The task was killed; %s had already finished", self.described)
                return
            except AnalyticsError as exc:
                self.log.warning("The task was killed, but cancelling %s failed: %s", self.described, exc)
                return
        self.log.info("The task was killed: cancelled %s", self.described)
