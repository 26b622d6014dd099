"""What observing a call costs: the provider's metrics and traces when Airflow's are off, and a span when they are on.

Three figures, each the median of alternating rounds:

- *per request, all its observation*: what the hooks' observer does for a request answered at its first attempt
  (its metrics to Airflow's ``Stats``, off by default, and its span), in a process that never loaded OpenTelemetry;
- *per call, observation only*: :func:`~airflow_provider_analytics.hooks._traces.trace_call` on an ended call,
  in a process that never loaded OpenTelemetry, one that loaded it without a span current (a task on Airflow
  3.2+ with ``[traces]`` off), and one under a recording span (traces on: the SDK's provider, an in-memory
  exporter);
- *per request, end to end*: one ``GET /v1/workflows?limit=1`` through the blocking client to the sandbox on
  loopback, with the wire layer's own no-op observer (what a client built without the hooks pays), the hooks'
  observer with Airflow's metrics and traces off (the default deployment), and the hooks' observer under a
  recording span.

Prints a Markdown table and writes ``bench/results/observability.md``. About 30 s; asserts nothing.
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

from benchlib import md_table, median, pin, wait_quiet

from airflow_provider_analytics.hooks._metrics import AirflowObserver
from airflow_provider_analytics.hooks._traces import trace_call
from airflow_provider_analytics.sandbox.domain.config import SandboxConfig
from airflow_provider_analytics.sandbox.http.server import SandboxServer
from airflow_provider_analytics.wire import _endpoints as endpoints
from airflow_provider_analytics.wire._observer import CallRecord, WireObserver, install_observer
from airflow_provider_analytics.wire.client import AnalyticsClient
from airflow_provider_analytics.wire.config import ClientConfig

RESULTS = Path(__file__).parent / "results" / "observability.md"
ROUNDS = 7
CALLS = 50_000
REQUESTS = 300


def per_call_ns(action: Callable[[], None], calls: int = CALLS) -> float:
    """Nanoseconds one ``action`` takes, over ``calls`` of them."""
    started = time.perf_counter_ns()
    for _ in range(calls):
        action()
    return (time.perf_counter_ns() - started) / calls


def record() -> CallRecord:
    return CallRecord("analytics_default", "GET", "/v1/workflows", time.time_ns(), 1, 200, "req_0123456789abcdef")


def main() -> None:
    pin(0)
    wait_quiet()
    assert "opentelemetry.trace" not in sys.modules, "something imported OpenTelemetry before the first figure"
    ended = record()
    not_loaded = median([per_call_ns(lambda: trace_call(ended)) for _ in range(ROUNDS)])
    hooks = AirflowObserver()

    def one_answer_observed() -> None:  # what a request with one attempt tells the hooks' observer
        hooks.answered("analytics_default", "GET", "/v1/workflows", "2xx", 0.001)
        hooks.called(ended)

    one_answer_observed()  # the first metric imports Airflow's Stats
    metrics_off = median([per_call_ns(one_answer_observed, CALLS // 10) for _ in range(ROUNDS)])

    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    loaded = median([per_call_ns(lambda: trace_call(ended)) for _ in range(ROUNDS)])
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    tracer = trace.get_tracer("bench")

    def traced_call() -> None:
        trace_call(ended)

    with tracer.start_as_current_span("worker.task"):
        spans = []
        for _ in range(ROUNDS):
            spans.append(per_call_ns(traced_call, CALLS // 10))
            exporter.clear()
    traced = median(spans)

    # The cost of observing, not of pacing: no per-minute window the rounds' requests could use up.
    with SandboxServer(config=SandboxConfig(rate_limit_per_minute=100_000_000)) as sandbox:
        config = ClientConfig(base_url=sandbox.base_url, token=sandbox.token, connection_id="analytics_default")
        timings: dict[str, list[float]] = {"wire's no-op observer": [], "hooks' observer, off": [], "traced": []}
        with AnalyticsClient(config) as client:
            listing = endpoints.list_workflows(page_size=1).page(None)

            def one_request() -> None:
                client.call(listing)

            for round_number in range(ROUNDS + 1):  # round 0 warms up (the first metric imports Airflow's Stats)
                for name in timings:
                    observer = WireObserver() if name == "wire's no-op observer" else AirflowObserver()
                    previous = install_observer(observer)
                    if name == "traced":
                        with tracer.start_as_current_span("worker.task"):
                            took = per_call_ns(one_request, REQUESTS) / 1000
                        exporter.clear()
                    else:
                        took = per_call_ns(one_request, REQUESTS) / 1000
                    install_observer(previous)
                    if round_number:
                        timings[name].append(took)

    rows = [
        ["per call, observation only", "OpenTelemetry not loaded", f"{not_loaded:.0f} ns", ""],
        ["per request, all its observation", "hooks' observer, metrics and traces off", f"{metrics_off:.0f} ns", ""],
        ["per call, observation only", "loaded, no span current (traces off)", f"{loaded:.0f} ns", ""],
        ["per call, observation only", "under a recording span (one span made)", f"{traced:.0f} ns", ""],
    ]
    base = median(timings["wire's no-op observer"])
    for name, values in timings.items():
        spread = f"{min(values):.0f}-{max(values):.0f} µs, IQR {iqr(values):.0f} µs"
        ratio = f"{median(values):.0f} µs ({median(values) / base:.3f}x)"
        rows.append(["per request, end to end", name, ratio, spread])
    table = md_table(["figure", "case", "median", "rounds"], rows)
    print(table)
    RESULTS.write_text(
        "# Observability's cost\n\n"
        f"`bench/observability.py`: {ROUNDS} alternating rounds; {CALLS:,} calls of `trace_call` per round "
        f"({CALLS // 10:,} under a span), {REQUESTS} requests per case per round to the sandbox on loopback "
        "(in the same process: its server threads share the interpreter).\n\n" + table + "\n"
    )


def iqr(values: list[float]) -> float:
    low, _, high = statistics.quantiles(values, n=4)
    return high - low


if __name__ == "__main__":
    main()
