"""Real Airflow runs: a migrated SQLite metadata DB per test session and ``dag.test()`` on the test DAGs."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest


@pytest.fixture(scope="session")
def airflow_db() -> None:
    """``airflow db migrate`` once, into the session's temporary AIRFLOW_HOME."""
    subprocess.run([sys.executable, "-m", "airflow", "db", "migrate"], check=True, capture_output=True, timeout=300)


@pytest.fixture(scope="session")
def dagbag(airflow_db: None) -> Any:
    from airflow.dag_processing.dagbag import DagBag

    bag = DagBag(dag_folder=os.environ["AIRFLOW__CORE__DAGS_FOLDER"])
    assert not bag.import_errors, bag.import_errors
    return bag


@dataclass
class RunResult:
    """What a ``dag.test()`` run left behind."""

    state: str
    states: dict[str, str]
    tries: dict[str, int]
    xcoms: dict[tuple[str, str], Any]

    def xcom(self, task_id: str, key: str = "return_value") -> Any:
        return self.xcoms.get((task_id, key))


@pytest.fixture
def run_dag(dagbag: Any, sandbox: Any) -> Callable[..., RunResult]:
    """Run a test DAG with ``dag.test(run_conf=conf)`` against the fresh sandbox."""
    from airflow.models.xcom import XComModel
    from airflow.utils.session import create_session

    def run(dag_id: str, **conf: Any) -> RunResult:
        dag_run = dagbag.get_dag(dag_id).test(run_conf=conf)
        tis = dag_run.get_task_instances()
        with create_session() as session:
            rows = session.query(XComModel).filter(
                XComModel.run_id == dag_run.run_id, XComModel.dag_id == dag_run.dag_id
            )
            xcoms = {(row.task_id, row.key): row.value for row in rows}
        return RunResult(
            state=str(dag_run.state),
            states={ti.task_id: str(ti.state) for ti in tis},
            tries={ti.task_id: ti.try_number for ti in tis},
            xcoms=xcoms,
        )

    return run
