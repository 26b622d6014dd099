"""Many triggers in one event loop never stall it: no blocking I/O, CA loading or TLS set-up on the loop.

The triggers run in a fresh interpreter (as in a triggerer, and away from the sandbox's threads in this
process), next to a 10 ms ticker; the CPU time of every callback the loop runs is measured.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import certifi

from airflow_provider_analytics.hooks.analytics import AnalyticsHook
from airflow_provider_analytics.sandbox.server import SandboxServer
from tests.support.context import SLOW
from tests.support.names import CONN_ENV, WORKFLOW

WAITS = 200
# The CPU time of the longest callbacks the loop ran: 2-7 ms measured; 34 ms when every client loaded its CA
# bundle on the loop (then 200 starts stalled the loop for 5.5 s). CPU, not wall time, so that other load
# on the machine cannot fail the test. A busy machine still adds a rare outlier (20 ms once in a compat run:
# page faults, a cache flushed by the other worker), so ALLOWED_OUTLIERS callbacks may pass the bound; a
# stall of the triggers' own making is in every trigger's callbacks, hundreds of them.
STALL_BOUND_SECONDS = 0.015
ALLOWED_OUTLIERS = 2

_PROGRAM = textwrap.dedent(
    """
    import asyncio, asyncio.events, gc, json, sys, time
    from airflow_provider_analytics.triggers.executions import ExecutionTrigger

    # CPU time of every callback the loop runs: unlike wall time, other load on the machine does not add to it.
    callback_cpu = []
    _run = asyncio.events.Handle._run

    def _measured(handle):
        started = time.thread_time()
        try:
            return _run(handle)
        finally:
            callback_cpu.append(time.thread_time() - started)

    asyncio.events.Handle._run = _measured

    async def main(waits, workflow_id, execution_id):
        lags = []
        stop = asyncio.Event()

        async def ticker():
            expected = time.monotonic()
            while not stop.is_set():
                expected += 0.01
                await asyncio.sleep(max(0.0, expected - time.monotonic()))
                lags.append(time.monotonic() - expected)

        async def wait_one():
            trigger = ExecutionTrigger(
                workflow_id=workflow_id, execution_id=execution_id, poll_interval=2.0, deadline=time.time() + 4
            )
            return [event.payload["status"] async for event in trigger.run()]

        # Warm up: the first trigger in a process pays one-time imports (Airflow's secrets lookup; anyio's asyncio
        # backend, which httpcore imports when it first closes a pool with a connection), so it polls for real:
        # a short interval, as first polls are staggered over one interval.
        warm = ExecutionTrigger(
            workflow_id=workflow_id, execution_id=execution_id, poll_interval=0.2, deadline=time.time() + 1
        )
        [event async for event in warm.run()]
        # The warm-up's last step (closing its client) runs in the callback that goes on to clear the record
        # below, and a callback's CPU is recorded when it ends: end this one first, so none of it is counted.
        await asyncio.sleep(0)
        # A full garbage collection walks every object Airflow's imports made (about 130 ms on Python 3.10) and
        # lands in whichever callback runs then: the interpreter's cost, not the triggers'. Freeze them out of
        # later collections, so that what is measured is the triggers' own work.
        gc.freeze()
        callback_cpu.clear()
        tick = asyncio.ensure_future(ticker())
        results = await asyncio.gather(*(wait_one() for _ in range(waits)))
        stop.set()
        await tick
        statuses = sorted({status for result in results for status in result})
        longest = sorted(callback_cpu)[-5:]
        summary = {"max_lag": max(lags), "longest_callbacks_cpu": longest, "statuses": statuses}
        print(json.dumps({**summary, "events": sum(map(len, results))}))

    asyncio.run(main(int(sys.argv[1]), sys.argv[2], sys.argv[3]))
    """
)


def test_many_triggers_never_stall_the_loop(sandbox: SandboxServer, hook: AnalyticsHook) -> None:
    sandbox.state.set_timings(SLOW)
    execution = hook.execute_workflow(WORKFLOW)
    conn = json.loads(sandbox.connection_json())
    conn["extra"]["verify"] = certifi.where()  # a CA bundle to load: the old code loaded it per trigger, on the loop
    env = {**os.environ, CONN_ENV: json.dumps(conn)}
    done = subprocess.run(
        [sys.executable, "-c", _PROGRAM, str(WAITS), WORKFLOW, execution["id"]],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["events"] == WAITS
    assert result["statuses"] == ["timeout"]  # every wait polled to its deadline, none failed
    longest = result["longest_callbacks_cpu"]
    print(f"{WAITS} triggers: max loop lag {result['max_lag'] * 1000:.0f} ms, "
          f"longest callbacks {[round(cpu * 1000, 1) for cpu in longest]} ms CPU")  # fmt: skip
    assert longest[-1 - ALLOWED_OUTLIERS] < STALL_BOUND_SECONDS, result
