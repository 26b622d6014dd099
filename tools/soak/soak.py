"""``make soak``: a real Celery deployment under continuous load, platform faults, a token rotation and restarts.

Starts (tools/soak/soak_deployment.py, on tools/e2e/cluster.py) Postgres, Redis, the sandbox with seeded chaos,
moto's S3 server, and Airflow's api-server, scheduler, dag-processor, triggerer and two Celery workers, on
loopback in one private temporary folder. For ``--minutes`` it keeps the soak DAGs' runs in flight through the
REST API (load.py), samples health (health.py), operates the deployment (operations.py) and, for a middle part
of the load, puts a real per-second rate limit on the platform (limit_phase.py); every process paces the token
through the rate limit store in Redis unless ``--no-store`` (store_accounting.py). Then it lets the runs in flight
finish, reads the sandbox's and Airflow's records, checks every invariant (accounting.py),
stops every process by pid and checks nothing is left. It writes a Markdown report and a PNG (report.py) and
exits non-zero, naming the first broken invariant with its run and task ids, when any invariant is broken.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psutil
from accounting import (
    WATCHED_ASSET,
    WATCHED_SOURCE,
    Collected,
    LimitRecord,
    Violation,
    downloads_match_reports,
    every_permitted_run_succeeds,
    no_token_in_logs,
    nothing_left_in_flight,
    one_piece_of_work_per_attempt_chain,
    sync_events_exactly_once,
    when,
)
from fault_accounting import faults_absorbed
from health import Health
from limit_accounting import (
    limit_refusals_bounded,
    no_wait_unanswered_too_long,
    nothing_gave_up_on_the_limit,
    refusals_bounded,
)
from limit_phase import END, START, LimitPhase
from load import Load
from metrics_accounting import METRICS_ARRIVED, metrics_arrived
from operations import Operations
from report import figures, markdown, plot
from soak_deployment import CANARY_DAG, EVENT_DAG, LOAD_DAGS, ROOT, S3_BUCKET, SoakDeployment, SoakPlan
from store_accounting import NO_TOKEN_IN_THE_STORE, no_token_in_the_store


def invariant_names(store: bool) -> list[str]:
    """Every invariant's name, in the order they are checked (the limited phase's bound depends on the store)."""
    return [
        "nothing running, deferred or queued at the end",
        "every run the platform let succeed succeeds",
        "exactly one execution/report per attempt chain",
        "every downloaded file matches its report, nothing partial is left",
        "no sync reported twice by the event trigger, none missed",
        "every injected fault absorbed",
        "no token in any log line",
        *([NO_TOKEN_IN_THE_STORE] if store else []),
        refusals_bounded(store),
        "no task or trigger gave up on the rate limit",
        "no wait unanswered for longer than its bound",
        METRICS_ARRIVED,
        "at least 50 runs in flight",
        "memory is flat",
        "no process or temporary folder left",
    ]


# Every invariant, in the order a failed soak reports the first broken one.
INVARIANTS: list[Callable[[Collected], list[Violation]]] = [
    nothing_left_in_flight,
    every_permitted_run_succeeds,
    one_piece_of_work_per_attempt_chain,
    downloads_match_reports,
    sync_events_exactly_once,
    faults_absorbed,
    no_token_in_logs,
    no_token_in_the_store,
    limit_refusals_bounded,
    nothing_gave_up_on_the_limit,
    no_wait_unanswered_too_long,
    metrics_arrived,
]


def in_flight(deployment: SoakDeployment, dag_id: str) -> int:
    path = f"/dags/{dag_id}/dagRuns?state=queued&state=running&limit=1"
    return int(deployment.c.api("GET", path)["total_entries"])


def wait_until(what: str, done: Any, seconds: float) -> None:
    deadline = time.time() + seconds
    while not done():
        if time.time() > deadline:
            print(f"drain: {what} did not happen within {seconds:.0f} s", flush=True)
            return
        time.sleep(3)


def queued_asset_events(deployment: SoakDeployment, dag_id: str) -> int:
    """Asset events that will start a run of ``dag_id`` but have not yet: the DAG is at its max_active_runs."""
    return int(deployment.c.api("GET", f"/dags/{dag_id}/assets/queuedEvents")["total_entries"])


def newest_sync_reported(deployment: SoakDeployment) -> bool:
    """Every sync of the watched source has ended, and the event trigger has reported the newest one."""
    syncs = deployment.sandbox(f"/_sandbox/data-sources/{WATCHED_SOURCE}/syncs")["data"]
    ended = [when(sync["finished_at"]) for sync in syncs if sync["outcome"] == "synced"]
    if not ended:
        return True
    newest = max(ended)
    if newest > time.time():
        return False
    return any(when(event["extra"]["payload"]["last_synced_at"]) >= newest
               for event in deployment.asset_events(WATCHED_ASSET))  # fmt: skip


def event_runs_settled(deployment: SoakDeployment) -> bool:
    """No event-driven or canary run in flight, and none queued behind one: the event DAG runs one at a time, so
    between two of its runs nothing is in flight for a moment while the next one's events are queued."""
    busy = in_flight(deployment, EVENT_DAG) + in_flight(deployment, CANARY_DAG)
    return busy == 0 and queued_asset_events(deployment, EVENT_DAG) == 0


def drain(deployment: SoakDeployment, load: Load, health: Health) -> None:
    """Let every run in flight finish: the load's first (syncs go on: sensors wait for them), then the rest."""
    load.stop_triggering()
    seconds = deployment.plan.drain_seconds
    wait_until("the load's runs finishing", lambda: sum(in_flight(deployment, d) for d in LOAD_DAGS) == 0, seconds)
    health.stop()
    load.stop()
    wait_until("the event trigger reporting the last sync", lambda: newest_sync_reported(deployment), seconds)
    wait_until("the event-driven and canary runs finishing", lambda: settled_twice(deployment), seconds)


def settled_twice(deployment: SoakDeployment) -> bool:
    """Settled, and still settled a poll later: the last asset event becomes a run in the scheduler's next loop."""
    if not event_runs_settled(deployment):
        return False
    time.sleep(3)
    return event_runs_settled(deployment)


def collect(deployment: SoakDeployment, operations: Operations, limit: LimitRecord, load: tuple[float, float]
            ) -> tuple[Collected, list[dict[str, float]]]:  # fmt: skip
    """Everything the invariants read: Airflow's records, the sandbox's, the files, the logs."""
    from accounting import DOWNLOADS, JOB_TASKS
    from cluster import STORE_DB
    from store_check import store_contents

    runs, tis = deployment.runs(), deployment.task_instances()
    xcoms: dict[tuple[str, str, str], Any] = {}
    for ti in tis:
        if ti["state"] == "success" and (ti["dag_id"], ti["task_id"]) in JOB_TASKS:
            xcoms[(ti["dag_run_id"], ti["task_id"], "return_value")] = deployment.xcom(ti)
        if ti["state"] == "success" and ti["dag_id"] in DOWNLOADS and ti["task_id"] == "download":
            xcoms[(ti["dag_run_id"], "download", "download")] = deployment.xcom(ti, "download")
    canary_tis = deployment.c.api("GET", f"/dags/{CANARY_DAG}/dagRuns/~/taskInstances?limit=1000")["task_instances"]
    canaries = [deployment.xcom(ti) for ti in canary_tis if ti["state"] == "success"]
    s3 = deployment.s3()
    listed = s3.list_objects_v2(Bucket=S3_BUCKET).get("Contents", [])
    objects = {entry["Key"]: s3.get_object(Bucket=S3_BUCKET, Key=entry["Key"])["Body"].read() for entry in listed}
    uploads = [u["Key"] for u in s3.list_multipart_uploads(Bucket=S3_BUCKET).get("Uploads", [])]
    requests, read = deployment.requests()
    collected = Collected(
        runs=runs, tis=tis, xcoms=xcoms,
        executions=deployment.sandbox("/_sandbox/executions")["data"],
        reports=deployment.sandbox("/_sandbox/reports")["data"],
        requests=requests,
        injected=deployment.sandbox("/_sandbox/chaos")["data"],
        syncs=deployment.sandbox(f"/_sandbox/data-sources/{WATCHED_SOURCE}/syncs")["data"],
        asset_events=deployment.asset_events(WATCHED_ASSET),
        exports=deployment.c.exports, s3_objects=objects, s3_open_uploads=uploads,
        log_files=[path for path in deployment.c.logs.rglob("*") if path.is_file()],
        tokens=list(deployment.tokens), triggerer_stops=list(operations.record.triggerer_stops),
        task_handovers=[at for at, name, _ in operations.record.done if "worker" in name or "scheduler" in name],
        failed_tries={(ti["dag_run_id"], ti["task_id"]): deployment.failed_tries(ti) for ti in tis
                      if int(ti["try_number"] or 0) > 1 or ti["state"] == "failed"},
        limit=limit, load=load, poll_seconds=deployment.plan.poll_seconds, metrics=dict(deployment.listeners.read()),
        store=store_contents(deployment.c.ports["redis"], STORE_DB) if deployment.plan.store else None,
    )  # fmt: skip
    collected.notes["request_log"] = read
    return collected, [c for c in canaries if isinstance(c, dict)]


def nothing_left_behind(seen: set[tuple[int, float]], folders: list[Path]) -> list[Violation]:
    """After the stop: no process of the deployment alive (one seen in a component's tree, or any process whose
    command line or environment names the private folder: an orphan no tree holds), no temporary folder left."""
    name = "no process or temporary folder left"
    found = []
    for process in psutil.process_iter(["pid", "create_time", "cmdline", "environ", "status"]):
        info = process.info
        if info["status"] == psutil.STATUS_ZOMBIE or info["pid"] == os.getpid():
            continue
        text = " ".join(info["cmdline"] or []) + " " + " ".join(f"{k}={v}" for k, v in (info["environ"] or {}).items())
        if (info["pid"], info["create_time"]) in seen or any(str(folder) in text for folder in folders):
            found.append(Violation(name, "", "", f"process {info['pid']} still runs: {text[:120]}"))
    return found + [Violation(name, "", "", f"{folder} still exists") for folder in folders if folder.exists()]


def main() -> int:
    from cluster import exit_on_sigterm  # tools/e2e: on the path once soak_deployment is imported

    exit_on_sigterm()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=float(os.environ.get("SOAK_MINUTES", "60")))
    parser.add_argument("--seed", type=int, default=17, help="the chaos seed (default 17)")
    parser.add_argument(
        "--rate-limit",
        type=float,
        default=float(os.environ["SOAK_RATE_LIMIT"]) if os.environ.get("SOAK_RATE_LIMIT") else None,
        metavar="N",
        help="the platform's limit in requests per second per token from 25%% to 60%% of the load (default "
        "SOAK_RATE_LIMIT, else 3; 0: no limited phase)",
    )
    parser.add_argument(
        "--no-store", action="store_true",
        help="no rate limit store: each process paces the token alone (make soak SOAK_STORE=no); the limited "
        "phase's bound is then 20%% of requests refused, not 1%%",
    )  # fmt: skip
    args = parser.parse_args()
    if args.rate_limit is not None and args.rate_limit < 0:
        parser.error("--rate-limit must be 0 (no limited phase) or a number of requests per second")
    plan = SoakPlan(minutes=args.minutes, seed=args.seed, limit=args.rate_limit, store=not args.no_store)
    results = ROOT / ("soak/results" if args.minutes >= 60 else ".soak/results")
    results.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y-%m-%d-%H%M") + ("" if plan.store else "-no-store")
    setup_started = time.time()
    limited = (f"a rate limit of {plan.rate_limit:g}/s from {START:.0%} to {END:.0%} of the load"
               if plan.rate_limit else "no rate-limit phase")  # fmt: skip
    print(f"== make soak: {args.minutes:g} min of load, chaos seed {args.seed}, work of "
          f"{plan.work_seconds[0]:g}-{plan.work_seconds[1]:g} s, {limited}, "
          f"{'with' if plan.store else 'without'} the rate limit store", flush=True)  # fmt: skip
    violations: list[Violation] = []
    result = None
    deployment = SoakDeployment(plan)
    health: Health | None = None
    phase: LimitPhase | None = None
    try:
        with deployment:
            try:
                deployment.wait_parsed({*LOAD_DAGS, EVENT_DAG, CANARY_DAG})
                for dag_id in (*LOAD_DAGS, EVENT_DAG, CANARY_DAG):
                    deployment.unpause(dag_id)
                load, health, operations = Load(deployment, plan.seed), Health(deployment), Operations(deployment)
                started = time.time()
                print(f"== deployment up in {started - setup_started:.0f} s; load starts", flush=True)
                load.start()
                health.start()
                if plan.rate_limit:
                    phase = LimitPhase(deployment, plan.rate_limit, started)
                    phase.start()
                while (elapsed := time.time() - started) < plan.seconds:
                    operations.due(elapsed)
                    time.sleep(1)
                load_end = time.time()
                if phase is not None:
                    phase.stop()
                print(f"== load over after {(load_end - started) / 60:.1f} min; draining", flush=True)
                drain(deployment, load, health)
                limit = phase.record if phase is not None else LimitRecord()
                collected, canaries = collect(deployment, operations, limit, (started, load_end))
                for invariant in INVARIANTS:
                    violations += invariant(collected)
                ramped = started + 90
                summary = {"setup_started": setup_started, "target": plan.in_flight,
                           "lowest_in_flight": load.lowest_in_flight(ramped), "triggered": load.record.triggered,
                           "operations": [name for _, name, _ in operations.record.done]}  # fmt: skip
                result = figures(collected, health.record.samples, canaries, summary, started, load_end, time.time())
                lowest = load.lowest_in_flight(ramped)
                if lowest is None or lowest < plan.min_in_flight:
                    result.violations.append(Violation("at least 50 runs in flight", "", "", f"lowest {lowest}"))
                plot(results / f"soak-{stamp}-{args.minutes:g}min.png", collected, health.record.samples, started,
                     load_end)  # fmt: skip
            finally:
                if health is not None:
                    health.stopping.set()
                if phase is not None:
                    phase.stopping.set()
                if violations or result is None or result.violations:
                    deployment.c.keep_logs = True
        folders = [deployment.c.home, deployment.staging]
        violations += nothing_left_behind(health.record.pids if health else set(), folders)
    except Exception:
        traceback.print_exc()
        print(f"\nThe soak could not finish; every component's log is kept in {deployment.c.kept_logs}")
        return 1
    if result is not None:
        violations += result.violations
        names = _names(violations, plan.store)
        counts = [(name, sum(1 for v in violations if v.invariant == name)) for name in names]
        store = "with the rate limit store" if plan.store else "without the rate limit store (--no-store)"
        report = markdown(result, counts, f"make soak: {args.minutes:g} minutes, seed {args.seed}, {store}")
        if violations:
            report += "\nViolations (the first 50):\n\n| invariant | run | task | detail |\n|---|---|---|---|\n"
            report += "".join(f"| {v.invariant} | {v.run_id} | {v.task_id} | {v.detail.replace('|', '/')} |\n"
                              for v in violations[:50])  # fmt: skip
        path = results / f"soak-{stamp}-{args.minutes:g}min.md"
        path.write_text(report)
        print("\n" + report + f"\nreport: {path.relative_to(ROOT)} (and .png)")
    if violations:
        first = violations[0].invariant
        print(f"\nFAILED: the first broken invariant is '{first}':")
        for violation in [v for v in violations if v.invariant == first][:10]:
            print(f"  run {violation.run_id or '-'} task {violation.task_id or '-'}: {violation.detail}")
        print(f"{len(violations)} violations in all; every component's log is kept in {deployment.c.kept_logs}")
        return 1
    print(f"\nmake soak: every invariant held ({(time.time() - setup_started) / 60:.1f} min in all)")
    return 0


def _names(violations: list[Violation], store: bool) -> list[str]:
    """Every invariant's name, in the order they are checked, then any other that was broken."""
    names = invariant_names(store)
    return [*names, *sorted({v.invariant for v in violations} - set(names))]


if __name__ == "__main__":
    shutil.rmtree(ROOT / ".soak" / "logs", ignore_errors=True)
    sys.exit(main())
