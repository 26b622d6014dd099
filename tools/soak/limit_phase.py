"""A real per-second rate limit on the platform for a middle part of the load, then lifted.

From ``START`` to ``END`` of the load the sandbox refuses each token's requests beyond ``--rate-limit`` per
wall-clock second (fixed one-second windows) with 429 and ``Retry-After`` (docs/sandbox.md, "Rate limits"): the
first half with the ``X-RateLimit-*`` headers on every answer, so that the clients can pace themselves by them,
the second half without, so that they learn the rate from the 429s alone. The changes go through the sandbox's
admin route (``POST /_sandbox/rate-limit``), whose answer carries the counters of the per-second limit (requests
it let through and refused): they are kept with each change, so that the accounting tells the limit's refusals
from the chaos's 429s (which the sandbox answers before any limit counts). The phase runs in its own thread on
the load's clock: an operation that waits (a rotation waits for a wait held on a worker) does not move it.
"""

from __future__ import annotations

import threading
import time
import traceback

from accounting import LimitRecord, LimitStep
from soak_deployment import SoakDeployment

# Shares of the load: the limit with headers from START, without them from SWITCH, lifted at END.
START, SWITCH, END = 0.25, 0.425, 0.60


class LimitPhase(threading.Thread):
    """Sets, changes and lifts the limit on time; :attr:`record` holds what was done.

    :param deployment: the running deployment.
    :param per_second: the limit, requests per second per token (over 0).
    :param started: when the load started (epoch seconds).
    """

    def __init__(self, deployment: SoakDeployment, per_second: float, started: float) -> None:
        super().__init__(name="soak-rate-limit", daemon=True)
        self.deployment = deployment
        self.started = started
        seconds = deployment.plan.seconds
        self.changes: list[tuple[float, float | None, bool]] = [
            (started + START * seconds, per_second, True),
            (started + SWITCH * seconds, per_second, False),
            (started + END * seconds, None, True),
        ]
        self.record = LimitRecord(per_second, planned=tuple(at for at, _, _ in self.changes))
        self.stopping = threading.Event()

    def run(self) -> None:
        for at, per_second, headers in self.changes:
            if self.stopping.wait(max(0.0, at - time.time())):
                return
            self.change(per_second, headers)

    def change(self, per_second: float | None, headers: bool) -> None:
        """Set the limit now (None lifts it); tried three times, as the sandbox may be slow to answer under load."""
        for attempt in range(3):
            try:
                stats = self.deployment.c.sandbox(
                    "POST", "/_sandbox/rate-limit", {"per_second": per_second, "headers": headers}
                )
            except Exception:
                traceback.print_exc()
                time.sleep(2 * (attempt + 1))
                continue
            now = time.time()
            self.record.steps.append(LimitStep(now, per_second, headers, int(stats["allowed"]), int(stats["refused"])))
            what = "lifted" if per_second is None else f"{per_second:g}/s, {'with' if headers else 'without'} headers"
            print(f"[{now - self.started:5.0f} s] platform rate limit {what} "
                  f"(so far {stats['allowed']} let through, {stats['refused']} refused)", flush=True)  # fmt: skip
            return
        print(f"platform rate limit: could not set {per_second} (headers {headers})", flush=True)

    def stop(self) -> None:
        """End the thread; lift the limit if it is still on (the load ended before the phase did)."""
        self.stopping.set()
        self.join(60)
        if self.record.steps and self.record.steps[-1].per_second is not None:
            self.change(None, True)
