"""``bench/results/ratelimit.png``: the processes dimension, then each one-process run over its window's seconds.

The top row, when scenario (a) ran with more than one process or with the store: refused share, useful answers
(share of the limit), the p99 of the waits' longest gaps over the floor, and fairness, each against K, one line per
headers x store, the targets dotted. Below, per one-process run without the store (as before the processes
dimension): useful answers/s (the waits' count) and 429s/s (the server's) over the window's seconds against the
limit, and the distribution of each wait's longest gap over the floor.
"""

from __future__ import annotations

import math
from typing import Any

from benchlib import RESULTS
from ratelimit_report import NO_STORE, ONE_PROCESS, STORE, Scenario, figures

Run = tuple[Scenario, dict[str, Any]]
PANELS = (
    ("refused_share", "refused (429s / requests)", "refused"),
    ("useful_of_ceiling", "useful answers/s, share of the limit", "useful"),
    ("gap_ratio", "longest gap per wait: p99 / floor", "gap"),
    ("fairness", "fairness: per-process median gap, max / min", "fairness"),
)
STYLES = {  # (headers, store): colour, line, marker, label
    (True, "none"): ("tab:blue", "-", "o", "headers, no store"),
    (False, "none"): ("tab:orange", "-", "o", "no headers, no store"),
    (True, "redis"): ("tab:blue", "--", "s", "headers, Redis store"),
    (False, "redis"): ("tab:orange", "--", "s", "no headers, Redis store"),
}


def series(row: dict[str, Any]) -> tuple[list[float], list[int], list[int], list[int]]:
    """Per wall-clock second of the window: seconds since its start, useful answers, 200s and 429s sent."""
    first, last = row["seconds"]
    seconds = list(range(first, last))
    useful = [int(row["per_second"].get(str(s), 0)) for s in seconds]
    served = {int(second): (allowed, refused) for second, allowed, refused in row.get("history", [])}
    allowed = [served.get(s, (0, 0))[0] for s in seconds]
    refused = [served.get(s, (0, 0))[1] for s in seconds]
    return [s - first for s in seconds], useful, allowed, refused


def processes_panels(panels: list[Any], runs: list[Run]) -> None:
    """The processes dimension of scenario (a): one panel per figure, a line per headers x store."""
    for panel, (key, title, target) in zip(panels, PANELS, strict=True):
        for (headers, store), (color, style, marker, label) in STYLES.items():
            points = sorted(
                (s.processes, value)
                for s, row in runs
                if s.headers == headers and s.store == store and (value := figures(row, s).get(key)) is not None
            )
            if points:
                xs, ys = zip(*points, strict=True)
                panel.plot(xs, ys, marker=marker, color=color, linestyle=style, label=label)
        for targets, color in ((NO_STORE, "tab:red"), (STORE, "tab:green")):
            value = {
                "refused": targets.max_refused,
                "useful": targets.min_useful,
                "gap": targets.max_gap_ratio,
                "fairness": targets.max_fairness,
            }[target]
            if value is not None:
                panel.axhline(value, color=color, linestyle=":", linewidth=1, label=f"target: {targets.name}")
        panel.set_xscale("log", base=2)
        panel.set_xticks(sorted({s.processes for s, _ in runs}))
        panel.get_xaxis().set_major_formatter("{x:.0f}")
        panel.set_xlabel("processes K (one token, 1,000 waits)")
        panel.set_title(title, fontsize=9)
        if key == "refused_share":
            panel.set_yscale("symlog", linthresh=0.001)
            panel.set_ylim(0, 1)
            panel.yaxis.set_major_formatter("{x:.1%}")
        elif key == "useful_of_ceiling":
            panel.yaxis.set_major_formatter("{x:.0%}")
        else:
            panel.set_ylim(bottom=1.0)
        panel.legend(fontsize=6, loc="best")


def run_panel(panel: Any, scenario: Scenario, row: dict[str, Any]) -> None:
    """One run over its window's seconds: useful answers/s and 429s/s against the limit."""
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


def gaps_panel(panel: Any, done: list[Run]) -> None:
    """The distribution of each wait's longest gap over the floor, a line per one-process run."""
    for scenario, row in done:
        ratios = sorted(gap / scenario.floor for gap in row["gaps"])
        share = [(i + 1) / len(ratios) for i in range(len(ratios))]
        panel.step(ratios, share, where="post", label=f"{scenario.group}: {scenario.label}")
    target = ONE_PROCESS.max_gap_ratio
    panel.axvline(target, color="k", linestyle=":", label=f"target p99 <= {target}x")
    panel.axhline(0.99, color="grey", linewidth=0.5)
    panel.set_xscale("log")
    panel.xaxis.set_major_formatter("{x:g}x")
    panel.xaxis.set_minor_formatter("{x:g}")
    panel.set_title("longest gap per wait / floor (share of waits at or below)", fontsize=9)
    panel.set_xlabel("gap / max(I, N/R)")
    panel.legend(fontsize=7, loc="lower right")


def write_plot(runs: list[Run]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fleet = [(s, row) for s, row in runs if s.group == "a" and figures(row, s)]
    spread = any(s.processes > 1 or s.store != "none" for s, _ in fleet)
    done = [
        (s, row)
        for s, row in runs
        if s.processes == 1 and s.store == "none" and "gaps" in row and "seconds" in row and figures(row, s)
    ]
    if not done and not spread:
        return
    columns = 4 if spread else 3
    top = 1 if spread else 0
    below = math.ceil((len(done) + 1) / columns) if done else 0
    figure, panels = plt.subplots(top + below, columns, figsize=(4.6 * columns, 3.8 * (top + below)), squeeze=False)
    if spread:
        processes_panels(list(panels[0]), fleet)
    flat = [panel for row in panels[top:] for panel in row]
    for panel, (scenario, row) in zip(flat, done, strict=False):
        run_panel(panel, scenario, row)
    if done:
        gaps_panel(flat[len(done)], done)
    for panel in flat[len(done) + 1 if done else 0 :]:
        panel.axis("off")
    figure.tight_layout()
    figure.savefig(RESULTS / "ratelimit.png", dpi=80)
    plt.close(figure)
