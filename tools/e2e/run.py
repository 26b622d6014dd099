"""``make e2e``: the examples under a real Airflow deployment, with restarts, kills and a user's kill.

Starts Postgres, the sandbox and Airflow's api-server, scheduler, dag-processor and triggerer (and, with
``--executor celery``, Redis and two Celery workers) on loopback, all in one private temporary folder.
Every run is triggered through the REST API: once without a logical date, as the UI and most callers do,
and once with one. Then it checks what users rely on and prints a table; every check is an assertion
on what the deployment and the sandbox report. Exits non-zero when any check fails.
"""

from __future__ import annotations

import argparse
import hashlib
import shutil
import signal
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from cluster import KEPT_LOGS, ROOT, Cluster, wait_for
from events_check import event_driven_start

EXAMPLES = ["analytics_workflow_outputs", "analytics_sync_report_download", "analytics_dashboards_as_code",
            "analytics_fire_and_forget"]  # fmt: skip
RUN_TIMEOUT = 300.0


class Checks:
    """The table of what was checked; a failed check is recorded, not raised, so the rest still run."""

    def __init__(self) -> None:
        self.rows: list[tuple[str, bool, str]] = []

    def check(self, name: str, body: Callable[[], str]) -> None:
        started = time.monotonic()
        try:
            detail, ok = body(), True
        except Exception as exc:  # a check's failure is a row in the table
            detail, ok = f"{type(exc).__name__}: {exc}", False
            traceback.print_exc()
        self.rows.append((name, ok, f"{detail} ({time.monotonic() - started:.0f} s)"))
        print(f"[{'ok' if ok else 'FAILED'}] {name}: {detail}", flush=True)

    def print(self) -> bool:
        width = max(len(name) for name, _, _ in self.rows)
        print("\n" + "check".ljust(width) + "  result  detail")
        for name, ok, detail in self.rows:
            print(f"{name.ljust(width)}  {'ok' if ok else 'FAILED':<6}  {detail}")
        return all(ok for _, ok, _ in self.rows)


class Deployment:
    """REST calls on the running cluster, in the words of the checks."""

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster

    def trigger(self, dag_id: str, logical_date: str | None = None) -> str:
        body: dict[str, Any] = {"logical_date": logical_date, "conf": {}}
        return str(self.cluster.api("POST", f"/api/v2/dags/{dag_id}/dagRuns", body)["dag_run_id"])

    def run_state(self, dag_id: str, run_id: str) -> str:
        return str(self.cluster.api("GET", f"/api/v2/dags/{dag_id}/dagRuns/{run_id}")["state"])

    def wait_run(self, dag_id: str, run_id: str, seconds: float = RUN_TIMEOUT) -> str:
        def finished() -> str | None:
            state = self.run_state(dag_id, run_id)
            return state if state in ("success", "failed") else None

        return str(wait_for(f"{dag_id} {run_id} finishing", finished, seconds, 1))

    def task(self, dag_id: str, run_id: str, task_id: str) -> dict[str, Any]:
        return dict(self.cluster.api("GET", f"/api/v2/dags/{dag_id}/dagRuns/{run_id}/taskInstances/{task_id}"))

    def wait_task_state(self, dag_id: str, run_id: str, task_id: str, state: str) -> dict[str, Any]:
        def reached() -> dict[str, Any] | None:
            task = self.task(dag_id, run_id, task_id)
            return task if task["state"] == state else None

        return dict(wait_for(f"{dag_id}.{task_id} {state}", reached, 180, 0.5))

    def xcom(self, dag_id: str, run_id: str, task_id: str, key: str = "return_value") -> Any:
        path = f"/api/v2/dags/{dag_id}/dagRuns/{run_id}/taskInstances/{task_id}/xcomEntries/{key}"
        return self.cluster.api("GET", path + "?deserialize=true")["value"]

    def executions(self, workflow_id: str) -> list[dict[str, Any]]:
        return [
            e for e in self.cluster.sandbox("GET", "/_sandbox/executions")["data"] if e["workflow_id"] == workflow_id
        ]

    def all_runs(self, dag_id: str) -> list[str]:
        """Every run of the DAG, each waited for until it finished."""
        runs = [run["dag_run_id"] for run in self.cluster.api("GET", f"/api/v2/dags/{dag_id}/dagRuns")["dag_runs"]]
        for run_id in runs:
            self.wait_run(dag_id, run_id)
        return runs

    def polls_of(self, execution: dict[str, Any]) -> int:
        path = f"/v1/workflows/{execution['workflow_id']}/executions/{execution['id']}"
        requests = self.cluster.sandbox("GET", "/_sandbox/requests")["data"]
        return sum(1 for entry in requests if entry["method"] == "GET" and entry["path"] == path)

    def executions_of_run(self, workflow_id: str, run_id: str) -> list[dict[str, Any]]:
        return [e for e in self.executions(workflow_id) if e.get("inputs", {}).get("run") == run_id]


def examples_run_however_triggered(deployment: Deployment, checks: Checks) -> None:
    cluster = deployment.cluster
    runs: dict[str, list[str]] = {}
    for dag_id in EXAMPLES:
        cluster.api("PATCH", f"/api/v2/dags/{dag_id}", {"is_paused": False})
        runs[dag_id] = [deployment.trigger(dag_id), deployment.trigger(dag_id, "2026-11-20T00:00:00Z")]
    for dag_id, run_ids in runs.items():
        for run_id, how in zip(run_ids, ("REST, no logical date", "REST, with a logical date"), strict=True):
            checks.check(f"{dag_id} ({how})", lambda d=dag_id, r=run_id: _succeeded(deployment, d, r))
    last = runs["analytics_workflow_outputs"]

    def one_execution_per_run() -> str:
        # Unpausing also started one scheduled run of each daily example: count every run there is.
        every_run = deployment.all_runs(EXAMPLES[0])
        states = {run_id: deployment.wait_run(EXAMPLES[0], run_id) for run_id in every_run}
        executions = deployment.executions("wf_nightly_enrichment")
        expect(set(states.values()) == {"success"}, states)
        expect(len(executions) == len(every_run), f"{len(executions)} executions for {len(every_run)} runs")
        return f"{len(executions)} executions for {len(every_run)} runs (incl. the scheduled one)"

    checks.check("exactly one execution per task", one_execution_per_run)
    checks.check("XCom: check_volume's result", lambda: str(deployment.xcom("analytics_workflow_outputs", last[0],
                                                                              "check_volume")))  # fmt: skip
    checks.check("report files and their digests", lambda: _report_files(deployment))
    checks.check("extra link through the REST API", lambda: _links(deployment, last[0]))


def _succeeded(deployment: Deployment, dag_id: str, run_id: str) -> str:
    state = deployment.wait_run(dag_id, run_id)
    expect(state == "success", f"run {run_id} ended {state}")
    return run_id


def _report_files(deployment: Deployment) -> str:
    dag_id = "analytics_sync_report_download"
    run_ids = deployment.all_runs(dag_id)  # the scheduled run writes the same day's file too
    reports = {r["id"]: r for r in deployment.cluster.sandbox("GET", "/_sandbox/reports")["data"]}
    written: dict[Path, set[str]] = {}
    for run_id in run_ids:
        download = deployment.xcom("analytics_sync_report_download", run_id, "download", key="download")
        report_id = deployment.xcom("analytics_sync_report_download", run_id, "generate")["id"]
        expect(download["sha256"] == reports[report_id]["sha256"], f"run {run_id}: the file is not report {report_id}")
        written.setdefault(Path(download["uri"]), set()).add(download["sha256"])
    for path, digests in written.items():  # runs on the same day write (overwrite=True) the same file
        on_disk = hashlib.sha256(path.read_bytes()).hexdigest()
        expect(on_disk in digests, f"{path} on disk is none of the reports written to it")
    return ", ".join(f"{path.name}: sha256 {next(iter(d))[:12]}..." for path, d in written.items())


def _links(deployment: Deployment, run_id: str) -> str:
    path = f"/api/v2/dags/analytics_workflow_outputs/dagRuns/{run_id}/taskInstances/enrich/links"
    links = deployment.cluster.api("GET", path)["extra_links"]
    url = next(iter(links.values()))
    expect(bool(url) and url.startswith(deployment.cluster.sandbox_url), links)
    return str(url)


def triggerer_restarts(deployment: Deployment, checks: Checks) -> None:
    dag_id = "analytics_e2e_deferred_wait"
    deployment.cluster.api("PATCH", f"/api/v2/dags/{dag_id}", {"is_paused": False})
    run_id = deployment.trigger(dag_id)

    def survives() -> str:
        deployment.wait_task_state(dag_id, run_id, "wait", "deferred")
        deployment.cluster.restart("triggerer", signal.SIGTERM)
        time.sleep(3)
        deployment.cluster.restart("triggerer", signal.SIGKILL)
        state = deployment.wait_run(dag_id, run_id)
        executions = deployment.executions_of_run("wf_sessionize_events", run_id)
        expect(state == "success" and len(executions) == 1, f"run {state}, {len(executions)} executions")
        return "SIGTERM then SIGKILL mid-wait: success, 1 execution"

    checks.check("triggerer restarted twice during a deferred wait", survives)


def task_runner_killed(deployment: Deployment, checks: Checks) -> None:
    dag_id = "analytics_e2e_worker_wait"
    deployment.cluster.api("PATCH", f"/api/v2/dags/{dag_id}", {"is_paused": False})
    run_id = deployment.trigger(dag_id)

    def reattaches() -> str:
        running = deployment.wait_task_state(dag_id, run_id, "wait", "running")
        wait_for("the execution to start", lambda: deployment.executions_of_run("wf_sessionize_events", run_id), 60)
        pid = int(running["pid"])
        _sigkill(pid)
        state = deployment.wait_run(dag_id, run_id)
        task = deployment.task(dag_id, run_id, "wait")
        executions = deployment.executions_of_run("wf_sessionize_events", run_id)
        expect(state == "success" and task["try_number"] >= 2 and len(executions) == 1, (state, task, executions))
        return f"task runner pid {pid} killed: retried (try {task['try_number']}), reattached, 1 execution"

    checks.check("SIGKILL of a task runner waiting on the worker", reattaches)


def user_marks_failed(deployment: Deployment, checks: Checks) -> None:
    dag_id = "analytics_e2e_deferred_wait"
    run_id = deployment.trigger(dag_id)

    def cancels() -> str:
        deployment.wait_task_state(dag_id, run_id, "wait", "deferred")
        # Only a trigger that runs gets on_kill: after the SIGKILL above, Airflow moves a dead triggerer's
        # triggers to the live one only once its heartbeat is stale (about 30 s). Wait for polls to arrive.
        [execution] = wait_for(
            "the execution", lambda: deployment.executions_of_run("wf_sessionize_events", run_id), 60
        )
        polls = deployment.polls_of(execution)
        wait_for("the trigger polling", lambda: deployment.polls_of(execution) >= polls + 2, 120, 0.5)
        path = f"/api/v2/dags/{dag_id}/dagRuns/{run_id}/taskInstances/wait"
        deployment.cluster.api("PATCH", path, {"new_state": "failed"})
        [cancelled] = wait_for("the execution cancelled", lambda: [
            e for e in deployment.executions_of_run("wf_sessionize_events", run_id) if e["status"] == "cancelled"
        ], 60)  # fmt: skip
        return f"marked failed while deferred: execution {cancelled['id']} cancelled by the trigger's on_kill"

    checks.check("a user marks a deferred task failed", cancels)


def resumes_on_the_other_worker(deployment: Deployment, checks: Checks) -> None:
    dag_id = "analytics_e2e_deferred_wait"
    run_id = deployment.trigger(dag_id)

    def other_worker() -> str:
        deferred = deployment.wait_task_state(dag_id, run_id, "wait", "deferred")
        first = deferred["hostname"]
        expect(first in ("worker_a", "worker_b"), deferred)
        deployment.cluster.processes[first].stop()  # only the other worker can resume it now
        state = deployment.wait_run(dag_id, run_id)
        last = deployment.task(dag_id, run_id, "wait")["hostname"]
        executions = deployment.executions_of_run("wf_sessionize_events", run_id)
        expect(state == "success" and last != first and len(executions) == 1, (state, first, last, executions))
        return f"deferred on {first}, resumed on {last}, 1 execution"

    checks.check("a task deferred on one worker resumes on the other", other_worker)


def expect(condition: bool, detail: object) -> None:
    """Fail the check with ``detail`` (checks stay checks under ``python -O``, unlike ``assert``)."""
    if not condition:
        raise AssertionError(detail)


def _sigkill(pid: int) -> None:
    import os

    os.kill(pid, signal.SIGKILL)


def prepare_dags(home: Path) -> Path:
    dags = home / "dags"
    shutil.copytree(ROOT / "example_dags", dags)
    shutil.copy(Path(__file__).parent / "dags" / "e2e_waits.py", dags / "e2e_waits.py")
    return dags


def _stop_on_sigterm(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)  # so the cluster's clean-up runs, as it does for Ctrl-C


def main() -> int:
    signal.signal(signal.SIGTERM, _stop_on_sigterm)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--executor", choices=["local", "celery"], default="local")
    args = parser.parse_args()
    started = time.monotonic()
    staging = Path(__import__("tempfile").mkdtemp(prefix="apa-e2e-dags-"))
    checks = Checks()
    try:
        sandbox_args = ["--speed", "demo", "--auto-sync", "5", "--execution-seconds", "15"]
        with Cluster(args.executor, prepare_dags(staging), sandbox_args) as cluster:
            deployment = Deployment(cluster)
            wait_for("the DAGs parsed", lambda: len(cluster.api("GET", "/api/v2/dags?limit=100")["dags"]) >= 6, 180, 2)
            examples_run_however_triggered(deployment, checks)
            event_driven_start(deployment, checks)  # events_check.py: the event-driven example
            triggerer_restarts(deployment, checks)
            if args.executor == "local":
                task_runner_killed(deployment, checks)
            else:
                resumes_on_the_other_worker(deployment, checks)
            user_marks_failed(deployment, checks)
            if not all(ok for _, ok, _ in checks.rows):
                cluster.keep_logs = True
                for process in cluster.processes.values():
                    print(f"\n--- {process.name} (last lines of {process.log_path.name}) ---\n{process.tail()}")
                print(f"\nEvery component's whole log: {KEPT_LOGS}")
    except Exception as exc:  # a set-up failure is one more failed row
        traceback.print_exc()
        checks.rows.append(("deployment", False, f"{type(exc).__name__}: {exc}"))
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    ok = checks.print()
    print(
        f"\nmake e2e ({args.executor}): {'all checks passed' if ok else 'FAILED'} in {time.monotonic() - started:.0f} s"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
