"""The targets of ``bench/ratelimit.py`` and each run's figures and verdict against them.

Given the row ``bench/ratelimit.py`` collected for a run (its processes' ``RESULT`` merged, the server's counters
over the window, the store's figures), ``figures`` derives what the tables show, ``misses`` says which target each
figure misses and ``verdict`` sums it up; ``summary_line`` is the line printed after each run. The tables are
``ratelimit_tables.py``'s, the plots ``ratelimit_plot.py``'s, the waits' own metrics ``ratelimit_metrics.py``'s.
The targets are those of ``bench/README.md``.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any

from benchlib import percentile

NOISY = 0.2  # other processes took more than this share of a CPU during the window
# The loop-lag target of one process: the max lag may exceed the no-limit reference's by this factor plus this many
# ms, the noise of a max between runs of one configuration (the longest full garbage collection sets both maxima).
LAG_FACTOR = 1.25
LAG_SLACK_MS = 25.0


@dataclass(frozen=True)
class Targets:
    """What a run must reach (bench/README.md).

    :param name: which set, as the tables name it.
    :param max_refused: the largest share of requests refused (429s / requests).
    :param min_useful: the smallest useful answers per second, as a share of min(R, N/I).
    :param max_gap_ratio: the largest p99 of the waits' longest gaps, over the floor max(I, N/R).
    :param max_fairness: the largest ratio of one process's median longest gap to another's (K > 1).
    :param judge_lag: whether the max loop lag is judged against the no-limit reference (one process only).
    """

    name: str
    max_refused: float
    min_useful: float
    max_gap_ratio: float
    max_fairness: float | None = None
    judge_lag: bool = False


ONE_PROCESS = Targets("one process", 0.05, 0.90, 1.5, judge_lag=True)
NO_STORE = Targets("K processes, no store", 0.01, 0.90, 1.5)
STORE = Targets("K processes, shared store", 0.001, 0.95, 1.2, max_fairness=1.2)
NO_STORE_MAX_PROCESSES = 16  # without a store, no target beyond this many processes


@dataclass(frozen=True)
class Scenario:
    """One run: N waits at poll interval I against R requests/s, in K processes, with or without the store.

    :param key: the run's name (``a-headers``, ``a-bare-k16-redis``).
    :param group: the scenario it belongs to (``a``, ``b``, ``c``).
    :param n: waits in all.
    :param interval: their poll interval in seconds.
    :param limit: the platform's requests per second and token (``None``: no limit).
    :param headers: whether the platform sends ``X-RateLimit-*``.
    :param processes: the processes the waits are spread over.
    :param store: ``none``, or ``redis``: a shared store named by the connection.
    """

    key: str
    group: str
    n: int
    interval: float
    limit: int | None
    headers: bool
    processes: int = 1
    store: str = "none"

    def spread(self, processes: int, store: str) -> Scenario:
        """This scenario over ``processes`` processes, with or without the store."""
        key = self.key + (f"-k{processes}" if processes > 1 else "") + ("-redis" if store == "redis" else "")
        return dataclasses.replace(self, key=key, processes=processes, store=store)

    @property
    def label(self) -> str:
        if self.limit is None:
            return "no limit"
        return "X-RateLimit headers" if self.headers else "no headers"

    @property
    def store_label(self) -> str:
        return "Redis store" if self.store == "redis" else "no store"

    @property
    def fleet_label(self) -> str:
        return f"{self.processes} process{'es' if self.processes > 1 else ''}, {self.store_label}"

    @property
    def floor(self) -> float:
        """The shortest longest-gap a fair client can give every wait: one answer per wait per N/R seconds."""
        return max(self.interval, self.n / self.limit) if self.limit else self.interval

    @property
    def ceiling(self) -> float:
        """The useful answers per second the waits can get at best: min(R, N/I), or N/I without a limit."""
        return self.n / self.interval if self.limit is None else min(self.limit, self.n / self.interval)

    @property
    def start_limit(self) -> float:
        return max(10.0, 3 * self.interval, 2 * self.n / self.limit if self.limit else 0.0)

    @property
    def targets(self) -> Targets | None:
        """The targets of this run: one process keeps today's; ``None`` when none is set (many, no store)."""
        if self.processes == 1:
            return ONE_PROCESS
        if self.store == "redis":
            return STORE
        return NO_STORE if self.processes <= NO_STORE_MAX_PROCESSES else None


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


def fairness(row: dict[str, Any]) -> float | None:
    """The ratio of the largest to the smallest per-process median of the waits' longest gaps (K > 1 only).

    Each process's median says how long its typical wait went without an answer; a ratio of 1 means no process's
    waits were served worse than another's.
    """
    medians = [p["gap_median"] for p in row.get("per_process", []) if p.get("n")]
    if len(medians) < 2:
        return None
    return max(medians) / min(medians) if min(medians) > 0 else math.inf


def figures(row: dict[str, Any], scenario: Scenario) -> dict[str, Any]:
    """The derived figures of one run (``{}`` where the run did not reach them)."""
    if "gaps" not in row or "requests" not in row:
        return {}
    window = row["window"]
    requests, refused, ok = row["requests"], row["refused"], row["allowed"] - row["not_found"]
    gaps = row["gaps"]
    ours, other = counted_warnings(row)
    useful_per_s = row["useful"] / window
    per_process = row.get("per_process", [])
    return {
        "requests": requests,
        "refused_share": refused / requests if requests else 0.0,
        "per_useful": requests / ok if ok else math.inf,
        "useful_per_s": useful_per_s,
        "useful_of_ceiling": useful_per_s / scenario.ceiling,
        "gap_p50": percentile(gaps, 0.5),
        "gap_p99": percentile(gaps, 0.99),
        "gap_max": max(gaps, default=0.0),
        "floor": scenario.floor,
        "gap_ratio": percentile(gaps, 0.99) / scenario.floor,
        "fairness": fairness(row),
        "warnings": ours,
        "other_warnings": other,
        "warnings_per_min": 60 * ours / window,
        "process_warnings_max_per_min": 60 * max((p["warnings"] for p in per_process), default=ours) / window,
    }


def lag_budget(reference: dict[str, Any] | None) -> float | None:
    """The largest max loop lag that still counts as no worse than the no-limit reference, in ms."""
    if reference is None or "lag_max_ms" not in reference:
        return None
    return LAG_FACTOR * float(reference["lag_max_ms"]) + LAG_SLACK_MS


def misses(row: dict[str, Any], scenario: Scenario, reference: dict[str, Any] | None) -> dict[str, str]:
    """Each target the run missed, by figure (``refused``, ``useful``, ``gap``, ``fairness``, ``failed``, ``lag``)."""
    targets = scenario.targets
    f = figures(row, scenario)
    if targets is None or not f:
        return {}
    out = {}
    if f["refused_share"] > targets.max_refused:
        out["refused"] = f"refused {f['refused_share']:.1%} > {targets.max_refused:.1%}"
    if f["useful_of_ceiling"] < targets.min_useful:
        what = "of the limit" if scenario.limit else "of N/I"
        out["useful"] = f"useful {f['useful_of_ceiling']:.0%} {what} < {targets.min_useful:.0%}"
    if f["gap_ratio"] > targets.max_gap_ratio:
        out["gap"] = f"gap p99 {f['gap_ratio']:.2f}x floor > {targets.max_gap_ratio}x"
    if targets.max_fairness is not None and (f["fairness"] or 1.0) > targets.max_fairness:
        out["fairness"] = f"fairness {f['fairness']:.2f}x > {targets.max_fairness}x"
    if row["failed_waits"]:
        out["failed"] = f"{row['failed_waits']} failed waits"
    budget = lag_budget(reference)
    if targets.judge_lag and scenario.limit is not None and budget is not None and row["lag_max_ms"] > budget:
        out["lag"] = f"lag max {row['lag_max_ms']:.0f} ms > {budget:.0f} ms"
    return out


def verdict(row: dict[str, Any], scenario: Scenario, reference: dict[str, Any] | None) -> str:
    """Met / not met against the run's targets (bench/README.md), and what was missed."""
    if "crash" in row:
        return "not met: " + str(row["crash"])[:160]
    if row.get("stuck"):
        return f"not met: a loop was stuck; {row.get('started')}/{scenario.n} waits had an answer when it was stopped"
    if not figures(row, scenario):
        return "n/a: no figures"
    if scenario.targets is None:
        return f"no target (more than {NO_STORE_MAX_PROCESSES} processes without the store)"
    missed = misses(row, scenario, reference)
    lag = ""
    if scenario.targets.judge_lag and scenario.limit is not None and lag_budget(reference) is None:
        lag = " (lag not judged: no reference run)"
    return ("met" if not missed else "not met: " + "; ".join(missed.values())) + lag


def fmt(value: Any, spec: str) -> str:
    return "n/a" if value is None else format(value, spec)


def noisy(row: dict[str, Any]) -> bool:
    return bool(max(row.get("others_cpu0_share", 0.0), row.get("others_cpu1_share", 0.0)) > NOISY)


def summary_line(scenario: Scenario, row: dict[str, Any], reference: dict[str, Any] | None) -> str:
    f = figures(row, scenario)
    if not f:
        return f"{scenario.key}: {verdict(row, scenario, reference)} ({row.get('wall_s', 0):.0f} s)"
    return (
        f"{scenario.key:<20} requests {f['requests']:>6,}  refused {f['refused_share']:5.1%}  "
        f"req/useful {f['per_useful']:.2f}  useful/s {f['useful_per_s']:.1f}  "
        f"gap p50/p99/max {f['gap_p50']:.1f}/{f['gap_p99']:.1f}/{f['gap_max']:.1f} s (floor {f['floor']:g})  "
        f"fairness {fmt(f['fairness'], '.2f')}  warnings {f['warnings']:,}  "
        f"lag p99/max {row['lag_p99_ms']:.0f}/{row['lag_max_ms']:.0f} ms  failed {row['failed_waits']}  "
        f"load {row.get('load_before', 0):.2f}  took {row.get('wall_s', 0):.0f} s: {verdict(row, scenario, reference)}"
    )
