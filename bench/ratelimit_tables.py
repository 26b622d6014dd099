"""The text of ``bench/results/ratelimit.md``: the processes table, each configuration's table, the notes.

``report`` takes the runs ``bench/ratelimit.py`` made (or read back from its JSON) and gives the Markdown: first the
processes dimension of scenario (a) as one row per configuration (K processes x headers x store) with a verdict per
target (a figure that misses its target is marked ✗), then a table per configuration group (a column per run: with
and without headers), then what the waits' metrics showed (``ratelimit_metrics.py``) and the notes. ``comparison``
sets a run's figures next to an earlier run's (``--compare``).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from benchlib import BENCH, md_table
from ratelimit_report import (
    GROUPS,
    LAG_FACTOR,
    LAG_SLACK_MS,
    NOISY,
    ONE_PROCESS,
    STORE,
    Scenario,
    figures,
    fmt,
    lag_budget,
    misses,
    noisy,
    verdict,
)

Run = tuple[Scenario, dict[str, Any]]
MISS = " ✗"


def store_cell(row: dict[str, Any]) -> str:
    """The store's commands per second and Redis-side µs per call in the window, or "-" without a store."""
    redis = row.get("redis")
    if not redis:
        return "-"
    return f"{redis['commands_per_s']:,.0f}/s, {fmt(redis['usec_per_call'], '.1f')} µs"


def processes_table(runs: list[Run], reference: dict[str, Any] | None) -> str:
    """Scenario (a) across processes: a row per configuration, a ✗ on each figure that misses its target."""
    order = sorted(runs, key=lambda run: (run[0].store, not run[0].headers, run[0].processes))
    lines = []
    for s, row in order:
        f = figures(row, s)
        missed = misses(row, s, reference)

        def mark(name: str, text: str, missed: dict[str, str] = missed) -> str:
            return text + (MISS if name in missed else "")

        if not f:
            lines.append([s.processes, s.label, s.store_label] + ["n/a"] * 10 + [verdict(row, s, reference)])
            continue
        lines.append(
            [
                s.processes,
                s.label,
                s.store_label,
                mark("refused", f"{f['refused_share']:.1%}"),
                f"{f['per_useful']:.2f}",
                mark("useful", f"{f['useful_per_s']:.1f} ({f['useful_of_ceiling']:.0%})"),
                f"{f['gap_p50']:.1f} / {f['gap_p99']:.1f} / {f['gap_max']:.1f}",
                mark("gap", f"{f['gap_ratio']:.2f}x"),
                mark("fairness", fmt(f["fairness"], ".2f")),
                f"{f['warnings_per_min']:,.0f} ({f['process_warnings_max_per_min']:,.0f})",
                f"{row['lag_max_ms']:,.0f}" + (MISS if "lag" in missed else ""),
                mark("failed", str(row["failed_waits"])),
                store_cell(row),
                f"{row.get('wall_s', 0):.0f}",
                verdict(row, s, reference) + (" (noisy)" if noisy(row) else ""),
            ]
        )
    headers = [
        "K",
        "platform sends",
        "store",
        "refused",
        "requests per useful answer",
        "useful answers/s (of the limit)",
        "longest gap per wait p50 / p99 / max s",
        "p99 / floor",
        "fairness",
        "WARNING+ per min: all (worst process)",
        "loop lag max ms",
        "failed waits",
        "store commands/s, µs/call",
        "took s",
        "verdict",
    ]
    return md_table(headers, lines)


def target_text(scenario: Scenario, name: str, reference: dict[str, Any] | None) -> str:
    """The target column of a configuration's table for one figure."""
    targets = scenario.targets
    if targets is None:
        return "-"
    if name == "refused":
        return f"<= {targets.max_refused:.1%}"
    if name == "useful":
        return f">= {targets.min_useful:.0%}"
    if name == "gap":
        return f"<= {targets.max_gap_ratio}x"
    if name == "fairness":
        return f"<= {targets.max_fairness}x" if targets.max_fairness else ""
    budget = lag_budget(reference)
    if name == "lag" and scenario.limit is None:
        return "reference"
    if name == "lag":
        return f"max <= {budget:.0f}" if targets.judge_lag and budget is not None else "not judged"
    return ""


def table(rows: list[Run], reference: dict[str, Any] | None) -> str:
    """One configuration group's table: a column per run (headers / no headers), a row per figure."""
    columns = [(s, row, figures(row, s)) for s, row in rows]
    scenario = rows[0][0]

    def line(name: str, target: str, cell: Callable[[Scenario, dict[str, Any], dict[str, Any]], str]) -> list[str]:
        return [name] + [cell(s, row, f) if f else "n/a" for s, row, f in columns] + [target]

    def target(name: str) -> str:
        return target_text(scenario, name, reference)

    limited = scenario.limit is not None
    many = scenario.processes > 1
    lines = [
        line("requests sent", "", lambda s, r, f: f"{f['requests']:,}"),
        line("refused (429s / requests)", target("refused"), lambda s, r, f: f"{f['refused_share']:.1%}"),
        line("requests per useful answer", "", lambda s, r, f: f"{f['per_useful']:.2f}"),
        line(
            "useful answers/s (% of the limit)" if limited else "useful answers/s (% of N/I)",
            target("useful"),
            lambda s, r, f: f"{f['useful_per_s']:.1f} ({f['useful_of_ceiling']:.0%})",
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
            target("gap"),
            lambda s, r, f: f"{f['floor']:g}; {f['gap_ratio']:.2f}x",
        ),
    ]
    if many:
        lines += [
            line(
                "fairness: per-process median longest gap, max / min",
                target("fairness"),
                lambda s, r, f: (
                    fmt(f["fairness"], ".2f") + " ({} / {} s)".format(*per_process_range(r, "gap_median", ".1f"))
                ),
            ),
            line(
                "processes (waits each)",
                "",
                lambda s, r, f: f"{s.processes} ({' or '.join(sorted({str(p['n']) for p in r['per_process']}))})",
            ),
        ]
    lines += [
        line(
            "WARNING+ log records in the window (per minute)" + ("; per process max" if many else ""),
            "",
            lambda s, r, f: (
                f"{f['warnings']:,} ({f['warnings_per_min']:,.0f})"
                + (f" + {f['other_warnings']} other" if f["other_warnings"] else "")
                + (f"; {max(p['warnings'] for p in r['per_process']):,}" if many else "")
            ),
        ),
        line(
            "event-loop lag p99 / max ms (full GC max)" + ("; worst process" if many else ""),
            target("lag"),
            lambda s, r, f: f"{r['lag_p99_ms']:.0f} / {r['lag_max_ms']:.0f} ({r['full_gc_max_ms']:.0f})",
        ),
        line("failed waits", "0", lambda s, r, f: f"{r['failed_waits']}"),
        line(
            "waits CPU busy" + (" (all processes, of CPU 0)" if many else ""),
            "",
            lambda s, r, f: f"{r['cpu_share']:.0%}",
        ),
        line(
            "start-up s (waits answered); processes ready after s",
            "",
            lambda s, r, f: f"{r['startup_s']:.1f} ({r['started']:,}/{s.n:,}); {r.get('launch_s', 0):.0f}",
        ),
        line("waits' resident memory, all processes", "", lambda s, r, f: f"{r.get('rss_kb', 0) / 1024:,.0f} MB"),
        line("server µs/req", "", lambda s, r, f: fmt(r.get("server_us_per_req"), ".0f")),
    ]
    if scenario.store == "redis":
        lines += [
            line("store: commands/s, Redis-side µs/call", "", lambda s, r, f: store_cell(r)),
            line("store: busiest commands (/s, µs/call)", "", lambda s, r, f: busiest(r)),
            line(
                "store: CPU; clients",
                "",
                lambda s, r, f: f"{r['redis']['cpu_share']:.1%}; {r['redis']['clients']}" if r.get("redis") else "-",
            ),
        ]
    lines += [
        line(
            "others on CPU 0 / 1; load before",
            f"<= {NOISY:.0%}",
            lambda s, r, f: (
                f"{r.get('others_cpu0_share', 0):.0%} / {r.get('others_cpu1_share', 0):.0%}; "
                f"{r.get('load_before', 0):.2f}"
            ),
        ),
        line("took (the whole configuration) s", "", lambda s, r, f: f"{r.get('wall_s', 0):.0f}"),
    ]
    verdicts = ["verdict"] + [verdict(row, s, reference) + (" (noisy)" if noisy(row) else "") for s, row in rows] + [""]
    lines.append(verdicts)
    headers = ["figure (window)"] + [s.label for s, _ in rows] + ["target"]
    return md_table(headers, lines)


def per_process_range(row: dict[str, Any], key: str, spec: str) -> tuple[str, str]:
    values = [p[key] for p in row.get("per_process", []) if p.get(key) is not None]
    return (format(max(values), spec), format(min(values), spec)) if values else ("n/a", "n/a")


def busiest(row: dict[str, Any]) -> str:
    commands = (row.get("redis") or {}).get("commands", {})
    return ", ".join(f"{name} {c['per_s']:,.0f} ({c['usec_per_call']:.1f})" for name, c in commands.items()) or "-"


def report(runs: list[Run], meta: dict[str, Any], measured: str = "", compared: str = "") -> str:
    """The text of ``ratelimit.md``.

    :param runs: the runs, in the order they ran.
    :param meta: the invocation's ``machine``, ``window``, ``command``, ``took_s``.
    :param measured: the section of the waits' metrics (``ratelimit_metrics.py``).
    :param compared: the comparison with an earlier run (``comparison``).
    """
    reference = next((row for s, row in runs if s.limit is None and "lag_max_ms" in row), None)
    first = runs[0][1] if runs else {}
    loads = [float(row["load_before"]) for _, row in runs if "load_before" in row]
    window = f"{meta['window']:g} s" if meta["window"] == meta["window"] else "of several lengths"
    out = [
        "# Waits under a rate limit\n\n",
        f"{meta['machine']}. The waits (the provider's `ExecutionTrigger`, one token) spread over K processes, all "
        "pinned to CPU 0 while they run; the HTTPS server (`bench/tls_server.py --limit R`: fixed one-second "
        "windows, 429 with `Retry-After: 1`), the store (`redis-server`, when the run has one) and the harness on "
        f"CPU 1. Window {window} after a start-up phase, the same epoch seconds for every process. "
        f"Generated by `{meta['command']}` in {meta['took_s'] / 60:.1f} min; load average before the runs "
        f"{min(loads, default=0):.2f}-{max(loads, default=0):.2f} (`uptime` before the first: "
        f"{first.get('uptime', '?')}). Provider measured: "
        f"{provider_measured(runs)}. See `bench/README.md` for the method and the targets.\n",
    ]
    spread = [(s, row) for s, row in runs if s.group == "a" and (s.processes > 1 or s.store != "none")]
    if spread:
        fleet = [(s, row) for s, row in runs if s.group == "a"]
        out.append(f"\n## {GROUPS['a']}: the processes dimension\n\n")
        out.append(
            "The waits spread evenly over K processes on one token. Targets: one process "
            f"(K = 1) refused <= {ONE_PROCESS.max_refused:.0%}, useful >= {ONE_PROCESS.min_useful:.0%} of the limit, "
            f"gap p99 <= {ONE_PROCESS.max_gap_ratio}x the floor (10 s), loop lag as the reference; K = 4 and 16 "
            "without the store refused <= 1 %, useful >= 90 %, gap p99 <= 1.5x; K > 1 with the store refused <= "
            f"{STORE.max_refused:.1%}, useful >= {STORE.min_useful:.0%}, gap p99 <= {STORE.max_gap_ratio}x and "
            f"fairness <= {STORE.max_fairness}x (the largest over the smallest per-process median of the waits' "
            "longest gaps); no failed waits. ✗ marks a missed target. *WARNING+ per min*: the records of the "
            "provider's and the triggers' loggers in all processes (in brackets the worst process's).\n\n"
        )
        out.append(processes_table(fleet, reference))
    groups: dict[tuple[str, int, str], list[Run]] = {}
    for s, row in runs:
        groups.setdefault((s.group, s.processes, s.store), []).append((s, row))
    for (group, processes, store), rows in sorted(
        groups.items(), key=lambda item: (item[0][0], item[0][2], item[0][1])
    ):
        title = GROUPS[group] + ("" if processes == 1 and store == "none" else f"; {rows[0][0].fleet_label}")
        out.append(f"\n## {title}\n\n")
        out.append(table(rows, reference))
    out.append(measured)
    out.append(compared)
    out.append(notes(runs, reference))
    return "".join(out)


def notes(runs: list[Run], reference: dict[str, Any] | None) -> str:
    out = []
    budget = lag_budget(reference)
    if budget is not None:
        out.append(
            f"\nLoop lag is judged for one process against the no-limit run (c): a limited run meets it when its max "
            f"lag is at most {LAG_FACTOR}x the reference's max + {LAG_SLACK_MS:.0f} ms = {budget:.0f} ms, an "
            "allowance for the run-to-run noise of a max (the longest full garbage collection of the window usually "
            "sets both, hence the full GC column). With K processes it is shown (the worst process's), not judged: "
            "K interpreters share CPU 0, and a process waiting for the core wakes late whatever its loop does.\n"
        )
    errors = {s.key: row.get("errors") for s, row in runs if row.get("errors")}
    if errors:
        out.append("\nMost frequent errors of `fetch` (polls given up) and ended waits per run:\n\n")
        out += [f"- {key}: {json.dumps(what)}\n" for key, what in errors.items()]
    if any(row.get("warnings") for _, row in runs):
        out.append(
            "\nWARNING+ records in the window by logger (in brackets, the cross-check: lines of the waits "
            "processes' output in the window that a warning or error level starts):\n\n"
        )
        out += [
            f"- {s.key}: {json.dumps(row['warnings'])} ({row.get('stdout_warning_lines', {}).get('window', 0):,} "
            "lines)\n"
            for s, row in runs
            if row.get("warnings")
        ]
    return "".join(out)


def provider_measured(runs: list[Run]) -> str:
    """Which copy of the provider the waits imported: the working tree's, or the one of ``--provider-path``."""
    paths = sorted({str(row["provider"]) for _, row in runs if row.get("provider")})
    tree = str(BENCH.parent / "airflow_provider_analytics")
    return ", ".join("the working tree" if path == tree else f"`{path}`" for path in paths) or "unknown"


def comparison(runs: list[Run], earlier: list[Run], label: str) -> str:
    """The runs' main figures next to an earlier run's of the same configurations (``--compare FILE``)."""
    before = {s.key: (s, row) for s, row in earlier}
    lines = []
    for s, row in runs:
        if s.key not in before:
            continue
        then, now = figures(before[s.key][1], s), figures(row, s)
        if not then or not now:
            continue

        def pair(key: str, spec: str, then: dict[str, Any] = then, now: dict[str, Any] = now) -> str:
            return f"{fmt(then[key], spec)} → {fmt(now[key], spec)}"

        lag = f"{before[s.key][1]['lag_max_ms']:,.0f} → {row['lag_max_ms']:,.0f}"
        lines.append(
            [
                s.key,
                *(pair("refused_share", ".1%"), pair("useful_per_s", ".1f"), pair("gap_ratio", ".2f")),
                *(pair("fairness", ".2f"), pair("warnings_per_min", ",.0f"), lag),
            ]
        )
    if not lines:
        return ""
    headers = ["run", "refused", "useful answers/s", "gap p99 / floor", "fairness", "WARNING+ per min", "lag max ms"]
    return f"\n## Compared with {label}\n\nEarlier → now, the same configuration.\n\n" + md_table(headers, lines)
