"""Start remote work, then wait for it on the worker or by deferring, without ever starting it twice.

:class:`RemoteJobOperator` is the one implementation of "start, push ids and links, check, wait or defer,
validate the event, cancel on kill" behind ``ExecuteWorkflowOperator`` and ``GenerateReportOperator``.
A retried task reattaches to running work, returns succeeded work, and starts afresh only after a failure:

- Airflow 3.3's ``ResumableJobMixin`` stores the remote id in ``task_state_store`` right after the start
  and decides from it (the fast path: one GET).
- Without a ``task_state_store`` (every release before 3.3, common-compat's stand-in, ``durable=False``)
  the retry finds its work through the platform's ``Idempotency-Key`` replay: it walks the same chain of
  keys the 3.3 path uses (:meth:`RemoteJobOperator.find_or_start`).

The start's key is derived from the task instance and the previous (failed) id, so even a worker that dies
between the start and storing the id gets the same work back on its retry.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Mapping
from datetime import timedelta
from typing import Any, ClassVar, NoReturn

from airflow.providers.common.compat.sdk import Context, ResumableJobMixin, conf

from airflow_provider_analytics.deprecation import moved_names
from airflow_provider_analytics.lineage.recording import STARTED, keep
from airflow_provider_analytics.operators import errors
from airflow_provider_analytics.operators.common import task_instance_key, task_step
from airflow_provider_analytics.operators.waiting import RemoteWaitOperator
from airflow_provider_analytics.waits.base import Wait
from airflow_provider_analytics.wire.errors import AnalyticsError, ConflictError
from airflow_provider_analytics.wire.outcomes import Outcome

__all__ = ["RemoteJobOperator"]
# The failures are defined in operators/errors.py, their one home; importing them from here warns until 2.0.0.
__getattr__ = moved_names(__name__, errors.__name__, errors.__all__)


class RemoteJobOperator(ResumableJobMixin, RemoteWaitOperator):
    """Base of operators that start one piece of remote work and wait for it.

    :param wait_for_completion: wait until the work is finished; else return it as started.
    :param deferrable: wait in the triggerer instead of holding a worker slot.
    :param poll_interval: seconds (or a ``timedelta``) between polls.
    :param timeout: seconds (or a ``timedelta``) to wait at most; ``None`` waits without limit.
    :param cancel_on_kill: cancel the remote work when the task is killed or times out.
    """

    # The name of the work in ``lineage/extract.py`` (its ``OPERATIONS``): ``execute_workflow``, ``generate_report``.
    lineage_operation: ClassVar[str]

    def __init__(
        self,
        *,
        wait_for_completion: bool = True,
        deferrable: bool = conf.getboolean("operators", "default_deferrable", fallback=False),
        poll_interval: float | timedelta = 10,
        timeout: float | timedelta | None = None,
        cancel_on_kill: bool = True,
        **kwargs: Any,
    ) -> None:
        super().__init__(deferrable=deferrable, poll_interval=poll_interval, timeout=timeout, **kwargs)
        self.wait_for_completion = wait_for_completion
        self.cancel_on_kill = cancel_on_kill
        self._running: Wait | None = None  # the work on_kill cancels, once started or found
        self._killed = False
        # The mixin asks for the work's status, waits for it, then asks for its result, each by id: the last
        # answer read is kept here so each of those steps reuses it instead of reading the work again.
        self._seen: tuple[Any, Mapping[str, Any]] | None = None
        self._published: Any = None  # the id whose XCom and link are already pushed

    # What a concrete operator says --------------------------------------------------------------------

    @abstractmethod
    def validate(self) -> None:
        """Check the (rendered) arguments before any request; raise with what to change."""

    @abstractmethod
    def start(self, context: Context, idempotency_key: str) -> Mapping[str, Any]:
        """Start the work; return it as the platform answered.

        :param context: the task's context.
        :param idempotency_key: the start's key (the same on every try that must find the same work).
        """

    @abstractmethod
    def external_id(self, resource: Mapping[str, Any]) -> Any:
        """The JSON value that identifies the work (stored in ``task_state_store``).

        :param resource: the work as the platform answered.
        """

    @abstractmethod
    def waiting_on(self, external_id: Any) -> Wait:
        """The wait for the work an external id names.

        :param external_id: as :meth:`external_id` made it (or as an earlier try stored it).
        """

    @abstractmethod
    def publish(self, context: Context, external_id: Any) -> None:
        """Push ids and links to XCom so users can follow the work while it runs.

        :param context: the task's context.
        :param external_id: the work.
        """

    @property
    def cancels_on_kill(self) -> bool:
        return self.cancel_on_kill

    # The flow ----------------------------------------------------------------------------------------

    @task_step
    def execute(self, context: Context) -> Any:
        self.pushed_links = {}  # a try starts in this process: it has pushed no link yet
        self.validate()
        self._deadline = self.begin_wait(context)
        return self.execute_resumable(context)

    def submit_job(self, context: Context) -> Any:
        store = context.get("task_state_store")
        if store is not None and self.durable:
            # Airflow 3.3's mixin already reattached to stored work that is running or succeeded; it calls
            # this for a first start (nothing stored) or after failed work, whose id makes the next key.
            # Not durable (always so in common-compat's stand-in), the mixin neither reads nor writes the
            # store: the key chain is then the only memory of earlier tries.
            resource = self._start(context, store.get(self.external_id_key))
            what = self.waiting_on(self.external_id(resource)).describe()
            self.log.info("Started %s (status %s)", what, resource.get("status"))
        else:
            resource = self.find_or_start(context)
        external_id = self._saw(resource)
        self._running = self.waiting_on(external_id)  # from here on, on_kill can cancel it
        self._publish_once(context, external_id)
        return external_id

    def find_or_start(self, context: Context) -> Mapping[str, Any]:
        """Without ``task_state_store``: find this task instance's work by replaying its start keys.

        Link ``n`` of the chain is the work started with ``task_instance_key(context, kind, W(n-1))``, where
        ``W(n-1)`` is the previous link's external id (``None`` for link 0): exactly the key the 3.3 path
        makes from the failed id it stored, so both paths walk one chain. A replayed POST returns the
        original (queued/pending) answer and starts nothing, so a retry GETs each link to see what became
        of it: running, it reattaches; succeeded, it returns it; failed, it moves on to the next link.

        Each try starts at most one link, so at try ``n`` the chain has at most ``n`` links and the ``n``-th
        can only be new work (or a replay of it). The walk stops there and hands the POST's answer to the
        wait, as a first try does: a fresh start costs one POST and no extra GET, and a try never starts a
        second piece of work, even when the one it started fails at once.

        :param context: the task's context (``ti.try_number`` bounds the walk).
        :raises ~airflow_provider_analytics.operators.errors.RequestChangedBetweenTries: a retry's start was
            refused with 409: its request is not the one an earlier try sent with the same key.
        """
        try_number = max(int(context["ti"].try_number or 1), 1)
        previous: Any = None
        for _ in range(try_number - 1):  # the links earlier tries can have started
            wait = self.waiting_on(self.external_id(self._start(context, previous)))
            resource = self.fetch(wait)
            outcome, status, what = wait.outcome(resource), resource.get("status"), wait.describe()
            if outcome is None:
                self.log.info("Retry %d found %s still %s: waiting for it", try_number, what, status)
                return resource
            if outcome == "success":
                self.log.info("Retry %d found %s %s: returning it, starting nothing", try_number, what, status)
                return resource
            self.log.info("Retry %d found %s %s: moving on to the next start", try_number, what, status)
            previous = self.external_id(resource)
        resource = self._start(context, previous)  # the one link this try may start itself
        verb = "Started" if try_number == 1 else f"Retry {try_number} started (or found again)"
        what = self.waiting_on(self.external_id(resource)).describe()
        self.log.info("%s %s (status %s)", verb, what, resource.get("status"))
        return resource

    def _start(self, context: Context, previous: Any) -> Mapping[str, Any]:
        """Start (or, within 24 hours of the first use of its key, replay) the link after ``previous``."""
        key = task_instance_key(context, self.wait_type.kind, previous)
        try:
            return self.start(context, key)
        except ConflictError as exc:
            # The platform keeps the first request of a key; a repeat with another body gets 409. A retry
            # repeats the first try's key, so its request (inputs, parameters) rendered differently.
            raise errors.RequestChangedBetweenTries(
                f"the platform refused to start the {self.noun} with Idempotency-Key {key}, which an earlier "
                f"try of this task instance already used with another request ({exc}); a retry must send the "
                "same request to find that try's work again: render nothing that changes between tries",
                idempotency_key=key,
                conflict=exc,
            ) from exc

    def get_job_status(self, external_id: Any, context: Context) -> str:
        self._running = wait = self.waiting_on(external_id)
        return str(self.fetch(wait).get("status"))

    def is_job_active(self, status: str) -> bool:
        return self._verdict(status) is None

    def is_job_succeeded(self, status: str) -> bool:
        return self._verdict(status) == "success"

    # The mixin declares None but returns this value when it reattaches to running work.
    def poll_until_complete(self, external_id: Any, context: Context) -> Mapping[str, Any]:  # type: ignore[override]
        self._running = wait = self.waiting_on(external_id)
        self._publish_once(context, external_id)
        resource = self._last_seen(external_id)
        if not self.wait_for_completion:
            return resource
        resource, outcome = self.wait_for(wait, resource, self._deadline)
        self._saw(resource)
        return self._finish(wait, resource, outcome)

    def get_job_result(self, external_id: Any, context: Context) -> Any:
        return dict(self._last_seen(external_id))

    @task_step
    def execute_complete(self, context: Context, event: Any = None, deferral: Mapping[str, Any] | None = None) -> Any:
        """Resume after the trigger fired: check the event is ours and well-formed, then finish.

        :param context: the task's context.
        :param event: the trigger's event.
        :param deferral: what the deferring process handed over (:meth:`deferral`).
        """
        if self.replayed_from_earlier_try(event, context):
            return self.execute(context)
        store = context.get("task_state_store")
        started = store.get(self.external_id_key) if store is not None else None
        expected = self.waiting_on(started) if started is not None else None
        wait, resource, outcome = self.resume(event, expected, deferral)
        return self._finish(wait, resource, outcome)

    def get_openlineage_facets_on_complete(self, task_instance: Any) -> Any:
        """OpenLineage: what the work read and wrote, its ids and final state (docs/lineage.md).

        :param task_instance: the finished task instance.
        """
        from airflow_provider_analytics.lineage.safe_entry import lineage_for

        return lineage_for(self, task_instance, self.lineage_operation)

    def get_openlineage_facets_on_failure(self, task_instance: Any) -> Any:
        """OpenLineage for a failed run: the work's ids, status and error (docs/lineage.md).

        :param task_instance: the failed task instance.
        """
        from airflow_provider_analytics.lineage.safe_entry import lineage_for

        return lineage_for(self, task_instance, self.lineage_operation, failed=True)

    def on_kill(self) -> None:
        self._killed = True
        if self.cancel_on_kill and self._running is not None:
            self.log.info("Task killed: cancelling %s", self._running.describe())
            self._cancel_quietly(self._running)

    # Helpers ------------------------------------------------------------------------------------------

    def _verdict(self, status: str) -> Outcome | None:
        # The mixin judges the work get_job_status just read (and set as running) by its status alone,
        # which is all an execution's or a report's verdict depends on.
        assert self._running is not None, "the mixin asks for a verdict only after get_job_status"
        return self._running.outcome({"status": status})

    def _saw(self, resource: Mapping[str, Any]) -> Any:
        """Keep the latest answer about the work; return its external id."""
        external_id = self.external_id(resource)
        self._seen = (external_id, resource)
        return external_id

    def _last_seen(self, external_id: Any) -> Mapping[str, Any]:
        """The work as last read in this try, read now only if this try has not seen it yet."""
        if self._seen is not None and self._seen[0] == external_id:
            return self._seen[1]
        resource = self.fetch(self.waiting_on(external_id))
        self._saw(resource)
        return resource

    def _publish_once(self, context: Context, external_id: Any) -> None:
        # The mixin's start and its wait each get the id; pushing it twice would only repeat the XCom rows.
        if self._published != external_id:
            keep(self, STARTED, external_id)  # for lineage, before publishing: a failed push must not lose it
            self.publish(context, external_id)
            self._published = external_id

    def _finish(self, wait: Wait, resource: Mapping[str, Any], outcome: str) -> dict[str, Any]:
        if outcome != "success":
            self.failed(wait, resource)
        self.log.info("%s", wait.state_of(resource))
        return dict(resource)

    def failed(self, wait: Wait, resource: Mapping[str, Any]) -> NoReturn:
        if self._killed:
            raise errors.RemoteJobFailed(
                f"the task was killed; {wait.describe()} was cancelled"
                if self.cancel_on_kill
                else f"the task was killed; {wait.state_of(resource)} (cancel_on_kill is off)"
            )
        super().failed(wait, resource)

    def give_up(self, wait: Wait, resource: Mapping[str, Any]) -> NoReturn:
        """Cancel the work (with ``cancel_on_kill``), then fail the task for its timeout."""
        cancelled = self.cancel_on_kill and self._cancel_quietly(wait)
        raise errors.RemoteJobTimeout(self.timeout_message(wait, resource, cancelled=cancelled))

    def _cancel_quietly(self, wait: Wait) -> bool:
        cancel = wait.cancel()
        if cancel is None:
            return False
        try:
            self.hook.client.call(cancel)
        except ConflictError:
            return False  # it finished meanwhile: nothing to cancel
        except AnalyticsError as exc:
            self.log.warning("Could not cancel %s: %s", wait.describe(), exc)
            return False
        return True
