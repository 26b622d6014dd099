"""The K waits processes of one ``bench/ratelimit.py`` run: started together, held at barriers, measured as one.

A deployment holds its waits in many processes (triggerers, workers, Celery workers) on one API token. Here the N
waits of a run are spread evenly over K interpreters (``bench/ratelimit_waits.py``, each with its share and its own
execution ids), all on the same token. Starting 64 interpreters that import Airflow takes a minute on 2 cores, so
they start in waves (the first alone: it writes the bytecode cache and Airflow's home the others read; then
:data:`LAUNCH_AT_ONCE` at a time), each on every CPU, and each says ``READY`` once imported. Then one ``GO <epoch>``
to all: each pins itself to the waits' CPU and creates its waits at that epoch. When all say ``STARTED`` (each of
their waits had one useful answer, or their start-up limit passed), one ``WINDOW <w0> <w1>`` in whole epoch seconds
(the server's windows), a second or more ahead so that every process has it in time: every figure is taken over
that one window, by the processes on the epoch clock and here (the server's counters, the CPUs, the store) at w0
and w1. ``merged`` adds the processes' figures up (gaps over all waits, lag as the worst process's) and keeps
per-process ones for fairness. Every process is stopped by its pid on the way out, on errors and Ctrl-C too.
"""

from __future__ import annotations

import contextlib
import json
import queue
import subprocess
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from benchlib import cpu_busy, median, percentile, process_cpu, started, status_kb
from ratelimit_report import counted_warnings

LAUNCH_AT_ONCE = 4  # interpreters importing at once, after the first
READY_LIMIT_S = 300.0  # from a process's launch to its READY: on 2 loaded cores an import can take a minute
KB_PER_PROCESS = 250 * 1024  # memory asked per process before a run (one held about 150 MB here)
PROTOCOL = ("READY", "STARTED", "WINDOW_START", "WINDOW_END", "RESULT ")


class FleetError(Exception):
    """The processes could not be brought to the start: the message says which and why."""


class Child:
    """One waits process: its share of the waits, the process, and its log lines counted by phase."""

    LEVELS = ("[warning", "[error", "[critical", "[exception")

    def __init__(
        self, index: int, offset: int, n: int, command: Sequence[str], log: Path, events: queue.Queue[Any]
    ) -> None:
        self.index, self.offset, self.n, self.log = index, offset, n, log
        self.command = list(command)
        self.events = events
        self.process: subprocess.Popen[str] | None = None
        self.log_lines = {"start-up": 0, "window": 0, "after": 0}
        self.warning_lines = {"start-up": 0, "window": 0, "after": 0}

    def start(self, env: dict[str, str], stack: contextlib.ExitStack) -> None:
        stderr = stack.enter_context(self.log.open("w"))
        popen = {"stdin": subprocess.PIPE, "stdout": subprocess.PIPE, "stderr": stderr, "env": env}
        self.process = stack.enter_context(started(self.command, **popen))
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        assert self.process is not None
        assert self.process.stdout is not None
        phase = "start-up"
        for line in self.process.stdout:
            if line.startswith(PROTOCOL):
                phase = {"WINDOW_START": "window", "WINDOW_END": "after"}.get(line.strip(), phase)
                self.events.put((self.index, line.rstrip("\n")))
                continue
            self.log_lines[phase] += 1
            if any(level in line[:60] for level in self.LEVELS):
                self.warning_lines[phase] += 1
        self.events.put((self.index, None))

    def tell(self, line: str) -> None:
        if self.process is not None and self.process.stdin is not None:
            with contextlib.suppress(OSError):
                self.process.stdin.write(line + "\n")
                self.process.stdin.flush()

    def tail(self) -> str:
        lines = self.log.read_text(errors="replace").splitlines()[-4:] if self.log.exists() else []
        return " / ".join(lines)[-300:]


class Fleet:
    """K waits processes and the barriers between them.

    :param commands: each process's command line, by index.
    :param shares: each process's (offset, waits).
    :param env: their environment.
    :param logs: the folder of their stderr logs.
    """

    def __init__(
        self, commands: Sequence[Sequence[str]], shares: Sequence[tuple[int, int]], env: dict[str, str], logs: Path
    ) -> None:
        self.events: queue.Queue[tuple[int, str | None]] = queue.Queue()
        self.children = [
            Child(i, offset, n, command, logs / f"waits-{i}.log", self.events)
            for i, (command, (offset, n)) in enumerate(zip(commands, shares, strict=True))
        ]
        self.env = env
        self.results: dict[int, dict[str, Any]] = {}
        self.gone: dict[int, int | None] = {}  # processes that ended without a result: their exit status
        self._stack = contextlib.ExitStack()

    def __enter__(self) -> Fleet:
        return self

    def __exit__(self, *exc_info: object) -> None:
        for child in self.children:  # SIGTERM to all first: 64 processes stopped one by one would take minutes
            if child.process is not None and child.process.poll() is None:
                child.process.terminate()
        self._stack.close()  # then each is waited for, killed if it did not end, by its pid

    @property
    def pids(self) -> list[int]:
        return [child.process.pid for child in self.children if child.process is not None]

    def launch(self) -> None:
        """Start every process, the first alone then :data:`LAUNCH_AT_ONCE` at a time; return when all are ready."""
        waiting = list(self.children)
        importing: dict[int, float] = {}  # index: deadline
        ready = 0
        while ready < len(self.children):
            room = 1 if ready == 0 else LAUNCH_AT_ONCE
            while waiting and len(importing) < room:
                child = waiting.pop(0)
                child.start(self.env, self._stack)
                importing[child.index] = time.monotonic() + READY_LIMIT_S
            try:
                index, line = self.events.get(timeout=max(0.1, min(importing.values()) - time.monotonic()))
            except queue.Empty:
                late = [i for i, deadline in importing.items() if deadline <= time.monotonic()]
                if late:
                    tail = self.children[late[0]].tail()
                    message = f"process {late[0]} was not ready {READY_LIMIT_S:.0f} s after its start: {tail}"
                    raise FleetError(message) from None
                continue
            if line is None:
                child = self.children[index]
                code = child.process.wait() if child.process is not None else None
                raise FleetError(f"process {index} exited ({code}) before it was ready: {child.tail()}")
            if line == "READY":
                importing.pop(index, None)
                ready += 1

    def tell(self, line: str) -> None:
        """Send one line to every process."""
        for child in self.children:
            child.tell(line)

    def collect(self, tag: str, deadline: float) -> dict[int, str]:
        """Read the processes' lines until each said ``tag`` (or gave its result, or ended), or until ``deadline``.

        :return: what followed ``tag`` on each line that had it, by process.
        """
        said: dict[int, str] = {}
        everyone = set(range(len(self.children)))
        while everyone - set(said) - set(self.results) - set(self.gone):
            try:
                index, line = self.events.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                break
            if line is None:
                child = self.children[index]
                self.gone[index] = child.process.wait() if child.process is not None else None
            elif line.startswith("RESULT "):
                self.results[index] = json.loads(line[len("RESULT ") :])
            elif line.startswith(tag):
                said[index] = line[len(tag) :].strip()
        return said

    def reading(self) -> dict[str, Any]:
        """The processes' CPU seconds and resident memory now."""
        return {
            "cpu": [process_cpu(pid) for pid in self.pids],
            "rss_kb": [status_kb("VmRSS", pid) for pid in self.pids],
        }


def shares(n: int, k: int) -> list[tuple[int, int]]:
    """N waits spread evenly over K processes: each one's (first execution id, waits)."""
    sizes = [n // k + (1 if i < n % k else 0) for i in range(k)]
    return [(sum(sizes[:i]), size) for i, size in enumerate(sizes)]


def sleep_until(epoch: float) -> None:
    time.sleep(max(0.0, epoch - time.time()))


def cpu_reading(extra: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """When (monotonic and epoch), both CPUs' busy seconds, and whatever ``extra`` reads at the same moment."""
    return {"at": time.monotonic(), "wall": time.time(), "busy": [cpu_busy(0), cpu_busy(1)], **extra()}


def merged(
    parts: dict[int, dict[str, Any]], fleet: Fleet, before: dict[str, Any], after: dict[str, Any]
) -> dict[str, Any]:
    """The run's figures from its processes' results: sums, all waits' gaps, the worst process's lag; and per
    process what fairness is judged on (the median of its waits' longest gaps), its warnings, lag, CPU and memory.

    :param parts: each process's ``RESULT``, by index.
    :param fleet: the processes (their log lines).
    :param before: the reading when the window started (:meth:`Fleet.reading` within).
    :param after: the reading when it ended.
    """
    results = [parts[i] for i in sorted(parts)]
    elapsed = max(after["at"] - before["at"], 1e-9)
    per_second: Counter[str] = Counter()
    errors: Counter[str] = Counter()
    warnings: Counter[str] = Counter()
    for part in results:
        per_second.update(part["per_second"])
        errors.update(part["errors"])
        warnings.update(part["warnings"])
    cpu = [b - a for a, b in zip(before["cpu"], after["cpu"], strict=True)]
    per_process = []
    for index, part in sorted(parts.items()):
        child = fleet.children[index]
        per_process.append(
            {
                "n": part["n"],
                "gap_median": round(median(part["gaps"]), 3),
                "gap_p99": round(percentile(part["gaps"], 0.99), 3),
                "gap_max": round(max(part["gaps"], default=0.0), 3),
                "unanswered": part["unanswered"],
                "warnings": counted_warnings(part)[0],
                "warning_lines": child.warning_lines["window"],
                "lag_max_ms": round(part["lag_max_ms"], 1),
                "cpu_share": round(cpu[index] / elapsed, 4) if index < len(cpu) else None,
                "rss_kb": after["rss_kb"][index] if index < len(after["rss_kb"]) else None,
                "failed_waits": part["failed_waits"],
                "limiters": part.get("limiters", []),
            }
        )
    phases = ("start-up", "window", "after")
    return {
        "n": sum(part["n"] for part in results),
        "interval": results[0]["interval"],
        "stuck": any(part["stuck"] for part in results),
        "startup_s": max(part["startup_s"] for part in results),
        "started": sum(part["started"] for part in results),
        "useful": sum(part["useful"] for part in results),
        "unanswered": sum(part["unanswered"] for part in results),
        "per_second": dict(sorted(per_second.items())),
        "gaps": [gap for part in results for gap in part["gaps"]],
        "given_up": sum(part["given_up"] for part in results),
        "given_up_total": sum(part["given_up_total"] for part in results),
        "failed_waits": sum(part["failed_waits"] for part in results),
        "errors": dict(errors.most_common(5)),
        "warnings": dict(warnings.most_common()),
        "warnings_total": sum(part["warnings_total"] for part in results),
        "lag_p99_ms": max(part["lag_p99_ms"] for part in results),
        "lag_max_ms": max(part["lag_max_ms"] for part in results),
        "startup_lag_max_ms": max(part["startup_lag_max_ms"] for part in results),
        "full_gc_max_ms": max(part["full_gc_max_ms"] for part in results),
        "not_cancelled": sum(part.get("not_cancelled", 0) for part in results),
        "provider": results[0].get("provider"),
        "cpu_share": sum(cpu) / elapsed,
        "others_cpu0_share": max(0.0, after["busy"][0] - before["busy"][0] - sum(cpu)) / elapsed,
        "rss_kb": sum(value for value in after["rss_kb"] if value),
        "stdout_log_lines": {phase: sum(c.log_lines[phase] for c in fleet.children) for phase in phases},
        "stdout_warning_lines": {phase: sum(c.warning_lines[phase] for c in fleet.children) for phase in phases},
        "per_process": per_process,
    }
