"""The list of Airflow-free tests (tests/support/airflow_free.py) names what is there, and its block holds."""

from __future__ import annotations

import pytest

from tests.support.airflow_free import AIRFLOW_FREE, TESTS, _AirflowBlocker, is_airflow_free


@pytest.mark.parametrize("entry", AIRFLOW_FREE)
def test_every_listed_test_is_there(entry: str) -> None:
    # A moved or renamed test would otherwise leave the list, and with it make test, without a word.
    listed = TESTS / entry
    assert listed.is_dir() or (listed.is_file() and listed.name.startswith("test_")), entry


def test_a_folder_takes_what_is_under_it_and_nothing_else_is_listed() -> None:
    assert is_airflow_free(TESTS / "sandbox" / "test_basics.py")
    assert is_airflow_free(TESTS / "wire" / "test_retry.py")
    assert not is_airflow_free(TESTS / "wire" / "test_download_resume.py")
    assert not is_airflow_free(TESTS / "operators" / "test_request_counts.py")
    assert not is_airflow_free(TESTS)


@pytest.mark.parametrize("name", ["airflow", "airflow.sdk", "airflow.providers.common.compat.sdk"])
def test_the_block_refuses_airflow_and_remembers_the_attempt(name: str) -> None:
    blocker = _AirflowBlocker()
    with pytest.raises(ModuleNotFoundError, match="blocked"):
        blocker.find_spec(name, None)
    assert len(blocker.attempts) == 1
    assert blocker.attempts[0].startswith(f"import {name}:")


@pytest.mark.parametrize("name", ["airflowx", "airflow_provider_analytics.wire", "httpx"])
def test_the_block_leaves_other_modules_alone(name: str) -> None:
    blocker = _AirflowBlocker()
    assert blocker.find_spec(name, None) is None
    assert blocker.attempts == []
