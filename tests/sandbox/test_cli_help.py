"""The sandbox's ``--help`` says how large a report can be, and that limit is the one the server enforces."""

from __future__ import annotations

import re
import subprocess
import sys

import httpx

from airflow_provider_analytics.sandbox.domain.config import MAX_GENERATED_ROWS


def help_text() -> str:
    done = subprocess.run(
        [sys.executable, "-m", "airflow_provider_analytics.sandbox", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return " ".join(done.stdout.split())  # argparse wraps lines at the terminal's width


def test_help_states_the_report_size_limit() -> None:
    text = help_text()
    stated = re.search(r"rows \(0 to ([\d,]+)", text)
    assert stated is not None, text
    assert int(stated.group(1).replace(",", "")) == MAX_GENERATED_ROWS
    assert "at most about 227 MB" in text


def test_help_durations_read_as_english() -> None:
    text = help_text()
    assert "how long an execution takes" in text
    assert "a execution" not in text


def test_help_explains_the_rate_limit_options() -> None:
    text = help_text()
    assert "--rate-limit N allow each token N requests per second" in text
    assert "--no-rate-limit-headers send no X-RateLimit-Limit/-Remaining/-Reset headers" in text
    assert "still carries Retry-After" in text


def test_the_stated_limit_is_the_enforced_one(client: httpx.Client) -> None:
    def generate(rows: int) -> int:
        body = {"dashboard_ids": ["db_sales"], "format": "csv", "parameters": {"rows": rows}}
        return client.post("/v1/reports", json=body).status_code

    assert generate(MAX_GENERATED_ROWS + 1) == 422
    assert generate(0) == 202
