"""``make e2e``: the examples under a real Airflow deployment, with restarts, kills and a user's kill.

Starts Postgres, the sandbox and Airflow's components (3.x: api-server, scheduler, dag-processor and
triggerer; 2.x: webserver, scheduler and triggerer; with ``--executor celery`` also Redis and two Celery
workers) on loopback, all in one private temporary folder. ``--airflow 2.11.2`` runs that release from its
``make test-compat`` virtualenv; releases.py holds everything that differs by major. Every run is triggered
through the REST API: once without a logical date, as the UI and most callers do, and once with one. Then
it checks what users rely on and prints a table; every check is an assertion on what the deployment and
the sandbox report, and a check the release cannot pass by design is listed as skipped, with the reason.
Exits non-zero when any check fails.
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import shutil
import signal
import sys
import time
import traceback
from pathlib import Path
from typing import Any

from cluster import ROOT, Cluster, exit_on_sigterm, wait_for
from deployment import Checks, Deployment, expect
from events_check import DAG_ID as EVENT_DRIVEN_DAG
from events_check import event_driven_start
from metrics_check import Listeners, metrics_arrived
from releases import (
    ASSET_WATCHERS,
    CELERY_RUN,
    HUMAN_IN_THE_LOOP,
    TASK_SPANS,
    TRIGGER_ON_KILL,
    Release,
    airflow_bin,
    release_of,
)
from spans import SpanReceiver, check_calls_under_airflows_spans
from store_check import store_checks

EXAMPLES = ["analytics_workflow_outputs", "analytics_sync_report_download", "analytics_dashboards_as_code",
            "analytics_fire_and_forget", "analytics_platform_objects", "analytics_start_then_sense",
            "analytics_definitions_as_code"]  # fmt: skip
E2E_DAGS = ["analytics_e2e_worker_wait", "analytics_e2e_deferred_wait"]  # dags/e2e_waits.py


def examples_run_however_triggered(deployment: Deployment, checks: Checks) -> None:
    runs: dict[str, list[str]] = {}
    for dag_id in EXAMPLES:
        deployment.unpause(dag_id)
        runs[dag_id] = [deployment.trigger(dag_id), deployment.trigger(dag_id, "2026-11-20T00:00:00Z")]
    # 2.x has no run without a logical date: left out, Airflow gives the run the current time.
    first = "REST, no logical date" if deployment.release.no_logical_date == "null" else "REST, logical date left out"
    for dag_id, run_ids in runs.items():
        for run_id, how in zip(run_ids, (first, "REST, with a logical date"), strict=True):
            checks.check(f"{dag_id} ({how})", functools.partial(_succeeded, deployment, dag_id, run_id))
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
    path = f"/dags/analytics_workflow_outputs/dagRuns/{run_id}/taskInstances/enrich/links"
    links = deployment.release.links_of(deployment.cluster.api("GET", path))
    url = next(iter(links.values()))
    expect(bool(url) and url.startswith(deployment.cluster.sandbox_url), links)
    return str(url)


def triggerer_restarts(deployment: Deployment, checks: Checks) -> None:
    dag_id = "analytics_e2e_deferred_wait"
    deployment.unpause(dag_id)
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
    deployment.unpause(dag_id)
    run_id = deployment.trigger(dag_id)

    def reattaches() -> str:
        deployment.wait_task_state(dag_id, run_id, "wait", "running")
        wait_for("the execution to start", lambda: deployment.executions_of_run("wf_sessionize_events", run_id), 60)
        # Read the pid once the task works: 2.x reports "running" before the task process records its pid.
        running = deployment.task(dag_id, run_id, "wait")
        expect(running["state"] == "running" and running["pid"], running)
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
    name = "a user marks a deferred task failed"
    run_id = deployment.trigger(dag_id)

    def polled_then_marked() -> dict[str, Any]:
        deployment.wait_task_state(dag_id, run_id, "wait", "deferred")
        # Only a trigger that runs gets on_kill: after the SIGKILL above, Airflow moves a dead triggerer's
        # triggers to the live one only once its heartbeat is stale (about 30 s). Wait for polls to arrive.
        [execution] = wait_for(
            "the execution", lambda: deployment.executions_of_run("wf_sessionize_events", run_id), 60
        )
        polls = deployment.polls_of(execution)
        wait_for("the trigger polling", lambda: deployment.polls_of(execution) >= polls + 2, 120, 0.5)
        deployment.mark(dag_id, run_id, "wait", "failed")
        return dict(execution)

    def cancels() -> str:
        polled_then_marked()
        [cancelled] = wait_for("the execution cancelled", lambda: [
            e for e in deployment.executions_of_run("wf_sessionize_events", run_id) if e["status"] == "cancelled"
        ], 60)  # fmt: skip
        return f"marked failed while deferred: execution {cancelled['id']} cancelled by the trigger's on_kill"

    def left_running() -> str:
        # Before 3.3 the triggerer drops the trigger (cleanup() only, as on a restart): polling stops, and
        # the execution runs on to its own end on the platform (docs/compatibility.md, note 2).
        execution = polled_then_marked()
        stopped = wait_for("the trigger to stop polling", lambda: _polls_settled(deployment, execution), 60, 0)
        [finished] = wait_for("the execution finishing on its own", lambda: [
            e for e in deployment.executions_of_run("wf_sessionize_events", run_id)
            if e["status"] not in ("queued", "running")
        ], 90)  # fmt: skip
        task = deployment.task(dag_id, run_id, "wait")
        expect(finished["status"] == "succeeded" and task["state"] == "failed", (finished, task["state"]))
        return (
            f"task failed; its trigger stopped polling after {stopped} polls; execution {finished['id']} was not "
            f"cancelled and ended {finished['status']} on the platform"
        )

    if reason := deployment.release.missing(TRIGGER_ON_KILL):
        checks.skip(f"{name}: the trigger's on_kill cancels the execution", reason)
        checks.check(f"{name}: the execution is left running (before 3.3)", left_running)
    else:
        checks.check(name, cancels)


def _polls_settled(deployment: Deployment, execution: dict[str, Any]) -> int | None:
    """The poll count once it has not grown for 5 s (the trigger polls every second), else None."""
    before = deployment.polls_of(execution)
    time.sleep(5)
    return before if deployment.polls_of(execution) == before else None


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


def _sigkill(pid: int) -> None:
    import os

    os.kill(pid, signal.SIGKILL)


def prepare_dags(home: Path, release: Release) -> tuple[Path, set[str]]:
    """The DAG folder Airflow parses, and the DAG ids it must find there."""
    dags = home / "dags"
    shutil.copytree(ROOT / "example_dags", dags)
    shutil.copy(Path(__file__).parent / "dags" / "e2e_waits.py", dags / "e2e_waits.py")
    expected = {*EXAMPLES, *E2E_DAGS, EVENT_DRIVEN_DAG}
    if release.missing(ASSET_WATCHERS):  # the example cannot import there (AssetWatcher)
        (dags / f"{EVENT_DRIVEN_DAG}.py").unlink()
        expected.remove(EVENT_DRIVEN_DAG)
    if release.missing(HUMAN_IN_THE_LOOP):  # the reviewed-apply example cannot import there (ApprovalOperator)
        (dags / "definitions_reviewed.py").unlink()
    return dags, expected


def wait_parsed(cluster: Cluster, expected: set[str]) -> None:
    """Wait until every expected DAG is known; fail at once on an import error, naming the file."""

    def parsed() -> bool:
        errors = cluster.api("GET", "/importErrors")["import_errors"]
        if errors:
            raise AssertionError("; ".join(f"{e['filename']}: {e['stack_trace'].strip()[-600:]}" for e in errors))
        return expected <= {dag["dag_id"] for dag in cluster.api("GET", "/dags?limit=100")["dags"]}

    wait_for("the DAGs parsed", parsed, 180, 2)


def calls_traced(deployment: Deployment, checks: Checks, receiver: SpanReceiver | None) -> None:
    """The examples' calls arrived as spans under Airflow's spans of their tasks and triggers (spans.py)."""
    name = "platform calls traced under the task's and the trigger's spans"
    if receiver is None:
        checks.skip(name, deployment.release.missing(TASK_SPANS) or "")
        return

    def traced() -> str:
        for dag_id in EXAMPLES:  # a task still running (a scheduled run's) has not sent its own span yet
            deployment.all_runs(dag_id)
        request_ids = {entry["request_id"] for entry in deployment.cluster.sandbox("GET", "/_sandbox/requests")["data"]}
        last: AssertionError | None = None
        deadline = time.monotonic() + 30  # spans leave each process in batches (OTEL_BSP_SCHEDULE_DELAY)
        while time.monotonic() < deadline:
            try:
                return check_calls_under_airflows_spans(receiver.spans(), EXAMPLES, request_ids)
            except AssertionError as exc:
                last = exc
                time.sleep(1)
        raise AssertionError(str(last))

    checks.check(name, traced)


def run_checks(
    deployment: Deployment,
    checks: Checks,
    expected: set[str],
    executor: str,
    receiver: SpanReceiver | None,
    listeners: Listeners,
) -> None:
    """Every check, in order; those the release cannot pass by design are listed as skipped, with the reason."""
    release = deployment.release
    wait_parsed(deployment.cluster, expected)
    examples_run_however_triggered(deployment, checks)
    calls_traced(deployment, checks, receiver)
    if reason := release.missing(ASSET_WATCHERS):
        for name in ("a sync starts exactly one asset-triggered run", "a triggerer restart repeats no sync"):
            checks.skip(name, reason)
    else:
        event_driven_start(deployment, checks)  # events_check.py: the event-driven example
    triggerer_restarts(deployment, checks)
    task_runner_killed(deployment, checks)
    if executor == "celery":  # after the kill above: it stops a worker for good
        resumes_on_the_other_worker(deployment, checks)
    user_marks_failed(deployment, checks)
    paths = metrics_arrived(deployment, checks, listeners)  # metrics_check.py: it reads what every check sent
    store_checks(deployment, checks, listeners, paths)  # store_check.py: what the rate limit store did meanwhile


def main() -> int:
    exit_on_sigterm()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--executor", choices=["local", "celery"], default="local")
    parser.add_argument(
        "--airflow", default="", metavar="VERSION",
        help="an Airflow release of tools/compat.py's MATRIX (e.g. 2.11.2); default: .venv's Airflow",
    )  # fmt: skip
    parser.add_argument("--uv", type=Path, default=ROOT / ".tools" / "bin" / "uv", help="the uv binary (--airflow)")
    args = parser.parse_args()
    started = time.monotonic()
    release = release_of(args.airflow)
    if args.executor == "celery" and (reason := release.missing(CELERY_RUN)):
        parser.error(f"--executor celery {reason}")
    bin_dir = airflow_bin(args.airflow, args.uv)
    label = f"make e2e ({args.executor}, Airflow {release.version})"
    print(f"== {label}: {', '.join(release.components)} from {bin_dir}", flush=True)
    staging = Path(__import__("tempfile").mkdtemp(prefix="apa-e2e-dags-"))
    checks = Checks()
    # Where Airflow traces tasks, every component sends its spans to a receiver of this process (spans.py).
    receiver = None if release.missing(TASK_SPANS) else SpanReceiver().start()
    traces = {} if receiver is None else {
        "AIRFLOW__TRACES__OTEL_ON": "True",
        "OTEL_TRACES_EXPORTER": "otlp_proto_http",
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": receiver.endpoint,
        "OTEL_BSP_SCHEDULE_DELAY": "500",
    }  # fmt: skip
    try:
        sandbox_args = ["--speed", "demo", "--auto-sync", "5", "--execution-seconds", "15"]
        dags, expected = prepare_dags(staging, release)
        listeners = Listeners(args.executor)  # StatsD, one port per kind of process (metrics_check.py)
        settings = {**traces, **listeners.settings()}
        # Four task slots per Celery worker: eight in all, as LocalExecutor's [core] parallelism.
        # With Celery, the broker's Redis is the connection's rate limit store too (store_check.py).
        cluster = Cluster(release, bin_dir, args.executor, dags, sandbox_args, settings=settings,
                          component_settings=listeners.component_settings(), worker_concurrency=4,
                          rate_limit_store=args.executor == "celery")  # fmt: skip
        with listeners, cluster:
            try:
                run_checks(Deployment(cluster), checks, expected, args.executor, receiver, listeners)
            except Exception:
                checks.rows.append(("deployment", "FAILED", "see the traceback below"))
                raise
            finally:
                if not checks.ok:
                    cluster.keep_logs = True
                    for process in cluster.processes.values():
                        print(f"\n--- {process.name} (last lines of {process.log_path.name}) ---\n{process.tail()}")
                    print(f"\nEvery component's whole log: {cluster.kept_logs}")
    except Exception as exc:  # a set-up failure is one more failed row
        traceback.print_exc()
        checks.rows = [row for row in checks.rows if row[0] != "deployment"]
        checks.rows.append(("deployment", "FAILED", f"{type(exc).__name__}: {exc}"))
    finally:
        shutil.rmtree(staging, ignore_errors=True)
        if receiver is not None:
            receiver.stop()
    ok = checks.print()
    skipped = sum(1 for _, result, _ in checks.rows if result == "skipped")
    verdict = ("all checks passed" + (f", {skipped} skipped (reasons above)" if skipped else "")) if ok else "FAILED"
    print(f"\n{label}: {verdict} in {time.monotonic() - started:.0f} s")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
