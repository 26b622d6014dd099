"""Test set-up. Airflow reads its environment at import time, so it is fixed here, before any import of it."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

_AIRFLOW_HOME = Path(tempfile.mkdtemp(prefix="apa-airflow-home-"))
os.environ["AIRFLOW_HOME"] = str(_AIRFLOW_HOME)
os.environ["AIRFLOW__CORE__LOAD_EXAMPLES"] = "False"
os.environ["AIRFLOW__CORE__UNIT_TEST_MODE"] = "True"
os.environ["AIRFLOW__CORE__DAGS_FOLDER"] = str(Path(__file__).parent / "dags")
os.environ.pop("AIRFLOW_CONN_ANALYTICS_DEFAULT", None)

pytest_plugins = ["tests.support.fixtures"]


def pytest_sessionfinish(session: object, exitstatus: int) -> None:
    """Remove the session's AIRFLOW_HOME, whatever the outcome: a suite leaves nothing in the temp folder."""
    import shutil

    shutil.rmtree(_AIRFLOW_HOME, ignore_errors=True)
