"""Waits under a rate limit: N deferred ExecutionTrigger waits on one token against a platform allowing R requests/s.

How: a throw-away CA and server certificate; per run, a fresh ``bench/tls_server.py`` pinned to CPU 1 that
answers every execution GET with ``running`` and, with ``--limit R``, refuses every request over R per
fixed one-second window (whole epoch seconds) and token with 429 ``rate_limited`` and ``Retry-After: 1``,
with or without ``X-RateLimit-*`` headers; and a fresh interpreter pinned to CPU 0
(``bench/ratelimit_waits.py``) that runs the provider's real ``ExecutionTrigger`` waits (``async for event in
trigger.run()``, one connection, one token) in one asyncio loop: a start-up phase (until every wait has had
one useful answer, bounded), then a measured window (60 s; ``--quick`` 30 s; ``--window``).

Scenarios: (a) 1,000 waits, poll interval 5 s, 100 requests/s; (b) 50 waits, poll interval 1 s, 20
requests/s; each with and without the headers; (c) the 1,000 waits of (a) with no limit, the reference for
event-loop lag. Figures per run: requests sent, refused share (429s / requests, server counters over the
window), requests per useful answer (requests / 200 answers), useful answers (a ``fetch`` that returned)
per second and as a share of the limit, each wait's longest gap without a useful answer (p50 / p99 / max,
against the floor max(poll interval, N/R)), WARNING-or-worse log records of the provider's and the
triggers' loggers in the window, event-loop lag (p99 / max of a 50 ms ticker), failed waits, and a verdict
against the targets (``bench/README.md``). The waits process runs with Airflow's StatsD metrics on, sent to a
UDP listener started here for each run (``tests/support/statsd.py``, every datagram with its arrival time): the
limiter's pace and queue, the 2xx answers and the 429s it reported per second, from the creation of the waits to
the end of the window, are a table of their own and ``bench/results/ratelimit_metrics.png``. Writes
``bench/results/ratelimit.md``, ``bench/results/ratelimit.png`` and ``bench/results/ratelimit_metrics.png``;
asserts nothing.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import queue
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from benchlib import BENCH, PYTHON, RESULTS, ROOT, airflow_env, cpu_busy, make_tls, started, wait_quiet
from ratelimit_metrics import limiter_series, metrics_section, write_metrics_plot
from ratelimit_report import Scenario, report, summary_line, write_plot
from triggerer import Server

sys.path.insert(0, str(ROOT))
from tests.support.statsd import StatsdListener, statsd_environment

SCENARIOS = (
    Scenario("c-nolimit", "c", 1000, 5.0, None, False),
    Scenario("a-headers", "a", 1000, 5.0, 100, True),
    Scenario("a-bare", "a", 1000, 5.0, 100, False),
    Scenario("b-headers", "b", 50, 1.0, 20, True),
    Scenario("b-bare", "b", 50, 1.0, 20, False),
)


class LimitedServer(Server):
    """The HTTPS server of one run, with its per-second history."""

    def history(self) -> list[list[int]]:
        assert self.process.stdin is not None
        assert self.process.stdout is not None
        self.process.stdin.write("history\n")
        self.process.stdin.flush()
        windows: list[list[int]] = json.loads(self.process.stdout.readline())
        return windows


class Output:
    """The waits process's stdout: protocol lines in a queue, its log lines counted by phase."""

    LEVELS = ("[warning", "[error", "[critical", "[exception")

    def __init__(self, process: subprocess.Popen[str]) -> None:
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.log_lines = {"start-up": 0, "window": 0, "after": 0}
        self.warning_lines = {"start-up": 0, "window": 0, "after": 0}
        self.process = process
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        assert self.process.stdout is not None
        phase = "start-up"
        for line in self.process.stdout:
            if line.startswith(("WINDOW_START", "WINDOW_END", "RESULT ")):
                phase = {"WINDOW_START": "window", "WINDOW_END": "after"}.get(line.strip(), phase)
                self.lines.put(line.rstrip("\n"))
                continue
            self.log_lines[phase] += 1
            if any(level in line[:60] for level in self.LEVELS):
                self.warning_lines[phase] += 1
        self.lines.put(None)


def run_one(
    tmp: Path, ca: Path, cert: Path, key: Path, scenario: Scenario, window: float, provider: Path | None
) -> dict[str, Any]:
    """One scenario: a fresh server and a fresh pinned interpreter; its figures, or what it reached."""
    result: dict[str, Any] = {"key": scenario.key}
    command = [PYTHON, str(BENCH / "tls_server.py"), str(cert), str(key), "--cpu", "1"]
    if scenario.limit is not None:
        command += ["--limit", str(scenario.limit)] + ([] if scenario.headers else ["--no-headers"])
    statsd = StatsdListener()  # the waits' StatsD server: Airflow's metrics on, as a deployment that reads them has
    with (
        contextlib.closing(statsd),
        (tmp / f"server-{scenario.key}.log").open("w") as server_log,
        started(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=server_log) as process,
    ):
        server = LimitedServer(process)
        connection = {
            "conn_type": "analytics",
            "host": f"https://127.0.0.1:{server.port}",
            "password": "bench-token",
            "extra": {"verify": str(ca)},
        }
        extra = {
            "AIRFLOW_CONN_ANALYTICS_DEFAULT": json.dumps(connection),
            "PYTHONPYCACHEPREFIX": str(tmp / "pycache"),
            **statsd_environment(statsd.port),
        }
        if provider is not None:  # another copy of the provider first on the path (the installed one is editable)
            extra["PYTHONPATH"] = os.pathsep.join(filter(None, [str(provider), os.environ.get("PYTHONPATH")]))
        env = airflow_env(tmp / "airflow-home", extra)
        waits = [
            PYTHON,
            str(BENCH / "ratelimit_waits.py"),
            "--n",
            str(scenario.n),
            "--interval",
            str(scenario.interval),
        ]
        waits += ["--window", str(window), "--start-limit", str(scenario.start_limit), "--cpu", "0"]
        log = tmp / f"waits-{scenario.key}.log"
        deadline = time.monotonic() + scenario.start_limit + window + 90
        before: dict[str, float] = {}
        statsd.start()
        with log.open("w") as stderr, started(waits, stdout=subprocess.PIPE, stderr=stderr, env=env) as child:
            output = Output(child)
            while True:
                try:
                    line = output.lines.get(timeout=max(0.1, deadline - time.monotonic()))
                except queue.Empty:
                    result["crash"] = "hard timeout: the run did not finish"
                    break
                if line is None:
                    result["crash"] = f"the waits process exited ({child.wait()}) without a result"
                    break
                if line == "WINDOW_START":
                    before = {**server.stats(), "busy": cpu_busy(1), "at": time.monotonic()}
                elif line == "WINDOW_END" and before:
                    after = {**server.stats(), "busy": cpu_busy(1), "at": time.monotonic()}
                    server_figures(result, before, after)
                elif line.startswith("RESULT "):
                    result.update(json.loads(line[len("RESULT ") :]))
                    break
            result["stdout_log_lines"] = dict(output.log_lines)
            result["stdout_warning_lines"] = dict(output.warning_lines)
        result["history"] = server.history()
        metrics = statsd.read()
        result["statsd"] = {"datagrams": len(statsd.raw), "dropped": statsd.dropped()}
        if "began_wall" in result and "seconds" in result:
            result["metrics"] = limiter_series(metrics, result["began_wall"], result["seconds"][1])
    if "crash" in result:
        tail = log.read_text(errors="replace").splitlines()[-5:]
        result["crash"] += " | " + " / ".join(tail)[-400:]
    return result


def server_figures(result: dict[str, Any], before: dict[str, float], after: dict[str, float]) -> None:
    """The server's counters over the window."""
    requests = after["requests"] - before["requests"]
    elapsed = after["at"] - before["at"]
    cpu = after["cpu"] - before["cpu"]
    result.update(
        requests=int(requests),
        refused=int(after["refused"] - before["refused"]),
        allowed=int(after["allowed"] - before["allowed"]),
        not_found=int(after["not_found"] - before["not_found"]),
        server_us_per_req=1e6 * cpu / requests if requests else None,
        server_cpu_share=cpu / elapsed,
        handshakes=int(after["accepted"] - before["accepted"]),
        others_cpu1_share=max(0.0, after["busy"] - before["busy"] - cpu) / elapsed,
    )


def uptime() -> str:
    with open("/proc/loadavg") as loadavg:
        return " ".join(loadavg.read().split()[:3])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a 30 s window (make bench)")
    parser.add_argument("--window", type=float, default=None, help="seconds measured per run (default 60)")
    keys = [s.key for s in SCENARIOS]
    parser.add_argument("--scenarios", nargs="+", choices=keys, default=keys, help="runs (default: all)")
    parser.add_argument(
        "--provider-path",
        type=Path,
        default=None,
        help="a folder holding another airflow_provider_analytics to measure instead of the working tree's, e.g. "
        "main's: git archive main airflow_provider_analytics | tar -x -C DIR",
    )
    args = parser.parse_args()
    if args.provider_path is not None:
        args.provider_path = args.provider_path.resolve()
        if not (args.provider_path / "airflow_provider_analytics" / "__init__.py").is_file():
            parser.error(f"{args.provider_path} holds no airflow_provider_analytics package")
    window = args.window if args.window is not None else 30.0 if args.quick else 60.0
    RESULTS.mkdir(exist_ok=True)
    began = time.monotonic()
    tmp = Path(tempfile.mkdtemp(prefix="bench-ratelimit-"))
    results: list[tuple[Scenario, dict[str, Any]]] = []
    try:
        ca, cert, key = make_tls(tmp)
        for scenario in (s for s in SCENARIOS if s.key in args.scenarios):
            waited, busy = wait_quiet(limit=8)
            load, line = os.getloadavg()[0], uptime()
            row = run_one(tmp, ca, cert, key, scenario, window, args.provider_path)
            row.update(quiet_wait_s=waited, busy_before=busy, load_before=load, uptime=line)
            results.append((scenario, row))
            reference = next((r for s, r in results if s.limit is None and "lag_max_ms" in r), None)
            print(summary_line(scenario, row, reference), flush=True)
        text = report(results, window, args.quick, time.monotonic() - began, metrics_section(results))
        (RESULTS / "ratelimit.md").write_text(text)
        write_plot(results)
        write_metrics_plot(results)
        print("\n" + text)
        print(f"wrote {RESULTS / 'ratelimit.md'}, {RESULTS / 'ratelimit.png'} and {RESULTS / 'ratelimit_metrics.png'}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
