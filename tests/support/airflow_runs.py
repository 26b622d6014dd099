"""What differs between Airflow 2.11 and 3.3 for the tests that run real Airflow, in one place.

The tests under ``airflow/``, ``lineage/`` and ``test_example_dags.py`` load DAG files, run them with
``dag.test()`` and read back what the run left (states, tries, XCom). The calls differ by release:

- ``DagBag`` is ``airflow.dag_processing.dagbag`` from 3.2 on, ``airflow.models.dagbag`` before;
- XCom rows are ``XComModel`` on 3.x, ``XCom`` on 2.x (both load with the value decoded);
- 2.x's unit-test configuration (``AIRFLOW__CORE__UNIT_TEST_MODE``) names the LocalExecutor, which 2.x
  refuses on SQLite as soon as ``dag.test()`` checks a reschedule; :data:`RUN_ENV` names the
  SequentialExecutor there (3.x has none and needs no setting);
- Airflow 2.11 only warns about an asset (``Dataset``) URI its scheme's handler refuses, unless
  ``[core] strict_dataset_uri_validation`` is on (:data:`STRICT_ASSET_URIS_ENV`); 3.x always refuses it;
- a run's templates see ``dag_run.run_after`` (and no logical date when triggered without one) on 3.x, and
  always a logical date (``dag_run.execution_date``/``logical_date``) but no ``run_after`` on 2.x.

Everything else (``dag.test(run_conf=...)``, triggers run inline after a serde round trip, retries,
``get_task_instances()``) is the same call on every release. Skips name the Airflow feature that is absent:
see :func:`needs_airflow`.
"""

from __future__ import annotations

import functools
import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from types import SimpleNamespace
from typing import Any
from unittest import mock

import pytest
from packaging.version import Version

from airflow_provider_analytics.version_compat import AIRFLOW_V_3_0_PLUS, AIRFLOW_V_3_2_PLUS, AIRFLOW_VERSION

__all__ = [
    "AIRFLOW_VERSION",
    "RUN_ENV",
    "SENSOR_MODES",
    "STRICT_ASSET_URIS_ENV",
    "RunDag",
    "RunResult",
    "dagbag_class",
    "load_dagbag",
    "manual_run_dag_run",
    "migrate_db",
    "needs_airflow",
    "reschedules_of",
    "run_dag_test",
    "task_output",
    "xcoms_of",
]

# Environment for processes and sessions that run DAGs, on top of tests/conftest.py's.
RUN_ENV: dict[str, str] = {} if AIRFLOW_V_3_0_PLUS else {"AIRFLOW__CORE__EXECUTOR": "SequentialExecutor"}

# Environment under which Airflow refuses a malformed asset URI (3.x does by default).
STRICT_ASSET_URIS_ENV: dict[str, str] = (
    {} if AIRFLOW_V_3_0_PLUS else {"AIRFLOW__CORE__STRICT_DATASET_URI_VALIDATION": "True"}
)


def needs_airflow(version: str, reason: str) -> pytest.MarkDecorator:
    """Skip a test on releases before ``version``; ``reason`` names the feature they lack.

    :param version: the first release that has the feature, as ``"3.0"``.
    :param reason: a sentence naming it, e.g. ``"asset watchers need Airflow 3.0"``.
    """
    return pytest.mark.skipif(
        Version(version) > AIRFLOW_VERSION, reason=f"{reason} (this is Airflow {AIRFLOW_VERSION})"
    )


def broken_in_airflow(series: str, reason: str) -> pytest.MarkDecorator:
    """Skip a test on one release series where Airflow itself breaks what the test runs (not the provider).

    :param series: the series, as ``"3.0"`` (every 3.0.x).
    :param reason: a sentence naming Airflow's bug and what it affects.
    """
    first = Version(series)
    after = Version(f"{first.major}.{first.minor + 1}")
    return pytest.mark.skipif(first <= AIRFLOW_VERSION < after, reason=f"{reason} (this is Airflow {AIRFLOW_VERSION})")


# Airflow 3.0's dag.test() hands a rescheduled sensor its first reschedule time as a string, which fails the
# task as soon as the sensor reschedules once (a deployed worker gets a datetime). Whether a run reschedules
# depends on how fast the first poke comes, so every reschedule case is skipped there, not only the ones that
# always reschedule: a "failed" on 3.0 would be that bug, not the sensor's answer.
SENSOR_MODES = [
    "poke",
    pytest.param(
        "reschedule",
        marks=broken_in_airflow(
            "3.0",
            "Airflow 3.0's dag.test() hands a rescheduled sensor its first reschedule time as a string, which "
            "fails the task (a deployed worker gets a datetime)",
        ),
    ),
    "defer",
]


def dagbag_class() -> type:
    """Airflow's ``DagBag``: moved to ``airflow.dag_processing.dagbag`` in 3.2."""
    if AIRFLOW_V_3_2_PLUS:
        from airflow.dag_processing.dagbag import DagBag
    else:
        from airflow.models.dagbag import DagBag  # type: ignore[no-redef,attr-defined,unused-ignore]
    return DagBag  # type: ignore[no-any-return,unused-ignore]


def load_dagbag(folder: str | Path) -> Any:
    """Parse the DAG files in ``folder`` (or one file); tests/conftest.py turns Airflow's own examples off."""
    return dagbag_class()(dag_folder=str(folder))


def migrate_db() -> None:
    """``airflow db migrate`` into the session's ``AIRFLOW_HOME`` (the same command on 2.11 and 3.x)."""
    subprocess.run(
        [sys.executable, "-m", "airflow", "db", "migrate"],
        env={**os.environ, **RUN_ENV},
        check=True,
        capture_output=True,
        timeout=300,
    )


def run_dag_test(dag: Any, conf: dict[str, Any]) -> Any:
    """``dag.test(run_conf=conf)``, the same call on every release; returns the finished ``DagRun``.

    On 3.x every task ``dag.test()`` runs asks ``in_process_api_server()`` for an in-process execution API, and
    each new one builds its FastAPI app (Cadwyn's versioned routes: about 5 s of CPU on 3.0-3.2) and leaves
    an event-loop thread behind. The runs here share one per process, as Airflow's own triggerer and DAG
    processor do for their lifetime: the tasks still reach the same routes over the same transport, and
    ``dag.test()`` still gives each task its own ``DBDagBag``.
    """
    if not AIRFLOW_V_3_0_PLUS:
        return dag.test(run_conf=conf)
    from airflow.sdk.execution_time import supervisor

    with mock.patch.object(supervisor, "in_process_api_server", _shared_execution_api):
        return dag.test(run_conf=conf)


@functools.cache
def _shared_execution_api() -> Any:
    """The process's one in-process execution API (Airflow 3.x), built on first use."""
    from airflow.api_fastapi.execution_api.app import InProcessExecutionAPI

    return InProcessExecutionAPI()


def xcoms_of(dag_run: Any) -> dict[tuple[str, str], Any]:
    """Every XCom a run left, as ``{(task_id, key): value}`` (both releases' ORM rows load decoded values)."""
    from airflow.utils.session import create_session

    if AIRFLOW_V_3_0_PLUS:
        from airflow.models.xcom import XComModel as XComRow
    else:
        from airflow.models.xcom import XCom as XComRow  # type: ignore[no-redef,attr-defined,unused-ignore]

    with create_session() as session:
        rows = session.query(XComRow).filter(XComRow.run_id == dag_run.run_id, XComRow.dag_id == dag_run.dag_id)
        return {(row.task_id, row.key): row.value for row in rows}


def task_output(printed: str) -> str:
    """What a ``dag.test()`` run printed, made comparable across releases for substring checks.

    Airflow 3.0-3.2 print a task's exception through a rich traceback that wraps long messages at the
    console width, so runs of whitespace become one space. Airflow 3.0's in-process supervisor also logs
    every request of the task at debug level, among them ``MaskSecret(value=...)``, the task asking for a
    connection's password to be redacted: that line is Airflow's echo of the secret, not the task's
    output, and is left out (a deployment's supervisor omits the body).
    """
    lines = [line for line in printed.splitlines() if "MaskSecret(value=" not in line]
    return " ".join(" ".join(lines).split())


def manual_run_dag_run(when: datetime) -> SimpleNamespace:
    """The ``dag_run`` templates see in a manual run triggered at ``when`` (as from the REST API).

    On 3.x such a run has ``run_after`` and no logical date; on 2.x every run has a logical date (its
    ``execution_date``) and there is no ``run_after``.
    """
    if AIRFLOW_V_3_0_PLUS:
        return SimpleNamespace(run_after=when, logical_date=None)
    return SimpleNamespace(execution_date=when, logical_date=when)


def reschedules_of(dag_run: Any, tis: list[Any]) -> dict[str, list[datetime]]:
    """When each rescheduled task of a run asked to run again (``task_reschedule`` rows), in order, by task id.

    The rows name their task instance by its ``id`` on 3.x, by dag, run and task id on 2.x.
    """
    from airflow.models.taskreschedule import TaskReschedule
    from airflow.utils.session import create_session

    by_task: dict[str, list[datetime]] = {}
    with create_session() as session:
        for ti in tis:
            if AIRFLOW_V_3_0_PLUS:
                rows = session.query(TaskReschedule).filter(TaskReschedule.ti_id == ti.id)
            else:
                rows = session.query(TaskReschedule).filter(
                    TaskReschedule.dag_id == dag_run.dag_id,
                    TaskReschedule.run_id == dag_run.run_id,
                    TaskReschedule.task_id == ti.task_id,
                )
            dates = sorted(row.reschedule_date for row in rows)
            if dates:
                by_task[ti.task_id] = dates
    return by_task


@dataclass
class RunResult:
    """What a ``dag.test()`` run left behind."""

    state: str
    states: dict[str, str]
    tries: dict[str, int]
    xcoms: dict[tuple[str, str], Any]
    reschedules: dict[str, list[datetime]]

    @classmethod
    def of(cls, dag_run: Any) -> RunResult:
        """Read a finished run's task states, tries, XComs and reschedules from the metadata database."""
        tis = dag_run.get_task_instances()
        return cls(
            state=str(dag_run.state),
            states={ti.task_id: str(ti.state) for ti in tis},
            tries={ti.task_id: ti.try_number for ti in tis},
            xcoms=xcoms_of(dag_run),
            reschedules=reschedules_of(dag_run, tis),
        )

    def xcom(self, task_id: str, key: str = "return_value") -> Any:
        return self.xcoms.get((task_id, key))


# What the run_dag fixture gives (tests/airflow/conftest.py): run_dag(dag_id, **conf) -> RunResult.
RunDag = Callable[..., RunResult]
