"""``make e2e``: what the checks of run.py and events_check.py share: the table of checks, the deployment's REST calls.

:class:`Checks` records each check's outcome without raising, so one failure does not hide the rest;
:class:`Deployment` says the REST calls on the running cluster (Airflow's API, the sandbox's) in the words
of the checks; :func:`expect` fails a check with a detail.
"""

from __future__ import annotations

import time
import traceback
from collections.abc import Callable
from typing import Any

from cluster import Cluster, wait_for
from releases import Release

RUN_TIMEOUT = 300.0


class Checks:
    """The table of what was checked; a failed check is recorded, not raised, so the rest still run."""

    def __init__(self) -> None:
        self.rows: list[tuple[str, str, str]] = []  # name, "ok" / "FAILED" / "skipped", detail

    def check(self, name: str, body: Callable[[], str]) -> None:
        started = time.monotonic()
        try:
            detail, result = body(), "ok"
        except Exception as exc:  # a check's failure is a row in the table
            detail, result = f"{type(exc).__name__}: {exc}", "FAILED"
            traceback.print_exc()
        self.rows.append((name, result, f"{detail} ({time.monotonic() - started:.0f} s)"))
        print(f"[{result}] {name}: {detail}", flush=True)

    def skip(self, name: str, reason: str) -> None:
        self.rows.append((name, "skipped", reason))
        print(f"[skipped] {name}: {reason}", flush=True)

    @property
    def ok(self) -> bool:
        return all(result != "FAILED" for _, result, _ in self.rows)

    def print(self) -> bool:
        width = max(len(name) for name, _, _ in self.rows)
        print("\n" + "check".ljust(width) + "  result   detail")
        for name, result, detail in self.rows:
            print(f"{name.ljust(width)}  {result:<7}  {detail}")
        return self.ok


class Deployment:
    """REST calls on the running cluster, in the words of the checks."""

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self.release: Release = cluster.release

    def trigger(self, dag_id: str, logical_date: str | None = None) -> str:
        body = self.release.trigger_body(logical_date)
        return str(self.cluster.api("POST", f"/dags/{dag_id}/dagRuns", body)["dag_run_id"])

    def unpause(self, dag_id: str) -> None:
        self.cluster.api("PATCH", f"/dags/{dag_id}", {"is_paused": False})

    def mark(self, dag_id: str, run_id: str, task_id: str, state: str) -> None:
        path = f"/dags/{dag_id}/dagRuns/{run_id}/taskInstances/{task_id}"
        self.cluster.api("PATCH", path, self.release.mark_body(state))

    def run_state(self, dag_id: str, run_id: str) -> str:
        return str(self.cluster.api("GET", f"/dags/{dag_id}/dagRuns/{run_id}")["state"])

    def wait_run(self, dag_id: str, run_id: str, seconds: float = RUN_TIMEOUT) -> str:
        def finished() -> str | None:
            state = self.run_state(dag_id, run_id)
            return state if state in ("success", "failed") else None

        return str(wait_for(f"{dag_id} {run_id} finishing", finished, seconds, 1))

    def task(self, dag_id: str, run_id: str, task_id: str) -> dict[str, Any]:
        return dict(self.cluster.api("GET", f"/dags/{dag_id}/dagRuns/{run_id}/taskInstances/{task_id}"))

    def wait_task_state(self, dag_id: str, run_id: str, task_id: str, state: str) -> dict[str, Any]:
        def reached() -> dict[str, Any] | None:
            task = self.task(dag_id, run_id, task_id)
            return task if task["state"] == state else None

        return dict(wait_for(f"{dag_id}.{task_id} {state}", reached, 180, 0.5))

    def xcom(self, dag_id: str, run_id: str, task_id: str, key: str = "return_value") -> Any:
        path = f"/dags/{dag_id}/dagRuns/{run_id}/taskInstances/{task_id}/xcomEntries/{key}"
        return self.cluster.api("GET", path + self.release.xcom_query)["value"]

    def executions(self, workflow_id: str) -> list[dict[str, Any]]:
        return [
            e for e in self.cluster.sandbox("GET", "/_sandbox/executions")["data"] if e["workflow_id"] == workflow_id
        ]

    def all_runs(self, dag_id: str) -> list[str]:
        """Every run of the DAG, each waited for until it finished."""
        runs = [run["dag_run_id"] for run in self.cluster.api("GET", f"/dags/{dag_id}/dagRuns")["dag_runs"]]
        for run_id in runs:
            self.wait_run(dag_id, run_id)
        return runs

    def polls_of(self, execution: dict[str, Any]) -> int:
        path = f"/v1/workflows/{execution['workflow_id']}/executions/{execution['id']}"
        requests = self.cluster.sandbox("GET", "/_sandbox/requests")["data"]
        return sum(1 for entry in requests if entry["method"] == "GET" and entry["path"] == path)

    def executions_of_run(self, workflow_id: str, run_id: str) -> list[dict[str, Any]]:
        return [e for e in self.executions(workflow_id) if e.get("inputs", {}).get("run") == run_id]


def expect(condition: bool, detail: object) -> None:
    """Fail the check with ``detail`` (checks stay checks under ``python -O``, unlike ``assert``)."""
    if not condition:
        raise AssertionError(detail)
