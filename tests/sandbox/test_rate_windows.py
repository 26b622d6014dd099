"""The per-second limit's windows, counts and memory, on a wall clock the test sets (no sockets needed).

``RateLimits`` takes its wall clock as an argument, so these tests choose the instants; the tests over real
sockets (``test_rate_per_second.py``) show the same rules on the wire.
"""

from __future__ import annotations

import threading
from datetime import UTC, datetime

import pytest

from airflow_provider_analytics.sandbox.config import SandboxConfig
from airflow_provider_analytics.sandbox.domain.rate_limits import RateLimits, per_second_problem, per_second_window

SANDBOX_NOW = datetime(2026, 11, 21, 10, 0, tzinfo=UTC)


class WallClock:
    """A wall clock that stays where the test puts it."""

    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


@pytest.mark.parametrize(
    ("per_second", "window"),
    [(20, (1, 20)), (2.5, (1, 2)), (1, (1, 1)), (0.5, (2, 1)), (0.3, (4, 1)), (1 / 3, (3, 1)), (0.1, (10, 1)),
     (0.7, (2, 1)), (0.75, (2, 1)), (0.01, (100, 1)), (1000.9, (1, 1000))],
)  # fmt: skip
def test_a_fractional_limit_is_never_exceeded(per_second: float, window: tuple[int, int]) -> None:
    assert per_second_window(per_second) == window
    seconds, allowance = window
    assert 1 <= allowance <= per_second * seconds + 1e-9


@pytest.mark.parametrize("value", [0, -1, 0.0, float("nan"), float("inf"), True, "20", [20]])
def test_bad_limits_are_refused_everywhere(value: object) -> None:
    assert per_second_problem(value) is not None
    with pytest.raises(ValueError, match="rate_limit_per_second must be a finite number"):
        SandboxConfig(rate_limit_per_second=value)  # type: ignore[arg-type]  # a wrong type on purpose
    with pytest.raises(ValueError, match="per_second must be a finite number"):
        RateLimits(6000).configure(value)  # type: ignore[arg-type]  # a wrong type on purpose


def test_a_huge_integer_limit_is_usable() -> None:
    assert per_second_problem(10**400) is None  # no OverflowError from a JSON integer too large for a float


def test_windows_are_whole_epoch_seconds_and_refusals_do_not_count() -> None:
    clock = WallClock(1_000_000.25)
    limits = RateLimits(6000, per_second=3, wall_clock=clock)
    answers = [limits.hit("a", SANDBOX_NOW) for _ in range(5)]
    assert [answer.allowed for answer in answers] == [True, True, True, False, False]
    assert [answer.remaining for answer in answers] == [2, 1, 0, 0, 0]
    assert {(answer.limit, answer.reset_epoch, answer.retry_after) for answer in answers} == {(3, 1_000_001, 1)}
    assert answers[-1].refusal_message() == "rate limit of 3 requests per second exceeded; retry in 1 s"
    clock.now = 1_000_001.0  # the next window opens exactly on the epoch second
    assert limits.hit("a", SANDBOX_NOW).remaining == 2
    assert limits.stats() == {"per_second": 3, "headers": True, "allowed": 4, "refused": 2}


def test_a_window_of_several_seconds_reports_its_end_and_retry_after() -> None:
    clock = WallClock(1_000_000.5)  # 0.5/s: 2-second windows, 1_000_000 to 1_000_002
    limits = RateLimits(6000, per_second=0.5, wall_clock=clock)
    first, second = limits.hit("a", SANDBOX_NOW), limits.hit("a", SANDBOX_NOW)
    assert (first.allowed, first.limit, first.reset_epoch) == (True, 1, 1_000_002)
    assert (second.allowed, second.retry_after) == (False, 2)  # ceil(1.5)
    assert second.refusal_message() == "rate limit of 0.5 requests per second exceeded; retry in 2 s"


def test_memory_is_the_tokens_of_the_current_window_only() -> None:
    clock = WallClock(2_000_000.0)
    limits = RateLimits(10**9, per_second=1000, wall_clock=clock)
    for second in range(50):
        clock.now = 2_000_000.0 + second
        for token in range(20):
            limits.hit(f"token-{second}-{token}", SANDBOX_NOW)
    assert limits.tracked_tokens == 20
    limits.peek("never-seen", SANDBOX_NOW)
    assert limits.tracked_tokens == 20  # a peek (a 401's headers) remembers nothing


def test_a_clock_stepped_back_does_not_reopen_a_counted_window() -> None:
    clock = WallClock(3_000_000.5)
    limits = RateLimits(6000, per_second=1, wall_clock=clock)
    assert limits.hit("a", SANDBOX_NOW).allowed
    clock.now = 2_999_999.5
    refused = limits.hit("a", SANDBOX_NOW)
    assert not refused.allowed
    assert refused.reset_epoch == 3_000_001


def test_both_limits_apply_and_a_per_minute_refusal_uses_no_per_second_allowance() -> None:
    limits = RateLimits(2, per_second=10, wall_clock=WallClock(4_000_000.0))
    answers = [limits.hit("a", SANDBOX_NOW) for _ in range(3)]
    assert [answer.allowed for answer in answers] == [True, True, False]
    assert answers[0].limit == 10  # the headers describe the per-second limit...
    assert (answers[2].limit, answers[2].remaining) == (2, 0)  # ...except on the per-minute limit's own 429
    assert "requests per minute" in answers[2].refusal_message()
    assert limits.stats() == {"per_second": 10, "headers": True, "allowed": 2, "refused": 0}


def test_headers_switch_covers_both_limits() -> None:
    limits = RateLimits(6000, per_second=None, headers=False, wall_clock=WallClock(5_000_000.0))
    assert limits.hit("a", SANDBOX_NOW).headers() == []
    assert limits.peek(None, SANDBOX_NOW).headers() == []
    limits.configure(5, headers=False)
    assert limits.hit("a", SANDBOX_NOW).headers() == []
    limits.configure(5)
    assert [name for name, _ in limits.hit("a", SANDBOX_NOW).headers()] == [
        "x-ratelimit-limit",
        "x-ratelimit-remaining",
        "x-ratelimit-reset",
    ]


def test_reconfiguring_keeps_the_window_count_and_reset_restores_the_configuration() -> None:
    limits = RateLimits(6000, per_second=5, headers=False, wall_clock=WallClock(6_000_000.0))
    for _ in range(3):
        limits.hit("a", SANDBOX_NOW)
    limits.configure(3, headers=True)  # same window length: the 3 already sent count against the new limit
    assert not limits.hit("a", SANDBOX_NOW).allowed
    limits.configure(None)
    assert limits.hit("a", SANDBOX_NOW).allowed
    assert limits.stats() == {"per_second": None, "headers": True, "allowed": 3, "refused": 1}
    limits.reset()
    assert limits.stats() == {"per_second": 5, "headers": False, "allowed": 0, "refused": 0}
    assert limits.tracked_tokens == 0


def test_concurrent_requests_never_exceed_the_allowance() -> None:
    limits = RateLimits(10**9, per_second=100, wall_clock=WallClock(7_000_000.0))
    allowed: list[bool] = []
    lock = threading.Lock()

    def send() -> None:
        mine = [limits.hit("shared", SANDBOX_NOW).allowed for _ in range(50)]
        with lock:
            allowed.extend(mine)

    threads = [threading.Thread(target=send) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert (allowed.count(True), allowed.count(False)) == (100, 300)
    assert limits.stats()["allowed"] == 100
