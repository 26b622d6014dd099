"""``AnalyticsRetryPolicy``: Airflow 3.3's task retry policy (AIP-105) for tasks that call the platform themselves.

The provider's operators and sensor need no policy: an error a retry cannot change already fails them without
their retries (``operators/errors.py``: :func:`why_final`, :class:`FinalFailure`). A ``@task`` or
``PythonOperator`` that uses :class:`~airflow_provider_analytics.hooks.analytics.AnalyticsHook` directly gets
the same decisions with ``retry_policy=AnalyticsRetryPolicy()``, and one more: a refusal for the rate limit
(``RateLimitedError`` with a ``Retry-After``) is retried no sooner than the platform asked.

Retry policies exist from Airflow 3.3. The module imports on every release (so does all of the package), but
building the policy before 3.3 raises ``RuntimeError`` saying what it needs: those releases have no
``retry_policy=`` to give it to. The operators' own behaviour is the same on every release.
"""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING, Any

from airflow_provider_analytics.operators.errors import FinalFailure, why_final
from airflow_provider_analytics.version_compat import AIRFLOW_VERSION, HAS_TASK_RETRY_POLICIES
from airflow_provider_analytics.wire.errors import RateLimitedError

if TYPE_CHECKING or HAS_TASK_RETRY_POLICIES:
    from airflow.providers.common.compat.sdk import RetryDecision, RetryPolicy
else:  # a plain base, so that the class below can be defined (and documented) on every release
    RetryPolicy = object

__all__ = ["AnalyticsRetryPolicy"]

# How far down ``__cause__`` to look for the provider's error: a task may wrap it in its own exception.
_CAUSE_DEPTH = 5


class AnalyticsRetryPolicy(RetryPolicy):
    """Fail at once on what a retry cannot change; wait out a rate limit; leave the rest to ``retries``.

    - A refused request (400, 404, 410, 412, 413, 422), invalid input, a request that changed between tries:
      the task fails without using its retries.
    - ``RateLimitedError`` with a ``Retry-After``: retried after that long (or the task's ``retry_delay`` if
      that is longer), within its ``retries``.
    - Anything else (401/403, 5xx, lost connections, failed work): the task's own ``retries`` and
      ``retry_delay``.

    The provider's error may be the exception itself, its ``__cause__`` (``raise MyError(...) from error``) or
    the ``error`` of a :class:`~airflow_provider_analytics.operators.errors.FinalFailure` (an operator's
    ``execute`` called from a task).

    :raises RuntimeError: built on an Airflow before 3.3, which has no task retry policies.
    """

    def __init__(self) -> None:
        if not HAS_TASK_RETRY_POLICIES:
            raise RuntimeError(
                f"AnalyticsRetryPolicy needs Airflow 3.3 or later (task retry policies), this is Airflow "
                f"{AIRFLOW_VERSION}; the provider's operators fail without retries where a retry cannot help on "
                "every release"
            )

    def evaluate(self, exception: BaseException, try_number: int, max_tries: int, context: Any = None) -> RetryDecision:
        """Decide for one failure; Airflow calls this in the worker.

        :param exception: what the task raised.
        :param try_number: the try that failed (1-based).
        :param max_tries: the most tries the task has.
        :param context: the task's context (unused).
        """
        error: BaseException | None = exception
        for _ in range(_CAUSE_DEPTH):
            if error is None:
                break
            reason = why_final(error)
            if reason is not None:
                return RetryDecision.fail(reason)
            if isinstance(error, RateLimitedError) and error.retry_after:
                delay = timedelta(seconds=error.retry_after)
                task = getattr(context.get("ti"), "task", None) if isinstance(context, dict) else None
                configured = getattr(task, "retry_delay", None)
                if isinstance(configured, timedelta):
                    delay = max(delay, configured)
                return RetryDecision.retry(delay, f"rate limited: the platform asked to wait {error.retry_after:g} s")
            # A FinalFailure is raised ``from None`` (its error would show twice in the log): its error is ``error``.
            error = error.error if isinstance(error, FinalFailure) else error.__cause__
        return RetryDecision.default()

    def serialize(self) -> dict[str, Any]:
        """Nothing to keep: the policy has no settings."""
        return {}

    @classmethod
    def deserialize(cls, data: dict[str, Any]) -> AnalyticsRetryPolicy:
        """The policy back from :meth:`serialize`.

        :param data: what :meth:`serialize` returned.
        """
        return cls()
