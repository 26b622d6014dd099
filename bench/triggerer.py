"""One triggerer process holding thousands of waits: the provider's ExecutionTrigger against two other designs.

How: a throw-away CA and server certificate (ECDSA P-256, made with ``cryptography``) in a temp folder; a
minimal HTTPS server (``bench/tls_server.py``) pinned to CPU 1 answering every execution GET with
``running``; for each poll interval I (1 s, 5 s), each N (100, 1,000, 2,000) and each design, a fresh
interpreter pinned to CPU 0 (``bench/waits.py``) creates the N waits at once as tasks of ONE asyncio loop,
waits until each has polled once (start-up, bounded), then measures a fixed window. Designs: ``provider``
(the real ``ExecutionTrigger``, connection from ``AIRFLOW_CONN_ANALYTICS_DEFAULT`` in JSON form),
``per_poll`` (a new ``httpx.AsyncClient`` and SSL context per poll) and ``shared`` (one ``httpx.AsyncClient``
for every wait).

Figures per row: polls/s in the window (against the ideal N/I), the CPU share of the waits' core, CPU per
poll, memory per wait ((RSS after every wait polled once - RSS before they started) / N), peak RSS (VmHWM),
start-up time, event-loop lag of a 50 ms ticker over start-up and window (p99, max), the longest gap
between two polls of one wait in the window, failed and retried requests, and the server's CPU per
request. Writes ``bench/results/triggerer.md`` and ``bench/results/triggerer.png``; asserts nothing.

``--quick`` shortens the windows (15 s at I=1, 20 s at I=5) to keep ``make bench`` short; the full run
uses 20 s and 30 s.
"""

from __future__ import annotations

import argparse
import json
import queue
import shutil
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from benchlib import BENCH, PYTHON, RESULTS, airflow_env, cpu_busy, machine, make_tls, md_table, started, wait_quiet

DESIGNS = ("provider", "shared", "per_poll")
LABELS = {
    "provider": "provider ExecutionTrigger",
    "shared": "one shared httpx client",
    "per_poll": "httpx client per poll",
}
COUNTS = (100, 1000, 2000)
INTERVALS = (1.0, 5.0)
NOISY = 0.2  # other processes took more than this share of CPU 0 during the window


class Server:
    """The HTTPS server process and its counters."""

    def __init__(self, process: subprocess.Popen[str]) -> None:
        self.process = process
        assert process.stdout is not None
        line = process.stdout.readline()
        if not line.startswith("PORT "):
            raise SystemExit(f"the HTTPS server did not start: {line!r}")
        self.port = int(line.split()[1])

    def stats(self) -> dict[str, float]:
        assert self.process.stdin is not None
        assert self.process.stdout is not None
        self.process.stdin.write("stats\n")
        self.process.stdin.flush()
        stats: dict[str, float] = json.loads(self.process.stdout.readline())
        return stats


def lines_of(process: subprocess.Popen[str]) -> queue.Queue[str | None]:
    """A queue fed with the process's stdout lines by a thread; ``None`` at EOF."""
    lines: queue.Queue[str | None] = queue.Queue()

    def pump() -> None:
        assert process.stdout is not None
        for line in process.stdout:
            lines.put(line.rstrip("\n"))
        lines.put(None)

    threading.Thread(target=pump, daemon=True).start()
    return lines


def run_one(server: Server, tmp: Path, ca: Path, design: str, n: int, interval: float, window: float) -> dict[str, Any]:
    """Run one configuration in a fresh pinned interpreter; its figures, or what it reached before failing."""
    start_limit = max(10.0, 3 * interval)
    connection = {
        "conn_type": "analytics",
        "host": f"https://127.0.0.1:{server.port}",
        "password": "bench-token",
        "extra": {"verify": str(ca)},
    }
    extra = {"AIRFLOW_CONN_ANALYTICS_DEFAULT": json.dumps(connection), "PYTHONPYCACHEPREFIX": str(tmp / "pycache")}
    env = airflow_env(tmp / "airflow-home", extra)
    command = [PYTHON, str(BENCH / "waits.py"), "--design", design, "--n", str(n), "--interval", str(interval)]
    command += ["--window", str(window), "--start-limit", str(start_limit), "--port", str(server.port)]
    command += ["--ca", str(ca), "--cpu", "0"]
    log = tmp / f"waits-{design}-{n}-{interval:g}.log"
    result: dict[str, Any] = {"design": design, "n": n, "interval": interval, "ideal_per_s": n / interval}
    deadline = time.monotonic() + start_limit + window + 60
    before: dict[str, float] = {}
    with log.open("w") as stderr, started(command, stdout=subprocess.PIPE, stderr=stderr, env=env) as child:
        lines = lines_of(child)
        while True:
            try:
                line = lines.get(timeout=max(0.1, deadline - time.monotonic()))
            except queue.Empty:
                result["crash"] = "hard timeout: the configuration did not finish"
                break
            if line is None:
                result["crash"] = f"the waits process exited ({child.wait()}) without a result"
                break
            if line == "WINDOW_START":
                before = {**server.stats(), "busy": cpu_busy(1), "at": time.monotonic()}
            elif line == "WINDOW_END" and before:
                after = {**server.stats(), "busy": cpu_busy(1), "at": time.monotonic()}
                requests = after["requests"] - before["requests"]
                result["server_requests"] = requests
                result["server_us_per_req"] = 1e6 * (after["cpu"] - before["cpu"]) / requests if requests else None
                elapsed = after["at"] - before["at"]
                result["server_cpu_share"] = (after["cpu"] - before["cpu"]) / elapsed
                result["handshakes_per_req"] = (after["accepted"] - before["accepted"]) / max(requests, 1)
                others = after["busy"] - before["busy"] - (after["cpu"] - before["cpu"])
                result["others_cpu1_share"] = max(0.0, others) / elapsed
            elif line.startswith("RESULT "):
                result.update(json.loads(line[len("RESULT ") :]))
                break
    if "crash" in result:
        tail = log.read_text(errors="replace").splitlines()[-5:]
        result["crash"] += " | " + " / ".join(tail)[-400:]
    return result


def verdict(row: dict[str, Any]) -> str:
    """Met / not met against the targets of the brief (see bench/README.md)."""
    if "polls" not in row:
        return "not met: " + str(row.get("crash", "no result"))[:120]
    if row["stuck"]:
        return f"not met: the loop was stuck; {row['started']}/{row['n']} waits had polled when it was stopped"
    interval, n = row["interval"], row["n"]
    rate = row["polls_per_s"] / row["ideal_per_s"]
    on_schedule = row["all_started"] and rate >= 0.95 and row["max_gap_s"] <= interval + 1.0
    if interval == 1.0:
        if on_schedule:
            return f"keeps up ({rate:.0%} of N/I)"
        per_s = row["polls_per_s"]
        band = "below" if per_s < 500 else "above" if per_s > 650 else "in"
        return f"saturated: {per_s:.0f}/s, {band} the 500-650/s band, CPU {row['cpu_share']:.0%}"
    misses = []
    if not row["all_started"]:
        misses.append(f"only {row['started']}/{n} started")
    if n == 2000:
        if rate < 0.95:
            misses.append(f"{rate:.0%} of N/I")
        if row["failed"]:
            misses.append(f"{row['failed']} failed")
        return "held" if not misses else "not held: " + ", ".join(misses)
    if not on_schedule:
        misses.append(f"off schedule ({rate:.0%} of N/I, max gap {row['max_gap_s']:.1f} s)")
    if row["failed"] or row["retried"]:
        misses.append(f"{row['failed']} failed, {row['retried']} retried")
    if row["kb_per_wait"] > 50:
        misses.append(f"{row['kb_per_wait']:.0f} KB/wait > 50")
    if row["startup_s"] >= 5:
        misses.append(f"start-up {row['startup_s']:.1f} s >= 5")
    if row["lag_max_ms"] >= 100:
        full_gc = row.get("gc_max_ms", [0, 0, 0])[2]
        cause = f" (a full GC took {full_gc:.0f} ms)" if full_gc >= 0.8 * row["lag_max_ms"] else ""
        misses.append(f"max lag {row['lag_max_ms']:.0f} ms >= 100{cause}")
    return "met" if not misses else "not met: " + "; ".join(misses)


def summary_line(row: dict[str, Any]) -> str:
    """One configuration on one line, for the console."""
    figures = [
        f"I={row['interval']:g}s N={row['n']:>5} {row['design']:<9}",
        f"polls/s {fmt(row.get('polls_per_s'), '.1f')} / {row['ideal_per_s']:.0f}",
        f"CPU/poll {fmt(row.get('cpu_per_poll_ms'), '.2f')} ms",
        f"KB/wait {fmt(row.get('kb_per_wait'), '.1f')}",
        f"start-up {fmt(row.get('startup_s'), '.2f')} s",
        f"lag max {fmt(row.get('lag_max_ms'), '.0f')} ms",
        f"failed {row.get('failed')} retried {row.get('retried')}",
        f"handshakes/poll {fmt(row.get('handshakes_per_req'), '.2f')}",
        f"server {fmt(row.get('server_us_per_req'), '.0f')} µs/req",
        f"others on CPU 0 {row.get('others_cpu0_share', 0):.0%}",
    ]
    return "  ".join(figures) + f"  -> {verdict(row)}"


def fmt(value: Any, spec: str) -> str:
    return "n/a" if value is None else format(value, spec)


def write_markdown(rows: list[dict[str, Any]], windows: dict[float, float], quick: bool, total: float) -> None:
    headers = [
        "design", "N", "polls/s (ideal N/I)", "CPU busy", "CPU/poll ms", "KB/wait", "peak RSS MB", "start-up s",
        "lag p99 / max (window max) ms", "full GC max ms (objects/wait)", "max gap s", "failed", "retried",
        "TLS handshakes/poll", "server µs/req",
        "others on CPU 0 / 1", "target",
    ]  # fmt: skip
    out = [
        "# Triggerer: N waits in one asyncio loop on one core\n",
        f"{machine()}. Waits pinned to CPU 0, HTTPS server pinned to CPU 1 (asyncio + ssl, keep-alive, "
        f"ECDSA P-256). Generated by `bench/triggerer.py{' --quick' if quick else ''}` in {total / 60:.1f} min; "
        "see `bench/README.md` for the method and the targets.\n",
    ]
    for interval in windows:
        table = []
        for row in (r for r in rows if r["interval"] == interval):
            ok = "polls" in row
            table.append(
                [
                    LABELS[row["design"]],
                    f"{row['n']:,}",
                    f"{row['polls_per_s']:.0f} ({row['ideal_per_s']:.0f})" if ok else "n/a",
                    f"{row['cpu_share']:.0%}" if ok else "n/a",
                    fmt(row.get("cpu_per_poll_ms"), ".2f"),
                    fmt(row.get("kb_per_wait"), ".1f"),
                    fmt(row.get("peak_rss_mb"), ".0f"),
                    (f"{row['startup_s']:.2f}" + ("" if row["all_started"] else f" ({row['started']} started)"))
                    if ok
                    else "n/a",
                    f"{row['lag_p99_ms']:.0f} / {row['lag_max_ms']:.0f} ({row['window_lag_max_ms']:.0f})"
                    if ok
                    else "n/a",
                    f"{row['gc_max_ms'][2]:.0f} ({row['gc_objects_per_wait']:.0f})" if "gc_max_ms" in row else "n/a",
                    fmt(row.get("max_gap_s"), ".2f"),
                    fmt(row.get("failed"), "d"),
                    fmt(row.get("retried"), "d"),
                    fmt(row.get("handshakes_per_req"), ".2f"),
                    fmt(row.get("server_us_per_req"), ".0f"),
                    f"{row.get('others_cpu0_share', 0):.0%} / {row.get('others_cpu1_share', 0):.0%}",
                    verdict(row) + (" (noisy)" if row.get("others_cpu0_share", 0) > NOISY else ""),
                ]
            )
        out.append(f"\n## Poll interval {interval:g} s (window {windows[interval]:g} s)\n\n")
        out.append(md_table(headers, table))
    served = [r for r in rows if r.get("server_us_per_req")]
    if served:
        requests = sum(r["server_requests"] for r in served)
        cpu = sum(r["server_us_per_req"] * r["server_requests"] for r in served) / requests
        busiest = max(r["server_cpu_share"] for r in served)
        out.append(
            f"\nServer: {cpu:.0f} µs CPU per request over {requests:,} requests in the windows; its busiest "
            f"window used {busiest:.0%} of CPU 1, so it was never the bottleneck.\n"
        )
    errors = {f"{LABELS[r['design']]} N={r['n']} I={r['interval']:g}": r.get("errors") for r in rows if r.get("errors")}
    if errors:
        out.append("\nMost frequent errors per configuration:\n\n")
        out += [f"- {where}: {json.dumps(what)}\n" for where, what in errors.items()]
    (RESULTS / "triggerer.md").write_text("".join(out))


def write_plot(rows: list[dict[str, Any]]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    intervals, counts = sorted({r["interval"] for r in rows}), sorted({r["n"] for r in rows})
    figure, panels = plt.subplots(1, len(intervals), figsize=(6 * len(intervals), 4.8), squeeze=False)
    for panel, interval in zip(panels[0], intervals, strict=False):
        memory = panel.twinx()
        panel.plot(counts, [n / interval for n in counts], "k:", label="ideal N/I")
        for design, colour in zip(DESIGNS, ("tab:blue", "tab:orange", "tab:red"), strict=False):
            mine = [r for r in rows if r["interval"] == interval and r["design"] == design and "polls" in r]
            xs = [r["n"] for r in mine]
            panel.plot(xs, [r["polls_per_s"] for r in mine], "o-", color=colour, label=f"{LABELS[design]}: polls/s")
            memory.plot(xs, [r["kb_per_wait"] for r in mine], "s--", color=colour, alpha=0.6)
        panel.set_title(f"poll interval {interval:g} s (solid: polls/s, dashed: KB per wait)")
        panel.set_xlabel("waits (N)")
        panel.set_ylabel("polls per second")
        memory.set_ylabel("memory per wait (KB)")
        memory.set_ylim(bottom=0)
        panel.set_ylim(bottom=0)
        panel.legend(fontsize=8, loc="upper left")
    figure.tight_layout()
    figure.savefig(RESULTS / "triggerer.png", dpi=90)
    plt.close(figure)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="shorter windows (15 s at I=1, 20 s at I=5)")
    parser.add_argument("--counts", type=int, nargs="+", default=list(COUNTS), help="values of N (default: all)")
    parser.add_argument("--intervals", type=float, nargs="+", default=list(INTERVALS), help="poll intervals")
    parser.add_argument("--designs", nargs="+", choices=DESIGNS, default=list(DESIGNS))
    args = parser.parse_args()
    windows = {i: (15.0 if i < 5 else 20.0) if args.quick else (20.0 if i < 5 else 30.0) for i in args.intervals}
    RESULTS.mkdir(exist_ok=True)
    began = time.monotonic()
    tmp = Path(tempfile.mkdtemp(prefix="bench-triggerer-"))
    rows: list[dict[str, Any]] = []
    try:
        ca, cert, key = make_tls(tmp)
        command = [PYTHON, str(BENCH / "tls_server.py"), str(cert), str(key), "--cpu", "1"]
        with (
            (tmp / "server.log").open("w") as log,
            started(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log) as process,
        ):
            server = Server(process)
            for interval in args.intervals:
                for n in args.counts:
                    for design in args.designs:
                        waited, busy = wait_quiet(limit=8)
                        row = run_one(server, tmp, ca, design, n, interval, windows[interval])
                        row.update(quiet_wait_s=waited, busy_before=busy)
                        rows.append(row)
                        print(summary_line(row), flush=True)
        write_markdown(rows, windows, args.quick, time.monotonic() - began)
        write_plot(rows)
        print(f"wrote {RESULTS / 'triggerer.md'} and {RESULTS / 'triggerer.png'}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
