"""What the rate limit's store costs a request: the round trip every request makes to take its turn.

One ``GET /v1/workflows?limit=1`` at a time through the blocking client to the sandbox on loopback, in alternating
rounds: without a store, and with a store (a real ``redis-server`` on loopback, started here) while the token is not
throttled (one round trip: the turn is granted at once). A throttled request makes the same round trip to take its
turn, and one more per look while its turn waits (at most one a second): that waiting is the pace, not the store's
cost, and ``bench/ratelimit.py`` measures it. Figures: the median time per request in each case and the difference
to the case without a store (what the store adds), and Redis's own CPU per call of the script (``INFO
commandstats``: ``evalsha``'s ``usec_per_call``). Redis on loopback: a store on another host adds its network round
trip.

Prints a Markdown table and writes ``bench/results/store_cost.md``. About a minute; asserts nothing.
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

from benchlib import md_table, median, pin, wait_quiet

from airflow_provider_analytics.sandbox.domain.config import SandboxConfig
from airflow_provider_analytics.sandbox.http.server import SandboxServer
from airflow_provider_analytics.wire import _endpoints as endpoints
from airflow_provider_analytics.wire._accounts import reset_rate_limiters
from airflow_provider_analytics.wire.client import AnalyticsClient
from airflow_provider_analytics.wire.config import ClientConfig, RateLimitStore

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from tests.support.redis_server import RedisServer

RESULTS = Path(__file__).parent / "results" / "store_cost.md"
ROUNDS = 7
REQUESTS = 400


def per_request_us(client: AnalyticsClient, count: int = REQUESTS) -> float:
    listing = endpoints.list_workflows(page_size=1).page(None)
    started = time.perf_counter()
    for _ in range(count):
        client.call(listing)
    return (time.perf_counter() - started) / count * 1e6


def main() -> None:
    pin(0)
    wait_quiet()
    timings: dict[str, list[float]] = {"no store": [], "store": []}
    with RedisServer() as redis_server, SandboxServer(config=SandboxConfig(rate_limit_per_minute=100_000_000)) as box:
        store = RateLimitStore(host="127.0.0.1", port=redis_server.port, connection_id="rate_limits")
        plain = ClientConfig(base_url=box.base_url, token=box.token, connection_id="analytics_default")
        shared = ClientConfig(base_url=box.base_url, token=box.token, connection_id="analytics_default",
                              rate_limit_store=store)  # fmt: skip
        for round_number in range(ROUNDS + 1):  # round 0 warms up: connections, the script loaded
            for name in timings:
                reset_rate_limiters()
                redis_server.flush()
                with AnalyticsClient(plain if name == "no store" else shared) as client:
                    took = per_request_us(client)
                if round_number:
                    timings[name].append(took)
        with redis_server.client() as info:
            stats = info.info("commandstats")
        reset_rate_limiters()
    evalsha = stats.get("cmdstat_evalsha", {})
    base = median(timings["no store"])
    rows = []
    for name, values in timings.items():
        added = "" if name == "no store" else f"+{median(values) - base:.0f} µs"
        rows.append([name, f"{median(values):.0f} µs", added, f"{min(values):.0f}-{max(values):.0f} µs"])
    table = md_table(["case", "median per request", "the store adds", "rounds"], rows)
    redis_line = (
        f"Redis's own time per call of the script: {evalsha.get('usec_per_call', 0):.1f} µs "
        f"({evalsha.get('calls', 0):,} calls)."
    )
    print(table + "\n\n" + redis_line)
    RESULTS.write_text(
        "# The rate limit store's cost per request\n\n"
        f"`bench/store_cost.py`: {ROUNDS} alternating rounds of {REQUESTS} requests each, one at a time, through the "
        "blocking client to the sandbox on loopback (its server threads share the interpreter); the store a "
        "`redis-server` on loopback. IQR of the no-store rounds: "
        f"{iqr(timings['no store']):.0f} µs.\n\n" + table + "\n\n" + redis_line + "\n"
    )


def iqr(values: list[float]) -> float:
    low, _, high = statistics.quantiles(values, n=4)
    return high - low


if __name__ == "__main__":
    main()
