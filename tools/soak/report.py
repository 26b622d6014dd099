"""The soak's figures, its Markdown report and its PNG (runs per minute, latency, memory, faults, requests per
second and the longest unanswered gap of each wait, with the limited phase shaded).

Memory must be flat: the least-squares slope of the RSS of the triggerer and of each worker (the process and its
direct children: the long-lived part) over the last 30 minutes of the load stays under ``MEMORY_SLOPE_BOUND_MB``
per 10 minutes; a restarted process is a new series with its own intercept, fitted after its first three
minutes. It is enforced only when the load ran long enough to measure it (``MEMORY_WINDOW`` plus a warm-up); a
shorter soak reports it without judging it.
"""

from __future__ import annotations

import math
import statistics
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from accounting import (
    JOB_TASKS,
    WAITS_FOR_THE_END,
    Collected,
    LimitPart,
    Violation,
    chains,
    tries_the_platform_did_not_fail,
    when,
)
from health import Sample
from limit_accounting import GAP_FLOOR_FACTOR, GAP_MIN_SECONDS, gap_bound, gap_floor, longest_gaps, max_refused_share
from metrics_accounting import metrics_rows
from store_accounting import store_rows

from airflow_provider_analytics.sandbox.domain.rate_limits import per_second_window

MEMORY_WINDOW = 30 * 60.0
MEMORY_WARMUP = 10 * 60.0
MEMORY_SLOPE_BOUND_MB = 25.0
# A process fills its caches in its first minutes (the triggerer loads its triggers again after a restart): the
# fit leaves them out, so that a restart is neither read as growth nor hides it.
PROCESS_WARMUP = 180.0  # per 10 minutes, for the triggerer and each worker
JUDGED = ("triggerer", "worker_a", "worker_b")


@dataclass
class Figures:
    rows: list[tuple[str, str]] = field(default_factory=list)
    violations: list[Violation] = field(default_factory=list)
    lost_tries: list[tuple[str, str, int, str]] = field(default_factory=list)

    def add(self, name: str, value: object) -> None:
        self.rows.append((name, str(value)))


def slope_per_10_min(points: list[tuple[int, float, float]]) -> float:
    """The least-squares slope of (process, epoch seconds, MB) points, in MB per 10 minutes.

    Each process (a component restarted is a new one, starting small again) gets its own intercept and all
    share one slope: the growth within a process's life, which a restart must not hide or fake.
    """
    by_process: dict[int, list[tuple[float, float]]] = {}
    for pid, at, mb in points:
        by_process.setdefault(pid, []).append((at, mb))
    covariance = spread = 0.0
    for mine in by_process.values():
        mean_x, mean_y = statistics.fmean(p[0] for p in mine), statistics.fmean(p[1] for p in mine)
        covariance += sum((x - mean_x) * (y - mean_y) for x, y in mine)
        spread += sum((x - mean_x) ** 2 for x, _ in mine)
    return covariance / spread * 600 if spread and len(points) >= 3 else 0.0


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))] if ordered else 0.0


def latencies(collected: Collected) -> list[tuple[float, float]]:
    """(when the task succeeded, seconds from the platform finishing its work to the task's success)."""
    work = chains(collected)
    found = []
    for ti in collected.tis:
        key = (ti["dag_id"], ti["task_id"])
        chain = work.get((ti["dag_run_id"], ti["task_id"]))
        if key in WAITS_FOR_THE_END and ti["state"] == "success" and chain and ti.get("end_date"):
            done = chain[-1].get("finished_at") or chain[-1].get("completed_at")
            if done:
                found.append((when(ti["end_date"]), when(ti["end_date"]) - when(done)))
    return found


def memory(samples: list[Sample], load_end: float, load_seconds: float) -> tuple[list[tuple[str, str]], list[str]]:
    """Rows for each component's memory and descriptors, and the components whose memory grew too fast."""
    rows, grew = [], []
    judged = load_seconds >= MEMORY_WINDOW + MEMORY_WARMUP
    for component in sorted({sample.component for sample in samples}):
        mine = [s for s in samples if s.component == component]
        born = {s.pid: min(t.at for t in mine if t.pid == s.pid) for s in mine}  # a process's first sample
        window = [(s.pid, s.at, s.core_mb) for s in mine
                  if load_end - MEMORY_WINDOW <= s.at <= load_end and s.at >= born[s.pid] + PROCESS_WARMUP]  # fmt: skip
        slope = slope_per_10_min(window)
        verdict = ""
        if component in JUDGED:
            verdict = "" if not judged else (" (over the bound)" if slope > MEMORY_SLOPE_BOUND_MB else " (flat)")
            if judged and slope > MEMORY_SLOPE_BOUND_MB:
                grew.append(f"{component}: {slope:+.1f} MB per 10 min")
        rss, core = [s.rss_mb for s in mine], [s.core_mb for s in mine]
        fds = [s.fds for s in mine]
        rows.append((f"{component}: RSS MB of its tree first / max / last",
                     f"{rss[0]:.0f} / {max(rss):.0f} / {rss[-1]:.0f}"))  # fmt: skip
        rows.append((f"{component}: RSS MB of the process and its children first / max / last, slope per 10 min",
                     f"{core[0]:.0f} / {max(core):.0f} / {core[-1]:.0f}, {slope:+.1f}{verdict}"))  # fmt: skip
        rows.append((f"{component}: open fds first / max / last", f"{fds[0]} / {max(fds)} / {fds[-1]}"))
    return rows, grew


def figures(collected: Collected, samples: list[Sample], canaries: list[dict[str, float]], load: dict[str, Any],
            started: float, load_end: float, ended: float) -> Figures:  # fmt: skip
    result = Figures()
    minutes = (load_end - started) / 60
    result.add("load duration (min) / whole soak incl. start-up and drain (min)",
               f"{minutes:.1f} / {(ended - load['setup_started']) / 60:.1f}")  # fmt: skip
    result.add("DAG runs in flight: lowest after ramp-up / target", f"{load['lowest_in_flight']} / {load['target']}")
    states = Counter(run["state"] for run in collected.runs)
    result.add("DAG runs: triggered by REST (by DAG)", load["triggered"])
    result.add("DAG runs: all soak runs (incl. event-driven) by final state", dict(states))
    finished_runs = [when(r["end_date"]) for r in collected.runs if r.get("end_date")]
    finished_tis = [when(t["end_date"]) for t in collected.tis if t.get("end_date") and t["state"] == "success"]
    in_load = [t for t in finished_runs if started + 60 <= t <= load_end]
    tasks_in_load = [t for t in finished_tis if started + 60 <= t <= load_end]
    steady = max(minutes - 1, 1e-9)
    result.add("sustained rate during the load (after its first minute): runs / tasks per minute",
               f"{len(in_load) / steady:.1f} / {len(tasks_in_load) / steady:.1f}")  # fmt: skip
    lat = [seconds for _, seconds in latencies(collected)]
    result.add(
        "latency, platform work finished -> task success (s): p50 / p95 / max (n)",
        f"{percentile(lat, 0.5):.1f} / {percentile(lat, 0.95):.1f} / {max(lat, default=0):.1f} ({len(lat)})",
    )
    work = chains(collected)
    pieces = sum(len(chain) for (run, task), chain in work.items())
    failed = sum(1 for chain in work.values() for record in chain if record["status"] == "failed")
    result.add("platform work: executions + reports / genuinely failed (chaos)", f"{pieces} / {failed}")
    notes = collected.notes
    faults = notes.get("faults", {})
    result.add("faults injected by kind", faults.get("injected", {}))
    result.add(
        "faults absorbed by kind; on the watcher's last polls, answer after the log was read",
        f"{faults.get('absorbed', {})}; {faults.get('pending', 0)}",
    )
    result.add("files downloaded and verified (local + S3)", notes.get("files", 0))
    syncs = notes.get("syncs", {})
    result.add("syncs of ds_warehouse: finished / asset events / folded / lost in the documented window",
               f"{syncs.get('finished')} / {syncs.get('events')} / {syncs.get('folded')} / "
               f"{len(syncs.get('lost_in_documented_window', []))}")  # fmt: skip
    lags = [c["max_ms"] for c in canaries]
    result.add(
        "triggerer event-loop lag (canary timer lateness, ms): worst p95 / worst max (canaries)",
        f"{max((c['p95_ms'] for c in canaries), default=0):.0f} / {max(lags, default=0):.0f} ({len(canaries)})",
    )
    rows, grew = memory(samples, load_end, load_end - started)
    result.rows += rows
    result.add(
        "memory bound",
        f"slope < {MEMORY_SLOPE_BOUND_MB:g} MB per 10 min over the last 30 min, judged when "
        f"the load runs >= {(MEMORY_WINDOW + MEMORY_WARMUP) / 60:.0f} min"
        + ("" if minutes * 60 >= MEMORY_WINDOW + MEMORY_WARMUP else " (not judged: too short)"),
    )
    for what in grew:
        result.violations.append(Violation("memory is flat", "", "", what))
    result.add("operations", "; ".join(load["operations"]) or "-")
    result.rows += store_rows(collected)
    result.rows += limit_rows(collected)
    result.rows += metrics_rows(collected)
    lost = tries_the_platform_did_not_fail(collected)
    result.add("failed tries the platform did not cause (each retried)", len(lost))
    result.lost_tries = lost
    return result


def unlimited_windows(collected: Collected) -> list[tuple[float, float]]:
    """The load after its first minute (the ramp-up), outside the limited phase: what the phase is compared with."""
    started, load_end = collected.load
    window = collected.limit.window()
    if window is None:
        return [(started + 60, load_end)]
    return [(a, b) for a, b in ((started + 60, window[0]), (window[1], load_end)) if b > a]


def per_second(arrivals: list[float], windows: list[tuple[float, float]]) -> tuple[int, float, float, int]:
    """Requests arrived in ``windows``: how many, and per second their mean, p99 and max (whole seconds)."""
    counts = Counter(int(at) for at in arrivals if any(a <= at < b for a, b in windows))
    seconds = [counts.get(second, 0) for a, b in windows for second in range(math.ceil(a), math.floor(b))]
    total, span = sum(counts.values()), sum(b - a for a, b in windows)
    return total, total / span if span else 0.0, percentile([float(n) for n in seconds], 0.99), max(seconds, default=0)


def limit_rows(collected: Collected) -> list[tuple[str, str]]:
    """The limited phase against the rest of the load: requests per second, refusals, each wait's longest gap."""
    record, started = collected.limit, collected.load[0]
    parts = record.parts()

    def at(moment: float) -> str:
        return f"{moment - started:.0f} s"

    if record.per_second <= 0:
        rows = [("rate-limit phase", "off (--rate-limit 0)")]
    else:
        told = "; ".join(f"{'lifted' if step.per_second is None else f'{step.per_second:g}/s '}"
                         f"{'' if step.per_second is None else ('with' if step.headers else 'without') + ' headers'}"
                         f" at {at(step.at)}" for step in record.steps)  # fmt: skip
        planned = ", ".join(at(moment) for moment in record.planned)
        rows = [("rate-limit phase: the platform's limit per token, set through POST /_sandbox/rate-limit "
                 "(seconds of the load; planned at " + planned + ")", told or "not set")]  # fmt: skip
    faulted = {fault["request_id"] for fault in collected.injected}
    chaos_429 = {fault["request_id"] for fault in collected.injected if fault["kind"] == "rate_limited"}
    arrivals = [request.at for request in collected.requests]
    refused_in_log = [request.at for request in collected.requests
                      if request.status == 429 and request.request_id not in faulted]  # fmt: skip
    chaos = [request.at for request in collected.requests if request.request_id in chaos_429]
    windows: list[tuple[str, list[tuple[float, float]], LimitPart | None]]
    windows = [(part.name, [(part.start, part.end)], part) for part in parts]
    windows.append(("unlimited (the load after its first minute, outside the phase)", unlimited_windows(collected),
                    None))  # fmt: skip
    for name, spans, part in windows:
        sent, mean, p99, most = per_second(arrivals, spans)
        refused = len([t for t in refused_in_log if any(a <= t < b for a, b in spans)])
        injected = len([t for t in chaos if any(a <= t < b for a, b in spans)])
        span = sum(b - a for a, b in spans)
        where = name if part is None else f"limited {name} ({at(part.start)} to {at(part.end)})"
        rows.append((f"{where}: /v1 requests sent per second mean / p99 / max; answered, not refused by the "
                     "limit, per second", f"{mean:.1f} / {p99:.0f} / {most} ({sent} in {span:.0f} s); "
                     f"{(sent - refused) / span if span else 0:.1f}"))  # fmt: skip
        counted = f"{part.refused} (the sandbox's counter), " if part is not None else ""
        rows.append((f"{where}: refused by the rate limit (429s not injected); chaos 429s",
                     f"{counted}{refused} in the log, {refused / sent if sent else 0:.1%} of requests; "
                     f"{injected} ({injected / sent if sent else 0:.1%})"))  # fmt: skip
    if parts:
        sent = sum(1 for t in arrivals if parts[0].start <= t < parts[-1].end)
        refused = sum(part.refused for part in parts)
        bound = f"bound {max_refused_share(collected.store is not None):.0%}"
        paced = "with the rate limit store" if collected.store is not None else "without the store: each process alone"
        rows.append((f"limited phase in all: refused by the rate limit / /v1 requests ({bound}, {paced})",
                     f"{refused} / {sent} ({refused / sent if sent else 0:.1%})"))  # fmt: skip
        # The sandbox's windows: whole epoch seconds (several for a limit under 1/s), each allowing ``allowance``.
        length, allowance = per_second_window(parts[0].per_second)
        let_through = Counter(int(request.at // length) for request in collected.requests
                              if parts[0].start <= request.at < parts[-1].end and request.status != 429)  # fmt: skip
        windows_in = range(math.ceil(parts[0].start / length), math.floor(parts[-1].end / length))
        full = sum(1 for window in windows_in if let_through.get(window, 0) >= allowance)
        rows.append(("limited phase: windows of the limit in which it was reached (requests not refused >= its "
                     "allowance)", f"{full} of {len(windows_in)}"))  # fmt: skip
    gaps = longest_gaps(collected)
    for kind, limited in (("limited", True), ("unlimited", False)):
        found = gaps[kind]
        if not found:
            continue
        seconds_of = [end - start for _, start, end in found]
        floor = gap_floor(collected, limited)
        longest_wait, longest_start, longest_end = max(found, key=lambda item: item[2] - item[1])
        flight = f"; waits in flight {collected.notes.get('waits_in_flight', 0):.0f} (mean)" if limited else ""
        rows.append((f"longest unanswered gap per wait, {kind} (s): p50 / p99 / max (waits); floor "
                     f"max(poll interval, waits in flight / limit); bound max({GAP_FLOOR_FACTOR:g} x floor, "
                     f"{GAP_MIN_SECONDS:g} s)",
                     f"{percentile(seconds_of, 0.5):.1f} / {percentile(seconds_of, 0.99):.1f} / {max(seconds_of):.1f} "
                     f"({len(found)}); floor {floor:.1f}{flight}; bound {gap_bound(floor):.0f}"))  # fmt: skip
        who = f"{longest_wait.run_id}.{longest_wait.task_id}" if longest_wait.run_id else longest_wait.task_id
        rows.append((f"the longest, {kind}", f"{who}, GET {longest_wait.path}, {at(longest_start)} to "
                                             f"{at(longest_end)}"))  # fmt: skip
    throttle = collected.notes.get("throttle", {})
    rows.append(("the provider's throttle log lines by process (task: all task logs): started pacing the token (alone "
                 "or through the store) / ended, a poll not sent (its turn did not come before its deadline), the "
                 "store did not answer / answered again",
                 "; ".join(f"{name} {count}" for name, count in throttle.items()) or "none"))  # fmt: skip
    paces = collected.notes.get("paces", {})
    rows.append(("paces the processes started at (log lines), by what they learned from: min / median / max (lines)",
                 "; ".join(f"{source}: {min(found):g} / {statistics.median(found):g} / {max(found):g}/s ({len(found)})"
                           for source, found in sorted(paces.items())) or "none"))  # fmt: skip
    read = collected.notes.get("request_log", {})
    if read:
        rows.append(("sandbox request log read at the end, in slices",
                     f"{read['entries']} entries, {read['mb']:.1f} MB of JSON (largest slice {read['largest_mb']:.1f} "
                     "MB), kept as 6 fields each"))  # fmt: skip
    return rows


def markdown(result: Figures, invariants: list[tuple[str, int]], title: str) -> str:
    lines = [f"# {title}", "", "| figure | value |", "|---|---|"]
    lines += [f"| {name} | {value.replace('|', '/')} |" for name, value in result.rows]
    lines += ["", "| invariant | violations |", "|---|---|"]
    lines += [f"| {name} | {count} |" for name, count in invariants]
    if result.lost_tries:
        lines += ["", "Failed tries the platform did not cause (the retry of each reattached or started afresh):", "",
                  "| run | task | try | error the try ended on |", "|---|---|---|---|"]  # fmt: skip
        lines += [f"| {run} | {task} | {number} | {error.replace('|', '/')} |"
                  for run, task, number, error in result.lost_tries[:30]]  # fmt: skip
    return "\n".join(lines) + "\n"


def plot(path: Path, collected: Collected, samples: list[Sample], started: float, load_end: float) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    def minute(t: float) -> float:
        return (t - started) / 60

    figure, ((runs, lat, rates), (rss, faults, gaps)) = plt.subplots(2, 3, figsize=(19, 8))
    finished = Counter(int(minute(when(r["end_date"]))) for r in collected.runs if r.get("end_date"))
    tasks = Counter(int(minute(when(t["end_date"]))) for t in collected.tis if t.get("end_date"))
    for counter, label in ((finished, "runs"), (tasks, "task instances")):
        keys = sorted(counter)
        runs.plot(keys, [counter[k] for k in keys], marker="o", label=label)
    runs.set(title="finished per minute", xlabel="minute of the soak")
    runs.legend()
    points = latencies(collected)
    lat.scatter([minute(t) for t, _ in points], [s for _, s in points], s=8)
    lat.set(title="platform work finished -> task success (s)", xlabel="minute of the soak")
    for component in sorted({s.component for s in samples}):
        mine = [s for s in samples if s.component == component]
        rss.plot([minute(s.at) for s in mine], [s.core_mb for s in mine], label=component)
    rss.set(title="RSS of each component and its children (MB)", xlabel="minute of the soak")
    rss.legend(fontsize=7)
    kinds = sorted({f["kind"] for f in collected.injected})
    for kind in kinds:
        per = Counter(int(minute(when(f["at"]))) for f in collected.injected if f["kind"] == kind)
        keys = sorted(per)
        faults.plot(keys, [per[k] for k in keys], marker=".", label=kind)
    faults.set(title="faults injected per minute", xlabel="minute of the soak")
    if kinds:
        faults.legend(fontsize=7)
    injected = {f["request_id"] for f in collected.injected}
    bins = 10.0  # seconds
    sent = Counter(int((r.at - started) // bins) for r in collected.requests)
    refused = Counter(int((r.at - started) // bins) for r in collected.requests
                      if r.status == 429 and r.request_id not in injected)  # fmt: skip
    keys = sorted(sent)
    rates.plot([k * bins / 60 for k in keys], [sent[k] / bins for k in keys], label="/v1 requests sent")
    rates.plot([k * bins / 60 for k in keys], [refused.get(k, 0) / bins for k in keys], label="refused by the limit")
    for part in collected.limit.parts():
        rates.hlines(part.per_second, minute(part.start), minute(part.end), color="k", linestyle="--")
    rates.set(title=f"/v1 requests per second ({bins:g}-s means); the limit dashed", xlabel="minute of the soak")
    rates.legend(fontsize=7)
    found = longest_gaps(collected)
    for kind, colour in (("unlimited", "tab:blue"), ("limited", "tab:red")):
        points = [(minute(end), end - start) for _, start, end in found[kind]]
        gaps.scatter([x for x, _ in points], [y for _, y in points], s=8, color=colour, label=kind)
        gaps.axhline(gap_bound(gap_floor(collected, kind == "limited")), color=colour, linestyle="--", linewidth=0.8)
    gaps.set(title="each wait's longest unanswered gap (s), by its end; bounds dashed", xlabel="minute of the soak")
    gaps.legend(fontsize=7)
    for axis in (runs, lat, rss, faults, rates, gaps):
        axis.axvline(minute(load_end), color="grey", linestyle=":")
        for part in collected.limit.parts():
            axis.axvspan(minute(part.start), minute(part.end), color="tab:orange" if part.headers else "tab:red",
                         alpha=0.12, linewidth=0)  # fmt: skip
    if collected.limit.parts():
        figure.suptitle(f"limited phase shaded: {collected.limit.per_second:g} requests/s per token, with "
                        "X-RateLimit headers (orange), then without (red)", fontsize=10)  # fmt: skip
    figure.tight_layout()
    figure.savefig(path, dpi=90)
    plt.close(figure)


__all__ = ["JOB_TASKS", "Figures", "figures", "markdown", "plot"]
