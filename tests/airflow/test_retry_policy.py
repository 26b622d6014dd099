"""AnalyticsRetryPolicy on a task that calls the hook itself, through real Airflow 3.3 runs."""

from __future__ import annotations

from datetime import timedelta

import pytest

from airflow_provider_analytics.operators.errors import FinalFailure
from airflow_provider_analytics.sandbox.server import SandboxServer
from airflow_provider_analytics.version_compat import HAS_TASK_RETRY_POLICIES
from airflow_provider_analytics.wire.errors import NotFoundError, RateLimitedError, ServerError
from tests.support.airflow_runs import RunDag, needs_airflow

needs_policies = needs_airflow("3.3", "task retry policies (retry_policy=) arrived with Airflow 3.3")


@needs_policies
def test_a_refused_request_spends_no_retry_with_the_policy(run_dag: RunDag, sandbox: SandboxServer) -> None:
    result = run_dag("test_retry_policy_with", workflow_id="wf_missing")
    assert (result.states["start"], result.tries["start"]) == ("failed", 1)


@needs_policies
def test_without_the_policy_the_same_task_spends_them_all(run_dag: RunDag, sandbox: SandboxServer) -> None:
    result = run_dag("test_retry_policy_without", workflow_id="wf_missing")
    assert (result.states["start"], result.tries["start"]) == ("failed", 3)


@needs_policies
def test_the_policys_decisions() -> None:
    from airflow.providers.common.compat.sdk import RetryAction

    from airflow_provider_analytics.operators.retry_policy import AnalyticsRetryPolicy

    policy = AnalyticsRetryPolicy()
    missing = NotFoundError("no such workflow", status=404, error_type="not_found")
    assert policy.evaluate(missing, 1, 3).action == RetryAction.FAIL
    wrapped = RuntimeError("my task failed")
    wrapped.__cause__ = missing
    assert policy.evaluate(wrapped, 1, 3).action == RetryAction.FAIL
    # An operator's execute called from a task: its FinalFailure holds the error as `error`, not chained.
    final = FinalFailure.because(missing, "the platform refused the request (404)")
    assert policy.evaluate(final, 1, 3).action == RetryAction.FAIL
    limited = RateLimitedError("slow down", retry_after=30.0, status=429, error_type="rate_limited")
    decision = policy.evaluate(limited, 1, 3)
    assert (decision.action, decision.retry_delay) == (RetryAction.RETRY, timedelta(seconds=30))
    down = ServerError("down", status=503, error_type="unavailable")
    assert policy.evaluate(down, 1, 3).action == RetryAction.DEFAULT
    assert AnalyticsRetryPolicy.deserialize(policy.serialize()).evaluate(missing, 1, 3).action == RetryAction.FAIL


@pytest.mark.skipif(HAS_TASK_RETRY_POLICIES, reason="the policy is built on Airflow 3.3 and later")
def test_building_the_policy_before_3_3_says_what_it_needs() -> None:
    from airflow_provider_analytics.operators.retry_policy import AnalyticsRetryPolicy

    with pytest.raises(RuntimeError, match=r"AnalyticsRetryPolicy needs Airflow 3\.3 or later"):
        AnalyticsRetryPolicy()
