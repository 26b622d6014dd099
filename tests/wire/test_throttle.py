"""The rate limiter of one account (wire/_throttle.py), driven on a clock the test sets: no sockets, no sleeps."""

from __future__ import annotations

import collections
import email.utils
import itertools
import logging
import time
import tracemalloc

import pytest

from airflow_provider_analytics.wire._accounts import limiter_for, reset_rate_limiters
from airflow_provider_analytics.wire._learning import MIN_PAUSE, QUICK_REFUSAL_CUT, RECOVER_SECONDS
from airflow_provider_analytics.wire._pace import HEADER_SHARE, MIN_RATE, PROBE_SECONDS, RESTART_SHARE
from airflow_provider_analytics.wire._rate_headers import RateHeaders, platform_wall
from airflow_provider_analytics.wire._share import CUT, GROWTH, PRESSURE_LEAST, PRESSURE_MOST
from airflow_provider_analytics.wire._throttle import RateLimiter, Turn

T0 = 1000.0


def succeed(limiter: RateLimiter, count: int, start: float, spread: float = 0.5) -> None:
    """``count`` successful answers between ``start`` and ``start + spread``."""
    for i in range(count):
        limiter.answered(200, {}, start + spread * i / count)


def go(limiter: RateLimiter, turn: Turn, now: float) -> float:
    """When the turn's request is sent, waiting as the retry loop does (its clock moves by each sleep)."""
    while (delay := limiter.delay(turn, now)) > 0:
        now += delay
    limiter.sent(turn, now)
    return now


def throttled_at_100_per_second(limiter: RateLimiter) -> float:
    """100 answers in half a second, then a refusal with Retry-After 1: the moment the pause ends."""
    succeed(limiter, 100, T0)
    limiter.refused(1.0, sent_at=T0 + 0.5, now=T0 + 0.5, max_pause=120)
    return T0 + 1.5


def test_an_account_that_was_never_refused_is_not_paced() -> None:
    limiter = RateLimiter("https://api.example.com")
    succeed(limiter, 1000, T0)
    assert limiter.take_turn(T0 + 1) is None
    assert not limiter.throttled


def test_a_refusal_pauses_every_request_then_lets_them_go_one_by_one_in_order(caplog: pytest.LogCaptureFixture) -> None:
    limiter = RateLimiter("https://api.example.com (connection 'analytics_default')")
    resume = throttled_at_100_per_second(limiter)
    turns = [limiter.take_turn(T0 + 0.6 + i * 0.001) for i in range(50)]
    assert all(turn is not None for turn in turns)
    with caplog.at_level(logging.INFO, logger="airflow_provider_analytics.wire"):
        sent = [go(limiter, turn, T0 + 0.7) for turn in turns if turn is not None]
    assert sent[0] == pytest.approx(resume)
    assert sent == sorted(sent), "turns are served in the order they were taken"
    gaps = [b - a for a, b in itertools.pairwise(sent)]
    assert min(gaps) == pytest.approx(1 / (100 * RESTART_SHARE), rel=0.02), "never all at once"
    lines = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(lines) == 1
    assert "at 97.0/s (learned from 429 answers)" in lines[0].getMessage()
    assert "connection 'analytics_default'" in lines[0].getMessage()


def test_refusals_of_requests_already_on_their_way_are_one_episode() -> None:
    limiter = RateLimiter("x")
    throttled_at_100_per_second(limiter)
    rate = limiter.snapshot()["rate"]
    for i in range(20):  # sent before the first refusal arrived
        limiter.refused(1.0, sent_at=T0 + 0.49, now=T0 + 0.5 + i * 0.001, max_pause=120)
    assert limiter.snapshot()["rate"] == rate
    assert limiter.snapshot()["refused"] == 21


def test_a_refusal_soon_after_the_pause_cuts_the_pace_hard_and_a_later_one_gently() -> None:
    limiter = RateLimiter("x")
    resume = throttled_at_100_per_second(limiter)
    limiter.refused(1.0, sent_at=resume + 1, now=resume + 1, max_pause=120)
    quick = limiter.snapshot()["rate"]
    assert quick == pytest.approx(97 * QUICK_REFUSAL_CUT * RESTART_SHARE, rel=0.01)
    later = resume + 20  # before it recovers (RECOVER_SECONDS of quiet)
    for turn in [limiter.take_turn(later) for _ in range(3)]:  # a queue: the pace binds
        assert turn is not None
        go(limiter, turn, later)
    limiter.refused(1.0, sent_at=later + 0.1, now=later + 0.1, max_pause=120)
    assert limiter.snapshot()["rate"] < quick


def test_a_refusal_of_a_second_the_platform_took_nearly_whole_keeps_the_pace_near_what_it_took() -> None:
    """Sends that bunched (a busy loop catching up) are refused though the platform took the pace's worth of their
    second: the ceiling is what it accepted of that second, not the pace cut by a guess (97 -> 80 a second)."""
    clock = [T0]
    limiter = RateLimiter("x", wall_clock=lambda: clock[0])
    resume = throttled_at_100_per_second(limiter)
    second = int(resume) + 1  # a whole second of sends at the pace, then a refusal of its last
    turns = [limiter.take_turn(T0 + 0.6) for _ in range(300)]
    sent = []
    for turn in turns:
        assert turn is not None
        due = resume
        while (delay := limiter.delay(turn, due)) > 0:
            due += delay
        if due >= second + 1:
            break
        clock[0] = due
        limiter.sent(turn, due)
        sent.append(due)
    rate = limiter.snapshot()["rate"]
    per_second = collections.Counter(int(at) for at in sent)
    per_second[second] -= 1  # all but the one refused
    took = max(count for count in per_second.values() if count >= 0.9 * rate)
    clock[0] = second + 1.05
    limiter.refused(1.0, sent_at=second + 0.99, now=second + 1.05, max_pause=120)
    assert limiter.snapshot()["ceiling"] == pytest.approx(min(rate, took), rel=0.001)
    assert limiter.snapshot()["rate"] > rate * QUICK_REFUSAL_CUT * 1.05, "not cut as a guess would"


def test_the_pace_creeps_back_over_the_ceiling_after_the_probe_time() -> None:
    limiter = RateLimiter("x")
    resume = throttled_at_100_per_second(limiter)
    rates = {}
    now = resume
    while now < resume + 2 * PROBE_SECONDS:  # a queue that never empties: three requests every half second
        turns = [limiter.take_turn(now) for _ in range(3)]
        for turn in turns:
            assert turn is not None, "a queue that never empties keeps the account throttled"
            go(limiter, turn, now)
        rates[round(now - resume, 1)] = limiter.snapshot()["rate"]
        now += 0.5
    assert rates[0.5] == pytest.approx(97, rel=0.01)
    assert rates[0.5] < rates[PROBE_SECONDS / 2] < 100
    assert rates[PROBE_SECONDS] == pytest.approx(100, rel=0.01)
    assert rates[2 * PROBE_SECONDS - 0.5] > 110


def test_retry_after_zero_cannot_make_it_spin() -> None:
    wall = WallClock(1_800_000_000.0)
    limiter = RateLimiter("x", wall_clock=wall)
    now = T0
    for _ in range(30):  # a platform that refuses everything with Retry-After: 0
        turn = limiter.take_turn(now)
        now = now if turn is None else go(limiter, turn, now)
        wall.now = 1_800_000_000.0 + now - T0
        limiter.refused(0.0, sent_at=now, now=now, max_pause=120)
        now += 0.001
    # Nothing was ever accepted: the pace starts from the rate the requests were asked at (about one a second
    # here) and never grows past it while refusals go on.
    assert MIN_RATE <= limiter.snapshot()["rate"] < 1.5
    assert now - T0 > 30 * MIN_PAUSE


class WallClock:
    """Epoch seconds the test sets: where in the platform's one-second windows each answer comes."""

    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def test_the_headers_give_the_pace_without_a_refusal() -> None:
    wall = WallClock(1_800_000_000.0)
    limiter = RateLimiter("x", wall_clock=wall)
    reset = 1_800_000_001.0
    for remaining in range(99, 9, -1):  # a one-second window of 100, nearly used up by this process alone
        wall.now += 0.0105  # at 95 a second: under the cap
        limiter.answered(200, _headers(100, remaining, reset), T0)
    assert limiter.throttled
    wall.now = reset + 0.5
    limiter.answered(200, _headers(100, 99, reset + 1), T0 + 0.5)  # the next window: it lasts one second
    turn = limiter.take_turn(T0 + 1)
    assert turn is not None
    limiter.delay(turn, T0 + 1)
    assert limiter.snapshot()["window"] == 1
    assert limiter.snapshot()["share"] == 1.0
    assert limiter.snapshot()["rate"] == pytest.approx(HEADER_SHARE * 100, rel=0.01)
    assert limiter.snapshot()["refused"] == 0


def test_with_the_headers_a_process_paces_at_its_part_of_what_the_window_used() -> None:
    """Other processes on the token show in Remaining: it falls by forty between this process's first and third
    answers. It paces at its part of the window's use (a twentieth), not at the whole limit as if it were alone."""
    wall = WallClock(1_800_000_000.6)
    limiter = RateLimiter("x", wall_clock=wall)
    reset = 1_800_000_001.0
    for remaining in (50, 20, 10):
        limiter.answered(200, _headers(100, remaining, reset), T0)
    assert limiter.throttled
    assert limiter.snapshot()["share"] == pytest.approx(2 / 40)
    wall.now = reset + 0.2  # the window closes: it was used over the cap's pace (90 in its first 60 %): cut
    limiter.answered(200, _headers(100, 99, reset + 1), T0 + 0.5)
    turn = limiter.take_turn(T0 + 1)
    assert turn is not None
    limiter.delay(turn, T0 + 1)
    assert limiter.snapshot()["share"] == pytest.approx(2 / 40 * CUT)
    assert limiter.snapshot()["rate"] == pytest.approx(HEADER_SHARE * 100 * 2 / 40 * CUT, rel=0.01)


def test_a_used_up_window_pauses_until_it_resets() -> None:
    limiter = RateLimiter("x")
    reset = float(int(time.time()) + 3)
    limiter.answered(200, _headers(100, 0, reset), T0)
    turn = limiter.take_turn(T0)
    assert turn is not None
    assert 1.5 < limiter.delay(turn, T0) <= 3.0


def test_a_host_whose_clock_is_a_minute_behind_reads_reset_against_the_platforms_date() -> None:
    """Read against this host's clock, a one-second window's Reset would be a minute away and hold the token for it
    (the pause's bound, not the window). The answer's Date says the clock is off: Reset is read against it."""
    wall = WallClock(1_800_000_000.2)
    limiter = RateLimiter("x", wall_clock=wall)
    headers = {**_headers(100, 0, 1_800_000_061.0), "Date": email.utils.formatdate(1_800_000_060.0, usegmt=True)}
    limiter.answered(200, headers, T0)
    turn = limiter.take_turn(T0)
    assert turn is not None
    assert 0 < limiter.delay(turn, T0) <= 1.0
    for date in ("not a date", "Mon, 07 Dec 2026 04:00:00 GMT" * 5, email.utils.formatdate(1_800_000_000.0)):
        assert platform_wall({"Date": date}, 1_800_000_000.2) == 1_800_000_000.2  # off by 2 s or less, or unreadable


@pytest.mark.parametrize(
    "headers",
    [
        {"X-RateLimit-Limit": "0", "X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "{soon}"},
        {"X-RateLimit-Limit": "-5", "X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "{soon}"},
        {"X-RateLimit-Limit": "99999999999999", "X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "{soon}"},
        {"X-RateLimit-Limit": "1e3", "X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "{soon}"},
        {"X-RateLimit-Limit": "100", "X-RateLimit-Remaining": "²", "X-RateLimit-Reset": "{soon}"},
        {"X-RateLimit-Limit": "100", "X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "32503680000"},
        {"X-RateLimit-Limit": "100", "X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "1"},
    ],
)
def test_absurd_headers_neither_pause_nor_pace_for_long(headers: dict[str, str]) -> None:
    soon = str(int(time.time()) + 2)
    limiter = RateLimiter("x")
    limiter.answered(200, {name: value.format(soon=soon) for name, value in headers.items()}, T0)
    turn = limiter.take_turn(T0)
    assert turn is None or limiter.delay(turn, T0) <= 0


def test_rate_headers_are_checked_before_they_are_believed() -> None:
    now = 1_800_000_000.0
    assert RateHeaders.parse({"X-RateLimit-Limit": "10", "X-RateLimit-Remaining": "12"}, now) == RateHeaders(
        10, 10, None
    )
    assert RateHeaders.parse({"X-RateLimit-Limit": "10"}, now) is None
    parsed = RateHeaders.parse(
        {"X-RateLimit-Limit": "10", "X-RateLimit-Remaining": "3", "X-RateLimit-Reset": str(int(now) + 30)}, now
    )
    assert parsed == RateHeaders(10, 3, now + 30)


def test_it_recovers_after_a_quiet_spell_and_says_so_once(caplog: pytest.LogCaptureFixture) -> None:
    limiter = RateLimiter("x")
    resume = throttled_at_100_per_second(limiter)
    turn = limiter.take_turn(resume)
    assert turn is not None
    go(limiter, turn, resume)
    with caplog.at_level(logging.INFO, logger="airflow_provider_analytics.wire"):
        assert limiter.take_turn(resume + RECOVER_SECONDS / 2) is not None
        assert limiter.take_turn(resume + RECOVER_SECONDS + 1) is None
        assert limiter.take_turn(resume + RECOVER_SECONDS + 2) is None
    recovered = [r.getMessage() for r in caplog.records if "No longer rate limited" in r.getMessage()]
    assert len(recovered) == 1
    assert "1 requests refused" in recovered[0]


def test_one_limiter_per_account_in_a_process() -> None:
    reset_rate_limiters()
    first = limiter_for("https://api.example.com", "token-a", "analytics_default")
    assert limiter_for("https://api.example.com", "token-a", "other_connection") is first
    assert limiter_for("https://api.example.com", "token-b") is not first
    assert limiter_for("https://other.example.com", "token-a") is not first
    assert "token-a" not in repr(vars(first))
    reset_rate_limiters()
    assert limiter_for("https://api.example.com", "token-a") is not first


def test_the_limiter_keeps_no_memory_per_request() -> None:
    limiter = RateLimiter("x")
    resume = throttled_at_100_per_second(limiter)

    def serve(count: int, start: float) -> float:
        now = start
        for _ in range(count):
            turn = limiter.take_turn(now)
            assert turn is not None
            now = go(limiter, turn, now)
            limiter.answered(200, {}, now)
        return now

    now = serve(1_000, resume)  # warm: every attribute exists and has grown to its size
    tracemalloc.start()
    try:
        before = tracemalloc.take_snapshot()
        serve(20_000, now)
        after = tracemalloc.take_snapshot()
    finally:
        tracemalloc.stop()
    grown = sum(stat.size_diff for stat in after.compare_to(before, "filename") if "throttle" in str(stat))
    assert grown < 2_000, f"the limiter grew by {grown} bytes over 20,000 requests"


def _headers(limit: int, remaining: int, reset: float) -> dict[str, str]:
    return {
        "X-RateLimit-Limit": str(limit),
        "X-RateLimit-Remaining": str(remaining),
        "X-RateLimit-Reset": str(int(reset)),
    }


def test_a_refusal_while_nobody_waits_cuts_nothing() -> None:
    """Refusals that come while the pace binds no request (another process, a proxy) pause, but must not ratchet
    the pace down one by one."""
    limiter = RateLimiter("x")
    resume = throttled_at_100_per_second(limiter)
    rate = limiter.snapshot()["rate"]
    now = resume + 10
    for _ in range(5):  # one request now and then, never waiting for its turn
        turn = limiter.take_turn(now)
        assert turn is not None
        now = go(limiter, turn, now)
        limiter.refused(0.1, sent_at=now, now=now, max_pause=120)
        now += 6
    assert limiter.snapshot()["rate"] == pytest.approx(rate, rel=0.05)


def test_the_expected_wait_counts_the_queue_and_the_pause() -> None:
    limiter = RateLimiter("x")
    assert limiter.expected_wait(T0) == 0
    throttled_at_100_per_second(limiter)
    for _ in range(97):
        limiter.take_turn(T0 + 0.6)
    assert limiter.expected_wait(T0 + 0.6) == pytest.approx(0.9 + 1.0, abs=0.05)


def test_with_the_headers_a_used_up_window_cuts_this_process_share_and_windows_that_hold_grow_it() -> None:
    """Other processes make the platform refuse some of this one's requests although it paces under the headers'
    cap: each window used up cuts its share of the limit (by CUT, with no floor that would let many processes together
    ask for more than the limit), and each window that held grows it back by GROWTH."""
    wall = WallClock(1_800_000_000.0)
    limiter = RateLimiter("x", wall_clock=wall)
    reset = 1_800_000_001.0
    for remaining in range(9, -1, -1):  # the first window, used up by this process alone: it paces, its share whole
        wall.now += 0.05
        limiter.answered(200, _headers(10, remaining, reset), T0)
    assert limiter.snapshot()["share"] == 1.0
    for window in range(1, 21):  # twenty windows in which the platform refused one of its requests
        wall.now = reset + window - 0.5
        limiter.answered(200, _headers(10, 5, reset + window), T0 + window)
        limiter.answered(429, _headers(10, 0, reset + window), T0 + window + 0.5)
    wall.now = reset + 20.1
    limiter.answered(200, _headers(10, 9, reset + 21), T0 + 21)
    assert limiter.snapshot()["share"] == pytest.approx(CUT**20, rel=0.01)
    for window in range(22, 72):  # fifty windows that held: their last answer past half-way, little used
        wall.now = reset + window - 0.3
        limiter.answered(200, _headers(10, 8, reset + window), T0 + window)
    # nothing of this process waited for its turn: its share grows at the least pressure
    assert limiter.snapshot()["share"] == pytest.approx(CUT**20 + 50 * GROWTH * PRESSURE_LEAST, rel=0.01)
    for remaining in range(9, -1, -1):  # a window this process uses up alone: nobody else sends, its share is whole
        wall.now += 0.01
        limiter.answered(200, _headers(10, remaining, reset + 72), T0 + 72)
    wall.now = reset + 72.1
    limiter.answered(200, _headers(10, 9, reset + 73), T0 + 73)
    assert limiter.snapshot()["share"] == 1.0


def _share_grown_in_windows_that_held(waiting: int) -> float:
    """A process paced under the headers' cap at a share of an eighth, ``waiting`` of its requests queued for their
    turn: what its share grew by in twenty windows that held."""
    wall = WallClock(1_800_000_000.0)
    limiter = RateLimiter("x", wall_clock=wall)
    reset = 1_800_000_001.0
    for remaining in range(99, 87, -1):  # its twelve answers of a window the fleet had used 12 % of
        wall.now += 0.01
        limiter.answered(200, _headers(100, remaining, reset), T0)
    wall.now = reset - 0.05
    limiter.answered(200, _headers(100, 8, reset), T0 + 0.95)  # 92 used, mostly by others: it paces
    assert limiter.throttled
    for _ in range(waiting):
        limiter.take_turn(T0 + 0.96)
    shares = []
    for window in range(1, 22):  # windows that held: their last answer past half-way, a fifth used
        wall.now = reset + window - 0.3
        limiter.answered(200, _headers(100, 80, reset + window), T0 + window)
        shares.append(limiter.snapshot()["share"])
    return float(shares[-1] - shares[0])


def test_with_the_headers_a_process_whose_requests_wait_long_grows_its_share_faster() -> None:
    """Sixteen processes whose start-up left them shares of 1 to 12 % still held 3 to 8 % a minute later when every
    share grew alike: the starved processes' waits were 2.6x their floor. A process whose queue waits long for its
    turn grows its share up to eight times as fast as one whose requests go at once."""
    assert _share_grown_in_windows_that_held(waiting=0) == pytest.approx(20 * GROWTH * PRESSURE_LEAST)
    assert _share_grown_in_windows_that_held(waiting=10_000) == pytest.approx(20 * GROWTH * PRESSURE_MOST)


def test_a_new_limit_is_a_new_window_to_learn() -> None:
    """6,000 a minute became 3 a second: the 60 s window learnt for the old limit must not pace the new one at 3 a
    minute (a soak found the fleet at the least pace there is for the whole phase)."""
    wall = WallClock(1_800_000_000.0)
    limiter = RateLimiter("x", wall_clock=wall)
    reset = 1_800_000_060.0
    limiter.answered(200, _headers(6000, 5999, reset), T0)
    wall.now = reset + 0.5
    limiter.answered(200, _headers(6000, 5999, reset + 60), T0 + 60.5)
    assert limiter.snapshot()["window"] == 60
    wall.now += 1.2
    reset = float(int(wall.now) + 1)
    limiter.answered(200, _headers(3, 1, reset), T0 + 61.7)  # the new limit, its window nearly used up
    assert limiter.throttled
    wall.now = reset + 0.3
    limiter.answered(200, _headers(3, 2, reset + 1), T0 + 62.5)
    assert limiter.snapshot()["window"] == 1
    header_cap = limiter.snapshot()["header_cap"]
    assert header_cap is not None
    assert header_cap > 1.0, "paced at what one-second windows of 3 allow, not at 3 a minute"


def test_a_process_whose_requests_were_all_refused_paces_at_the_rate_it_asked() -> None:
    """Other processes on the token took the window: none of this one's requests succeeded. The rate its refusal came
    at is the rate it asked at, not nothing (which held such a process at the least pace for minutes, its waits
    starved, while the others' grew)."""
    limiter = RateLimiter("x")
    for i in range(20):  # twenty requests asked for over a second, answered (refused) two seconds later
        assert limiter.take_turn(T0 + i * 0.05) is None
    limiter.refused(1.0, sent_at=T0 + 1.0, now=T0 + 3.0, max_pause=120)
    assert limiter.throttled
    rate = limiter.snapshot()["rate"]
    assert 5.0 <= rate <= 20.0, rate


def test_a_first_refusal_after_a_burst_whose_sends_spilled_into_the_next_second_learns_what_the_window_took() -> None:
    """A burst's turns were taken (and counted) late in one second, its requests waited in the connection pool and
    reached the platform in the next, whose window took 100: counted by sends the process had learnt 74 and paced
    at 72 of 100 for minutes. Its answers say 100 came back in one second: the ceiling is the larger count."""
    wall = WallClock(1_800_000_000.7)
    limiter = RateLimiter("x", wall_clock=wall)
    for _ in range(74):  # turns taken in the last 0.3 s of one second
        assert limiter.take_turn(T0) is None
    wall.now = 1_800_000_001.1
    for _ in range(28):  # and at the start of the next
        assert limiter.take_turn(T0 + 0.4) is None
    succeed(limiter, 100, T0 + 0.5, spread=0.8)  # the window's 100 answers
    wall.now = 1_800_000_001.4
    limiter.refused(1.0, sent_at=T0 + 0.4, now=T0 + 1.4, max_pause=120)
    ceiling = limiter.snapshot()["ceiling"]
    assert ceiling is not None
    assert ceiling >= 95


def test_a_reset_a_second_off_from_another_node_is_the_same_window_not_a_window_of_a_second() -> None:
    """Two nodes of the platform tell one 60 s window's Reset a second apart: taken for a window of a second, the
    pace of 600 a window became 582 a second. A Reset that moves before the window it replaces ended is the same one."""
    wall = WallClock(1_800_000_000.0)
    limiter = RateLimiter("x", wall_clock=wall)
    reset = 1_800_000_060.0
    for i in range(100):  # answers 0.1 s apart, from the two nodes in turn
        wall.now += 0.1
        limiter.answered(200, _headers(600, 599 - i, reset + i % 2), T0 + i * 0.1)
    assert limiter.snapshot()["window"] is None
    for i in range(50):  # the next window, from both nodes
        wall.now = reset + 1.5 + i * 0.1
        limiter.answered(200, _headers(600, 599 - i, reset + 60 + i % 2), T0 + 61.5 + i * 0.1)
    window = limiter.snapshot()["window"]
    assert window is not None
    assert window >= 59
