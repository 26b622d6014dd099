"""What an operator does to a deployment during the soak: rotate the token, restart and kill components.

The schedule is a function of the soak's length: the token is rotated once (the old one stays valid for a
grace period, then the platform refuses it); the triggerer gets SIGTERM every ten minutes (once in a short
soak) and SIGKILL once; one Celery worker is SIGKILLed (with the task processes it runs) and started again;
the scheduler is restarted once. Each operation is logged with its time, which the accounting uses (a sync
seen by a triggerer that was stopped in the next moment may be lost: docs/events.md).
"""

from __future__ import annotations

import contextlib
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import psutil
from health import tree
from soak_deployment import SoakDeployment

WORKERS = ("worker_a", "worker_b")


@dataclass
class Operation:
    at: float  # seconds after the load started
    name: str
    run: Callable[[], str]
    done_at: float | None = None
    detail: str = ""


@dataclass
class OperationsRecord:
    done: list[tuple[float, str, str]] = field(default_factory=list)  # epoch, name, detail
    triggerer_stops: list[tuple[float, float]] = field(default_factory=list)  # signal sent, process gone


class Operations:
    """The scheduled operations; :meth:`due` runs those whose time came.

    :param deployment: the running deployment.
    """

    def __init__(self, deployment: SoakDeployment) -> None:
        self.deployment = deployment
        self.record = OperationsRecord()
        self.killed: list[tuple[str, str]] = []
        seconds = deployment.plan.seconds
        # Shorter than a piece of platform work, so a wait that started with the old token outlives it.
        grace = min(60.0, max(10.0, seconds / 30))
        self.schedule = [
            Operation(0.40 * seconds, "rotate the token", lambda: self.rotate(grace)),
            Operation(0.55 * seconds, "SIGKILL the triggerer", lambda: self.restart("triggerer", signal.SIGKILL)),
            Operation(0.70 * seconds, "SIGKILL a busy worker, start it again", self.kill_busy_worker),
            Operation(0.85 * seconds, "restart the scheduler", lambda: self.restart("scheduler", signal.SIGTERM)),
        ]
        every = 600.0
        sigterms = [0.25 * seconds] if seconds < 2 * every else [every * k for k in range(1, int(seconds // every) + 1)]
        for at in sigterms:
            if at < seconds - 30:
                self.schedule.append(
                    Operation(at, "SIGTERM the triggerer", lambda: self.restart("triggerer", signal.SIGTERM))
                )
        self.schedule.sort(key=lambda op: op.at)

    def due(self, elapsed: float) -> None:
        for operation in self.schedule:
            if operation.done_at is None and elapsed >= operation.at:
                operation.done_at = time.time()
                operation.detail = operation.run()
                self.record.done.append((operation.done_at, operation.name, operation.detail))
                print(f"[{elapsed:5.0f} s] {operation.name}: {operation.detail}", flush=True)

    def worker_side_wait(self) -> dict[str, Any] | None:
        """A wait held on a worker, running now (waiting a little for one), or None."""
        deadline = time.time() + min(90.0, self.deployment.plan.seconds * 0.12)
        while True:
            path = "/dags/soak_as_code/dagRuns/~/taskInstances?state=running&limit=100"
            tis = self.deployment.c.api("GET", path)["task_instances"]
            running = [t for t in tis if t["task_id"] == "run_workflow" and t.get("hostname") in WORKERS]
            if running or time.time() > deadline:
                return running[0] if running else None
            time.sleep(2)

    def kill_busy_worker(self) -> str:
        """SIGKILL the worker running a worker-side wait (whichever does, waiting a little for one), as a lost
        machine: the whole process tree, task processes included. Its task's retry must reattach."""
        cluster = self.deployment.c
        victim, task = "worker_b", "no worker-side wait was running"
        if (busy := self.worker_side_wait()) is not None:
            victim, task = busy["hostname"], f"it ran {busy['dag_run_id']}.run_workflow"
        for process in reversed(tree(cluster.processes[victim].pid)):
            with contextlib.suppress(psutil.Error):
                process.send_signal(signal.SIGKILL)
        self.killed.append((victim, task))
        return f"{victim} ({task}): " + self.restart(victim, signal.SIGKILL)

    def rotate(self, grace: float) -> str:
        """Rotate while a wait held on a worker polls with the old token (the triggers' waits always do)."""
        busy = self.worker_side_wait()
        new = self.deployment.rotate_token(grace_seconds=grace)
        self.deployment.update_connection_token(new)
        during = f"during {busy['dag_run_id']}.run_workflow's wait" if busy else "(no wait held on a worker)"
        return f"new token in the connection (REST PATCH) {during}; the old one refused after {grace:g} s"

    def restart(self, component: str, sig: int) -> str:
        cluster = self.deployment.c
        old, signalled = cluster.processes[component].pid, time.time()
        cluster.processes[component].stop(sig)
        if component == "triggerer":
            self.record.triggerer_stops.append((signalled, time.time()))
        cluster.start_component(component)
        new = cluster.processes[component].pid
        return f"pid {old} stopped with {signal.Signals(sig).name}, started again as pid {new}"
