"""The pure wait outcomes: which platform states end a wait as success or failure, and platform time parsing."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pendulum
import pytest

from airflow_provider_analytics.wire._outcomes import execution_outcome, report_outcome, sync_outcome
from airflow_provider_analytics.wire._times import parse_time


@pytest.mark.parametrize(
    ("status", "expected"),
    [
        ("queued", None),
        ("running", None),
        ("succeeded", "success"),
        ("failed", "failure"),
        ("cancelled", "failure"),
        ("paused", None),  # a status the contract does not know: keep waiting
        (None, None),
    ],
)
def test_execution_outcome(status: str | None, expected: str | None) -> None:
    assert execution_outcome({"status": status}) == expected


def test_execution_outcome_without_a_status_keeps_waiting() -> None:
    assert execution_outcome({}) is None


@pytest.mark.parametrize(
    ("status", "expected"),
    [
        ("pending", None),
        ("generating", None),
        ("ready", "success"),
        ("failed", "failure"),
        ("expired", "failure"),
        ("archived", None),
        (None, None),
    ],
)
def test_report_outcome(status: str | None, expected: str | None) -> None:
    assert report_outcome({"status": status}) == expected


THRESHOLD = datetime(2026, 11, 21, 10, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("sync", "fail_on_sync_failure", "expected"),
    [
        pytest.param(
            {"status": "syncing", "last_synced_at": "2026-11-21T10:05:00Z", "last_attempt_at": "2026-11-21T10:06:00Z"},
            True,
            "success",
            id="syncing-but-fresh",
        ),
        pytest.param(
            {"status": "synced", "last_synced_at": "2026-11-21T09:59:59.999999Z", "last_attempt_at": None},
            True,
            None,
            id="synced-but-stale",
        ),
        pytest.param({"status": "synced", "last_synced_at": "2026-11-21T10:00:00Z"}, True, "success", id="exactly-at"),
        pytest.param(
            {"status": "synced", "last_synced_at": "2026-11-21T10:00:00.000001Z"},
            True,
            "success",
            id="one-microsecond-after",
        ),
        pytest.param(
            {"status": "synced", "last_synced_at": "2026-11-21T11:00:00+01:00"},
            True,
            "success",
            id="other-offset-same-instant",
        ),
        pytest.param(
            {"status": "synced", "last_synced_at": "2026-11-21T10:30:00+01:00"}, True, None, id="other-offset-earlier"
        ),
        pytest.param(
            {"status": "failed", "last_synced_at": "2026-11-20T10:00:00Z", "last_attempt_at": "2026-11-21T09:00:00Z"},
            True,
            None,
            id="failed-before-threshold",
        ),
        pytest.param(
            {"status": "failed", "last_synced_at": "2026-11-20T10:00:00Z", "last_attempt_at": "2026-11-21T10:00:00.5Z"},
            True,
            "failure",
            id="failed-after-threshold",
        ),
        pytest.param(
            {"status": "failed", "last_synced_at": "2026-11-20T10:00:00Z", "last_attempt_at": "2026-11-21T10:00:01Z"},
            False,
            None,
            id="failed-after-threshold-not-failing",
        ),
        pytest.param(
            {"status": "failed", "last_synced_at": "2026-11-21T10:01:00Z", "last_attempt_at": "2026-11-21T10:02:00Z"},
            True,
            "success",
            id="failed-retry-but-already-fresh",
        ),
        pytest.param(
            {"status": "failed", "last_synced_at": None, "last_attempt_at": None}, True, None, id="failed-no-times"
        ),
        pytest.param({"status": "never_synced", "last_synced_at": None}, True, None, id="never-synced"),
        pytest.param({"status": "pending", "last_synced_at": "not a time"}, True, None, id="garbage-time"),
        pytest.param(
            {"status": "synced", "last_synced_at": "2026-11-21T10:05:00"}, True, None, id="naive-time-ignored"
        ),
        pytest.param({}, True, None, id="empty"),
    ],
)
def test_sync_outcome(sync: dict[str, Any], fail_on_sync_failure: bool, expected: str | None) -> None:
    assert sync_outcome(sync, THRESHOLD, fail_on_sync_failure) == expected


def test_sync_outcome_with_fractional_seconds_on_both_sides() -> None:
    threshold = datetime(2026, 11, 21, 10, 0, 0, 123456, tzinfo=UTC)
    assert sync_outcome({"status": "synced", "last_synced_at": "2026-11-21T10:00:00.123456Z"}, threshold) == "success"
    assert sync_outcome({"status": "synced", "last_synced_at": "2026-11-21T10:00:00.123455Z"}, threshold) is None
    failed = {"status": "failed", "last_synced_at": None, "last_attempt_at": "2026-11-21T10:00:00.123456Z"}
    assert sync_outcome(failed, threshold) == "failure"
    assert sync_outcome({**failed, "last_attempt_at": "2026-11-21T10:00:00.123455Z"}, threshold) is None


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("2026-11-21T10:00:00Z", datetime(2026, 11, 21, 10, tzinfo=UTC)),
        ("2026-11-21T10:00:00.123456Z", datetime(2026, 11, 21, 10, 0, 0, 123456, tzinfo=UTC)),
        ("2026-11-21T11:00:00+01:00", datetime(2026, 11, 21, 10, tzinfo=UTC)),
        ("2026-11-21 10:00:00+00:00", datetime(2026, 11, 21, 10, tzinfo=UTC)),  # str() of an aware datetime
        ("2026-11-21T10:00:00", None),
        ("", None),
        ("yesterday", None),
        (None, None),
        (1795000000, None),
        (datetime(2026, 11, 21, 10, tzinfo=UTC), None),  # only text is parsed
    ],
)
def test_parse_time(value: object, expected: datetime | None) -> None:
    parsed = parse_time(value)
    assert parsed == expected
    if parsed is not None:
        assert expected is not None
        assert parsed.utcoffset() is not None
        assert parsed - pendulum.instance(expected) == timedelta(0)
