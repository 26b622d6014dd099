"""What every operator here shares: the connection id, the lazily built hook, durations, stable keys.

Every DAG file that uses an operator imports this module, and Airflow parses DAG files again and again: at
module level it imports only what its classes' definitions need. The client, its errors and lineage are
imported where they are used, when a task runs (CONTRIBUTING.md, "The DAG-parse path").
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import time
from collections.abc import Callable, Mapping
from datetime import timedelta
from functools import cached_property
from typing import TYPE_CHECKING, Any, Literal

from airflow.providers.common.compat.sdk import BaseOperator, conf

from airflow_provider_analytics.hooks import DEFAULT_CONN_ID

if TYPE_CHECKING:
    from typing import Concatenate, ParamSpec, TypeVar

    from airflow.providers.common.compat.sdk import Context

    from airflow_provider_analytics.hooks.analytics import AnalyticsHook
    from airflow_provider_analytics.operators.links import AnalyticsLink
    from airflow_provider_analytics.wire._calls import Call
    from airflow_provider_analytics.wire.errors import AnalyticsInputError

    S = TypeVar("S")
    T = TypeVar("T")
    P = ParamSpec("P")
    R = TypeVar("R")

# Stop waiting this long before the task's execution_timeout (a tenth of it, at most 15 s), so our own
# deadline fires first and ends the wait cleanly instead of Airflow killing the task.
EXECUTION_TIMEOUT_MARGIN = 15.0
# The default of every ``deferrable`` here, as Airflow's own deferrable operators take it; read once per process
# (a read costs about 0.1 ms, and a DAG file that imports the operators would pay it per class at every parse).
DEFAULT_DEFERRABLE: bool = conf.getboolean("operators", "default_deferrable", fallback=False)


def _input_error(message: str) -> AnalyticsInputError:
    """The error for a bad argument; the client's errors are imported only when one is raised."""
    from airflow_provider_analytics.wire.errors import AnalyticsInputError

    return AnalyticsInputError(message)


def seconds(value: float | int | timedelta | None, what: str, *, allow_none: bool = True) -> float | None:
    """Normalise a duration given as seconds or a ``timedelta``; fail clearly on anything else.

    :param value: the duration.
    :param what: the parameter's name, for the message.
    :param allow_none: whether ``None`` (no limit) is accepted.
    """
    if value is None:
        if allow_none:
            return None
        raise _input_error(f"{what} is required (seconds or a timedelta)")
    if isinstance(value, timedelta):
        value = value.total_seconds()
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        raise _input_error(f"{what} must be a positive number of seconds or a timedelta, got {value!r}")
    return float(value)


_SHAPES: dict[str, tuple[tuple[type, ...], str]] = {
    "mapping": ((Mapping,), "a mapping (dict)"),
    "list": ((list, tuple), "a list"),
}


def check_templated(value: object, what: str, shape: Literal["mapping", "list"] = "mapping") -> None:
    """Refuse a rendered template field that is not the ``shape`` it must be (``None`` is left to the caller).

    A string gets the one fix for it: Jinja renders to text unless the DAG renders native objects. We do not
    parse the text as JSON: a value that only looks right (a Python repr, a half-rendered template) would be
    sent as something else than the DAG author wrote.

    :param value: the field's value after rendering.
    :param what: the parameter's name, for the message.
    :param shape: ``mapping`` (a dict) or ``list``.
    """
    types, noun = _SHAPES[shape]
    if value is None or isinstance(value, types):
        return
    if isinstance(value, str):  # the value itself is not shown: templated fields may carry secrets
        raise _input_error(
            f"{what} must be {noun}, got str: a template renders to a string unless the DAG sets "
            f'render_template_as_native_obj=True. Set it on the DAG so that {what}="{{{{ params.{what} }}}}" or '
            f"\"{{{{ dag_run.conf.get('{what}', ...) }}}}\" renders to {noun}, or pass {noun} itself"
        )
    raise _input_error(f"{what} must be {noun}, got {type(value).__name__}")


def check_poke_durations(arguments: Mapping[str, Any]) -> None:
    """A sensor's ``poke_interval`` and ``timeout``, checked before ``BaseSensorOperator`` sees them.

    Its own checks differ between Airflow releases; these name the argument and what to give.

    :param arguments: the keyword arguments the sensor hands on to ``BaseSensorOperator``.
    """
    for name in ("poke_interval", "timeout"):
        if name in arguments:
            seconds(arguments[name], name)


def poll_seconds(value: float | int | timedelta, what: str = "poll_interval") -> float:
    """A poll interval in seconds, at least ``MIN_POLL_INTERVAL`` so a task can never flood the platform.

    :param value: the interval, in seconds or as a ``timedelta``.
    :param what: the parameter's name, for the message.
    """
    from airflow_provider_analytics.wire._contract import MIN_POLL_INTERVAL

    interval = seconds(value, what, allow_none=False)
    if interval is None or interval < MIN_POLL_INTERVAL:
        raise _input_error(f"{what} must be at least {MIN_POLL_INTERVAL:g} s, got {value!r}")
    return interval


def task_instance_key(context: Context, purpose: str, basis: object = None) -> str:
    """An ``Idempotency-Key`` that is the same for every attempt of this task instance and ``basis``.

    A retried task that repeats a POST with it gets the platform's first answer back instead of
    creating or starting the work a second time.

    :param context: the task's context.
    :param purpose: what the POST does (``execute``, ``create``, ...), so keys of different calls differ.
    :param basis: anything that should make a fresh key (for example the id of a failed earlier run).
    """
    ti = context["ti"]
    identity = [ti.dag_id, ti.run_id, ti.task_id, ti.map_index, purpose, basis]
    digest = hashlib.sha256(json.dumps(identity, default=str).encode()).hexdigest()
    return f"apa-{purpose}-{digest[:40]}"


def task_deadline(task: Any, context: Mapping[str, Any]) -> float | None:
    """Epoch seconds by which a step of the task must end (``None``: no limit), the same for all of its calls.

    The earlier of the task's ``timeout`` (a wait's, or a sensor's: counted from the sensor's first poke in
    reschedule mode, as Airflow counts it) and just before its ``execution_timeout`` (EXECUTION_TIMEOUT_MARGIN).

    :param task: the operator or sensor.
    :param context: the step's context.
    """
    deadlines = []
    ti = context.get("ti")
    timeout = getattr(task, "timeout", None)
    if isinstance(timeout, (int, float)) and not isinstance(timeout, bool):
        began = None
        first_poke = getattr(ti, "get_first_reschedule_date", None)
        if getattr(task, "mode", None) == "reschedule" and not getattr(task, "deferrable", False) and first_poke:
            try:  # Airflow 3's task instance knows; Airflow 2's sensor asks the database, which it may not reach
                began = first_poke(context)
            except Exception:  # then count from this poke, as the first one does
                began = None
        deadlines.append((began.timestamp() if began is not None else time.time()) + float(timeout))
    execution_timeout = getattr(task, "execution_timeout", None)
    if execution_timeout is not None:
        # Airflow 2.11's dag.test() runs tasks without a start_date: count from now, moments after it.
        start = getattr(ti, "start_date", None)
        started = start.timestamp() if start is not None else time.time()
        limit = execution_timeout.total_seconds()
        deadlines.append(started + limit - min(EXECUTION_TIMEOUT_MARGIN, limit / 10))
    return min(deadlines) if deadlines else None


def task_step(method: Callable[Concatenate[S, P], R]) -> Callable[Concatenate[S, P], R]:
    """Decorate ``execute`` and ``execute_complete``: what every step of a task does around its work.

    Every call the step makes to the platform, a name lookup, a start, a poll or poke, a download, ends by the
    task's deadline (:func:`task_deadline`), also while the token is paused by the platform's rate limit: the step
    runs inside one :func:`~airflow_provider_analytics.wire._deadline.call_deadline`, which a wait's polls share
    (each still gets ``LAST_LOOK_SECONDS``, a last short look at the deadline). When the step ends, returning,
    deferring or failing, the task's hook is closed (its HTTP connection pool would otherwise outlive the step: a
    deferred task's operator is never used again); what it returns is kept for lineage (``lineage/_recording.py``).
    An error a retry cannot change (:func:`why_final`) is raised again as :class:`FinalFailure`, so the task fails
    without using its retries. A subclass that overrides either method decorates it too.
    """

    @functools.wraps(method)
    def run(self: S, /, *args: P.args, **kwargs: P.kwargs) -> R:
        from airflow_provider_analytics.lineage._recording import RESULT, keep
        from airflow_provider_analytics.operators.errors import FinalFailure, why_final
        from airflow_provider_analytics.wire._deadline import LAST_LOOK_SECONDS, call_deadline

        context = args[0] if args else kwargs.get("context")
        deadline = task_deadline(self, context) if isinstance(context, Mapping) else None
        try:
            with call_deadline(None if deadline is None else max(0.0, deadline - time.time()) + LAST_LOOK_SECONDS):
                result = method(self, *args, **kwargs)
            keep(self, RESULT, result)
            return result
        except Exception as exc:
            reason = why_final(exc, failed_work_is_final=getattr(self, "failed_work_is_final", False))
            if reason is None:
                raise
            retries = getattr(self, "retries", 0)
            if retries:
                self.log.error("Failing without using the task's %d retries: %s", retries, reason)  # type: ignore[attr-defined]
            raise FinalFailure.because(exc, reason) from None  # the error is in its message and `error`
        finally:
            if "hook" in self.__dict__:  # only a hook this step built or used; never build one to close it
                self.__dict__["hook"].close()

    return run


class HookOwner:
    """The task's hook, built on first use (``cached_property``), never at DAG parse time.

    :func:`task_step` closes it when ``execute`` or ``execute_complete`` ends; it is built again if used
    afterwards.
    """

    @cached_property
    def hook(self) -> AnalyticsHook:
        """The hook for ``analytics_conn_id``."""
        from airflow_provider_analytics.hooks.analytics import AnalyticsHook

        return AnalyticsHook(analytics_conn_id=self.analytics_conn_id)  # type: ignore[attr-defined]

    def read(self, call: Call[T]) -> T:
        """Send a read of the work waited on (every poll of a task, on the worker or a sensor's poke).

        A token refused while the task waits (rotated, its grace over) makes the hook read its connection once
        more, as the triggers' does (``hooks/_reread.py``): a wait held on the worker can last hours, and the
        secrets backend may hold a new token by now. A refusal right after that re-read is final.

        :param call: the request, from the work's description (``_jobs/<kind>.py``).
        """
        from airflow_provider_analytics.hooks._reread import TokenRefusals

        refusals = TokenRefusals(self.log)  # type: ignore[attr-defined]
        return self.hook.rereading(lambda hook: hook.call(call), refusals)


class AnalyticsBaseOperator(HookOwner, BaseOperator):
    """Base for this provider's operators; the hook is built on first use, never at DAG parse time.

    :param analytics_conn_id: the Airflow connection of type ``analytics``.
    """

    # The URL of each extra link this try pushed, by XCom key (``""``: none), where this process knows it: from
    # the start of a try (``execute``) on, and handed across a deferral; ``None`` elsewhere (DAG parsing, the UI,
    # the resume of a deferral made by an earlier release of this provider). ``AnalyticsLink.get_link`` answers
    # from it instead of reading an XCom that may not exist (operators/links.py).
    pushed_links: dict[str, str] | None = None

    def __init__(self, *, analytics_conn_id: str = DEFAULT_CONN_ID, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.analytics_conn_id = analytics_conn_id

    def ui_link(self, path: str) -> str | None:
        """A link into the platform UI, or ``None`` when the connection has no ``ui_url``."""
        base = self.hook.ui_url
        return f"{base}/{path.lstrip('/')}" if base else None

    def publish_link(self, context: Context, link: type[AnalyticsLink], path: str) -> None:
        """Push the link to ``path`` in the platform UI (nothing without ``ui_url``), and note what was pushed.

        :param context: the task's context.
        :param link: the link's class.
        :param path: the page in the platform UI.
        """
        from airflow_provider_analytics.version_compat import link_xcom_key

        url = self.ui_link(path)
        link.persist(context, url)
        self.pushed_links = {**(self.pushed_links or {}), link_xcom_key(link()): url or ""}


def handed_links(deferral: object) -> dict[str, str] | None:
    """The links a task pushed before it deferred, from the ``deferral`` it handed to its resume.

    :param deferral: ``execute_complete``'s ``deferral`` argument (``None`` from a deferral of an earlier release).
    """
    links = deferral.get("links") if isinstance(deferral, Mapping) else None
    if not isinstance(links, Mapping):
        return None
    return {str(key): str(url or "") for key, url in links.items()}


def resumed_line(what: str, event: Mapping[str, Any], deferral: object) -> str:
    """The INFO line of a task resumed from the triggerer: what it waited for, how that ended, and how long.

    :param what: the work waited for (``Wait.describe()``).
    :param event: the checked trigger event.
    :param deferral: ``execute_complete``'s ``deferral`` argument (its ``at``: epoch seconds when the task deferred).
    """
    at = deferral.get("at") if isinstance(deferral, Mapping) else None
    waited = ""
    if isinstance(at, (int, float)) and not isinstance(at, bool):
        # Measured on the resuming worker's clock, not the deferring one's: never report a negative wait.
        waited = f" after {max(0.0, time.time() - at):.1f} s"
    return f"Resumed from the triggerer{waited} waiting for {what}: {event.get('status')} ({event.get('message')})"
