"""Waits under a rate limit: N deferred ExecutionTrigger waits on one token, in K processes, against R requests/s.

How: a throw-away CA and server certificate; per run, a fresh ``bench/tls_server.py`` pinned to CPU 1 that
answers every execution GET with ``running`` and, with ``--limit R``, refuses every request over R per fixed
one-second window (whole epoch seconds) and token with 429 ``rate_limited`` and ``Retry-After: 1``, with or without
``X-RateLimit-*`` headers; with the store, a fresh ``redis-server`` on CPU 1 too (``ratelimit_store.py``), named by
the analytics connection's extra ``rate_limit_redis_conn_id``; and K fresh interpreters (``ratelimit_waits.py``,
started and synchronised by ``ratelimit_fleet.py``), each running its share of the provider's real
``ExecutionTrigger`` waits (``async for event in trigger.run()``, one connection, one token) in one asyncio loop
pinned to CPU 0: a start-up phase (until every wait has had one useful answer, bounded), then one measured window
of whole epoch seconds for all of them (60 s; ``--quick`` 30 s; ``--window``).

Scenarios: (a) 1,000 waits, poll interval 5 s, 100 requests/s, in K = 1, 4, 16, 64 processes, with and without the
store; (b) 50 waits, poll interval 1 s, 20 requests/s (one process); each with and without the headers; (c) the
1,000 waits of (a) with no limit in one process, the reference for event-loop lag. Figures per run: requests sent,
refused share (429s / requests, the server's per-second counters over the window), requests per useful answer,
useful answers (a ``fetch`` that returned) per second and as a share of the limit, each wait's longest gap without
a useful answer (p50 / p99 / max, against the floor max(poll interval, N/R)), fairness between processes (the
largest over the smallest per-process median of those gaps), WARNING-or-worse log records in the window (all, and
the worst process's), event-loop lag (the worst process's p99 / max of a 50 ms ticker), failed waits, the waits'
CPU and memory, the store's commands per second and microseconds per call, and a verdict against the targets
(``bench/README.md``). The waits run with Airflow's StatsD metrics on, sent to a UDP listener started here for each
run (``tests/support/statsd.py``); for one-process runs the limiter's pace and queue, the 2xx answers and the 429s
it reported per second are a table of their own and ``bench/results/ratelimit_metrics.png``. Writes
``bench/results/ratelimit.md``, ``.png``, ``_metrics.png`` and the runs' figures as JSON (``--json``; re-rendered
with ``--from-json``, compared with ``--compare``); asserts nothing.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import datetime
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchlib import (
    BENCH,
    PYTHON,
    RESULTS,
    ROOT,
    airflow_env,
    machine,
    make_tls,
    memory_available_kb,
    pin,
    process_cpu,
    started,
    wait_quiet,
)
from ratelimit_fleet import KB_PER_PROCESS, Fleet, FleetError, cpu_reading, merged, shares, sleep_until
from ratelimit_metrics import limiter_series, metrics_section, write_metrics_plot
from ratelimit_plot import write_plot
from ratelimit_report import Scenario, summary_line
from ratelimit_store import CONN_ID, RedisStore, redis_store, window_figures
from ratelimit_tables import comparison, report
from ratelimit_waits import WINDOW_BARRIER_S
from triggerer import Server

sys.path.insert(0, str(ROOT))
from tests.support.statsd import StatsdListener, statsd_environment

WAITS_CPU, PLATFORM_CPU = 0, 1  # the waits' core; the server's, the store's and this harness's
SCENARIOS = (
    Scenario("c-nolimit", "c", 1000, 5.0, None, False),
    Scenario("a-headers", "a", 1000, 5.0, 100, True),
    Scenario("a-bare", "a", 1000, 5.0, 100, False),
    Scenario("b-headers", "b", 50, 1.0, 20, True),
    Scenario("b-bare", "b", 50, 1.0, 20, False),
)
PROCESSES = (1, 4, 16, 64)
STORES = ("none", "redis")
# make bench (--quick): every scenario in one process as before, and (a) in 16 processes with and without the store.
QUICK_PROCESSES = (1, 16)


class LimitedServer(Server):
    """The HTTPS server of one run, with its per-second history."""

    def history(self) -> list[list[int]]:
        assert self.process.stdin is not None
        assert self.process.stdout is not None
        self.process.stdin.write("history\n")
        self.process.stdin.flush()
        windows: list[list[int]] = json.loads(self.process.stdout.readline())
        return windows


def matrix(kinds: list[str], processes: list[int], stores: list[str], quick: bool) -> list[Scenario]:
    """The runs: (a) K x store for each K and store; (b) and (c) in one process without the store."""
    runs: list[Scenario] = []
    for base in (s for s in SCENARIOS if s.key in kinds):
        if base.group != "a":
            if 1 in processes and "none" in stores:
                runs.append(base)
            continue
        for k in processes:
            runs += [base.spread(k, store) for store in stores if not (quick and k == 1 and store == "redis")]
    return sorted(runs, key=lambda s: (s.group != "c", s.group, s.processes, s.store, not s.headers))


def waits_env(
    tmp: Path, ca: Path, port: int, statsd: int, store: RedisStore | None, provider: Path | None
) -> dict[str, str]:
    """The waits processes' environment: the analytics connection (naming the store's when there is one)."""
    extra: dict[str, Any] = {"verify": str(ca)}
    if store is not None:
        extra["rate_limit_redis_conn_id"] = CONN_ID
    connection = {"conn_type": "analytics", "host": f"https://127.0.0.1:{port}", "password": "bench-token"}
    env = {
        "AIRFLOW_CONN_ANALYTICS_DEFAULT": json.dumps({**connection, "extra": extra}),
        "PYTHONPYCACHEPREFIX": str(tmp / "pycache"),
        **statsd_environment(statsd),
    }
    if store is not None:
        env[f"AIRFLOW_CONN_{CONN_ID.upper()}"] = store.url
    if provider is not None:  # another copy of the provider first on the path (the installed one is editable)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(provider), os.environ.get("PYTHONPATH")]))
    out = airflow_env(tmp / "airflow-home", env)
    if store is None:
        out.pop(f"AIRFLOW_CONN_{CONN_ID.upper()}", None)
    return out


def run_one(
    tmp: Path, tls: tuple[Path, Path, Path], scenario: Scenario, window: float, provider: Path | None, cpus: str
) -> dict[str, Any]:
    """One run: a fresh server (and store), K fresh waits processes; its figures, or what it reached."""
    result: dict[str, Any] = {"key": scenario.key}
    needed, available = scenario.processes * KB_PER_PROCESS, memory_available_kb()
    if available < needed:
        result["crash"] = f"not run: {scenario.processes} processes need about {needed / 2**20:.1f} GiB, "
        result["crash"] += f"{available / 2**20:.1f} GiB available"
        return result
    ca, cert, key = tls
    command = [PYTHON, str(BENCH / "tls_server.py"), str(cert), str(key), "--cpu", str(PLATFORM_CPU)]
    if scenario.limit is not None:
        command += ["--limit", str(scenario.limit)] + ([] if scenario.headers else ["--no-headers"])
    statsd = StatsdListener()  # the waits' StatsD server: Airflow's metrics on, as a deployment that reads them has
    logs = tmp / f"logs-{scenario.key}"
    logs.mkdir()
    spread = shares(scenario.n, scenario.processes)
    waits = [PYTHON, str(BENCH / "ratelimit_waits.py"), "--interval", str(scenario.interval), "--window", str(window)]
    waits += ["--start-limit", str(scenario.start_limit), "--cpu", str(WAITS_CPU), "--import-cpus", cpus]
    commands = [[*waits, "--n", str(n), "--offset", str(offset)] for offset, n in spread]
    with contextlib.ExitStack() as stack:
        stack.enter_context(contextlib.closing(statsd))
        server_log = stack.enter_context((logs / "server.log").open("w"))
        popen = {"stdin": subprocess.PIPE, "stdout": subprocess.PIPE, "stderr": server_log}
        server = LimitedServer(stack.enter_context(started(command, **popen)))
        store = stack.enter_context(redis_store(logs, PLATFORM_CPU)) if scenario.store == "redis" else None
        env = waits_env(tmp, ca, server.port, statsd.port, store, provider)
        fleet = stack.enter_context(Fleet(commands, spread, env, logs))
        statsd.start()
        began = time.monotonic()
        try:
            fleet.launch()
        except FleetError as exc:
            result["crash"] = str(exc)
            return result
        result["launch_s"] = time.monotonic() - began
        go = time.time() + 1.0  # every process has read it well before: they are idle, waiting for it
        fleet.tell(f"GO {go:.6f}")
        limit = time.monotonic() + 1.0 + scenario.start_limit + window + WINDOW_BARRIER_S + 30  # the watchdogs'
        fleet.collect("STARTED", time.monotonic() + 1.0 + scenario.start_limit + WINDOW_BARRIER_S - 5)
        w0 = math.ceil(time.time() + 1.0)
        w1 = w0 + max(1, round(window))
        fleet.tell(f"WINDOW {w0} {w1}")

        def read() -> dict[str, Any]:
            return {
                **fleet.reading(),
                "server": server.stats(),
                "redis": store.info() if store else None,
                "redis_cpu": process_cpu(store.process.pid) if store else 0.0,
                "parent": time.process_time(),
            }

        sleep_until(w0)
        before = cpu_reading(read)
        sleep_until(w1)
        after = cpu_reading(read)
        fleet.collect("RESULT ", max(time.monotonic() + 30, limit))
        history = server.history()
        metrics = statsd.read()
        result["statsd"] = {"datagrams": len(statsd.raw), "dropped": statsd.dropped()}
    missing = [i for i in range(scenario.processes) if i not in fleet.results]
    if missing:
        child = fleet.children[missing[0]]
        result["crash"] = f"{len(missing)} of {scenario.processes} processes gave no result (process {missing[0]}: "
        result["crash"] += f"exit {fleet.gone.get(missing[0], 'none yet')}; {child.tail()})"
    if not fleet.results:
        return result
    result.update(merged(fleet.results, fleet, before, after))
    result.update(window=float(w1 - w0), window_wall=[w0, w1], seconds=[w0, w1], began_wall=go, history=history)
    result.update(server_figures(before, after, history, scenario.limit is not None, (w0, w1)))
    if store is not None:
        result["redis"] = window_figures(before["redis"], after["redis"], after["at"] - before["at"])
    if scenario.processes == 1:  # K processes' gauges overwrite each other on one listener (ratelimit_metrics.py)
        result["metrics"] = limiter_series(metrics, go, w1)
    return result


def server_figures(
    before: dict[str, Any], after: dict[str, Any], history: list[list[int]], limited: bool, window: tuple[int, int]
) -> dict[str, Any]:
    """The server's counters over the window: with a limit, from its per-second windows (exactly the window's
    epoch seconds); its CPU, and the others' share of CPU 1 (what neither it, the store nor this harness used)."""
    stats0, stats1 = before["server"], after["server"]
    requests = stats1["requests"] - stats0["requests"]
    refused, allowed = stats1["refused"] - stats0["refused"], stats1["allowed"] - stats0["allowed"]
    if limited:
        inside = [(ok, no) for second, ok, no in history if window[0] <= second < window[1]]
        allowed, refused = sum(ok for ok, _ in inside), sum(no for _, no in inside)
        requests = allowed + refused
    elapsed = after["at"] - before["at"]
    cpu = stats1["cpu"] - stats0["cpu"]
    ours = cpu + after["redis_cpu"] - before["redis_cpu"] + after["parent"] - before["parent"]
    return {
        "requests": int(requests),
        "refused": int(refused),
        "allowed": int(allowed),
        "not_found": int(stats1["not_found"] - stats0["not_found"]),
        "server_us_per_req": 1e6 * cpu / requests if requests else None,
        "server_cpu_share": cpu / elapsed,
        "handshakes": int(stats1["accepted"] - stats0["accepted"]),
        "others_cpu1_share": max(0.0, after["busy"][1] - before["busy"][1] - ours) / elapsed,
    }


def uptime() -> str:
    with open("/proc/loadavg") as loadavg:
        return " ".join(loadavg.read().split()[:3])


def write_json(path: Path, runs: list[tuple[Scenario, dict[str, Any]]], meta: dict[str, Any]) -> None:
    """The runs as JSON, one line each (``--from-json`` renders them again, ``--compare`` sets them side by side)."""
    lines = []
    for scenario, row in runs:
        lines.append(json.dumps({"scenario": dataclasses.asdict(scenario), "row": row}, separators=(",", ":")))
    path.write_text('{"meta": ' + json.dumps(meta) + ',\n"runs": [\n' + ",\n".join(lines) + "\n]}\n")


def read_json(paths: list[Path]) -> tuple[list[tuple[Scenario, dict[str, Any]]], dict[str, Any]]:
    """Runs written by :func:`write_json`, a later file's run replacing an earlier one's of the same key."""
    runs: dict[str, tuple[Scenario, dict[str, Any]]] = {}
    metas = []
    for path in paths:
        data = json.loads(path.read_text())
        metas.append(data["meta"])
        for run in data["runs"]:
            scenario = Scenario(**run["scenario"])
            runs[scenario.key] = (scenario, run["row"])
    windows = sorted({f"{meta['window']:g}" for meta in metas})
    meta = {
        **metas[0],
        "window": float(windows[0]) if len(windows) == 1 else math.nan,
        "command": "`; `".join(dict.fromkeys(meta["command"] for meta in metas)),
        "took_s": sum(meta["took_s"] for meta in metas),
    }
    order = {s.key: i for i, s in enumerate(matrix([s.key for s in SCENARIOS], list(PROCESSES), list(STORES), False))}
    return sorted(runs.values(), key=lambda run: order.get(run[0].key, len(order))), meta


def write_outputs(runs: list[tuple[Scenario, dict[str, Any]]], meta: dict[str, Any], compare: Path | None) -> str:
    """ratelimit.md and the two plots; the report's text."""
    compared = ""
    if compare is not None:
        earlier, _ = read_json([compare])
        compared = comparison(runs, earlier, f"`{compare.name}`")
    text = report(runs, meta, metrics_section(runs), compared)
    (RESULTS / "ratelimit.md").write_text(text)
    write_plot(runs)
    write_metrics_plot(runs)
    return text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a 30 s window and fewer runs (make bench)")
    parser.add_argument("--window", type=float, default=None, help="seconds measured per run (default 60)")
    kinds = [s.key for s in SCENARIOS]
    parser.add_argument("--scenarios", nargs="+", choices=kinds, default=kinds, help="runs (default: all)")
    parser.add_argument("--processes", nargs="+", type=int, default=None, help=f"K for (a) (default {PROCESSES})")
    parser.add_argument("--store", nargs="+", choices=STORES, default=list(STORES), help="with (a): none, redis")
    parser.add_argument(
        "--provider-path",
        type=Path,
        default=None,
        help="a folder holding another airflow_provider_analytics to measure instead of the working tree's, e.g. "
        "main's: git archive main airflow_provider_analytics | tar -x -C DIR",
    )
    parser.add_argument("--json", type=Path, default=RESULTS / "ratelimit.json", help="where the runs' figures go")
    parser.add_argument("--from-json", type=Path, nargs="+", default=None, help="render these runs, measure nothing")
    parser.add_argument("--compare", type=Path, default=None, help="an earlier run's JSON to set side by side")
    args = parser.parse_args()
    RESULTS.mkdir(exist_ok=True)
    if args.from_json:
        read, described = read_json(args.from_json)
        write_json(args.json, read, described)
        print(write_outputs(read, described, args.compare))
        return
    if args.provider_path is not None:
        args.provider_path = args.provider_path.resolve()
        if not (args.provider_path / "airflow_provider_analytics" / "__init__.py").is_file():
            parser.error(f"{args.provider_path} holds no airflow_provider_analytics package")
    if any(k < 1 for k in args.processes or ()):
        parser.error("--processes takes counts of at least 1")
    processes = args.processes or list(QUICK_PROCESSES if args.quick else PROCESSES)
    scenarios = matrix(args.scenarios, processes, args.store, args.quick and args.processes is None)
    window = args.window if args.window is not None else 30.0 if args.quick else 60.0
    # SIGTERM unwinds like Ctrl-C: every process of the run is stopped by its pid, the store too, the temp folder goes.
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    cpus = ",".join(str(cpu) for cpu in sorted(os.sched_getaffinity(0)))  # where the waits import, before pinning
    pin(PLATFORM_CPU)  # this harness (its readers, the StatsD listener) stays off the waits' core
    began = time.monotonic()
    tmp = Path(tempfile.mkdtemp(prefix="bench-ratelimit-"))
    runs: list[tuple[Scenario, dict[str, Any]]] = []
    meta: dict[str, Any] = {"machine": machine(), "window": window, "quick": args.quick}
    meta["command"] = " ".join(["bench/ratelimit.py", *sys.argv[1:]])
    meta["began"] = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    try:
        tls = make_tls(tmp)
        for scenario in scenarios:
            waited, busy = wait_quiet(limit=8)
            load, line = os.getloadavg()[0], uptime()
            started_at = time.monotonic()
            row = run_one(tmp, tls, scenario, window, args.provider_path, cpus)
            row.update(quiet_wait_s=waited, busy_before=busy, load_before=load, uptime=line)
            row["wall_s"] = time.monotonic() - started_at
            runs.append((scenario, row))
            reference = next((r for s, r in runs if s.limit is None and "lag_max_ms" in r), None)
            print(summary_line(scenario, row, reference), flush=True)
        meta["took_s"] = time.monotonic() - began
        write_json(args.json, runs, meta)
        text = write_outputs(runs, meta, args.compare)
        print("\n" + text)
        print(f"wrote {RESULTS / 'ratelimit.md'}, ratelimit.png, ratelimit_metrics.png and {args.json}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
