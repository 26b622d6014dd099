"""Test data shared by unit tests: sandbox timings that never finish, and a task context's stand-ins."""

from __future__ import annotations

from typing import Any

from airflow_provider_analytics.sandbox.config import Timings


def every_state_lasting(seconds: float) -> Timings:
    """Sandbox timings in which every execution, sync and report state lasts ``seconds``.

    :param seconds: how long each state lasts on the sandbox clock.
    """
    return Timings(
        execution_queued=seconds,
        execution_running=seconds,
        sync_pending=seconds,
        sync_running=seconds,
        report_pending=seconds,
        report_generating=seconds,
    )


# Slow enough that nothing finishes while a test looks at it.
SLOW = every_state_lasting(600)
# Everything is finished by the first look.
INSTANT = every_state_lasting(0)


# Test data: the bits of a task's context the operators read -------------------------------------------


class StubTaskInstance:
    """The task instance attributes the operators use, recording XCom pushes."""

    dag_id = "analytics_dag"
    run_id = "manual__2026-11-20T00:00:00+00:00"
    task_id = "task"
    map_index = -1
    try_number = 1

    def __init__(self) -> None:
        self.stats_tags: dict[str, str] = {}
        self.xcom: dict[str, Any] = {}

    def xcom_push(self, key: str, value: Any) -> None:
        self.xcom[key] = value


class StubTaskStateStore:
    """A ``task_state_store`` kept in a dict."""

    def __init__(self, values: dict[str, Any] | None = None) -> None:
        self.values = dict(values or {})

    def get(self, key: str) -> Any:
        return self.values.get(key)

    def set(self, key: str, value: Any) -> None:
        self.values[key] = value


# A task's context for unit tests. Typed Any on purpose: it stands in for Airflow's ``Context`` TypedDict, whose
# values are Airflow's own classes, not these stubs; tests read the stubs' recordings (``ti.xcom``) from it.
TaskContext = Any


def make_context(**extra: Any) -> TaskContext:
    """A first try's context: a task instance that records XComs, an empty ``task_state_store``, ``extra``.

    :param extra: more context keys (``data_interval_end``, ``ti`` ...).
    """
    return {"ti": StubTaskInstance(), "task_state_store": StubTaskStateStore(), **extra}


def retry_context(try_number: int, **extra: Any) -> TaskContext:
    """Try ``try_number`` of the one task instance, as a release without ``task_state_store`` runs it.

    Every Airflow before 3.3 (and a 3.3 run without the store) gives the operator no ``task_state_store``:
    a retry then finds its work through the platform's Idempotency-Key replay alone.

    :param try_number: 1 for the first try, 2 for the first retry, ...
    :param extra: more context keys (a ``task_state_store`` for the 3.3 path).
    """
    ti = StubTaskInstance()
    ti.try_number = try_number
    return {"ti": ti, **extra}
