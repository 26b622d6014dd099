"""The report of ``bench/ratelimit.py``: targets, each run's figures and verdict, the Markdown tables, the plot.

Given the rows ``bench/ratelimit.py`` collected (one dict per run: the waits process's ``RESULT`` and the
server's counters over the window), ``report`` gives the text of ``bench/results/ratelimit.md``,
``write_plot`` writes ``bench/results/ratelimit.png`` and ``summary_line`` is the line printed after each run.
The targets are those of ``bench/README.md``. What the waits' own metrics showed is ``ratelimit_metrics.py``'s.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

from benchlib import BENCH, RESULTS, machine, md_table, percentile

NOISY = 0.2  # other processes took more than this share of a CPU during the window
# Targets (bench/README.md).
MAX_REFUSED = 0.05
MIN_USEFUL = 0.90  # of the limit (of N/I when that is lower)
MAX_GAP_RATIO = 1.5  # gap p99 / floor
# The loop-lag target: the max lag may exceed the no-limit reference's by this factor plus this many ms, the
# noise of a max between runs of one configuration (the longest full garbage collection sets both maxima).
LAG_FACTOR = 1.25
LAG_SLACK_MS = 25.0


@dataclass(frozen=True)
class Scenario:
    key: str
    group: str
    n: int
    interval: float
    limit: int | None
    headers: bool

    @property
    def label(self) -> str:
        if self.limit is None:
            return "no limit"
        return "X-RateLimit headers" if self.headers else "no headers"

    @property
    def floor(self) -> float:
        """The shortest longest-gap a fair client can give every wait: one answer per wait per N/R seconds."""
        return max(self.interval, self.n / self.limit) if self.limit else self.interval

    @property
    def useful_target(self) -> float:
        """The useful answers per second the target asks for (90 % of what the limit lets through)."""
        ceiling = self.n / self.interval if self.limit is None else min(self.limit, self.n / self.interval)
        return MIN_USEFUL * ceiling

    @property
    def start_limit(self) -> float:
        return max(10.0, 3 * self.interval, 2 * self.n / self.limit if self.limit else 0.0)


GROUPS = {
    "a": "(a) 1,000 waits, poll interval 5 s, limit 100 requests/s",
    "b": "(b) 50 waits, poll interval 1 s, limit 20 requests/s",
    "c": "(c) 1,000 waits, poll interval 5 s, no limit (the loop-lag reference)",
}


def counted_warnings(row: dict[str, Any]) -> tuple[int, int]:
    """WARNING-or-worse records in the window: of the provider's and the triggers' loggers, and of others."""
    ours = other = 0
    for name, count in row.get("warnings", {}).items():
        if name.startswith(("airflow_provider_analytics", "airflow.triggers")) or "Trigger" in name:
            ours += count
        else:
            other += count
    return ours, other


def figures(row: dict[str, Any], scenario: Scenario) -> dict[str, Any]:
    """The derived figures of one run (``None`` where the run did not reach them)."""
    if "gaps" not in row or "requests" not in row:
        return {}
    window = row["window"]
    requests, refused, ok = row["requests"], row["refused"], row["allowed"] - row["not_found"]
    gaps = row["gaps"]
    ours, other = counted_warnings(row)
    useful_per_s = row["useful"] / window
    return {
        "requests": requests,
        "refused_share": refused / requests if requests else 0.0,
        "per_useful": requests / ok if ok else math.inf,
        "useful_per_s": useful_per_s,
        "useful_of_limit": useful_per_s / scenario.limit if scenario.limit else None,
        "useful_of_target_base": useful_per_s / (scenario.useful_target / MIN_USEFUL),
        "gap_p50": percentile(gaps, 0.5),
        "gap_p99": percentile(gaps, 0.99),
        "gap_max": max(gaps, default=0.0),
        "floor": scenario.floor,
        "gap_ratio": percentile(gaps, 0.99) / scenario.floor,
        "warnings": ours,
        "other_warnings": other,
        "warnings_per_min": 60 * ours / window,
    }


def lag_budget(reference: dict[str, Any] | None) -> float | None:
    """The largest max loop lag that still counts as no worse than the no-limit reference, in ms."""
    if reference is None or "lag_max_ms" not in reference:
        return None
    return LAG_FACTOR * float(reference["lag_max_ms"]) + LAG_SLACK_MS


def verdict(row: dict[str, Any], scenario: Scenario, reference: dict[str, Any] | None) -> str:
    """Met / not met against the targets (bench/README.md)."""
    if "crash" in row:
        return "not met: " + str(row["crash"])[:160]
    if row.get("stuck"):
        return f"not met: the loop was stuck; {row.get('started')}/{scenario.n} waits had an answer when it was stopped"
    f = figures(row, scenario)
    if not f:
        return "n/a: no figures"
    misses = []
    if f["refused_share"] > MAX_REFUSED:
        misses.append(f"refused {f['refused_share']:.0%} > {MAX_REFUSED:.0%}")
    if f["useful_per_s"] < scenario.useful_target:
        what = "of the limit" if scenario.limit else "of N/I"
        misses.append(f"useful {f['useful_of_target_base']:.0%} {what} < {MIN_USEFUL:.0%}")
    if f["gap_ratio"] > MAX_GAP_RATIO:
        misses.append(f"gap p99 {f['gap_ratio']:.1f}x floor > {MAX_GAP_RATIO}x")
    if row["failed_waits"]:
        misses.append(f"{row['failed_waits']} failed waits")
    budget = lag_budget(reference) if scenario.limit is not None else None
    lag = ""
    if budget is not None and row["lag_max_ms"] > budget:
        misses.append(f"lag max {row['lag_max_ms']:.0f} ms > {budget:.0f} ms")
    elif budget is None and scenario.limit is not None:
        lag = " (lag not judged: no reference run)"
    return ("met" if not misses else "not met: " + "; ".join(misses)) + lag


def fmt(value: Any, spec: str) -> str:
    return "n/a" if value is None else format(value, spec)


def noisy(row: dict[str, Any]) -> bool:
    return bool(max(row.get("others_cpu0_share", 0.0), row.get("others_cpu1_share", 0.0)) > NOISY)


def table(group: str, rows: list[tuple[Scenario, dict[str, Any]]], reference: dict[str, Any] | None) -> str:
    """One scenario's table: a column per run (headers / no headers), a row per figure."""
    budget = lag_budget(reference)
    columns = [(s, row, figures(row, s)) for s, row in rows]

    def line(name: str, target: str, cell: Any) -> list[str]:
        return [name] + [cell(s, row, f) if f else "n/a" for s, row, f in columns] + [target]

    scenario = rows[0][0]
    limited = scenario.limit is not None
    lines = [
        line("requests sent", "", lambda s, r, f: f"{f['requests']:,}"),
        line("refused (429s / requests)", f"<= {MAX_REFUSED:.0%}", lambda s, r, f: f"{f['refused_share']:.1%}"),
        line("requests per useful answer", "", lambda s, r, f: f"{f['per_useful']:.2f}"),
        line(
            "useful answers/s (% of the limit)" if limited else "useful answers/s (% of N/I)",
            f">= {MIN_USEFUL:.0%}",
            lambda s, r, f: f"{f['useful_per_s']:.1f} ({f['useful_of_target_base']:.0%})",
        ),
        line("polls given up (fetch raised)", "", lambda s, r, f: f"{r['given_up']:,}"),
        line("waits without a useful answer in the window", "", lambda s, r, f: f"{r['unanswered']:,}"),
        line(
            "longest gap per wait p50 / p99 / max s",
            "",
            lambda s, r, f: f"{f['gap_p50']:.1f} / {f['gap_p99']:.1f} / {f['gap_max']:.1f}",
        ),
        line(
            "floor max(I, N/R) s; gap p99 / floor",
            f"<= {MAX_GAP_RATIO}x",
            lambda s, r, f: f"{f['floor']:g}; {f['gap_ratio']:.2f}x",
        ),
        line(
            "WARNING+ log records in the window (per minute)",
            "",
            lambda s, r, f: (
                f"{f['warnings']:,} ({f['warnings_per_min']:,.0f})"
                + (f" + {f['other_warnings']} other" if f["other_warnings"] else "")
            ),
        ),
        line(
            "event-loop lag p99 / max ms (full GC max)",
            f"max <= {budget:.0f}" if budget is not None and limited else ("reference" if not limited else "n/a"),
            lambda s, r, f: f"{r['lag_p99_ms']:.0f} / {r['lag_max_ms']:.0f} ({r['full_gc_max_ms']:.0f})",
        ),
        line("failed waits", "0", lambda s, r, f: f"{r['failed_waits']}"),
        line("waits CPU busy", "", lambda s, r, f: f"{r['cpu_share']:.0%}"),
        line(
            "start-up s (waits answered)",
            "",
            lambda s, r, f: f"{r['startup_s']:.1f} ({r['started']:,}/{s.n:,})",
        ),
        line("server µs/req", "", lambda s, r, f: fmt(r.get("server_us_per_req"), ".0f")),
        line(
            "others on CPU 0 / 1; load before",
            f"<= {NOISY:.0%}",
            lambda s, r, f: (
                f"{r.get('others_cpu0_share', 0):.0%} / {r.get('others_cpu1_share', 0):.0%}; "
                f"{r.get('load_before', 0):.2f}"
            ),
        ),
    ]
    verdicts = ["verdict"] + [verdict(row, s, reference) + (" (noisy)" if noisy(row) else "") for s, row in rows] + [""]
    lines.append(verdicts)
    headers = ["figure (window)"] + [s.label for s, _ in rows] + ["target"]
    return md_table(headers, lines)


def report(
    results: list[tuple[Scenario, dict[str, Any]]], window: float, quick: bool, took: float, measured: str = ""
) -> str:
    """The text of ``ratelimit.md``; ``measured`` is the section of the waits' metrics (``ratelimit_metrics.py``)."""
    reference = next((row for s, row in results if s.limit is None and "lag_max_ms" in row), None)
    out = [
        "# Waits under a rate limit\n\n",
        f"{machine()}. Waits pinned to CPU 0 (the provider's `ExecutionTrigger`, one token), the HTTPS server "
        f"pinned to CPU 1 (`bench/tls_server.py --limit R`: fixed one-second windows, 429 with `Retry-After: 1`). "
        f"Window {window:g} s after a start-up phase. Generated by `bench/ratelimit.py"
        f"{' --quick' if quick else ''}` in {took / 60:.1f} min; load average before the first run "
        f"{results[0][1].get('load_before', 0):.2f} (`uptime`: "
        f"{results[0][1].get('uptime', '?')}). Provider measured: {provider_measured(results)}. See "
        "`bench/README.md` for the method and the targets.\n",
    ]
    for group in ("a", "b", "c"):
        rows = [(s, row) for s, row in results if s.group == group]
        if rows:
            out.append(f"\n## {GROUPS[group]}\n\n")
            out.append(table(group, rows, reference))
    out.append(measured)
    budget = lag_budget(reference)
    if budget is not None:
        out.append(
            f"\nLoop lag is judged against the no-limit run (c): a limited run meets it when its max lag is at most "
            f"{LAG_FACTOR}x the reference's max + {LAG_SLACK_MS:.0f} ms = {budget:.0f} ms, an allowance for the "
            "run-to-run noise of a max (the longest full garbage collection of the window usually sets both, "
            "hence the full GC column).\n"
        )
    errors = {s.key: row.get("errors") for s, row in results if row.get("errors")}
    if errors:
        out.append("\nMost frequent errors of `fetch` (polls given up) and ended waits per run:\n\n")
        out += [f"- {key}: {json.dumps(what)}\n" for key, what in errors.items()]
    loggers = {s.key: row.get("warnings") for s, row in results if row.get("warnings")}
    if loggers:
        out.append(
            "\nWARNING+ records in the window by logger (in brackets, the cross-check: lines of the waits "
            "process's output in the window that a warning or error level starts):\n\n"
        )
        out += [
            f"- {s.key}: {json.dumps(row['warnings'])} ({row.get('stdout_warning_lines', {}).get('window', 0):,} "
            "lines)\n"
            for s, row in results
            if row.get("warnings")
        ]
    return "".join(out)


def provider_measured(results: list[tuple[Scenario, dict[str, Any]]]) -> str:
    """Which copy of the provider the waits imported: the working tree's, or the one of ``--provider-path``."""
    paths = sorted({str(row["provider"]) for _, row in results if "provider" in row})
    tree = str(BENCH.parent / "airflow_provider_analytics")
    return ", ".join("the working tree" if path == tree else f"`{path}`" for path in paths) or "unknown"


def series(row: dict[str, Any]) -> tuple[list[float], list[int], list[int], list[int]]:
    """Per wall-clock second of the window: seconds since its start, useful answers, 200s and 429s sent."""
    first, last = row["seconds"]
    seconds = list(range(first, last))
    useful = [int(row["per_second"].get(str(s), 0)) for s in seconds]
    served = {int(second): (allowed, refused) for second, allowed, refused in row.get("history", [])}
    allowed = [served.get(s, (0, 0))[0] for s in seconds]
    refused = [served.get(s, (0, 0))[1] for s in seconds]
    return [s - first for s in seconds], useful, allowed, refused


def write_plot(results: list[tuple[Scenario, dict[str, Any]]]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    done = [(s, row) for s, row in results if "gaps" in row and "seconds" in row]
    if not done:
        return
    columns = 3
    rows_needed = math.ceil((len(done) + 1) / columns)
    figure, panels = plt.subplots(rows_needed, columns, figsize=(5.2 * columns, 3.8 * rows_needed), squeeze=False)
    flat = [panel for row in panels for panel in row]
    for panel, (scenario, row) in zip(flat, done, strict=False):
        xs, useful, _, refused = series(row)
        if scenario.limit is not None:
            panel.axhline(scenario.limit, color="grey", linewidth=3, alpha=0.4, label=f"limit {scenario.limit}/s")
            panel.plot(xs, refused, ".-", color="tab:red", alpha=0.8, label="429s/s (server)")
        else:
            panel.axhline(scenario.n / scenario.interval, color="grey", linewidth=3, alpha=0.4, label="N/I")
        panel.plot(xs, useful, ".-", color="tab:blue", label="useful answers/s (waits)")
        title = f"({scenario.group}) {scenario.n:,} waits, I = {scenario.interval:g} s, "
        title += f"R = {scenario.limit}/s, {scenario.label}" if scenario.limit else "no limit"
        panel.set_title(title, fontsize=9)
        panel.set_xlabel("seconds into the window")
        top = max([scenario.limit or scenario.n / scenario.interval, *useful, *refused])
        panel.set_ylim(0, 1.35 * top)  # room for the legend above the lines
        panel.legend(fontsize=7, loc="upper right")
    gaps_panel = flat[len(done)]
    for scenario, row in done:
        ratios = sorted(gap / scenario.floor for gap in row["gaps"])
        share = [(i + 1) / len(ratios) for i in range(len(ratios))]
        gaps_panel.step(ratios, share, where="post", label=f"{scenario.group}: {scenario.label}")
    gaps_panel.axvline(MAX_GAP_RATIO, color="k", linestyle=":", label=f"target p99 <= {MAX_GAP_RATIO}x")
    gaps_panel.axhline(0.99, color="grey", linewidth=0.5)
    gaps_panel.set_xscale("log")
    gaps_panel.set_title("longest gap per wait / floor (share of waits at or below)", fontsize=9)
    gaps_panel.set_xlabel("gap / max(I, N/R)")
    gaps_panel.legend(fontsize=7, loc="lower right")
    for panel in flat[len(done) + 1 :]:
        panel.axis("off")
    figure.tight_layout()
    figure.savefig(RESULTS / "ratelimit.png", dpi=80)
    plt.close(figure)


def summary_line(scenario: Scenario, row: dict[str, Any], reference: dict[str, Any] | None) -> str:
    f = figures(row, scenario)
    if not f:
        return f"{scenario.key}: {verdict(row, scenario, reference)}"
    return (
        f"{scenario.key:<10} requests {f['requests']:>6,}  refused {f['refused_share']:5.1%}  "
        f"req/useful {f['per_useful']:.2f}  useful/s {f['useful_per_s']:.1f}  "
        f"gap p50/p99/max {f['gap_p50']:.1f}/{f['gap_p99']:.1f}/{f['gap_max']:.1f} s (floor {f['floor']:g})  "
        f"warnings {f['warnings']:,}  lag p99/max {row['lag_p99_ms']:.0f}/{row['lag_max_ms']:.0f} ms  "
        f"failed {row['failed_waits']}  load {row.get('load_before', 0):.2f}"
    )
