"""One process of a ``bench/ratelimit.py`` run: its share of the N ``ExecutionTrigger`` waits on ONE token, in one loop.

Run by ``bench/ratelimit.py``, K at a time (K = 1 is one triggerer; more are a deployment's triggerers and
workers on the same token), each a fresh interpreter with ``AIRFLOW_HOME``, ``AIRFLOW__CORE__UNIT_TEST_MODE``,
``AIRFLOW__CORE__LOAD_EXAMPLES`` and ``AIRFLOW_CONN_ANALYTICS_DEFAULT`` set by the parent, against
``bench/tls_server.py`` (with or without ``--limit``). The waits are the provider's real triggers, each driven by
``async for event in trigger.run()`` as one task, as ``bench/waits.py``'s ``provider`` design does: hook, client,
retries, stagger and any client-side pacing (a shared store included, when the connection names one) are the
provider's own. A subclass only records when ``fetch`` returned (a *useful answer*) or raised (the poll was given
up: the poll loop logs it and polls again at the next interval). Execution ids are ``ex_<offset + i>``: distinct
across the processes of a run.

The parent drives every process through the same barriers, so that K processes start at one moment and measure
one window: the process imports Airflow and the provider on the CPUs of ``--import-cpus``, builds its waits and
prints ``READY``; on ``GO <epoch>`` (stdin) it pins itself to ``--cpu`` and creates all its waits at that epoch; when
each has had one useful answer (or at ``--start-limit``) it prints ``STARTED``; on ``WINDOW <w0> <w1>`` (whole
epoch seconds, the server's windows) it measures from w0 to w1 and prints ``RESULT <json>``: useful answers (in
all and per epoch second), each wait's longest gap without a useful answer (a gap counts when it ends in the
window, however early it began; a gap still open at the window's end counts up to the end), polls given up, waits
that ended (an event or an exception: the server never finishes an execution, so any end is a failure),
WARNING-or-worse log records by logger name (stdlib ``logging`` and structlog, which Airflow's trigger loggers
use), event-loop lag (the 50 ms ticker of ``waits.py``) and the longest full garbage collection. Every figure is
taken on the epoch window, not on when this loop woke: a late loop counts the same seconds as the others. It
prints ``WINDOW_START`` and ``WINDOW_END`` too (the parent splits the log lines it writes by them); everything else
on stdout is the process's own log output. The parent reads its CPU time from ``/proc``. EOF on stdin (the
parent is gone) ends it. With ``AIRFLOW__METRICS__STATSD_ON=True`` (and the rest of ``[metrics]``) in its
environment, it builds Airflow's metrics backend as a triggerer does when it starts, and the provider's metrics
go to the parent's listener.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import json
import logging
import math
import os
import re
import sys
import threading
import time
import traceback
from collections import Counter
from collections.abc import Callable, Coroutine, Mapping, MutableMapping
from pathlib import Path
from typing import Any

from benchlib import ROOT, percentile, pin
from waits import ticker

WARNING_METHODS = frozenset({"warning", "warn", "error", "exception", "critical", "fatal"})
_DIGITS = re.compile(r"(?<=_)[0-9]+")  # ids (ex_12, req_345) out of error messages, so that equal errors group
# The longest the parent takes to name the window once every process has started (bench/ratelimit_fleet.py).
WINDOW_BARRIER_S = 15.0


class Record:
    """What the waits of one process did; the window is set once the parent names it (monotonic seconds)."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.begin = time.monotonic()
        self.begin_wall = time.time()
        self.last = [0.0] * n  # monotonic time of each wait's last useful answer; 0: none yet
        self.gap = [0.0] * n  # each wait's longest gap that ended in the window
        self.answers = 0
        self.useful = 0  # answers in the window
        self.heard = [False] * n  # each wait: whether it had a useful answer in the window
        self.started = 0
        self.all_started = asyncio.Event()
        self.per_second: Counter[int] = Counter()  # useful answers per epoch second
        self.m0 = self.m1 = math.inf  # the window: from m0 (included) to m1 (not), monotonic
        self.given_up = 0  # in the window
        self.given_up_total = 0
        self.failed = [False] * n
        self.errors: Counter[str] = Counter()
        self.warnings: Counter[str] = Counter()  # in the window, by logger name
        self.warnings_total = 0
        self.full_gc: list[tuple[float, float]] = []  # (ended, seconds) of each generation-2 collection
        self._gc_started = 0.0
        gc.callbacks.append(self._gc)

    def in_window(self, now: float) -> bool:
        return self.m0 <= now < self.m1

    def answered(self, index: int) -> None:
        now = time.monotonic()
        last = self.last[index]
        if not last:
            self.started += 1
            if self.started == self.n:
                self.all_started.set()
        # A gap counts when it ends in the window; one still open at the window's end counts up to the end (an
        # answer after the end, before the summary is taken, must not hide it).
        end = now if now < self.m1 else self.m1 if (last or self.begin) < self.m1 else 0.0
        if end >= self.m0:
            self.gap[index] = max(self.gap[index], end - (last or self.begin))
        if self.in_window(now):
            self.useful += 1
            self.heard[index] = True
            self.per_second[int(time.time())] += 1
        self.last[index] = now
        self.answers += 1

    def gave_up(self, what: str) -> None:
        self.given_up_total += 1
        if self.in_window(time.monotonic()):
            self.given_up += 1
        self.errors[_DIGITS.sub("N", what)[:200]] += 1

    def fail(self, index: int, what: str) -> None:
        self.failed[index] = True
        self.errors[_DIGITS.sub("N", what)[:200]] += 1

    def logged(self, name: str) -> None:
        self.warnings_total += 1
        if self.in_window(time.monotonic()):
            self.warnings[name] += 1

    def _gc(self, phase: str, info: dict[str, Any]) -> None:
        if info["generation"] != 2:
            return
        if phase == "start":
            self._gc_started = time.perf_counter()
        else:
            self.full_gc.append((time.monotonic(), time.perf_counter() - self._gc_started))


class WarningCounter(logging.Handler):
    """Counts WARNING-or-worse records of the stdlib loggers (the provider's wire layer logs there)."""

    def __init__(self, record: Record) -> None:
        super().__init__(logging.WARNING)
        self.record = record

    def emit(self, record: logging.LogRecord) -> None:
        self.record.logged(record.name)


def count_structlog_warnings(record: Record) -> None:
    """Put a processor in front of structlog's chain that counts the warnings it is given.

    Airflow's trigger loggers (``self.log``) are structlog loggers that write straight to their output, not
    through stdlib ``logging``; a structlog logger drops records under its level before any processor, so
    what is counted is what is written.
    """
    import structlog

    def counter(logger: Any, method: str, event: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
        if method in WARNING_METHODS:
            record.logged(str(getattr(logger, "name", None) or event.get("logger") or event.get("logger_name") or "?"))
        return event

    processors = list(structlog.get_config()["processors"])
    structlog.configure(processors=[counter, *processors])


def described(exc: BaseException, api_errors: tuple[type[BaseException], ...]) -> str:
    """An exception in one line; where it was raised too, unless it is one of the API's errors (a bug then)."""
    text = f"{type(exc).__name__}: {exc}"
    if not isinstance(exc, api_errors):
        frames = traceback.extract_tb(exc.__traceback__)
        if frames:
            text += f" (at {Path(frames[-1].filename).name}:{frames[-1].lineno})"
    return text


def provider_waits(
    record: Record, n: int, offset: int, interval: float
) -> list[Callable[[], Coroutine[Any, Any, None]]]:
    """The provider's triggers, each drained with ``async for`` like the triggerer does; ids from ``offset`` on."""
    from airflow_provider_analytics.hooks.analytics import AnalyticsAsyncHook
    from airflow_provider_analytics.triggers.executions import ExecutionTrigger
    from airflow_provider_analytics.wire.errors import AnalyticsError

    api_errors = (AnalyticsError,)

    class CountingTrigger(ExecutionTrigger):
        bench_index = 0

        async def fetch(self, hook: AnalyticsAsyncHook) -> Mapping[str, Any]:
            try:
                resource = await super().fetch(hook)
            except Exception as exc:
                record.gave_up(described(exc, api_errors))
                raise
            record.answered(self.bench_index)
            return resource

    def drive(index: int) -> Callable[[], Coroutine[Any, Any, None]]:
        trigger = CountingTrigger(
            workflow_id="wf_bench", execution_id=f"ex_{offset + index}", poll_interval=interval, deadline=None
        )
        trigger.bench_index = index

        async def run() -> None:
            try:
                async for event in trigger.run():  # the server never finishes: any event is a failed wait
                    record.fail(index, f"event {event.payload.get('status')}: {event.payload.get('message')}")
            except Exception as exc:
                record.fail(index, f"crashed: {described(exc, api_errors)}")
                return
            if not record.failed[index]:
                record.fail(index, "the trigger ended without an event")

        return run

    return [drive(index) for index in range(n)]


def summary(
    args: argparse.Namespace, record: Record, marks: dict[str, float], lags: list[tuple[float, float]]
) -> dict[str, Any]:
    """The figures from what was reached: all of them after a full run, the start-up ones if stuck."""
    now = time.monotonic()
    m0, m1 = min(record.m0, now), min(record.m1, now)
    gaps = [
        gap if last >= m1 else max(gap, m1 - (last or record.begin))
        for gap, last in zip(record.gap, record.last, strict=True)
    ]
    window_lags = [lag for at, lag in lags if m0 <= at <= m1]
    return {
        "n": args.n,
        "offset": args.offset,
        "interval": args.interval,
        "stuck": "closed" not in marks,
        "began_wall": record.begin_wall,  # when the waits were created
        "startup_s": marks.get("startup", now - record.begin),
        "started": int(marks.get("started", record.started)),  # waits answered when start-up ended
        "useful": record.useful,
        "unanswered": record.heard.count(False),  # no useful answer in the window
        "per_second": {str(second): count for second, count in sorted(record.per_second.items())},
        "gaps": [round(gap, 3) for gap in gaps],
        "given_up": record.given_up,
        "given_up_total": record.given_up_total,
        "failed_waits": sum(record.failed),
        "errors": dict(record.errors.most_common(5)),
        "warnings": dict(record.warnings.most_common()),
        "warnings_total": record.warnings_total,
        "lag_p99_ms": 1000 * percentile(window_lags, 0.99),
        "lag_max_ms": 1000 * max(window_lags, default=0.0),
        "startup_lag_max_ms": 1000 * max((lag for at, lag in lags if record.begin <= at < m0), default=0.0),
        "full_gc_max_ms": 1000 * max((pause for at, pause in record.full_gc if m0 <= at <= m1), default=0.0),
    }


def watchdog(
    args: argparse.Namespace, record: Record, marks: dict[str, float], lags: list[tuple[float, float]]
) -> None:
    """A thread: if the loop is still not done at the hard limit, print what was reached and end the process."""
    time.sleep(args.start_limit + args.window + WINDOW_BARRIER_S + 20)
    with contextlib.suppress(Exception):
        print("RESULT " + json.dumps(summary(args, record, marks, lags)), flush=True)
    os._exit(0)


def next_line(expected: str) -> list[str]:
    """The parent's next line on stdin, which must be ``expected`` and its arguments; EOF (the parent is gone) or
    anything else ends the process."""
    words = sys.stdin.readline().split()
    if not words or words[0] != expected:
        os._exit(3)
    return words[1:]


async def until(epoch: float) -> None:
    await asyncio.sleep(max(0.0, epoch - time.time()))


async def measure(
    args: argparse.Namespace, record: Record, waits: list[Callable[[], Coroutine[Any, Any, None]]], go: float
) -> dict[str, Any]:
    lags: list[tuple[float, float]] = []
    tick = asyncio.create_task(ticker(lags))
    await until(go)
    marks: dict[str, float] = {}
    record.begin, record.begin_wall = time.monotonic(), time.time()
    threading.Thread(target=watchdog, args=(args, record, marks, lags), daemon=True).start()
    tasks = [asyncio.create_task(wait()) for wait in waits]  # all at once, as a triggerer starts them
    with contextlib.suppress(asyncio.TimeoutError):
        await asyncio.wait_for(record.all_started.wait(), args.start_limit)
    marks.update(startup=time.monotonic() - record.begin, started=record.started)
    print(f"STARTED {record.started}", flush=True)
    # The window, in whole epoch seconds (the server's windows), is the same for every process of the run; a
    # thread reads it so that the loop goes on meanwhile.
    w0, w1 = (float(word) for word in await asyncio.to_thread(next_line, "WINDOW"))
    offset = time.time() - time.monotonic()
    record.m0, record.m1 = w0 - offset, w1 - offset
    await until(w0)
    print("WINDOW_START", flush=True)
    await until(w1 + 0.05)  # an answer at w1 itself belongs to the next window
    print("WINDOW_END", flush=True)
    marks["closed"] = 1.0
    result = summary(args, record, marks, lags)
    tick.cancel()
    for task in tasks:
        task.cancel()
    _, pending = await asyncio.wait(tasks, timeout=15)
    result["not_cancelled"] = len(pending)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, required=True, help="this process's waits")
    parser.add_argument("--offset", type=int, default=0, help="the first execution id's number")
    parser.add_argument("--interval", type=float, required=True)
    parser.add_argument("--window", type=float, required=True)
    parser.add_argument("--start-limit", type=float, required=True)
    parser.add_argument("--cpu", type=int, default=0, help="the CPU the waits run on")
    parser.add_argument("--import-cpus", default="", help="the CPUs to import on, e.g. 0,1 (default: as started)")
    args = parser.parse_args()
    if args.import_cpus:
        os.sched_setaffinity(0, {int(cpu) for cpu in args.import_cpus.split(",")})
    if "AIRFLOW_HOME" not in os.environ or "AIRFLOW_CONN_ANALYTICS_DEFAULT" not in os.environ:
        sys.exit("run me from bench/ratelimit.py: AIRFLOW_HOME and the connection must be set first")
    import airflow_provider_analytics
    import airflow_provider_analytics.triggers.executions  # what a triggerer has loaded

    if os.environ.get("AIRFLOW__METRICS__STATSD_ON") == "True":
        # Airflow's metrics backend from [metrics] (the parent's StatsD listener), built as the triggerer builds it
        # when it starts; the async hook's module installs the provider's AirflowObserver (report_to_airflow).
        sys.path.insert(0, str(ROOT))
        from tests.support.metrics import rebuild_airflow_stats

        rebuild_airflow_stats()
    record = Record(args.n)
    logging.getLogger().addHandler(WarningCounter(record))
    count_structlog_warnings(record)
    waits = provider_waits(record, args.n, args.offset, args.interval)
    print("READY", flush=True)
    go = float(next_line("GO")[0])
    pin(args.cpu)
    result = asyncio.run(measure(args, record, waits, go))
    result["provider"] = str(Path(airflow_provider_analytics.__file__).parent)
    from airflow_provider_analytics.wire._accounts import limiter_snapshots

    result["limiters"] = limiter_snapshots()  # what each limiter learnt by the end: to tell why a run went as it did
    print("RESULT " + json.dumps(result), flush=True)
    sys.stdout.flush()
    os._exit(0)  # the waits are cancelled and measured; skip the interpreter's slow teardown


if __name__ == "__main__":
    main()
