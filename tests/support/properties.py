"""Shared pieces of the client property tests (Hypothesis): settings, a client configuration for mocked
transports, odd header values, sleeps that check the wait asked for, and a call's outcome."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from hypothesis import settings
from hypothesis import strategies as st

from airflow_provider_analytics.wire._accounts import reset_rate_limiters
from airflow_provider_analytics.wire._learning import MIN_PAUSE
from airflow_provider_analytics.wire.config import ClientConfig
from airflow_provider_analytics.wire.errors import AnalyticsError
from airflow_provider_analytics.wire.retry import RetryPolicy

# No health check is suppressed: none fires (checked over many seeds), so a slow strategy would be noticed.
CLIENT_SETTINGS = settings(max_examples=200, deadline=None)
CONFIG = ClientConfig(
    base_url="https://api.example.com",
    token="t0ken-value",
    retry=RetryPolicy(max_retries=1, backoff_initial=0, backoff_max=0, max_rate_limited_seconds=2),
    max_response_bytes=64 * 1024,
)
Headers = list[tuple[bytes, bytes]]

header_values = st.binary(max_size=60) | st.sampled_from(
    [b"0", b"1", b"120", b"121", b"99999999999", b"-1", b"Wed, 21 Oct 2015 07:28:00 GMT",
     b"Fri, 31 Dec 9999 23:59:59 GMT", b"application/json", b"text/html", b"req_1", b"\x1b[31m", b"\xc3\xa9",
     b"\x85\xe2\x80\xa8"]
)  # fmt: skip


def most_requests(config: ClientConfig, refused: bool = True) -> int:
    """The most requests one call may send: its retries and, when it may be ``refused`` (429), the refusals it
    waits out, each pausing at least ``MIN_PAUSE`` within ``max_rate_limited_seconds``."""
    waited_out = math.ceil(config.retry.max_rate_limited_seconds / MIN_PAUSE) + 1 if refused else 0
    return 1 + config.retry.max_retries + waited_out


def outcome(function: Callable[..., Any], *args: Any) -> Any:
    """What ``function(*args)`` returns, or the ``AnalyticsError`` it raises (anything else escapes).

    The process's rate limiters start afresh: one example's 429s must not pace the next (the tests' autouse
    fixture resets them only once per test, and an example is one of many in a test).
    """
    reset_rate_limiters()
    try:
        return function(*args)
    except AnalyticsError as error:
        return error


def no_sleep(seconds: float) -> None:
    """The client's sleep, not waiting: a wait it asks for must be within the retry policy's bounds."""
    assert 0 <= seconds <= CONFIG.retry.max_retry_after


async def async_no_sleep(seconds: float) -> None:
    no_sleep(seconds)
