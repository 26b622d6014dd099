"""One configuration of ``bench/triggerer.py``: N waits polling one HTTPS server in ONE asyncio loop.

Run by ``bench/triggerer.py`` in a fresh interpreter per configuration, pinned to CPU 0, with
``AIRFLOW_HOME``, ``AIRFLOW__CORE__UNIT_TEST_MODE``, ``AIRFLOW__CORE__LOAD_EXAMPLES`` and
``AIRFLOW_CONN_ANALYTICS_DEFAULT`` set by the parent before anything imports airflow. Designs:

- ``provider``: the provider's real ``ExecutionTrigger`` objects, each driven by ``async for event in
  trigger.run()`` as one task, as the triggerer runs them. A subclass only records when ``fetch`` returned
  (or raised); the poll loop, hook, client, retries and stagger are the provider's own.
- ``per_poll``: each wait loops ``async with httpx.AsyncClient(verify=<new SSLContext from the CA>)``, one
  GET, then sleeps (the dbt Cloud / Census trigger pattern).
- ``shared``: one ``httpx.AsyncClient(verify=ctx)`` (default limits) for all waits; each loops GET + sleep.

All N tasks are created at once; start-up ends when every wait has polled once (or at ``--start-limit``),
then a window of ``--window`` seconds is measured: polls, process CPU, the longest gap between two polls
of one wait, event-loop lag (a 50 ms ticker), failures (exceptions, error events) and retries (WARNING
records of ``airflow_provider_analytics.wire`` that say "retry"). Lines on stdout: ``WINDOW_START``,
``WINDOW_END`` (the parent reads the server's counters then), and ``RESULT <json>``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import json
import logging
import os
import ssl
import sys
import threading
import time
from collections.abc import Callable, Coroutine, Mapping
from typing import Any

from benchlib import cpu_busy, percentile, pin, status_kb

TICK = 0.05


class GcPauses:
    """Times the interpreter's garbage collections: a full one over thousands of clients stalls the loop."""

    def __init__(self) -> None:
        self.started = 0.0
        self.longest = [0.0, 0.0, 0.0]
        self.count = [0, 0, 0]
        gc.callbacks.append(self.callback)

    def callback(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self.started = time.perf_counter()
            return
        generation = info["generation"]
        self.count[generation] += 1
        self.longest[generation] = max(self.longest[generation], time.perf_counter() - self.started)


GC = GcPauses()


class State:
    """Counters shared by every wait of the run."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.polls = [0] * n
        self.last = [0.0] * n
        self.total = 0
        self.started = 0
        self.failed = 0
        self.retried = 0
        self.errors: dict[str, int] = {}
        self.window_open = False
        self.window_polls = [0] * n
        self.window_first = [0.0] * n
        self.max_gap = 0.0
        self.all_started = asyncio.Event()

    def polled(self, index: int) -> None:
        now = time.monotonic()
        if self.polls[index] == 0:
            self.started += 1
            if self.started == self.n:
                self.all_started.set()
        if self.window_open:
            if self.polls[index]:
                self.max_gap = max(self.max_gap, now - self.last[index])
            if not self.window_polls[index]:
                self.window_first[index] = now
            self.window_polls[index] += 1
        self.polls[index] += 1
        self.last[index] = now
        self.total += 1

    def fail(self, what: str) -> None:
        self.failed += 1
        key = what[:160]
        self.errors[key] = self.errors.get(key, 0) + 1


class RetryCounter(logging.Handler):
    """Counts the wire layer's retry warnings."""

    def __init__(self, state: State) -> None:
        super().__init__(logging.WARNING)
        self.state = state

    def emit(self, record: logging.LogRecord) -> None:
        if "retry" in record.getMessage():
            self.state.retried += 1


def provider_waits(state: State, n: int, interval: float) -> tuple[list[Callable[[], Coroutine[Any, Any, None]]], Any]:
    """The provider's triggers, each drained with ``async for`` like the triggerer does."""
    from airflow_provider_analytics.hooks.analytics import AnalyticsAsyncHook
    from airflow_provider_analytics.triggers.executions import ExecutionTrigger

    class CountingTrigger(ExecutionTrigger):
        bench_index = 0

        async def fetch(self, hook: AnalyticsAsyncHook) -> Mapping[str, Any]:
            try:
                resource = await super().fetch(hook)
            except Exception as exc:
                state.fail(f"{type(exc).__name__}: {exc}")
                raise
            state.polled(self.bench_index)
            return resource

    def drive(index: int) -> Callable[[], Coroutine[Any, Any, None]]:
        trigger = CountingTrigger(
            workflow_id="wf_bench", execution_id=f"ex_{index}", poll_interval=interval, deadline=None
        )
        trigger.bench_index = index

        async def run() -> None:
            async for event in trigger.run():  # the server never finishes: any event is an error
                state.fail(f"event {event.payload.get('status')}: {event.payload.get('message')}")

        return run

    return [drive(index) for index in range(n)], None


def httpx_waits(
    state: State, n: int, interval: float, base: str, ca: str, shared: bool
) -> tuple[list[Callable[[], Coroutine[Any, Any, None]]], Any]:
    """The two comparison designs: a client per poll, or one client shared by every wait."""
    import httpx

    headers = {"Authorization": "Bearer bench-token", "Accept": "application/json"}
    client = httpx.AsyncClient(verify=ssl.create_default_context(cafile=ca), headers=headers) if shared else None

    async def get(c: httpx.AsyncClient, url: str) -> None:
        response = await c.get(url)
        response.raise_for_status()
        if response.json()["status"] != "running":
            raise RuntimeError("unexpected status")

    def drive(index: int) -> Callable[[], Coroutine[Any, Any, None]]:
        url = f"{base}/v1/workflows/wf_bench/executions/ex_{index}"

        async def run() -> None:
            while True:
                try:
                    if client is not None:
                        await get(client, url)
                    else:
                        context = ssl.create_default_context(cafile=ca)
                        async with httpx.AsyncClient(verify=context, headers=headers) as own:
                            await get(own, url)
                    state.polled(index)
                except Exception as exc:
                    state.fail(f"{type(exc).__name__}: {exc}")
                await asyncio.sleep(interval)

        return run

    return [drive(index) for index in range(n)], client


async def ticker(lags: list[tuple[float, float]]) -> None:
    """Sleep 50 ms again and again; record how late each wake-up was."""
    while True:
        before = time.monotonic()
        await asyncio.sleep(TICK)
        after = time.monotonic()
        lags.append((after, after - before - TICK))


def summary(
    args: argparse.Namespace, state: State, marks: dict[str, float], lags: list[tuple[float, float]]
) -> dict[str, Any]:
    """The figures from what was reached: all of them after a full run, the start-up ones if stuck."""
    now = time.monotonic()
    t0 = marks.get("t0", now)
    t1 = marks.get("t1", now)
    span = max(t1 - t0, 1e-9)
    polls = int(marks.get("polls1", state.total) - marks.get("polls0", state.total))
    cpu = marks.get("cpu1", time.process_time()) - marks.get("cpu0", time.process_time())
    others = marks.get("busy1", cpu_busy(args.cpu)) - marks.get("busy0", cpu_busy(args.cpu)) - cpu
    rate = 0.0  # each wait's own polling rate in the window, so a burst at the window's edge does not count
    for count, first, last in zip(state.window_polls, state.window_first, state.last, strict=False):
        rate += (count - 1) / (last - first) if count >= 2 and last > first else count / span
    begin = marks["begin"]
    all_lags = [lag for at, lag in lags if at >= begin]
    stalled = max((t1 - last for last in state.last if last), default=0.0) if "t0" in marks else 0.0
    return {
        "design": args.design,
        "n": args.n,
        "interval": args.interval,
        "stuck": "t1" not in marks,
        "window": span,
        "polls": polls,
        "polls_per_s": rate if "t0" in marks else 0.0,
        "raw_polls_per_s": polls / span,
        "ideal_per_s": args.n / args.interval,
        "cpu_window": cpu,
        "cpu_share": cpu / span if "t0" in marks else 0.0,
        "others_cpu0_share": max(0.0, others) / span if "t0" in marks else 0.0,
        "cpu_per_poll_ms": 1000 * cpu / polls if polls else None,
        "kb_per_wait": (marks.get("rss_started", status_kb("VmRSS")) - marks["rss_before"]) / args.n,
        "rss_before_mb": marks["rss_before"] / 1024,
        "peak_rss_mb": status_kb("VmHWM") / 1024,
        "startup_s": marks.get("startup", now - begin),
        "started": state.started,
        "all_started": state.started == args.n,
        "lag_p99_ms": 1000 * percentile(all_lags, 0.99),
        "lag_max_ms": 1000 * max(all_lags, default=0.0),
        "window_lag_max_ms": 1000 * max((lag for at, lag in lags if at >= t0), default=0.0),
        # When the worst stall happened, seconds after the waits were created: start-up or steady state.
        "lag_max_at_s": max(((lag, at - begin) for at, lag in lags if at >= begin), default=(0.0, 0.0))[1],
        "max_gap_s": max(state.max_gap, stalled),
        "gc_objects_per_wait": (marks.get("objects_started", 0) - marks["objects_before"]) / args.n,
        "gc_objects_before": marks["objects_before"],
        "gc_max_ms": [round(1000 * pause, 1) for pause in GC.longest],
        "gc_count": list(GC.count),
        "failed": state.failed,
        "retried": state.retried,
        "errors": top_errors(state),
    }


def top_errors(state: State) -> dict[str, int]:
    """The five most frequent errors (read from the watchdog thread too, so a changing dict is retried)."""
    for _ in range(5):
        try:
            return dict(sorted(state.errors.items(), key=lambda item: -item[1])[:5])
        except RuntimeError:
            time.sleep(0.01)
    return {}


def watchdog(args: argparse.Namespace, state: State, marks: dict[str, float], lags: list[tuple[float, float]]) -> None:
    """A thread: if the loop is still not done at the hard limit, print what was reached and end the process."""
    time.sleep(args.start_limit + args.window + 20)
    print("RESULT " + json.dumps(summary(args, state, marks, lags)), flush=True)
    os._exit(0)


async def measure(args: argparse.Namespace) -> dict[str, Any]:
    state = State(args.n)
    wire = logging.getLogger("airflow_provider_analytics.wire")
    wire.addHandler(RetryCounter(state))
    if wire.getEffectiveLevel() > logging.WARNING:
        wire.setLevel(logging.WARNING)
    base = f"https://127.0.0.1:{args.port}"
    if args.design == "provider":
        waits, client = provider_waits(state, args.n, args.interval)
    else:
        waits, client = httpx_waits(state, args.n, args.interval, base, args.ca, args.design == "shared")
    lags: list[tuple[float, float]] = []
    tick = asyncio.create_task(ticker(lags))
    await asyncio.sleep(0.5)
    marks = {"rss_before": float(status_kb("VmRSS")), "objects_before": len(gc.get_objects())}
    marks["begin"] = time.monotonic()
    threading.Thread(target=watchdog, args=(args, state, marks, lags), daemon=True).start()
    tasks = [asyncio.create_task(wait()) for wait in waits]  # all at once, as a triggerer starts them
    with contextlib.suppress(asyncio.TimeoutError):
        await asyncio.wait_for(state.all_started.wait(), args.start_limit)
    marks.update(
        startup=time.monotonic() - marks["begin"],
        rss_started=float(status_kb("VmRSS")),
        objects_started=len(gc.get_objects()),
    )
    print("WINDOW_START", flush=True)
    state.window_open = True
    marks.update(cpu0=time.process_time(), busy0=cpu_busy(args.cpu), polls0=state.total, t0=time.monotonic())
    await asyncio.sleep(args.window)
    marks.update(cpu1=time.process_time(), busy1=cpu_busy(args.cpu), polls1=state.total, t1=time.monotonic())
    state.window_open = False
    print("WINDOW_END", flush=True)
    result = summary(args, state, marks, lags)
    tick.cancel()
    for task in tasks:
        task.cancel()
    closed = time.monotonic()
    done, pending = await asyncio.wait(tasks, timeout=15)
    crashed = [t.exception() for t in done if not t.cancelled() and t.exception() is not None]
    if client is not None:
        await client.aclose()
    result.update(
        cancel_s=time.monotonic() - closed,
        not_cancelled=len(pending),
        crashed=[repr(exc)[:200] for exc in crashed[:3]],
    )
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--design", choices=("provider", "per_poll", "shared"), required=True)
    parser.add_argument("--n", type=int, required=True)
    parser.add_argument("--interval", type=float, required=True)
    parser.add_argument("--window", type=float, required=True)
    parser.add_argument("--start-limit", type=float, required=True)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--ca", required=True)
    parser.add_argument("--cpu", type=int, default=0)
    args = parser.parse_args()
    pin(args.cpu)
    if "AIRFLOW_HOME" not in os.environ:
        sys.exit("run me from bench/triggerer.py: AIRFLOW_HOME and the connection must be set first")
    # Every design loads what a triggerer has loaded (airflow, the provider, httpx): same baseline.
    import httpx  # noqa: F401

    import airflow_provider_analytics.triggers.executions  # noqa: F401

    result = asyncio.run(measure(args))
    print("RESULT " + json.dumps(result), flush=True)
    sys.stdout.flush()
    os._exit(0)  # the waits are cancelled and measured; skip the interpreter's slow teardown


if __name__ == "__main__":
    main()
