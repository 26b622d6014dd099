"""How often Airflow fails a deferred sensor whose trigger fires fast: the deferral race, per executor.

Starts the deployment of ``make e2e`` (tools/e2e/cluster.py: Postgres, the sandbox, api-server, scheduler,
dag-processor, triggerer; with ``--executor celery`` also Redis and two Celery workers) with low parallelism,
triggers ``--runs`` runs of the guide's DAG (``deferral_race_dags/``: the ``WorkflowExecutionSensor`` guide's
DAG with ``retries=0``) through the REST API without a logical date, waits for all of them, and prints:

- the runs whose ``wait`` task failed (no retries: every failed try is a failed run);
- the scheduler's lines ``Executor ... reported that the task instance ... finished with state success, but
  the task instance's state attribute is queued`` (or ``running``): Airflow's own race between the deferring
  worker's exit and a trigger that fires within its window (apache/airflow #66374, #67287, #72716, #71580);
- per run, the seconds from the sensor's poke on the worker (the request just before it defers) to the
  trigger's first poll, from the sandbox's request log: how soon the trigger looked;
- per deferral, the seconds from the task's "Pausing task as DEFERRED" to the scheduler's "Received executor
  event with state success" for that try: the race's window, which a trigger must not fire inside, and so
  what the provider's first-poll floor (``FIRST_POLL_FLOOR_SECONDS``) has to outwait.

Each execution takes a random ``--work-seconds`` (sandbox option), so some have ended when the trigger first
looks and some have not. ``--provider-ref main`` runs the provider as committed on that git ref (its package is
copied out with ``git archive`` and put first on every component's ``PYTHONPATH``), to measure the code before
a change from the same work tree. Every process is stopped by its pid and the temporary folders are removed;
every component's log of the last run is kept in ``.deferral-race-<executor>[-<ref>]/logs`` (git-ignored).

    .venv/bin/python bench/deferral_race.py --executor local --runs 50 --provider-ref main
    .venv/bin/python bench/deferral_race.py --executor celery --runs 50
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path.insert(0, str(ROOT / "tools" / "e2e"))

from cluster import Cluster, exit_on_sigterm  # noqa: E402
from deployment import Deployment  # noqa: E402
from releases import airflow_bin, release_of  # noqa: E402
from run import wait_parsed  # noqa: E402

DAG_ID = "race_start_then_sense"
WORKFLOW = "wf_revenue_rollup"
# The scheduler's words when it fails a try over a stale "success" from the deferring worker's exit.
RACE_LINE = re.compile(r"finished with state success, but the task instance's state attribute is (\w+)")
# The scheduler reading the exit of a try of ``wait`` (the deferral's own line is in the task's log): the race's
# window lies between the two.
EXIT_READ_LINE = re.compile(
    r"Received executor event with state success for task instance TaskInstanceKey\(dag_id='[^']+', task_id='wait', "
    r"run_id='([^']+)', try_number=1"
)
STAMP = re.compile(r"(\d{4}-\d\d-\d\d)[T ](\d\d:\d\d:\d\d\.\d+)")


def provider_copy(ref: str, into: Path) -> Path:
    """The provider package as committed on ``ref``, extracted under ``into`` (the folder to put on the path)."""
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", ref, "airflow_provider_analytics"],
                             check=True, capture_output=True)  # fmt: skip
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive.stdout, check=True)
    return into


def first_poll_gaps(deployment: Deployment, runs: list[str]) -> dict[str, float | None]:
    """Per run: seconds from the sensor's poke (the worker's GET) to the trigger's first GET of the execution."""
    requests = deployment.cluster.sandbox("GET", "/_sandbox/requests")["data"]
    gaps: dict[str, float | None] = {}
    for run_id in runs:
        found = deployment.executions_of_run(WORKFLOW, run_id)
        if not found:
            gaps[run_id] = None
            continue
        path = f"/v1/workflows/{WORKFLOW}/executions/{found[0]['id']}"
        times = [_at(entry["received_at"]) for entry in requests if entry["method"] == "GET" and entry["path"] == path]
        gaps[run_id] = times[1] - times[0] if len(times) >= 2 else None  # the poke, then the trigger
    return gaps


def race_windows(logs: Path) -> list[float]:
    """Per deferred ``wait``: seconds from its deferral to the scheduler reading its worker's exit (sorted).

    A trigger that fires inside this window makes the scheduler fail the try; its length is what the provider's
    first-poll floor has to outwait. The deferral is the task log's ``Pausing task as DEFERRED`` (JSON lines,
    whatever the executor); the exit read is the scheduler's ``Received executor event with state success``.
    """
    deferred: dict[str, float] = {}
    for task_log in logs.glob(f"airflow/dag_id={DAG_ID}/run_id=*/task_id=wait/attempt=1.log"):
        for line in task_log.read_text(errors="replace").splitlines():
            if "Pausing task as DEFERRED" in line:
                entry = json.loads(line)
                deferred[entry["run_id"]] = _at(entry["timestamp"])
                break
    read: dict[str, float] = {}
    for line in (logs / "scheduler.log").read_text(errors="replace").splitlines():
        if (found := EXIT_READ_LINE.search(line)) and (stamp := STAMP.match(line)):
            read.setdefault(
                found.group(1), datetime.fromisoformat(f"{stamp.group(1)}T{stamp.group(2)}+00:00").timestamp()
            )
    return sorted(read[run_id] - at for run_id, at in deferred.items() if run_id in read)


def _run_name(args: argparse.Namespace) -> str:
    """Names the run's private folder and where its logs are kept: ``.deferral-race-<executor>[-<ref>]/logs``."""
    ref = re.sub(r"[^A-Za-z0-9_.-]", "_", args.provider_ref)
    return f"deferral-race-{args.executor}" + (f"-{ref}" if ref else "")


def _task_states(cluster: Cluster, run_id: str) -> str:
    answer = cluster.api("GET", f"/dags/{DAG_ID}/dagRuns/{run_id}/taskInstances")["task_instances"]
    return ", ".join(f"{ti['task_id']} {ti['state']} (try {ti['try_number']})" for ti in answer)


def _at(stamp: str) -> float:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def measure(args: argparse.Namespace, staging: Path) -> dict[str, Any]:
    release = release_of("")
    dags = staging / "dags"
    shutil.copytree(BENCH / "deferral_race_dags", dags, ignore=shutil.ignore_patterns("__pycache__"))
    path = [str(ROOT / "tools" / "e2e")]
    if args.provider_ref:
        path.insert(0, str(provider_copy(args.provider_ref, staging)))
    # Every process starts here: a Python started in the work tree would import the work tree's package first.
    os.chdir(staging)
    settings = {
        "PYTHONPATH": ":".join(path),
        "AIRFLOW__CORE__PARALLELISM": str(args.parallelism),
        "AIRFLOW__CORE__MAX_ACTIVE_RUNS_PER_DAG": str(args.parallelism),
        "AIRFLOW__SCHEDULER__MAX_TIS_PER_QUERY": "16",
    }
    sandbox_args = ["--speed", "demo", "--auto-sync", "0", "--work-seconds", args.work_seconds, "--chaos-seed", "1"]
    cluster = Cluster(release, airflow_bin("", ROOT / ".tools" / "bin" / "uv"), args.executor, dags, sandbox_args,
                      name=_run_name(args), settings=settings, worker_concurrency=2)  # fmt: skip
    with cluster:
        deployment = Deployment(cluster)
        wait_parsed(cluster, {DAG_ID})
        probe = [str(cluster.bin / "python"), "-c", "import airflow_provider_analytics as p; print(p.__file__)"]
        imported = subprocess.run(probe, env=cluster.env(), capture_output=True, text=True, check=True).stdout
        print(f"== the components import the provider from {imported.strip()}", flush=True)
        deployment.unpause(DAG_ID)
        started = time.monotonic()
        runs = [deployment.trigger(DAG_ID) for _ in range(args.runs)]
        states = {run_id: deployment.wait_run(DAG_ID, run_id, seconds=args.runs * 30.0) for run_id in runs}
        elapsed = time.monotonic() - started
        waits = {run_id: deployment.task(DAG_ID, run_id, "wait") for run_id in runs}
        gaps = first_poll_gaps(deployment, runs)
        scheduler_log = (cluster.logs / "scheduler.log").read_text(errors="replace")
        race_lines = RACE_LINE.findall(scheduler_log)
        windows = race_windows(cluster.logs)
        tasks = {run_id: _task_states(cluster, run_id) for run_id in runs if states[run_id] != "success"}
        cluster.keep_logs = True  # every component's log, kept in .deferral-race-*/logs (git-ignored)
    failed = [run_id for run_id in runs if waits[run_id]["state"] == "failed"]
    return {
        "runs": runs, "states": states, "failed": failed, "race_lines": race_lines, "gaps": gaps, "elapsed": elapsed,
        "other_failed": [r for r in runs if states[r] == "failed" and r not in failed], "tasks": tasks,
        "windows": windows,
    }  # fmt: skip


def report(args: argparse.Namespace, result: dict[str, Any]) -> None:
    runs, failed, gaps = result["runs"], result["failed"], result["gaps"]
    label = f"{args.executor}, provider {args.provider_ref or 'work tree'}"
    print(f"\n== deferral race ({label}): {len(runs)} runs in {result['elapsed']:.0f} s")
    print(f"wait failed: {len(failed)} of {len(runs)} ({100.0 * len(failed) / len(runs):.1f} per 100)")
    by_state = {state: result["race_lines"].count(state) for state in sorted(set(result["race_lines"]))}
    print(f"scheduler 'finished with state success, but ... state attribute is X': {by_state or 'none'}")
    print(f"runs failed by another task: {len(result['other_failed'])}")
    for run_id, tasks in result["tasks"].items():
        print(f"  {run_id} {result['states'][run_id]}: {tasks}")
    known = [gap for gap in gaps.values() if gap is not None]
    if known:
        print(f"poke -> trigger's first poll, s: min {min(known):.2f}, median {statistics.median(known):.2f}, "
              f"max {max(known):.2f} ({len(known)} runs polled by a trigger)")  # fmt: skip
    windows = result["windows"]
    if windows:
        print(f"deferral -> scheduler reads the worker's exit (the race's window), s: min {windows[0]:.2f}, median "
              f"{statistics.median(windows):.2f}, 90th percentile {windows[int(len(windows) * 0.9)]:.2f}, max "
              f"{windows[-1]:.2f} ({len(windows)} deferrals)")  # fmt: skip
    for run_id in failed:
        gap = gaps[run_id]
        print(f"  failed {run_id}: poke -> first trigger poll {'?' if gap is None else f'{gap:.2f}'} s")
    print(f"  non-failed runs with a first trigger poll under 3 s: "
          f"{sum(1 for r, g in gaps.items() if g is not None and g < 3 and r not in failed)}")  # fmt: skip


def main() -> int:
    exit_on_sigterm()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--executor", choices=["local", "celery"], default="local")
    parser.add_argument("--runs", type=int, default=50, help="DAG runs triggered (default 50)")
    parser.add_argument("--parallelism", type=int, default=4, help="[core] parallelism and max active runs")
    parser.add_argument("--work-seconds", default="4-12", help="sandbox: each execution takes MIN-MAX seconds")
    parser.add_argument("--provider-ref", default="", help="run the provider as committed on this git ref")
    args = parser.parse_args()
    staging = Path(tempfile.mkdtemp(prefix="apa-deferral-race-"))
    try:
        report(args, measure(args, staging))
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
