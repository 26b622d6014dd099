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
from typing import TYPE_CHECKING, Any, NoReturn

from airflow.providers.common.compat.sdk import ResumableJobMixin

from airflow_provider_analytics import operators  # its _runtime: what a task uses once it runs
from airflow_provider_analytics.operators._common import (
    DEFAULT_DEFERRABLE,
    check_templated,
    task_instance_key,
    task_step,
)
from airflow_provider_analytics.operators.links import AnalyticsLink
from airflow_provider_analytics.operators.waiting import RemoteWaitOperator, TaskTry, started_over

if TYPE_CHECKING:
    from airflow.providers.common.compat.sdk import Context

    from airflow_provider_analytics._jobs.base import RemoteJob, StartableJob

__all__ = ["RemoteJobOperator"]


class RemoteJobOperator(ResumableJobMixin, RemoteWaitOperator):
    """Start one piece of remote work and wait for it; a concrete operator is configuration of this class.

    It names the kind of work (``job``, a description in ``_jobs/``: how it starts, is found again, read,
    judged, cancelled and named), the task's arguments the start takes (attributes named by
    ``job.start_arguments``), its template fields, its extra link (the work's page) and ``external_id_key``
    (where ``task_state_store`` keeps the work's id). This class is the only place Airflow's
    ``ResumableJobMixin`` is adapted.

    :param wait_for_completion: wait until the work is finished; else return it as started.
    :param deferrable: wait in the triggerer instead of holding a worker slot.
    :param poll_interval: seconds (or a ``timedelta``) between polls.
    :param timeout: seconds (or a ``timedelta``) to wait at most; ``None`` waits without limit.
    :param cancel_on_kill: cancel the remote work when the task is killed or times out.
    """

    @property
    @abstractmethod
    def job(self) -> type[StartableJob]:
        """The description of the work this task starts (``_jobs/<kind>.py``), from the runtime seam."""

    def __init__(
        self,
        *,
        wait_for_completion: bool = True,
        deferrable: bool = DEFAULT_DEFERRABLE,
        poll_interval: float | timedelta = 10,
        timeout: float | timedelta | None = None,
        cancel_on_kill: bool = True,
        **kwargs: Any,
    ) -> None:
        super().__init__(deferrable=deferrable, poll_interval=poll_interval, timeout=timeout, **kwargs)
        self.wait_for_completion = wait_for_completion
        self.cancel_on_kill = cancel_on_kill

    @property
    def cancels_on_kill(self) -> bool:
        return self.cancel_on_kill

    def resolve_names(self) -> None:
        """Names given instead of ids: look them up (once per try, one listing) and set the ids they stand for.

        A deferred task resumes with the ids in its event and never looks a name up again.
        """
        names = {name: getattr(self, name, None) for name in self.job.name_arguments}
        if all(value is None for value in names.values()):
            return
        for attribute, value in self.job.resolve_names(self.hook, **names).items():
            setattr(self, attribute, value)
            given = next(name for name, ids in self.job.name_arguments.items() if ids == attribute)
            self.log.info("Resolved %s=%r to %s=%r", given, names[given], attribute, value)

    def start_arguments(self) -> dict[str, Any]:
        """The (rendered) arguments the start sends, by the names ``job.start_arguments`` gives."""
        return {name: getattr(self, name) for name in self.job.start_arguments}

    # The flow: execute, then the mixin calls submit_job, or get_job_status and is_job_*, then
    # poll_until_complete and get_job_result ----------------------------------------------------------

    @task_step
    def execute(self, context: Context) -> Any:
        self.resolve_names()
        arguments = self.start_arguments()
        for name in self.job.mapping_arguments:
            check_templated(arguments[name], name)
        self.job.validate(**arguments)
        self.begin_try(context)
        return self.execute_resumable(context)

    def submit_job(self, context: Context) -> Any:
        store = context.get("task_state_store")
        if store is not None and self.durable:
            # Airflow 3.3's mixin already reattached to stored work that is running or succeeded; it calls
            # this for a first start (nothing stored) or after failed work, whose id makes the next key.
            # Not durable (always so in common-compat's stand-in), the mixin neither reads nor writes the
            # store: the key chain is then the only memory of earlier tries.
            resource = self._start(context, store.get(self.external_id_key))
            work = self.job.from_answer(resource, **self.start_arguments())
            self.log.info("Started %s (status %s)", work.describe(), resource.get("status"))
        else:
            resource = self.find_or_start(context)
            work = self.job.from_answer(resource, **self.start_arguments())
        task_try = self._current_try()
        task_try.seen, task_try.running = (work, resource), work  # from here on, on_kill can cancel it
        self._publish_once(context, work)
        return work.external_id

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
        arguments = self.start_arguments()
        previous: Any = None
        for _ in range(try_number - 1):  # the links earlier tries can have started
            work = self.job.from_answer(self._start(context, previous), **arguments)
            resource: Mapping[str, Any] = self.read(work.fetch())
            outcome, status, what = work.outcome(resource), resource.get("status"), work.describe()
            if outcome is None:
                self.log.info("Retry %d found %s still %s: waiting for it", try_number, what, status)
                return resource
            if outcome == "success":
                self.log.info("Retry %d found %s %s: returning it, starting nothing", try_number, what, status)
                return resource
            self.log.info("Retry %d found %s %s: moving on to the next start", try_number, what, status)
            previous = self.job.from_answer(resource, **arguments).external_id
        resource = self._start(context, previous)  # the one link this try may start itself
        verb = "Started" if try_number == 1 else f"Retry {try_number} started (or found again)"
        what = self.job.from_answer(resource, **arguments).describe()
        self.log.info("%s %s (status %s)", verb, what, resource.get("status"))
        return resource

    def _start(self, context: Context, previous: Any) -> Mapping[str, Any]:
        """Start (or, within 24 hours of the first use of its key, replay) the link after ``previous``."""

        key = task_instance_key(context, self.job.kind, previous)
        try:
            return self.job.start(self.hook, key, **self.start_arguments())
        except operators._runtime.ConflictError as exc:
            # The platform keeps the first request of a key; a repeat with another body gets 409. A retry
            # repeats the first try's key, so its request (inputs, parameters) rendered differently.
            raise operators._runtime.RequestChangedBetweenTries(
                f"the platform refused to start the {self.job.noun} with Idempotency-Key {key}, which an earlier "
                f"try of this task instance already used with another request ({exc}); a retry must send the "
                "same request to find that try's work again: render nothing that changes between tries",
                idempotency_key=key,
                conflict=exc,
            ) from exc

    def get_job_status(self, external_id: Any, context: Context) -> str:
        work = self.job.from_external_id(external_id)
        resource: Mapping[str, Any] = self.read(work.fetch())
        task_try = self._current_try()
        # Kept: the mixin next waits for it or returns it, and neither reads it again (one GET to reattach).
        task_try.running, task_try.seen = work, (work, resource)
        return str(resource.get("status"))

    def is_job_active(self, status: str) -> bool:
        return self.job.verdict(status) is None

    def is_job_succeeded(self, status: str) -> bool:
        return self.job.verdict(status) == "success"

    # The mixin declares None but returns this value when it reattaches to running work.
    def poll_until_complete(self, external_id: Any, context: Context) -> Mapping[str, Any]:  # type: ignore[override]
        task_try = self._current_try()
        task_try.running = work = self.job.from_external_id(external_id)
        self._publish_once(context, work)
        resource = self._last_seen(work)
        if not self.wait_for_completion:
            return resource
        resource, outcome = self.wait_for(work, resource, task_try.deadline)
        task_try.seen = (work, resource)
        return self._finish(work, resource, outcome)

    def get_job_result(self, external_id: Any, context: Context) -> Any:
        work = self.job.from_external_id(external_id)
        # Work a retry found succeeded in task_state_store is published too, as the key-chain walk does.
        self._publish_once(context, work)
        return dict(self._last_seen(work))

    @task_step
    def execute_complete(self, context: Context, event: Any = None, deferral: Mapping[str, Any] | None = None) -> Any:
        """Resume after the trigger fired: check the event is ours and well-formed, then finish.

        :param context: the task's context.
        :param event: the trigger's event.
        :param deferral: what the deferring process handed over (:meth:`deferral`).
        """
        if started_over(self.log, event, context):
            return self.execute(context)
        store = context.get("task_state_store")
        started = store.get(self.external_id_key) if store is not None else None
        expected = self.job.from_external_id(started) if started is not None else None
        work, resource, outcome = self.resume(event, expected, deferral)
        for attribute in self.job.name_arguments.values():
            if getattr(self, attribute, None) is None:  # given by name: the event names the work (for lineage)
                setattr(self, attribute, getattr(work, attribute, None))
        return self._finish(work, resource, outcome, resumed=True)

    def get_openlineage_facets_on_complete(self, task_instance: Any) -> Any:
        """OpenLineage: what the work read and wrote, its ids and final state (docs/lineage.md).

        :param task_instance: the finished task instance.
        """
        return operators._runtime.lineage_for(self, task_instance, self.job.lineage_operation)

    def get_openlineage_facets_on_failure(self, task_instance: Any) -> Any:
        """OpenLineage for a failed run: the work's ids, status and error (docs/lineage.md).

        :param task_instance: the failed task instance.
        """
        return operators._runtime.lineage_for(self, task_instance, self.job.lineage_operation, failed=True)

    def on_kill(self) -> None:
        task_try = self._try
        if task_try is None:
            return  # killed before the try started: nothing of it to cancel
        task_try.killed = True
        if self.cancel_on_kill and task_try.running is not None:
            self.log.info("Task killed: cancelling %s", task_try.running.describe())
            self._cancel_quietly(task_try.running)

    # Helpers ------------------------------------------------------------------------------------------

    def _current_try(self) -> TaskTry:
        if self._try is None:  # the mixin calls back only from execute, which begins the try
            raise RuntimeError(f"{self.task_id}: the mixin called back before execute began the try")
        return self._try

    def _last_seen(self, work: StartableJob) -> Mapping[str, Any]:
        """The work as last read in this try, read now only if this try has not seen it yet."""
        task_try = self._current_try()
        if task_try.seen is not None and task_try.seen[0] == work:
            return task_try.seen[1]
        resource: Mapping[str, Any] = self.read(work.fetch())
        task_try.seen = (work, resource)
        return resource

    def _publish_once(self, context: Context, work: StartableJob) -> None:
        """Push the work's id and link (the start and the wait each get the id: push once), keep it for lineage."""
        task_try = self._current_try()
        if task_try.published == work:
            return
        operators._runtime.keep(
            self, operators._runtime.STARTED, work.external_id
        )  # for lineage, before publishing: a failed push must not lose it
        context["ti"].xcom_push(key=self.job.xcom_key, value=work.xcom_value)
        for link in self.operator_extra_links:  # the work's page in the platform UI
            if isinstance(link, AnalyticsLink):
                self.publish_link(context, type(link), work.ui_path)
        task_try.published = work

    def _finish(
        self, work: RemoteJob, resource: Mapping[str, Any], outcome: str, *, resumed: bool = False
    ) -> dict[str, Any]:
        if outcome != "success":
            self.failed(work, resource)
        if not resumed:  # a resumed task's "Resumed from the triggerer" line said it already
            self.log.info("%s", work.state_of(resource))
        return dict(resource)

    def failed(self, work: RemoteJob, resource: Mapping[str, Any]) -> NoReturn:
        if self._try is not None and self._try.killed:
            raise operators._runtime.RemoteJobFailed(
                f"the task was killed; {work.describe()} was cancelled"
                if self.cancel_on_kill
                else f"the task was killed; {work.state_of(resource)} (cancel_on_kill is off)"
            )
        super().failed(work, resource)

    def give_up(self, work: RemoteJob, resource: Mapping[str, Any], early: str | None = None) -> NoReturn:
        """Cancel the work (with ``cancel_on_kill``), then fail the task for its timeout."""
        cancelled = self.cancel_on_kill and self._cancel_quietly(work)
        raise operators._runtime.RemoteJobTimeout(
            self.timeout_message(work, resource, cancelled=cancelled, early=early)
        )

    def _cancel_quietly(self, work: RemoteJob) -> bool:
        cancel = work.cancel()
        if cancel is None:
            return False
        try:
            self.hook.call(cancel)
        except operators._runtime.ConflictError:
            return False  # it finished meanwhile: nothing to cancel
        except operators._runtime.AnalyticsError as exc:
            self.log.warning("Could not cancel %s: %s", work.describe(), exc)
            return False
        return True
