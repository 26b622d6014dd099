"""The load: DAG runs triggered through the REST API to keep the target in flight, and the platform's syncs.

One thread tops the soak DAGs' runs in flight (queued or running) up to the plan's target every couple of
seconds, mostly without a logical date (as the UI and most callers trigger), some with one; and starts a
sync of each watched data source on the sandbox every ``sync_every`` seconds, which feeds the sensors and
the event-driven DAG. Every count it reads is kept, so the report can show the lowest number in flight.
"""

from __future__ import annotations

import random
import threading
import time
import traceback
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from soak_deployment import LOAD_DAGS, SYNCED_SOURCES, SoakDeployment

# How the load is mixed (a run of soak_as_code holds a worker slot for its whole platform work: rare).
WEIGHTS = {"soak_workflow": 28, "soak_report_local": 21, "soak_report_s3": 21, "soak_fire_and_forget": 20,
           "soak_as_code": 10}  # fmt: skip
WITH_LOGICAL_DATE = 0.15


@dataclass
class LoadRecord:
    """What the load did: runs triggered, in-flight counts read, syncs started, errors met."""

    triggered: dict[str, int] = field(default_factory=dict)
    in_flight: list[tuple[float, int]] = field(default_factory=list)
    syncs: list[tuple[float, str]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


class Load(threading.Thread):
    """Keeps the runs in flight and the syncs coming until :meth:`stop_triggering` / :meth:`stop`.

    :param deployment: the running deployment.
    :param seed: seeds the choice of DAGs and trigger forms.
    """

    def __init__(self, deployment: SoakDeployment, seed: int) -> None:
        super().__init__(name="soak-load", daemon=True)
        self.deployment = deployment
        self.plan = deployment.plan
        self.random = random.Random(seed)
        self.record = LoadRecord()
        self.triggering = threading.Event()
        self.triggering.set()
        self.stopping = threading.Event()
        self._next_sync = 0.0

    def stop_triggering(self) -> None:
        self.triggering.clear()

    def stop(self) -> None:
        self.stopping.set()
        self.join(30)

    def run(self) -> None:
        while not self.stopping.is_set():
            try:
                self._tick()
            except Exception as error:  # a failed REST call is recorded and retried at the next tick
                self.record.errors.append(f"{type(error).__name__}: {error}")
                traceback.print_exc()
            self.stopping.wait(2)

    def _tick(self) -> None:
        now = time.time()
        if now >= self._next_sync:
            self._next_sync = now + self.plan.sync_every
            for source in SYNCED_SOURCES:
                self.deployment.c.sandbox("POST", f"/_sandbox/data-sources/{source}/sync", {"outcome": "synced"})
                self.record.syncs.append((now, source))
        if not self.triggering.is_set():
            return
        count = self.deployment.in_flight()
        self.record.in_flight.append((now, count))
        for _ in range(max(0, self.plan.in_flight - count)):
            dag_id = self.random.choices(list(WEIGHTS), weights=list(WEIGHTS.values()))[0]
            assert dag_id in LOAD_DAGS
            logical_date = None
            if self.random.random() < WITH_LOGICAL_DATE:  # unique per DAG: the current time, to the microsecond
                logical_date = datetime.now(UTC).isoformat().replace("+00:00", "Z")
            self.deployment.trigger(dag_id, logical_date)
            self.record.triggered[dag_id] = self.record.triggered.get(dag_id, 0) + 1

    def lowest_in_flight(self, after: float) -> int | None:
        """The fewest runs in flight read after ``after`` (epoch seconds): the ramp-up is not counted."""
        counts = [count for at, count in self.record.in_flight if at >= after]
        return min(counts) if counts else None


def summary(record: LoadRecord) -> dict[str, Any]:
    return {"triggered": dict(record.triggered), "syncs": len(record.syncs), "errors": record.errors[:5]}
