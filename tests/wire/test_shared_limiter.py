"""One limiter for every process on a token, through a real ``redis-server`` (wire/_shared_limiter.py).

Other processes are real ones (a child interpreter with a client of its own) where the claim is about processes;
the queue's order is checked on the store's script itself, with two limiters that share nothing but the store.
"""

from __future__ import annotations

import asyncio
import hashlib
import itertools
import json
import logging
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Generator, Iterator
from datetime import datetime
from typing import Any

import pytest

from airflow_provider_analytics.sandbox.config import LIMITED_TOKEN
from airflow_provider_analytics.sandbox.faults import Fault
from airflow_provider_analytics.sandbox.server import SandboxServer
from airflow_provider_analytics.wire import _endpoints as endpoints
from airflow_provider_analytics.wire._learning import RECOVER_SECONDS
from airflow_provider_analytics.wire._shared_limiter import SharedLimiter, SharedTurn
from airflow_provider_analytics.wire._steps import Sleep, StoreCall
from airflow_provider_analytics.wire._store_link import STORE_RECHECK_SECONDS, store_key
from airflow_provider_analytics.wire._throttle import RateLimiter
from airflow_provider_analytics.wire.client import AnalyticsClient, AsyncAnalyticsClient
from airflow_provider_analytics.wire.config import RateLimitStore
from tests.support.fixtures import make_config
from tests.support.redis_server import RedisServer


@pytest.fixture
def redis_server() -> Iterator[RedisServer]:
    with RedisServer() as server:
        yield server


def store_of(server: RedisServer) -> RateLimitStore:
    return RateLimitStore(host="127.0.0.1", port=server.port, connection_id="rate_limits")


def received(sandbox: SandboxServer) -> list[tuple[datetime, int, str]]:
    return [
        (datetime.fromisoformat(r.received_at.replace("Z", "+00:00")), r.status, r.path) for r in sandbox.state.requests
    ]


def other_process(sandbox: SandboxServer, server: RedisServer, calls: int) -> dict[str, Any]:
    """A child interpreter with its own client (its own limiters) on the same token and store: what it saw."""
    program = textwrap.dedent(
        f"""
        import json, time
        from airflow_provider_analytics.wire import _endpoints as endpoints
        from airflow_provider_analytics.wire.client import AnalyticsClient
        from airflow_provider_analytics.wire.config import ClientConfig, RateLimitStore
        store = RateLimitStore(host="127.0.0.1", port={server.port}, connection_id="rate_limits")
        config = ClientConfig(base_url={sandbox.base_url!r}, token={sandbox.token!r}, rate_limit_store=store)
        with AnalyticsClient(config) as client:
            started = time.time()
            for _ in range({calls}):
                client.call(endpoints.list_data_sources())
            shared = client.shared_limiter
            print(json.dumps({{"seconds": time.time() - started, "throttled": shared.learned.throttled}}))
        """
    )
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=60, check=True)
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def test_a_pause_one_process_was_told_holds_the_requests_of_every_process(
    sandbox: SandboxServer, redis_server: RedisServer
) -> None:
    """A 429 with Retry-After: 3 to this process holds another process's requests on the token until it has passed:
    the other process never saw a refusal, it learnt the pause from the store."""
    sandbox.state.inject(Fault.status(429, path="/v1/charts$", retry_after=3))
    config = make_config(sandbox, rate_limit_store=store_of(redis_server))
    with AnalyticsClient(config) as client:
        outcome: list[object] = []
        refused = threading.Thread(target=lambda: outcome.append(client.call(endpoints.list_charts())))
        refused.start()  # it waits out its own 429
        deadline = time.monotonic() + 20
        while not any(status == 429 for _, status, _ in received(sandbox)):
            assert time.monotonic() < deadline, f"no 429 reached this process: {outcome}"
            assert refused.is_alive(), f"no 429 reached this process: {outcome}"
            time.sleep(0.01)
        seen = other_process(sandbox, redis_server, calls=2)
        refused.join()
    assert outcome, "the refused call succeeded once the pause had passed"
    log = received(sandbox)
    refused_at = next(at for at, status, _ in log if status == 429)
    theirs = [(at - refused_at).total_seconds() for at, status, path in log if path == "/v1/data-sources"]
    assert len(theirs) == 2
    assert all(status != 429 for _, status, _ in log[1:])
    assert min(theirs) >= 2.9, f"the other process sent {min(theirs):.2f} s after the 429, inside the pause"
    assert seen["throttled"], "the other process paces with the fleet"


def drive(steps: Generator[Any, Any, Any]) -> Any:
    """Carry out a limiter's steps as a blocking client does (store round trips, real sleeps)."""
    reply: Any = None
    while True:
        try:
            step = steps.send(reply)
        except StopIteration as done:
            return done.value
        if isinstance(step, StoreCall):
            reply = step.blocking(step.timeout)
        elif isinstance(step, Sleep):
            time.sleep(step.seconds)
            reply = None
        else:  # pragma: no cover - the limiter yields nothing else
            raise AssertionError(step)


def limiter_pair(server: RedisServer) -> tuple[SharedLimiter, SharedLimiter]:
    """Two limiters that share nothing but the store: two processes' views of one account."""
    key = store_key("https://api.example.com", "token-a")
    store = store_of(server)
    return SharedLimiter(store, key, RateLimiter("a")), SharedLimiter(store, key, RateLimiter("b"))


def test_turns_of_two_processes_go_in_the_order_they_were_taken_at_the_fleets_pace(redis_server: RedisServer) -> None:
    first, second = limiter_pair(redis_server)
    # A refusal seen by the first process (the fleet sent 10/s just before) starts the fleet's pacing.
    turn = drive(first.wait_for_turn(None, lambda _at, delay, _pause: delay))
    drive(first.refused(0.2, turn, time.monotonic(), 120.0, _retry_after()))
    assert drive(second.wait_for_turn(None, lambda _at, delay, _pause: delay)) is not None
    assert second.learned.throttled
    assert second.learned.rate == first.learned.rate

    order: list[tuple[str, int, float]] = []
    limiters = [first, second] * 4
    waits = [limiter.wait_for_turn(None, lambda _at, delay, _pause: delay) for limiter in limiters]
    pending: list[tuple[int, Any, Any]] = [(index, wait, None) for index, wait in enumerate(waits)]
    # Interleave them as two processes' loops would: each takes its turn (its first step), in this order.
    taken: list[tuple[int, Any, Any]] = []
    for index, wait, _ in pending:
        step = wait.send(None)
        taken.append((index, wait, step.blocking(step.timeout)))
    for index, wait, reply in taken:
        try:
            step = wait.send(reply)
            while True:
                if isinstance(step, StoreCall):
                    step = wait.send(step.blocking(step.timeout))
                else:
                    time.sleep(step.seconds)
                    step = wait.send(None)
        except StopIteration as done:
            granted: SharedTurn = done.value
            order.append(("ab"[index % 2], granted.number, granted.sent_at))
    numbers = [number for _, number, _ in order]
    assert numbers == sorted(numbers), "one queue: turns go in the order they were taken"
    assert len(set(numbers)) == 8, "each turn once"
    sent = [at for _, _, at in order]
    gaps = [later - earlier for earlier, later in itertools.pairwise(sent)]
    assert min(gaps) >= 0.9 / first.learned.rate, f"turns went faster than the fleet's pace: {gaps}"


def _retry_after() -> Any:
    from airflow_provider_analytics.wire._observer import PauseSource

    return PauseSource.RETRY_AFTER


@pytest.mark.analytics_sandbox(rate_limit=5, rate_limit_headers=False)
def test_keys_name_no_token_and_two_tokens_keep_their_limits_apart(
    sandbox: SandboxServer, redis_server: RedisServer
) -> None:
    store = store_of(redis_server)
    crowded = make_config(sandbox, rate_limit_store=store)
    with AnalyticsClient(crowded) as client:
        for _ in range(12):  # over the token's 5/s: refused, then paced through the store
            client.call(endpoints.list_charts())
        assert client.shared_limiter is not None
        assert client.shared_limiter.learned.throttled
    other = make_config(sandbox, token=LIMITED_TOKEN, rate_limit_store=store)

    async def other_token() -> bool:  # a trigger's client: the asyncio transport of the store
        async with AsyncAnalyticsClient(other) as client:
            await client.call(endpoints.list_charts())
            assert client.shared_limiter is not None
            return client.shared_limiter.learned.throttled

    assert not asyncio.run(other_token()), "the other token paces with the first one's limit"
    keys = redis_server.keys()
    # per token its state and its recent sends; the refused one's refusals by the second they were sent in too
    assert len(keys) == 5, keys
    for token in (sandbox.token, LIMITED_TOKEN):
        for form in (token, hashlib.sha256(token.encode()).hexdigest()):
            assert not any(form in key for key in keys)


def _paced_fleet(redis_server: RedisServer) -> tuple[SharedLimiter, SharedLimiter]:
    """Two processes' limiters of one account, the fleet paced after a refusal the first one was told."""
    first, second = limiter_pair(redis_server)
    turn = drive(first.wait_for_turn(None, lambda _at, delay, _pause: delay))
    drive(first.refused(0.05, turn, time.monotonic(), 120.0, _retry_after()))
    assert drive(second.wait_for_turn(None, lambda _at, delay, _pause: delay)) is not None
    assert second.learned.throttled
    return first, second


def _age_the_episode(redis_server: RedisServer, limiter: SharedLimiter, seconds: float) -> None:
    """The fleet's episode as it stands ``seconds`` later: every time the store keeps moved back that much."""
    with redis_server.client() as raw:
        fields = {k.decode(): v.decode() for k, v in raw.hgetall(limiter.keys[0]).items()}
        raw.hset(limiter.keys[0], mapping={k: f"{float(fields[k]) - seconds:.6f}" for k in ("ld", "ea", "pu", "si")})


def test_the_fleet_stops_pacing_after_a_quiet_spell_and_each_end_is_said_once(
    redis_server: RedisServer, caplog: pytest.LogCaptureFixture
) -> None:
    """A fleet that paced once must not pace for ever (every task process would log it); the WARNING that it paces
    and the INFO that it stopped are the fleet's, said by one process each, not by each process."""
    with caplog.at_level(logging.INFO, logger="airflow_provider_analytics.wire"):
        first, second = _paced_fleet(redis_server)
        _age_the_episode(redis_server, first, RECOVER_SECONDS + 5)
        assert drive(second.wait_for_turn(None, lambda _at, delay, _pause: delay)) is not None  # reads the state
        unpaced = drive(second.wait_for_turn(None, lambda _at, delay, _pause: delay))
        assert unpaced is not None
        assert unpaced.number == -1, "the fleet sends at once again"
        assert not second.learned.throttled
        again = drive(first.wait_for_turn(None, lambda _at, delay, _pause: delay))
        assert again is not None
        assert again.number == -1
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING and "Rate limited" in r.getMessage()]
    ended = [r for r in caplog.records if "No longer rate limited" in r.getMessage()]
    assert len(warnings) == 1
    assert "every process on this token now paces" in warnings[0].getMessage()
    assert len(ended) == 1
    assert ended[0].levelno == logging.INFO


def test_a_turn_that_waited_since_the_state_was_read_keeps_the_fleet_paced(redis_server: RedisServer) -> None:
    first, second = _paced_fleet(redis_server)
    _age_the_episode(redis_server, first, RECOVER_SECONDS + 5)
    assert drive(second.wait_for_turn(None, lambda _at, delay, _pause: delay)) is not None  # reads the old state
    with redis_server.client() as raw:  # meanwhile another process's turn waited: the store wrote when
        raw.hset(first.keys[0], "ld", f"{float(raw.time()[0]):.6f}")
    assert drive(second.wait_for_turn(None, lambda _at, delay, _pause: delay)).number >= 0
    assert second.learned.throttled


def test_turns_a_process_took_and_never_asked_for_again_give_their_places_up(redis_server: RedisServer) -> None:
    """A process killed (or a triggerer stopped) with its waits queued: their turns must not each cost the fleet a
    turn of its pace once they are overdue."""
    first, second = _paced_fleet(redis_server)
    rate = first.learned.rate
    assert 1.5 / rate < STORE_RECHECK_SECONDS, "a pace at which six turns ahead show in the wait the store tells"
    for _ in range(5):  # five waits of a process that dies after taking their turns
        wait = first.wait_for_turn(None, lambda _at, delay, _pause: delay)
        step = wait.send(None)
        assert isinstance(step, StoreCall)
        assert isinstance(wait.send(step.blocking(step.timeout)), Sleep), "told to wait its turn"
        wait.close()
    ours = second.wait_for_turn(None, lambda _at, delay, _pause: delay)
    step = ours.send(None)
    assert isinstance(step, StoreCall)
    slept = ours.send(step.blocking(step.timeout))
    assert isinstance(slept, Sleep)
    assert slept.seconds >= min(STORE_RECHECK_SECONDS, 4.5 / rate), "behind five live turns, it waits for them"
    ours.close()
    with redis_server.client() as raw:  # as it stands when the dead turns are overdue by more than the grace
        held = raw.zrange(first.keys[3], 0, -1, withscores=True)
        assert len(held) == 6
        raw.zadd(first.keys[3], {member: score - 60 for member, score in held})
    late = SharedLimiter(second.store, store_key("https://api.example.com", "token-a"), RateLimiter("c"))
    wait = late.wait_for_turn(None, lambda _at, delay, _pause: delay)
    step = wait.send(None)
    assert isinstance(step, StoreCall)
    try:
        after = wait.send(step.blocking(step.timeout))
    except StopIteration:  # its turn came at once
        after = None
    if after is not None:
        assert isinstance(after, Sleep)
        assert after.seconds <= 1.5 / rate, "the six turns nobody asks for any more take no place before it"
        wait.close()
    with redis_server.client() as raw:
        assert raw.zcard(first.keys[3]) <= 1, "no turn held by a process that stopped asking"
        assert raw.zcard(first.keys[2]) == 6, "each counted as given up"


@pytest.mark.analytics_sandbox(rate_limit=20, rate_limit_headers=False)
def test_a_burst_answered_over_seconds_starts_the_fleets_pace_near_the_rate_it_was_sent_at(
    sandbox: SandboxServer, redis_server: RedisServer
) -> None:
    """120 polls let go at once against 20 a second are answered over seconds (the client's connections, the event
    loop): the fleet's sends of the last second before the first refusal may be none. Its pace starts from the
    sends of the last seconds, not from nothing (which paced 400 polls at the least pace for minutes)."""
    config = make_config(sandbox, rate_limit_store=store_of(redis_server))

    async def burst() -> SharedLimiter:
        async with AsyncAnalyticsClient(config) as client:
            await asyncio.gather(*(client.call(endpoints.list_charts()) for _ in range(120)))
            assert client.shared_limiter is not None
            return client.shared_limiter

    shared = asyncio.run(burst())
    assert shared.learned.throttled
    assert shared.learned.ceiling >= 5, shared.learned  # a quarter of the limit at least; before: 0


def test_a_refusal_teaches_what_the_platform_accepted_of_the_fleets_busiest_second(redis_server: RedisServer) -> None:
    """30 sends of two processes in one second, 10 of them refused: the platform accepted 20, and a later refusal
    while the pace binds puts the fleet's ceiling there, measured (a cut by a guess landed anywhere from 82 to 97 % of
    the limit, and a ceiling from the sends alone was the 30 the fleet sent)."""
    first, second = limiter_pair(redis_server)
    while time.time() % 1 > 0.3:  # the thirty sends in one second of the store's clock (it is this host's)
        time.sleep(0.05)
    sent = [drive(limiter.wait_for_turn(None, lambda _at, delay, _pause: delay)) for limiter in (first, second) * 15]
    assert all(turn is not None and turn.number == -1 for turn in sent), "not paced yet: each went at once"
    assert len({int(turn.sent_at) for turn in sent}) == 1, "the sends spread over two seconds: a slow machine"
    for turn in sent[:10]:  # the first refusal starts the pacing; the nine after it are its echoes
        drive(first.refused(0.05, turn, time.monotonic(), 120.0, _retry_after()))
    assert first.learned.throttled
    assert first.learned.ceiling == pytest.approx(29)  # at the first, one refusal was known: 29 of 30 accepted
    later = drive(second.wait_for_turn(None, lambda _at, delay, _pause: delay))  # after the pause, at the pace
    assert later is not None
    assert later.number >= 0
    drive(second.refused(0.05, later, time.monotonic(), 120.0, _retry_after()))
    assert second.learned.ceiling == pytest.approx(20), second.learned


def test_a_damaged_refusal_count_still_pauses_the_fleet(redis_server: RedisServer) -> None:
    """A count of the refused request's second that is no whole number (damaged, or another program's) starts again:
    before, the store's increment failed the call, the store was left as away, and no pause reached the fleet."""
    first, second = limiter_pair(redis_server)
    turn = drive(first.wait_for_turn(None, lambda _at, delay, _pause: delay))
    with redis_server.client() as raw:
        raw.hset(first.keys[4], str(int(turn.sent_at)), "1e308")
    drive(first.refused(2.0, turn, time.monotonic(), 120.0, _retry_after()))
    assert first.usable(time.monotonic())
    assert first.learned.throttled
    asked = time.monotonic()
    assert drive(second.wait_for_turn(None, lambda _at, delay, _pause: delay)) is not None
    assert time.monotonic() - asked > 1.5, "the other process was not held by the 2 s pause"


def test_a_store_that_lost_its_sends_learns_a_ceiling_from_what_this_process_saw_accepted(
    redis_server: RedisServer,
) -> None:
    """A flushed send list answers no rate at all: the first refusal must not set the fleet's ceiling at 0 (the least
    pace for minutes) while this process saw 30 answers a second accepted."""
    first, _ = limiter_pair(redis_server)
    turn = drive(first.wait_for_turn(None, lambda _at, delay, _pause: delay))
    now = time.monotonic()
    for _ in range(30):
        first.local.answered(200, {}, now, 120.0)
    with redis_server.client() as raw:
        raw.delete(first.keys[1])
    drive(first.refused(1.0, turn, time.monotonic(), 120.0, _retry_after()))
    assert first.learned.ceiling >= 30, first.learned


def test_a_refusal_after_a_long_pause_does_not_set_the_ceiling_at_the_few_sends_since(
    redis_server: RedisServer,
) -> None:
    """Paced at 97 a second, then five sends after a pause of more than ten seconds, the fifth refused: a second of
    five sends says nothing of the limit (before, it set the fleet's ceiling at 4, and the pace stayed near it for
    minutes)."""
    first, second = _paced_fleet(redis_server)
    with redis_server.client() as raw:
        seconds, micros = raw.time()
        store_now = seconds + micros / 1e6
        fields = {"r": "97", "qr": "97", "c": "100", "pf": f"{store_now - 60:.6f}", "ld": f"{store_now:.6f}"}
        raw.hset(first.keys[0], mapping=fields)
    turns = [drive(second.wait_for_turn(None, lambda _at, delay, _pause: delay)) for _ in range(5)]
    assert all(turn is not None and turn.number >= 0 for turn in turns)
    drive(second.refused(1.0, turns[-1], time.monotonic(), 120.0, _retry_after()))
    assert second.learned.ceiling > 80, second.learned
