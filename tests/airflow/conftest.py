"""Real Airflow runs: a migrated SQLite metadata DB per test session and ``dag.test()`` on the test DAGs.

What differs between releases (where ``DagBag`` lives, how XCom rows decode) is in ``support/airflow_runs.py``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest

from airflow_provider_analytics.sandbox.server import SandboxServer
from tests.support.airflow_runs import RUN_ENV, RunDag, RunResult, load_dagbag, migrate_db, run_dag_test


@pytest.fixture(scope="session")
def airflow_db() -> Iterator[None]:
    """``airflow db migrate`` once, into the session's temporary AIRFLOW_HOME; :data:`RUN_ENV` for the runs."""
    with pytest.MonkeyPatch.context() as patch:
        for name, value in RUN_ENV.items():
            patch.setenv(name, value)
        migrate_db()
        yield


@pytest.fixture(scope="session")
def dagbag(airflow_db: None) -> Any:
    bag = load_dagbag(os.environ["AIRFLOW__CORE__DAGS_FOLDER"])
    assert not bag.import_errors, bag.import_errors
    return bag


@pytest.fixture
def run_dag(dagbag: Any, sandbox: SandboxServer) -> RunDag:
    """Run a test DAG with ``dag.test(run_conf=conf)`` against the fresh sandbox."""

    def run(dag_id: str, **conf: Any) -> RunResult:
        return RunResult.of(run_dag_test(dagbag.get_dag(dag_id), conf))

    return run
