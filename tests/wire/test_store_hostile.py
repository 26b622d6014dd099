"""A store that misbehaves in the ways an outside pass found, over a real ``redis-server``: none of it escapes as an
untyped error, holds a call past its deadline, or costs the fleet its pace."""

from __future__ import annotations

import asyncio
import logging
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from airflow_provider_analytics.sandbox.server import SandboxServer
from airflow_provider_analytics.wire import _endpoints as endpoints
from airflow_provider_analytics.wire._deadline import call_deadline
from airflow_provider_analytics.wire._pace import LocalQueue
from airflow_provider_analytics.wire._shared_limiter import SharedLimiter
from airflow_provider_analytics.wire._steps import Sleep, StoreCall
from airflow_provider_analytics.wire._store_link import store_key
from airflow_provider_analytics.wire._throttle import RateLimiter
from airflow_provider_analytics.wire.client import AnalyticsClient, AsyncAnalyticsClient
from airflow_provider_analytics.wire.config import RateLimitStore
from airflow_provider_analytics.wire.errors import AnalyticsTimeoutError, RateLimitedError
from tests.support.fixtures import make_config
from tests.support.redis_server import RedisServer

WIRE = "airflow_provider_analytics.wire"


@pytest.fixture
def redis_server() -> Iterator[RedisServer]:
    with RedisServer() as server:
        yield server


def store_of(server: RedisServer) -> RateLimitStore:
    return RateLimitStore(host="127.0.0.1", port=server.port, connection_id="rate_limits")


def test_a_store_that_lost_its_script_and_refuses_writes_is_left_on_both_transports(
    sandbox: SandboxServer, redis_server: RedisServer, caplog: pytest.LogCaptureFixture
) -> None:
    """A failover to a replica that has no script loaded and refuses writes: the script is loaded again, its write
    fails, and the call paces on its own instead of failing with redis-py's error."""
    config = make_config(sandbox, rate_limit_store=store_of(redis_server))
    with redis_server.client() as raw:
        raw.config_set("min-replicas-to-write", 1)  # every write: NOREPLICAS
        with caplog.at_level(logging.WARNING, logger=WIRE), AnalyticsClient(config) as client:
            client.call(endpoints.list_charts())

        async def trigger() -> None:
            async with AsyncAnalyticsClient(config) as client:
                await client.call(endpoints.list_charts())

        raw.script_flush()
        asyncio.run(trigger())
    assert any("did not answer" in record.getMessage() for record in caplog.records)


def test_a_slow_store_leaves_a_call_near_its_deadline_half_of_what_it_has(
    sandbox: SandboxServer, redis_server: RedisServer
) -> None:
    config = make_config(sandbox, rate_limit_store=store_of(redis_server))

    async def trigger() -> None:
        async with AsyncAnalyticsClient(config) as client:
            await client.call(endpoints.list_charts())
            redis_server.freeze()
            try:
                with call_deadline(2.5):  # more than twice a round trip's budget: the store is asked, and is slow
                    await client.call(endpoints.list_charts())
            finally:
                redis_server.thaw()

    asyncio.run(trigger())  # sent after the store's second, not "not sent: the time allowed had run out"


def test_a_turn_given_up_takes_no_place_in_the_schedule() -> None:
    queue = LocalQueue()
    queue.apply(("restart", 100.0, 10.0))
    turns = [queue.take(100.0, 0.0) for _ in range(10)]
    before = queue.due(turns[-1].number)
    for turn in turns[2:7]:  # five requests whose deadlines passed while they waited
        queue.forget(turn)
    assert queue.due(turns[-1].number) == pytest.approx(before - 5 / 10.0)
    assert queue.waiting == 5
    queue.sent(turns[0], 100.0)
    queue.sent(turns[1], 100.1)
    queue.sent(turns[7], 100.2)
    assert queue.waiting == 2


@pytest.mark.analytics_sandbox(rate_limit=5)
def test_requests_that_give_up_do_not_cost_the_fleet_its_pace(
    sandbox: SandboxServer, redis_server: RedisServer
) -> None:
    """Thirty threads whose calls have 2 s each against a token allowed 5 a second: most calls give up in the queue,
    the turns they leave are taken out of the schedule, and none gives up before its deadline is near (each behind
    others about to give up, none would go): the others still go near the pace."""
    config = make_config(sandbox, rate_limit_store=store_of(redis_server))
    answered: list[float] = []
    gave_up: list[float] = []
    start = time.monotonic()
    stop = start + 20

    def worker(client: AnalyticsClient) -> None:
        while time.monotonic() < stop:
            try:
                with call_deadline(2.0):
                    client.call(endpoints.list_charts())
                answered.append(time.monotonic())
            except (AnalyticsTimeoutError, RateLimitedError):  # its turn, or a pause, would come after 2 s
                gave_up.append(time.monotonic())

    with AnalyticsClient(config) as client:
        threads = [threading.Thread(target=worker, args=(client,)) for _ in range(30)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    late = [at for at in answered if at > start + 8]  # after the limit is learned, 12 s at 5/s is 60 answers
    assert gave_up, "the test needs calls that give up"
    # Turns given up at once, or kept in the schedule, let a handful through in 12 s (0.2/s was measured).
    assert len(late) >= 30, f"{len(late)} answers in the last 12 s at 5/s, {len(gave_up)} calls gave up"


def drive(steps: Any) -> Any:
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


def test_a_damaged_state_never_raises_and_huge_or_unknown_fields_are_not_read_back(redis_server: RedisServer) -> None:
    limiter = SharedLimiter(store_of(redis_server), store_key("https://api.example.com", "t"), RateLimiter("x"))
    assert drive(limiter.wait_for_turn(None, lambda _at, delay, _pause: delay)) is not None
    with redis_server.client() as raw:
        state = limiter.keys[0]
        raw.hset(
            state, mapping={"nt": "1e999", "pf": "-1e300", "th": "1", "hc": "9" * 100_000, "junk": "x" * 1_000_000}
        )
        turn = drive(limiter.wait_for_turn(None, lambda _at, delay, _pause: delay))
        assert turn is not None
        assert limiter.usable(time.monotonic())
        assert limiter.learned.header_cap is None  # a value too long to be one is not read
        raw.hset(state, "ct", str(float(raw.time()[0]) + 600))  # the store's clock stepped back ten minutes
        epoch = limiter.epoch
        assert drive(limiter.wait_for_turn(None, lambda _at, delay, _pause: delay)) is not None
        assert limiter.epoch != epoch, "a state from a clock ahead of the store's starts afresh"


class HostileStore:
    """A TCP server at the store's address that answers PING, every command but the script's with +OK, and the script's
    with ``reply`` (bytes) or, when ``reply`` is ``None``, a byte now and then for as long as it runs."""

    def __init__(self, reply: bytes | None) -> None:
        self.reply = reply
        self.server = socket.create_server(("127.0.0.1", 0))
        self.port = self.server.getsockname()[1]
        self.stopped = threading.Event()
        self.threads = [threading.Thread(target=self._accept)]
        self.threads[0].start()

    def _accept(self) -> None:
        self.server.settimeout(0.1)
        while not self.stopped.is_set():
            try:
                peer, _ = self.server.accept()
            except TimeoutError:
                continue
            thread = threading.Thread(target=self._serve, args=(peer,))
            self.threads.append(thread)
            thread.start()

    def _serve(self, peer: socket.socket) -> None:
        peer.settimeout(0.1)
        with peer:
            while not self.stopped.is_set():
                try:
                    data = peer.recv(65536)
                except TimeoutError:
                    continue
                except OSError:
                    return
                if not data:
                    return
                if b"PING" in data.upper():
                    peer.sendall(b"+PONG\r\n")
                elif b"EVALSHA" not in data.upper():
                    peer.sendall(b"+OK\r\n" * max(1, data.count(b"*")))
                elif self.reply is not None:
                    peer.sendall(self.reply)
                else:
                    for byte in b"*3\r\n$2\r\ngo\r\n" * 1000:
                        if self.stopped.wait(0.2):
                            return
                        try:
                            peer.sendall(bytes([byte]))
                        except OSError:
                            return

    def close(self) -> None:
        self.stopped.set()
        for thread in self.threads:
            thread.join()
        self.server.close()


@pytest.mark.parametrize(
    "reply", [None, b"*1\r\n" * 100_000 + b"+x\r\n"], ids=["a byte every 0.2 s", "a reply nested 100,000 deep"]
)
def test_a_store_that_trickles_or_nests_its_reply_is_left_on_both_transports(
    sandbox: SandboxServer, reply: bytes | None
) -> None:
    """A store (or a proxy in front of it) that trickles its reply held a blocking call for as long as it liked: a
    socket's timeout bounds each read, not the reply. A reply nested without end raised RecursionError in the
    asyncio client. Either way the call goes, on the process's own limiter."""
    store = HostileStore(reply)
    config = make_config(sandbox, rate_limit_store=RateLimitStore(host="127.0.0.1", port=store.port))
    outcome: dict[str, object] = {}

    def blocking() -> None:
        with AnalyticsClient(config) as client:
            client.call(endpoints.list_charts())
            assert client.shared_limiter is not None
            outcome["blocking left the store"] = not client.shared_limiter.usable(time.monotonic())

    async def trigger() -> None:
        async with AsyncAnalyticsClient(config) as client:
            await client.call(endpoints.list_charts())
            assert client.shared_limiter is not None
            outcome["asyncio left the store"] = not client.shared_limiter.usable(time.monotonic())

    try:
        thread = threading.Thread(target=blocking)
        thread.start()
        thread.join(timeout=30)  # a liveness bound: without the watchdog the trickle holds it for 40 minutes
        alive = thread.is_alive()
        asyncio.run(trigger())
    finally:
        store.close()
    thread.join()
    assert not alive, "the blocking call was held by the store"
    assert outcome == {"blocking left the store": True, "asyncio left the store": True}


def test_keys_of_another_type_are_replaced_not_left_to_fail_every_call_until_they_expire(
    redis_server: RedisServer,
) -> None:
    """Something else wrote the limiter's keys with other types (a string, a list where a hash goes...): every command
    on them would fail with WRONGTYPE, and the fleet pace alone, until they expired. The script replaces them."""
    limiter = SharedLimiter(store_of(redis_server), store_key("https://api.example.com", "t"), RateLimiter("x"))
    assert len(limiter.keys) == 5
    with redis_server.client() as raw:
        for key in limiter.keys:
            raw.delete(key)
            raw.rpush(key, "1")  # a list where a hash or a sorted set goes
        raw.delete(limiter.keys[1])
        raw.set(limiter.keys[1], "not a list", ex=3600)  # a string where the list of sends goes
        turn = drive(limiter.wait_for_turn(None, lambda _at, delay, _pause: delay))
        assert turn is not None
        assert limiter.usable(time.monotonic()), "the store still serves the fleet"
        assert raw.type(limiter.keys[0]) == b"hash"
        assert all(raw.type(key) in (b"none", b"hash", b"list", b"zset") for key in limiter.keys)
        assert raw.type(limiter.keys[1]) in (b"none", b"list")


class GaveUp(Exception):
    """A call gave its turn up: its wait was longer than it had."""


def give_up_past_a_second(_at: float, delay: float, _pause: object) -> float:
    """A call whose deadline is a second away: a longer wait gives it up."""
    if delay > 1.0:
        raise GaveUp(f"would wait {delay:.0f} s")
    return delay


@pytest.mark.parametrize(
    ("field", "value"),
    [("e", "E" * 60), ("v", "9" * 30), ("nt", "0.5"), ("nt", "99999999999999"), ("pu", "1e16"), ("w", "0.001")],
    ids=["long incarnation", "long version", "half a turn", "a count Lua prints as 1e+14", "pause of eons", "1 ms"],
)
def test_a_neighbours_value_no_process_could_match_or_live_with_starts_afresh_or_is_bounded(
    redis_server: RedisServer, field: str, value: str
) -> None:
    """A neighbour on the same Redis wrote one field of a throttled fleet's state. Before: an incarnation or a version
    longer than a process keeps made every turn void and every update stale, for as long as the key was used; a count
    Lua prints as '1e+14' made every process take the store for away; a pause past 1e15 held every request 120 s
    from now, for ever (now: 120 s from when it was read, the longest a pause is held, and then it ends); a window of
    1 ms paced at 97,000 a second."""
    limiter = SharedLimiter(store_of(redis_server), store_key("https://api.example.com", "t"), RateLimiter("x"))
    assert drive(limiter.wait_for_turn(None, lambda _at, delay, _pause: delay)) is not None
    with redis_server.client() as raw:
        state = limiter.keys[0]
        raw.hset(state, mapping={"th": "1", "r": "50", "qr": "50", "hc": "50", "lim": "100"})
        raw.hset(state, field, value)
        started = time.monotonic()
        if field == "pu":
            for _ in range(2):  # the pause held is bounded, and does not move on with each look
                with pytest.raises(GaveUp):
                    drive(limiter.wait_for_turn(None, give_up_past_a_second))
                time.sleep(1.1)
            assert float(raw.hget(state, "pu") or 0) < float(raw.time()[0]) + 119
        else:
            for _ in range(5):
                turn = drive(limiter.wait_for_turn(None, lambda _at, delay, _pause: delay))
                assert turn is not None
                assert turn.number >= -1
            assert time.monotonic() - started < 5, "five turns at a pace of 50/s"
        assert limiter.usable(time.monotonic()), "the store still serves the fleet"
        kept = {key.decode(): item.decode() for key, item in raw.hgetall(state).items()}
    assert len(kept["e"]) <= 40
    assert len(kept["v"]) <= 20
    assert float(kept["nt"]) == int(float(kept["nt"])) < 1e13
    assert float(kept.get("pu", "0")) <= float(kept["ct"]) + 121
    assert limiter.learned.window is None or limiter.learned.window >= 1.0
    paused_by = limiter.pause_in_force(time.monotonic())
    assert paused_by is None or paused_by.until - time.monotonic() <= 121
