"""``make e2e EXECUTOR=celery``'s rate limit store: one limiter for every process on the token, through Redis.

The Celery run names the deployment's own Redis (the broker's server, in database ``STORE_DB``: the broker has
database 0) as the analytics connection's rate limit store: the Redis connection ``STORE_CONN_ID`` and the extra
``rate_limit_redis_conn_id`` naming it reach every component as environment variables, as the analytics
connection does (cluster.py). After the metrics' checks, whose throttled check refuses a wait on a worker and a
deferred wait twice each with ``Retry-After`` (metrics_check.py), three checks say the store was what paced them:

- **the store holds the account's state**: the limiter's keys in database ``STORE_DB`` (none in the broker's),
  one account, its state written (a version above 0: what the 429s taught was stored), and no key or value holding
  the token or a piece of its sha256;
- **the limiter's gauges carry** ``scope=store``, from the worker and from the triggerer, none ``process``;
- **a pause learnt in one process holds the other**: after each injected 429 (a request of one process, read in
  the sandbox's request log by its path), no request on another path reached the sandbox from ``HOLD_FROM`` s after
  the 429 until its ``Retry-After`` ended, while the other process sent requests just before and just after: it was
  polling (every second) and was held. Without a store only the refused process pauses, and the other one's polls
  land in that window (its ``Retry-After`` is longer than two polls).

Without a store (LocalExecutor, Airflow 2.11) the checks are skipped; the fleet-pause figures are still measured
and printed in the reason: there the other process goes on polling through the refused one's pauses.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from cluster import STORE_DB, Cluster
from deployment import Checks, Deployment, expect
from metrics_check import DEFERRED_WAIT, RETRY_AFTER, WORKER_WAIT, Listeners, named

TOKEN = "sandbox-token"  # the analytics connection's (cluster.py)
KEY_PREFIX = "analytics-platform:limiter:"
# The limiter's gauges, which carry the scope of the limiter that sent them (docs/metrics.md).
GAUGES = ("limiter.pace", "limiter.queue_depth", "limiter.share")
# A 429's pause reaches the store a few round trips after the sandbox answered it (the refused process reads the
# answer, then writes the pause); a request another process had been let go meanwhile may still arrive. The window
# checked starts this long after the 429 and ends as its Retry-After does (EARLY before, for the clocks).
HOLD_FROM, EARLY = 1.0, 0.1
# The other process was polling around a 429 when it sent requests this shortly before it, and after the pause.
ACTIVE_BEFORE, ACTIVE_AFTER = 2.0, RETRY_AFTER + 5.0
SHA_PIECE = 16  # no 16 hex digits of the token's sha256 in a row, anywhere in the store


@dataclass(frozen=True)
class Held:
    """What the other process did around one 429: ``during`` its requests in the held window (paths)."""

    refused: str  # whose request was refused: "worker" or "triggerer"
    at: float
    before: float | None  # seconds from its last request before the 429 to the 429
    after: float | None  # seconds from the 429 to its first request after the window
    during: tuple[str, ...]

    @property
    def active(self) -> bool:
        return self.before is not None and self.after is not None


def store_contents(port: int, db: int) -> dict[str, list[str]]:
    """Every key of one Redis database on loopback and what it holds (a hash's fields and values, a list's items)."""
    import redis

    client = redis.Redis(host="127.0.0.1", port=port, db=db, socket_timeout=5, decode_responses=True)
    try:
        found: dict[str, list[str]] = {}
        for key in client.scan_iter(count=1000):
            kind = str(client.type(key))
            if kind == "hash":
                items = [item for pair in client.hgetall(key).items() for item in pair]
            elif kind == "list":
                items = list(client.lrange(key, 0, -1))
            else:
                items = [str(client.get(key)) if kind == "string" else f"({kind})"]
            found[str(key)] = [str(item) for item in items]
        return found
    finally:
        client.close()


def leaks(contents: dict[str, list[str]], tokens: list[str]) -> list[str]:
    """The keys and values that hold a token, or ``SHA_PIECE`` hex digits in a row of a token's sha256."""
    pieces = []
    for token in tokens:
        digest = hashlib.sha256(token.encode()).hexdigest()
        pieces += [token, *(digest[i : i + SHA_PIECE] for i in range(len(digest) - SHA_PIECE + 1))]
    return [text for key, values in contents.items() for text in (key, *values) if any(p in text for p in pieces)]


def store_holds_the_state(cluster: Cluster) -> str:
    """The account's state in database STORE_DB under keys that hold neither the token nor its sha256."""
    contents = store_contents(cluster.ports["redis"], STORE_DB)
    in_broker = [key for key in store_contents(cluster.ports["redis"], 0) if key.startswith(KEY_PREFIX)]
    states = [key for key in contents if key.startswith(KEY_PREFIX) and key.endswith(":state")]
    expect(not in_broker, f"limiter keys in the broker's database 0: {in_broker[:5]}")
    expect(len(states) == 1, f"{len(states)} accounts' state in database {STORE_DB} (one token): {list(contents)[:10]}")
    fields = contents[states[0]]
    state = dict(zip(fields[::2], fields[1::2], strict=True))
    expect(int(state.get("v", "0")) >= 1 and bool(state.get("e")), f"nothing learnt was written: {state}")
    leaked = leaks(contents, [TOKEN])
    expect(not leaked, f"the token or its sha256 in the store: {leaked[:3]}")
    learnt = ", ".join(f"{name}={state[name]}" for name in ("th", "r", "ph", "pa") if state.get(name))
    kinds = ", ".join(key.rsplit(":", 1)[-1] for key in sorted(contents))
    texts = sum(1 + len(values) for values in contents.values())
    return (f"db {STORE_DB}: {len(contents)} keys ({kinds}) of one account, version {state['v']}, {learnt}; none in "
            f"db 0; no token or sha256 piece in {texts} keys and values")  # fmt: skip


def scope_is_store(metrics: dict[str, list[Any]], workers: tuple[str, ...]) -> str:
    """Every limiter gauge from the workers and from the triggerer says ``scope=store``; both sent some."""
    found: dict[str, dict[str, int]] = {}
    for name in (*workers, "triggerer"):
        scopes: dict[str, int] = {}
        for gauge in GAUGES:
            for metric in named(metrics.get(name, []), f"analytics_platform.{gauge}"):
                scope = metric.tags.get("scope", "(none)")
                scopes[scope] = scopes.get(scope, 0) + 1
        found[name] = scopes
    detail = "; ".join(f"{name} {scopes or '-'}" for name, scopes in found.items())
    task_side = sum(sum(found[name].values()) for name in workers)
    expect(all(set(scopes) <= {"store"} for scopes in found.values()), f"a scope other than store: {detail}")
    expect(task_side > 0 and sum(found["triggerer"].values()) > 0, f"no limiter gauge from one side: {detail}")
    return f"{', '.join(GAUGES)} by scope: {detail}"


def held_around_429s(deployment: Deployment, paths: dict[str, str]) -> list[Held]:
    """For each injected 429, what the other process sent around it (the sandbox's request log)."""
    entries = deployment.cluster.sandbox("GET", "/_sandbox/requests")["data"]  # every /v1 request
    log = sorted((_epoch(entry["received_at"]), entry["path"], int(entry["status"])) for entry in entries)
    whose = {paths[WORKER_WAIT]: "worker", paths[DEFERRED_WAIT]: "triggerer"}
    found = []
    for at, path, status in log:
        if status != 429 or path not in whose:
            continue
        others = [(when, other) for when, other, _ in log if other != path]
        start, end = at + HOLD_FROM, at + RETRY_AFTER - EARLY
        during = tuple(other for when, other in others if start < when < end)
        mine = [when for when, other in others if other in whose and whose[other] != whose[path]]
        before = [when for when in mine if at - ACTIVE_BEFORE <= when < at]
        after = [when for when in mine if end <= when <= at + ACTIVE_AFTER]
        found.append(Held(whose[path], at, at - before[-1] if before else None,
                          after[0] - at if after else None, during))  # fmt: skip
    return found


def fleet_paused(deployment: Deployment, paths: dict[str, str]) -> str:
    """Each 429 held every other request of the token until its Retry-After ended; the other process was polling
    around at least one of them, so it was held, not idle."""
    held = held_around_429s(deployment, paths)
    expect(bool(held), "no injected 429 in the sandbox's request log")
    leaked = [h for h in held if h.during]
    expect(not leaked, "requests sent while a 429's pause held the token: " + _describe(leaked))
    expect(any(h.active for h in held), "the other process sent nothing around any 429: " + _describe(held))
    return _describe(held)


def _describe(held: list[Held]) -> str:
    def seconds(value: float | None) -> str:
        return "-" if value is None else f"{value:.2f} s"

    lines = []
    for h in held:
        at = datetime.fromtimestamp(h.at, UTC).strftime("%H:%M:%S.%f")[:-3]
        paths = f" ({', '.join(sorted(set(h.during)))})" if h.during else ""
        lines.append(f"429 to the {h.refused} at {at}: the other process's last request {seconds(h.before)} before, "
                     f"first {seconds(h.after)} after; {len(h.during)} requests in [+{HOLD_FROM:g}, "
                     f"+{RETRY_AFTER - EARLY:g}] s{paths}")  # fmt: skip
    return "; ".join(lines)


def _epoch(value: str) -> float:
    return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()


def store_checks(deployment: Deployment, checks: Checks, listeners: Listeners, paths: dict[str, str]) -> None:
    """The store's three checks after the metrics' (run.py); skipped, with the fleet-pause figures, without one."""
    cluster = deployment.cluster
    names = (
        f"rate limit store: the account's state in Redis db {STORE_DB}, no token or sha256 in its keys",
        "rate limit store: limiter gauges from the workers and the triggerer carry scope=store",
        "rate limit store: a 429's pause in one process holds the other's requests (request log)",
    )
    bodies: tuple[Callable[[], str], ...] = (
        lambda: store_holds_the_state(cluster),
        lambda: scope_is_store(listeners.read(), listeners.workers),
        lambda: fleet_paused(deployment, paths),
    )
    if cluster.rate_limit_store:
        for name, body in zip(names, bodies, strict=True):
            checks.check(name, body)
        return
    reason = f"no rate limit store ({cluster.executor} executor: no Redis)"
    try:  # what the fleet-pause check would read here: the other process is not held
        measured = _describe(held_around_429s(deployment, paths)) if paths else "no 429s injected"
    except Exception as exc:  # only a figure for the reason: the throttled check reports the failure itself
        measured = f"not measured: {type(exc).__name__}: {exc}"
    for name in names[:2]:
        checks.skip(name, reason)
    checks.skip(names[2], f"{reason}; without it: {measured}")


__all__ = ["Held", "fleet_paused", "held_around_429s", "leaks", "scope_is_store", "store_checks", "store_contents",
           "store_holds_the_state"]  # fmt: skip
