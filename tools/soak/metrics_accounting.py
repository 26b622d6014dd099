"""The provider's metrics as the soak's processes sent them: the limiter's pace and queue, refusals and pauses.

Every component sends Airflow's metrics to a StatsD listener the soak runs (tools/e2e/metrics_check.py's
:class:`Listeners`, the e2e's: one port for each Celery worker, one for the triggerer, one for everything else), so
each figure is per kind of process. A worker restarted (the soak SIGKILLs one) sends to the same port again.
``collect`` in soak.py puts what the listeners kept in :attr:`Collected.metrics`.
"""

from __future__ import annotations

import statistics
import sys
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT / "tools" / "e2e"), str(ROOT)]  # as soak_deployment.py: tools/e2e, tests.support

from accounting import Collected, Violation  # noqa: E402
from metrics_check import named  # noqa: E402

from tests.support.statsd import Metric  # noqa: E402

METRICS_ARRIVED = "the provider's metrics arrived from the triggerer and each worker"
PROCESSES = ("triggerer", "worker_a", "worker_b")


def _values(metrics: list[Metric], name: str, **tags: str) -> list[float]:
    return [metric.value for metric in named(metrics, f"analytics_platform.{name}", **tags)]


def _percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))] if ordered else 0.0


def metrics_arrived(collected: Collected) -> list[Violation]:
    """Each process that waits on the platform (the triggerer, both workers) sent ``requests``: StatsD reached the
    listeners, and the provider's observer was installed where it sends."""
    silent = [name for name in PROCESSES if not _values(collected.metrics.get(name, []), "requests")]
    return [Violation(METRICS_ARRIVED, "", "", f"no analytics_platform.requests from {name}") for name in silent]


def metrics_rows(collected: Collected) -> list[tuple[str, str]]:
    """The limiter's figures per kind of process, from the metrics the listeners kept."""
    found = collected.metrics
    if not found:
        return [("the provider's metrics (StatsD)", "none collected")]
    kinds = [name for name in found if name != "others"] + (["others"] if found.get("others") else [])

    def per_kind(describe: Callable[[list[Metric]], str]) -> str:
        return "; ".join(f"{kind} {describe(found[kind])}" for kind in kinds)

    def by_scope(describe: Callable[[list[float]], str], name: str) -> Callable[[list[Metric]], str]:
        """A gauge per scope: the fleet's limiter (store) and the process's own (process), which sent it."""

        def described(metrics: list[Metric]) -> str:
            scopes = sorted({metric.tags.get("scope", "?") for metric in named(metrics, f"analytics_platform.{name}")})
            if not scopes:
                return "-"
            return " ".join(f"[{scope}] {describe(_values(metrics, name, scope=scope))}" for scope in scopes)

        return described

    def pace(values: list[float]) -> str:
        paced = [value for value in values if value > 0]
        if not paced:
            return f"- ({len(values)} values)"
        return (f"{min(paced):g} / {statistics.median(paced):g} / {max(paced):g}/s ({len(paced)} values, "
                f"{len(values) - len(paced)} zeros)")  # fmt: skip

    def share(values: list[float]) -> str:
        return f"{min(values):.2f} / {statistics.median(values):.2f} / {max(values):.2f} ({len(values)})"

    def depth(values: list[float]) -> str:
        return f"{max(values):g} / {statistics.median(values):g} ({len(values)})"

    def queued(metrics: list[Metric]) -> str:
        values = _values(metrics, "limiter.queued")
        return (f"{_percentile(values, 0.5):.0f} / {_percentile(values, 0.95):.0f} / {max(values, default=0):.0f} "
                f"({len(values)})")  # fmt: skip

    def refused(metrics: list[Metric]) -> str:
        return f"{sum(_values(metrics, 'rate_limited')):g}"

    def summed_by(name: str, tag: str) -> Callable[[list[Metric]], str]:
        def summed(metrics: list[Metric]) -> str:
            by_value: dict[str, float] = {}
            for metric in named(metrics, f"analytics_platform.{name}"):
                value = metric.tags.get(tag, "?")
                by_value[value] = by_value.get(value, 0) + metric.value
            return "{" + ", ".join(f"{value}: {count:g}" for value, count in sorted(by_value.items())) + "}"

        return summed

    pauses, requests = summed_by("limiter.pauses", "source"), summed_by("requests", "status_class")

    answered_429 = sum(1 for request in collected.requests if request.status == 429)
    pace_name = ("metrics: limiter.pace per process and scope (store: the fleet's pace; process: its own), min / "
                 "median / max of the paces over 0 (values; 0: recovered)")  # fmt: skip
    depth_name = "metrics: limiter.queue_depth per process and scope, max / median (values)"
    share_name = "metrics: limiter.share per process and scope (its part of the limit), min / median / max (values)"
    refused_name = f"metrics: rate_limited per process (the sandbox answered {answered_429} 429s: limit and chaos)"
    return [
        ("metrics: requests by status class, per process (StatsD)", per_kind(requests)),
        (pace_name, per_kind(by_scope(pace, "limiter.pace"))),
        (depth_name, per_kind(by_scope(depth, "limiter.queue_depth"))),
        (share_name, per_kind(by_scope(share, "limiter.share"))),
        ("metrics: limiter.queued per process (ms waited for a turn), p50 / p95 / max (n)", per_kind(queued)),
        (refused_name, per_kind(refused)),
        ("metrics: limiter.pauses by source, per process", per_kind(pauses)),
    ]
