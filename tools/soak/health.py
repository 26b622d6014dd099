"""Health over time: each component's memory and open files, sampled on a timer, and the event-loop canary.

Memory is the RSS of a component's whole process tree (a Celery worker's pool and the task processes it runs
at that moment included), read with psutil from the pid the cluster started; open file descriptors are
counted over the same tree. Every pid seen is kept, so the end of the soak can check none is left. The
triggerer's event-loop lag is measured by a canary run (dags/soak_canary.py) started at each sample.
"""

from __future__ import annotations

import contextlib
import threading
import time
from dataclasses import dataclass, field

import psutil
from soak_deployment import CANARY_DAG, SoakDeployment

COMPONENTS = ("triggerer", "worker_a", "worker_b", "scheduler", "api-server", "dag-processor")


@dataclass
class Sample:
    """One reading of one component.

    :param at: when (epoch seconds).
    :param component: which.
    :param pid: the component's own process (a restart starts a new one).
    :param rss_mb: RSS of its whole process tree (task processes of a worker included), MB.
    :param core_mb: RSS of the process and its direct children (a worker's pool, the triggerer's runner): the
        long-lived part, where a leak accumulates; a worker's task processes come and go below it.
    :param fds: open file descriptors of the whole tree.
    :param processes: processes in the tree.
    """

    at: float
    component: str
    pid: int
    rss_mb: float
    core_mb: float
    fds: int
    processes: int


@dataclass
class HealthRecord:
    samples: list[Sample] = field(default_factory=list)
    # every process of the deployment seen, with its start time (pids wrap around within an hour of tasks)
    pids: set[tuple[int, float]] = field(default_factory=set)
    canaries: list[str] = field(default_factory=list)  # run ids of the canary runs started


def tree(pid: int) -> list[psutil.Process]:
    """The process and all its descendants that are alive now."""
    try:
        root = psutil.Process(pid)
        return [root, *root.children(recursive=True)]
    except psutil.Error:
        return []


def measure(processes: list[psutil.Process]) -> tuple[float, int]:
    rss, fds = 0, 0
    for process in processes:
        try:
            rss += process.memory_info().rss
            fds += process.num_fds()
        except psutil.Error:  # it ended while we looked
            continue
    return rss / 1e6, fds


class Health(threading.Thread):
    """Samples every ``plan.sample_every`` seconds until stopped.

    :param deployment: the running deployment.
    """

    def __init__(self, deployment: SoakDeployment) -> None:
        super().__init__(name="soak-health", daemon=True)
        self.deployment = deployment
        self.record = HealthRecord()
        self.stopping = threading.Event()

    def stop(self) -> None:
        self.stopping.set()
        self.join(30)

    def run(self) -> None:
        while not self.stopping.is_set():
            self.sample()
            try:
                self.record.canaries.append(self.deployment.trigger(CANARY_DAG))
            except Exception as error:  # the API being restarted or busy: the next sample tries again
                print(f"canary not started: {error}", flush=True)
            self.stopping.wait(self.deployment.plan.sample_every)

    def sample(self) -> None:
        now = time.time()
        for name, process in list(self.deployment.c.processes.items()):
            members = tree(process.pid)
            for member in members:
                with contextlib.suppress(psutil.Error):
                    self.record.pids.add((member.pid, member.create_time()))
            if name in COMPONENTS and members:
                rss, fds = measure(members)
                core = [members[0], *members[0].children()] if members else []
                core_mb, _ = measure(core)
                self.record.samples.append(Sample(now, name, process.pid, rss, core_mb, fds, len(members)))
