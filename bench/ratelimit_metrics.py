"""What the rate-limit bench's waits reported through their own metrics: per-second series, figures, table, plot.

The waits process of ``bench/ratelimit.py`` sends the provider's metrics (docs/metrics.md) through Airflow's StatsD
client to a listener of the bench, which keeps each datagram's arrival time. ``limiter_series`` turns what arrived
into per-second series of one run, ``metrics_section`` gives the section of ``bench/results/ratelimit.md`` that
lists their figures, and ``write_metrics_plot`` draws ``bench/results/ratelimit_metrics.png`` from them alone. Only
the one-process runs have them: with K processes on one listener the gauges (pace, queue depth) of different
processes overwrite each other, and a datagram does not say which process sent it.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from benchlib import RESULTS, md_table, median, percentile
from ratelimit_report import Scenario, fmt

if TYPE_CHECKING:
    from tests.support.statsd import Metric

# The provider's metrics as the waits process sent them through Airflow's StatsD client (docs/metrics.md).
METRIC = "airflow.analytics_platform."


def limiter_series(metrics: Sequence[Metric], began: float, end: float) -> dict[str, Any]:
    """The waits' metrics per wall-clock second, from when the waits were created (``began``) to ``end``.

    Gauges (``limiter.pace``, ``limiter.queue_depth``, per ``conn_id``) give each second the last value sent in it and
    keep it through seconds that sent none, as a StatsD server flushing every second shows a gauge; ``None`` before
    the first value. Counters are summed per second (``requests`` of ``status_class`` 2xx, ``rate_limited``,
    ``limiter.pauses``); ``limiter.queued`` gives each second its p95 in seconds (``None`` when nothing was queued).
    Besides: the largest queue depth of any value, and the window's ``limiter.queued`` values (p95).

    :param metrics: what the listener read, each with its arrival time.
    :param began: epoch seconds; the first second is ``floor(began)``.
    :param end: epoch second the series ends before.
    """
    first = math.floor(began)
    count = max(0, math.ceil(end) - first)
    gauges: dict[str, dict[str, dict[int, float]]] = {"pace": defaultdict(dict), "queue_depth": defaultdict(dict)}
    counters = {name: [0] * count for name in ("ok", "other", "refused", "pauses")}
    queued: dict[int, list[float]] = defaultdict(list)
    deepest = 0.0
    for metric in sorted(metrics, key=lambda m: m.at):
        second = math.floor(metric.at) - first
        if not 0 <= second < count or not metric.name.startswith(METRIC):
            continue
        name = metric.name[len(METRIC) :]
        if name in ("limiter.pace", "limiter.queue_depth"):
            key = name.split(".")[1]
            gauges[key][metric.tags.get("conn_id", "?")][second] = metric.value
            if key == "queue_depth":
                deepest = max(deepest, metric.value)
        elif name == "requests":
            counters["ok" if metric.tags.get("status_class") == "2xx" else "other"][second] += int(metric.value)
        elif name == "rate_limited":
            counters["refused"][second] += int(metric.value)
        elif name == "limiter.pauses":
            counters["pauses"][second] += int(metric.value)
        elif name == "limiter.queued":
            queued[second].append(metric.value / 1000)

    def held(values: dict[int, float]) -> list[float | None]:
        out: list[float | None] = []
        last: float | None = None
        for second in range(count):
            last = values.get(second, last)
            out.append(last)
        return out

    return {
        "first": first,
        "count": count,
        "pace": {conn: held(values) for conn, values in sorted(gauges["pace"].items())},
        "queue_depth": {conn: held(values) for conn, values in sorted(gauges["queue_depth"].items())},
        "queue_depth_max": deepest,
        "queued_p95": [round(percentile(queued[s], 0.95), 3) if queued.get(s) else None for s in range(count)],
        **counters,
    }


def metric_figures(row: dict[str, Any], scenario: Scenario) -> dict[str, Any]:
    """What the waits' metrics say of one limited run: its pace against the limit, its queue, its refusals."""
    series = row.get("metrics")
    if not series or scenario.limit is None or "window_wall" not in row:
        return {}
    w0, w1 = (math.floor(t) - series["first"] for t in row["window_wall"])
    window = range(max(0, w0), min(series["count"], w1))
    paces = [value for values in series["pace"].values() for value in values]
    depths = [value for values in series["queue_depth"].values() for value in values]
    steady = [paces[s] for s in window if paces and paces[s] is not None]
    queued = [value for s in window if (value := series["queued_p95"][s]) is not None]
    refused, ok, other = series["refused"], series["ok"], series["other"]
    requests = sum(ok) + sum(other)
    refusal_seconds = [s for s, n in enumerate(refused) if n]
    throttled_at = next((s for s, value in enumerate(paces) if value), None)
    return {
        "pace_window": median(steady) if steady else None,
        "pace_share": median(steady) / scenario.limit if steady else None,
        "throttled_after_s": throttled_at,
        "queue_max": series["queue_depth_max"],
        "queue_window": median([depths[s] for s in window if depths and depths[s] is not None]) if depths else None,
        "queue_end": next((value for value in reversed(depths) if value is not None), None),
        "queued_p95_window": median(queued) if queued else None,
        "refused": sum(refused),
        "refused_share": sum(refused) / requests if requests else 0.0,
        "refused_window": sum(refused[s] for s in window),
        "last_refusal_s": refusal_seconds[-1] + 1 if refusal_seconds else None,
        "ok_per_s_window": sum(ok[s] for s in window) / len(window) if window else None,
        "pauses": sum(series["pauses"]),
        "datagrams": row.get("statsd", {}).get("datagrams"),
        "dropped": row.get("statsd", {}).get("dropped"),
    }


def metrics_table(results: list[tuple[Scenario, dict[str, Any]]]) -> str:
    """The limited runs' figures from their metrics alone: a column per run."""
    columns = [(s, metric_figures(row, s)) for s, row in results if s.limit is not None]
    columns = [(s, f) for s, f in columns if f]
    if not columns:
        return ""

    def line(name: str, cell: Any) -> list[str]:
        return [name] + [cell(s, f) for s, f in columns]

    lines = [
        line(
            "`limiter.pace` in the window, median (of the limit)",
            lambda s, f: f"{fmt(f['pace_window'], '.1f')}/s ({fmt(f['pace_share'], '.0%')} of {s.limit}/s)",
        ),
        line("throttled from (s after the waits started)", lambda s, f: fmt(f["throttled_after_s"], "d")),
        line(
            "`limiter.queue_depth` max / window median / last",
            lambda s, f: f"{f['queue_max']:,.0f} / {fmt(f['queue_window'], ',.0f')} / {fmt(f['queue_end'], ',.0f')}",
        ),
        line("`limiter.queued` p95 in the window, median s", lambda s, f: fmt(f["queued_p95_window"], ".1f")),
        line(
            "`rate_limited` (429s) in the run (of all requests); in the window",
            lambda s, f: f"{f['refused']:,} ({f['refused_share']:.1%}); {f['refused_window']:,}",
        ),
        line("last 429 (s after the waits started)", lambda s, f: fmt(f["last_refusal_s"], "d")),
        line("`requests` 2xx/s in the window", lambda s, f: fmt(f["ok_per_s_window"], ".1f")),
        line("`limiter.pauses` in the run", lambda s, f: f"{f['pauses']:,}"),
        line(
            "StatsD datagrams received (dropped)",
            lambda s, f: f"{fmt(f['datagrams'], ',')} ({fmt(f['dropped'], ',')})",
        ),
    ]
    headers = ["metric (whole run unless said)"] + [f"({s.group}) {s.label}{store_suffix(s)}" for s, _ in columns]
    return md_table(headers, lines)


def store_suffix(scenario: Scenario) -> str:
    return ", Redis store" if scenario.store == "redis" else ""


def write_metrics_plot(results: list[tuple[Scenario, dict[str, Any]]]) -> None:
    """``ratelimit_metrics.png``: per limited run, over the run's seconds, the limiter's pace, the 2xx and 429
    answers per second against the limit, and the queue (depth, and the p95 time queued)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    done = [(s, row) for s, row in results if s.limit is not None and row.get("metrics") and "window_wall" in row]
    if not done:
        return
    figure, panels = plt.subplots(2, len(done), figsize=(3.8 * len(done), 6.0), squeeze=False, sharex="col")
    for column, (scenario, row) in enumerate(done):
        series = row["metrics"]
        xs = list(range(series["count"]))
        window = math.floor(row["window_wall"][0]) - series["first"]
        top, bottom = panels[0][column], panels[1][column]
        top.axhline(scenario.limit, color="grey", linewidth=3, alpha=0.4, label=f"limit {scenario.limit}/s")
        top.plot(xs, series["ok"], color="tab:blue", linewidth=1, label="requests 2xx/s")
        top.plot(xs, series["refused"], color="tab:red", linewidth=1, label="rate_limited (429s)/s")
        for conn, values in series["pace"].items():
            top.plot(xs, [math.nan if v is None else v for v in values], color="k", label=f"limiter.pace ({conn})")
        ceiling = 1.8 * max([scenario.limit, *series["ok"]])  # room for the legend above the lines
        top.set_ylim(0, ceiling)
        burst = max(series["refused"], default=0)
        if burst > ceiling:  # a start-up burst of 429s goes off the top: say how high
            second = series["refused"].index(burst)
            top.annotate(
                f"{burst:,} 429s/s", (second, ceiling), xytext=(4, -10), textcoords="offset points", fontsize=7
            )
        refusals = [second for second, count in enumerate(series["refused"]) if count]
        said = f"429s: {sum(series['refused']):,}" + (f", the last {refusals[-1] + 1} s in" if refusals else "")
        top.text(0.98, 0.12, said, transform=top.transAxes, ha="right", size=8, color="tab:red")
        title = f"({scenario.group}) {scenario.n:,} waits, I = {scenario.interval:g} s, R = {scenario.limit}/s, "
        top.set_title(title + scenario.label + store_suffix(scenario), fontsize=9)
        top.set_ylabel("requests/s")
        for conn, values in series["queue_depth"].items():
            depth = [math.nan if v is None else v for v in values]
            bottom.plot(xs, depth, color="tab:purple", label=f"limiter.queue_depth ({conn})")
        bottom.set_ylabel("requests queued")
        bottom.set_ylim(bottom=0)
        queued = bottom.twinx()
        p95 = [math.nan if v is None else v for v in series["queued_p95"]]
        queued.plot(xs, p95, color="tab:orange", linewidth=1, label="limiter.queued p95 (s)")
        queued.set_ylabel("seconds queued (p95)")
        queued.set_ylim(bottom=0)
        bottom.set_xlabel("seconds since the waits started")
        for panel in (top, bottom):
            panel.axvline(window, color="k", linestyle=":", linewidth=1)
        top.annotate("window", (window, 0), xytext=(3, 3), textcoords="offset points", fontsize=7)
        top.legend(fontsize=7, loc="upper right", ncol=2)
        handles = bottom.get_legend_handles_labels()[0] + queued.get_legend_handles_labels()[0]
        bottom.legend(handles=handles, fontsize=7, loc="lower right")
    figure.tight_layout()
    figure.savefig(RESULTS / "ratelimit_metrics.png", dpi=72)
    plt.close(figure)


def metrics_section(results: list[tuple[Scenario, dict[str, Any]]]) -> str:
    """The section of ``ratelimit.md`` with the metrics' figures ("" when no run collected metrics)."""
    measured = metrics_table(results)
    if not measured:
        return ""
    return (
        "\n## What the waits' metrics showed\n\n"
        "The waits process ran with Airflow's StatsD metrics on (`statsd_influxdb_enabled`, so with their tags), "
        "sent to a UDP listener of `bench/ratelimit.py` that kept each datagram's arrival time; the figures below "
        "come from those metrics alone (docs/metrics.md names them), from the creation of the waits to the end of "
        "the window, and `ratelimit_metrics.png` plots them per second. One-process runs only: the processes of a "
        "K-process run send them too (the same cost), but their gauges cannot be told apart.\n\n" + measured
    )
