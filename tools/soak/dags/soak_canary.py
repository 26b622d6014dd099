"""The soak's event-loop canary: a deferred task whose trigger measures how late the triggerer wakes it.

The trigger sleeps ``tick`` seconds again and again for ``seconds`` and records how much later than asked each
sleep ended: that lateness is the triggerer's event-loop lag (a callback that holds the loop, a poll that
blocks, a loop starved of CPU). The task returns the figures; the soak starts one canary per health sample.
It lives beside the soak DAGs; the triggerer imports the trigger as ``soak_canary`` (the folder is on its
``PYTHONPATH``), so the class path does not depend on how the DAG processor named this file.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import AsyncIterator
from datetime import datetime
from typing import Any

from airflow.sdk import DAG, BaseOperator
from airflow.triggers.base import BaseTrigger, TriggerEvent


class LoopLagTrigger(BaseTrigger):
    """Sleep ``tick`` seconds until ``seconds`` have passed; fire with how late each sleep ended.

    :param seconds: how long to measure.
    :param tick: the length of one sleep.
    """

    def __init__(self, seconds: float, tick: float = 0.5) -> None:
        super().__init__()  # type: ignore[no-untyped-call]
        self.seconds = seconds
        self.tick = tick

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return "soak_canary.LoopLagTrigger", {"seconds": self.seconds, "tick": self.tick}

    async def run(self) -> AsyncIterator[TriggerEvent]:
        lags: list[float] = []
        end = time.monotonic() + self.seconds
        while time.monotonic() < end:
            asked = time.monotonic()
            await asyncio.sleep(self.tick)
            lags.append(time.monotonic() - asked - self.tick)
        yield TriggerEvent({"lags": lags, "ended": time.time()})  # type: ignore[no-untyped-call]


class LoopLagCanary(BaseOperator):
    """Defer to :class:`LoopLagTrigger`; return the lags' max, p95 and mean in milliseconds.

    :param seconds: how long the trigger measures.
    """

    def __init__(self, *, seconds: float, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.seconds = seconds

    def execute(self, context: Any) -> None:
        self.defer(trigger=LoopLagTrigger(seconds=self.seconds), method_name="measured")

    def measured(self, context: Any, event: dict[str, Any]) -> dict[str, float]:
        lags = sorted(event["lags"]) or [0.0]
        return {
            "ended": float(event["ended"]),
            "samples": float(len(lags)),
            "max_ms": lags[-1] * 1000,
            "p95_ms": lags[int(0.95 * (len(lags) - 1))] * 1000,
            "mean_ms": sum(lags) / len(lags) * 1000,
        }


with DAG(
    dag_id="canary_loop_lag",
    schedule=None,
    start_date=datetime(2026, 11, 1),
    catchup=False,
    max_active_runs=3,
    tags=["soak"],
):
    LoopLagCanary(task_id="measure", seconds=float(os.environ.get("SOAK_CANARY_SECONDS", "20")))
