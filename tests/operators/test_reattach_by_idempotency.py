"""A retry without ``task_state_store`` (every Airflow before 3.3) reattaches through Idempotency-Key replay.

Each test runs tries 1, 2, 3 of one task instance against the sandbox, with a fresh operator per try as
Airflow builds one, and counts what the sandbox started. None of it depends on the release: the context
carries no ``task_state_store``, as on Airflow 2.11 to 3.2.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from airflow.providers.common.compat.sdk import TaskDeferred

from airflow_provider_analytics.operators._common import task_instance_key
from airflow_provider_analytics.operators.errors import RemoteJobFailed, RequestChangedBetweenTries
from airflow_provider_analytics.operators.jobs import RemoteJobOperator
from airflow_provider_analytics.operators.reports import GenerateReportOperator
from airflow_provider_analytics.operators.workflows import ExecuteWorkflowOperator
from airflow_provider_analytics.sandbox.server import SandboxServer
from airflow_provider_analytics.wire.errors import ConflictError
from tests.support.context import INSTANT, SLOW, StubTaskStateStore, retry_context
from tests.support.final import raises_final
from tests.support.names import POLL, WORKFLOW
from tests.support.releases import HAS_TASK_STATE_STORE
from tests.support.triggers import triggerer_event

# On SLOW timings (600 s a state): after this much sandbox time the work is running, and after DONE it ended.
RUNNING = 700
DONE = 1300
DAY = 24 * 3600


@dataclass(frozen=True)
class Work:
    """One kind of remote work a job operator starts, and how the sandbox is told how it ends."""

    kind: str
    start_path: str
    make: Callable[..., RemoteJobOperator]
    records: Callable[[SandboxServer], list[dict[str, Any]]]
    end_as: Callable[[SandboxServer, bool], None]
    # Operator arguments that make a different start request than the default one.
    changed_request: dict[str, Any]

    def operator(self, **kwargs: Any) -> RemoteJobOperator:
        return self.make(poll_interval=POLL, **kwargs)

    def start_keys(self, sandbox: SandboxServer) -> list[str]:
        """The Idempotency-Key of every start request, in order."""
        return [r.headers["idempotency-key"] for r in sandbox.state.requests if r.path == self.start_path]


def _end_execution(sandbox: SandboxServer, succeed: bool) -> None:
    if succeed:
        sandbox.state.set_execution_outcome(WORKFLOW, "succeeded")
    else:
        sandbox.state.set_execution_outcome(WORKFLOW, "failed", error="warehouse unavailable")


EXECUTION = Work(
    kind="execution",
    start_path=f"/v1/workflows/{WORKFLOW}/execute",
    make=lambda **kwargs: ExecuteWorkflowOperator(task_id="task", workflow_id=WORKFLOW, **kwargs),
    records=lambda sandbox: [e for e in sandbox.state.executions() if e["workflow_id"] == WORKFLOW],
    end_as=_end_execution,
    changed_request={"inputs": {"day": "2026-11-21"}},
)
REPORT = Work(
    kind="report",
    start_path="/v1/reports",
    make=lambda **kwargs: GenerateReportOperator(task_id="task", dashboard_ids=["db_sales"], format="csv", **kwargs),
    records=lambda sandbox: sandbox.state.reports(),
    end_as=lambda sandbox, succeed: sandbox.state.set_report_outcome("ready" if succeed else "failed"),
    changed_request={"parameters": {"region": "emea"}},
)

pytestmark = pytest.mark.parametrize("work", [EXECUTION, REPORT], ids=lambda work: work.kind)


def first_try_defers(sandbox: SandboxServer, work: Work) -> dict[str, Any]:
    """Try 1 starts the work and defers (then its worker is gone); returns the work as the sandbox has it."""
    sandbox.state.set_timings(SLOW)
    with pytest.raises(TaskDeferred):
        work.operator(deferrable=True).execute(retry_context(1))
    (record,) = work.records(sandbox)
    return record


def deferred_target(work: Work, try_number: int) -> dict[str, Any]:
    """Run a deferrable try that must defer; the target of the trigger it deferred with."""
    with pytest.raises(TaskDeferred) as deferred:
        work.operator(deferrable=True).execute(retry_context(try_number))
    return dict(deferred.value.trigger.target)


def target_of(work: Work, record: dict[str, Any]) -> dict[str, Any]:
    op = work.operator()
    return op.job.from_answer(record, **op.start_arguments()).target


def outcome_of(work: Work, record: dict[str, Any]) -> str | None:
    op = work.operator()
    return op.job.from_answer(record, **op.start_arguments()).outcome(record)


def external_id_of(work: Work, record: dict[str, Any]) -> Any:
    op = work.operator()
    return op.job.from_answer(record, **op.start_arguments()).external_id


def test_first_try_starts_the_work_with_one_post(sandbox: SandboxServer, work: Work) -> None:
    sandbox.state.set_timings(SLOW)
    context = retry_context(1)

    result = work.operator(wait_for_completion=False).execute(context)

    (record,) = work.records(sandbox)
    assert result["id"] == record["id"]
    assert [r.method for r in sandbox.state.requests].count("POST") == 1
    assert work.start_keys(sandbox) == [task_instance_key(context, work.kind, None)]


def test_first_try_without_waiting_sends_no_get(sandbox: SandboxServer, work: Work) -> None:
    sandbox.state.set_timings(SLOW)
    work.operator(wait_for_completion=False).execute(retry_context(1))
    assert [r.method for r in sandbox.state.requests] == ["POST"]


def test_retry_while_running_reattaches(sandbox: SandboxServer, work: Work) -> None:
    started = first_try_defers(sandbox, work)
    sandbox.state.advance(RUNNING)

    for try_number in (2, 3):
        result = work.operator(wait_for_completion=False).execute(retry_context(try_number))
        assert result["id"] == started["id"]
        assert result["status"] in ("running", "generating")

    assert [r["id"] for r in work.records(sandbox)] == [started["id"]]
    # Every try repeated the first key; the platform replayed it and started nothing.
    assert len(set(work.start_keys(sandbox))) == 1
    assert len(work.start_keys(sandbox)) == 3


def test_retry_waits_on_the_worker_for_the_running_work_it_found(sandbox: SandboxServer, work: Work) -> None:
    started = first_try_defers(sandbox, work)
    # About a second and a half of the running state is left when the retry finds it.
    sandbox.state.advance(1200 - 1.5)

    result = work.operator().execute(retry_context(2))

    assert result["id"] == started["id"]
    assert outcome_of(work, result) == "success"
    assert [r["id"] for r in work.records(sandbox)] == [started["id"]]


def test_deferred_retry_defers_on_the_same_work(sandbox: SandboxServer, work: Work) -> None:
    started = first_try_defers(sandbox, work)
    sandbox.state.advance(RUNNING)

    with pytest.raises(TaskDeferred) as deferred:
        work.operator(deferrable=True).execute(retry_context(2))

    assert deferred.value.trigger.target == target_of(work, started)
    assert len(work.records(sandbox)) == 1
    sandbox.state.advance(DONE)
    context = retry_context(2)
    result = work.operator(deferrable=True).execute_complete(context, triggerer_event(deferred.value.trigger))
    assert result["id"] == started["id"]
    assert outcome_of(work, result) == "success"


def test_retry_after_success_returns_it_without_starting_or_waiting(sandbox: SandboxServer, work: Work) -> None:
    started = first_try_defers(sandbox, work)
    sandbox.state.advance(DONE)
    before = len(sandbox.state.requests)

    # Deferrable: any wait would raise TaskDeferred instead of returning.
    result = work.operator(deferrable=True).execute(retry_context(2))

    assert result["id"] == started["id"]
    assert outcome_of(work, result) == "success"
    assert [r["id"] for r in work.records(sandbox)] == [started["id"]]
    retry_posts = [r for r in sandbox.state.requests[before:] if r.method == "POST"]
    assert [(r.path, r.status) for r in retry_posts] == [(work.start_path, 202)]  # the replay of try 1's start


def test_retry_after_failure_starts_one_fresh_then_reattaches_to_it(sandbox: SandboxServer, work: Work) -> None:
    work.end_as(sandbox, False)
    failed = first_try_defers(sandbox, work)
    sandbox.state.advance(DONE)
    work.end_as(sandbox, True)

    fresh_target = deferred_target(work, 2)

    records = work.records(sandbox)
    assert len(records) == 2
    (fresh,) = [r for r in records if r["id"] != failed["id"]]
    assert fresh_target == target_of(work, fresh)
    assert outcome_of(work, next(r for r in records if r["id"] == failed["id"])) == "failure"

    # A further retry finds the failed one, then the fresh one still queued: it defers on that, starts nothing.
    assert deferred_target(work, 3) == fresh_target
    sandbox.state.advance(RUNNING)
    assert deferred_target(work, 4) == fresh_target
    assert len(work.records(sandbox)) == 2


def test_each_try_starts_at_most_one_even_when_work_fails_at_once(sandbox: SandboxServer, work: Work) -> None:
    sandbox.state.set_timings(INSTANT)
    work.end_as(sandbox, False)

    for try_number in (1, 2, 3):
        with pytest.raises(RemoteJobFailed) as failed:
            work.operator().execute(retry_context(try_number))
        records = work.records(sandbox)
        assert len(records) == try_number
        # The task fails for the work this try started, named in the error.
        assert records[-1]["id"] in str(failed.value)


def test_the_walk_uses_the_key_chain_of_the_task_state_store_path(sandbox: SandboxServer, work: Work) -> None:
    """key(n+1) = task_instance_key(context, kind, id of work n): what the 3.3 path makes from the stored id."""
    sandbox.state.set_timings(INSTANT)
    work.end_as(sandbox, False)
    for try_number in (1, 2, 3):
        with pytest.raises(RemoteJobFailed):
            work.operator().execute(retry_context(try_number))
    chain = work.records(sandbox)
    op = work.operator()
    context = retry_context(3)
    expected = [task_instance_key(context, work.kind, None)]
    expected += [task_instance_key(context, work.kind, external_id_of(work, record)) for record in chain[:-1]]
    assert list(dict.fromkeys(work.start_keys(sandbox))) == expected

    # The store path itself (Airflow 3.3's ResumableJobMixin leaves durable=True; the stand-in before 3.3
    # forces it off, so it is set here to run that branch on every release), given each failed id as the
    # store returns it after a JSON round trip, starts nothing new: it replays the walk's next link.
    for stored, following in itertools.pairwise(chain):
        store_op = work.operator()
        store_op.durable = True
        store = StubTaskStateStore({op.external_id_key: json.loads(json.dumps(external_id_of(work, stored)))})
        context = retry_context(3, task_state_store=store)
        store_op.begin_try(context)  # what execute does before the mixin calls submit_job
        with store_op.hook:  # submit_job is called alone here, not in a task step that would close it
            assert store_op.submit_job(context) == external_id_of(work, following)
    assert len(work.records(sandbox)) == 3


@pytest.mark.skipif(not HAS_TASK_STATE_STORE, reason="Airflow's own ResumableJobMixin with task_state_store: 3.3")
def test_the_store_path_reattaches_to_work_the_walk_started(sandbox: SandboxServer, work: Work) -> None:
    work.end_as(sandbox, False)
    failed = first_try_defers(sandbox, work)
    sandbox.state.advance(DONE)
    work.end_as(sandbox, True)
    fresh_target = deferred_target(work, 2)  # started by the walk, with no store

    op = work.operator(deferrable=True)
    store = StubTaskStateStore({op.external_id_key: json.loads(json.dumps(external_id_of(work, failed)))})
    with pytest.raises(TaskDeferred) as deferred:
        op.execute(retry_context(3, task_state_store=store))

    assert deferred.value.trigger.target == fresh_target
    assert len(work.records(sandbox)) == 2


def test_a_retry_after_the_platform_forgot_the_key_starts_fresh(sandbox: SandboxServer, work: Work) -> None:
    """The platform keeps a key 24 hours: a retry later than that cannot find the first work (docs/operators.md)."""
    started = first_try_defers(sandbox, work)
    sandbox.state.advance(DAY + 1)

    target = deferred_target(work, 2)

    records = work.records(sandbox)
    assert len(records) == 2
    assert target != target_of(work, started)


def test_a_retry_whose_request_changed_fails_clearly(sandbox: SandboxServer, work: Work) -> None:
    first_try_defers(sandbox, work)

    with raises_final(RequestChangedBetweenTries, match="already used with another request") as refused:
        work.operator(**work.changed_request).execute(retry_context(2))

    assert "render nothing that changes between tries" in str(refused.value)
    assert len(work.records(sandbox)) == 1
    # It names the key both tries sent and the refusal's request id; the platform's 409 is its cause.
    first, retried = work.start_keys(sandbox)
    refusal = sandbox.state.requests[-1]
    assert (refusal.path, refusal.status) == (work.start_path, 409)
    assert refused.value.idempotency_key == first == retried
    assert refused.value.request_id == refusal.request_id
    assert isinstance(refused.value.__cause__, ConflictError)
