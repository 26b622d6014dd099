"""Test set-up. Airflow reads its environment at import time, so it is fixed here, before any import of it."""

from __future__ import annotations

import base64
import os
import tempfile
import threading
import time
from collections.abc import Iterator
from concurrent.futures.thread import _worker as _pool_worker
from pathlib import Path

import pytest

_HOME_PREFIX = "apa-airflow-home-"


def _remove_homes_of_killed_runs() -> None:
    """Remove the AIRFLOW_HOMEs that runs killed before ``pytest_sessionfinish`` left behind.

    Each home is named after the process that made it; one whose process is gone is nobody's any more.
    """
    import shutil

    for home in Path(tempfile.gettempdir()).glob(f"{_HOME_PREFIX}*-*"):
        pid = home.name[len(_HOME_PREFIX) :].split("-", 1)[0]
        if not pid.isdigit():
            continue
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            shutil.rmtree(home, ignore_errors=True)
        except PermissionError:
            pass  # a live process of another user


_remove_homes_of_killed_runs()
_AIRFLOW_HOME = Path(tempfile.mkdtemp(prefix=f"{_HOME_PREFIX}{os.getpid()}-"))
os.environ["AIRFLOW_HOME"] = str(_AIRFLOW_HOME)
os.environ["AIRFLOW__CORE__LOAD_EXAMPLES"] = "False"
os.environ["AIRFLOW__CORE__UNIT_TEST_MODE"] = "True"
os.environ["AIRFLOW__CORE__DAGS_FOLDER"] = str(Path(__file__).parent / "dags")
# A deployment's Fernet key, the same in every process of the session (a DAG run's too), as a deployment sets one
# for every component: unit-test mode would give Airflow 3's task configuration its unexpanded "{FERNET_KEY}".
# The definitions derive their digests' key from it (tests/definitions/test_review_pins_secrets.py).
os.environ.setdefault("AIRFLOW__CORE__FERNET_KEY", base64.urlsafe_b64encode(os.urandom(32)).decode())
os.environ.pop("AIRFLOW_CONN_ANALYTICS_DEFAULT", None)

# airflow_free first: it checks that nothing imported Airflow before the tests (fixtures imports none).
pytest_plugins = ["tests.support.airflow_free", "tests.support.fixtures"]


def pytest_sessionfinish(session: object, exitstatus: int) -> None:
    """Remove the session's AIRFLOW_HOME, whatever the outcome: a suite leaves nothing in the temp folder."""
    import shutil

    shutil.rmtree(_AIRFLOW_HOME, ignore_errors=True)


def _leftover_threads(before: set[threading.Thread]) -> list[threading.Thread]:
    """New non-daemon threads still alive; an event loop's pool workers (``asyncio.to_thread``) end with it."""
    return [
        thread
        for thread in set(threading.enumerate()) - before
        if not thread.daemon and thread.is_alive() and getattr(thread, "_target", None) is not _pool_worker
    ]


@pytest.fixture(autouse=True)
def _fresh_rate_limiters() -> Iterator[None]:
    """Every test starts unthrottled: the tests share a sandbox (one account), and one test's 429s must not
    pace the next test's requests."""
    from airflow_provider_analytics.wire._accounts import reset_rate_limiters

    reset_rate_limiters()
    yield
    reset_rate_limiters()


@pytest.fixture(autouse=True)
def _no_thread_left_running() -> Iterator[None]:
    """Fail a test that leaves a new non-daemon thread alive: it would act during the tests after it."""
    before = set(threading.enumerate())
    yield
    deadline = time.monotonic() + 2.0  # a thread on its way out gets a moment to end
    for thread in _leftover_threads(before):
        thread.join(max(0.0, deadline - time.monotonic()))
    left = _leftover_threads(before)
    assert not left, f"the test left threads running: {left}"
