# [START testing_conftest]
"""Airflow reads its settings when it is imported: point it at a throw-away home before any test imports it."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

PROJECT = Path(__file__).parents[1]
os.environ["AIRFLOW_HOME"] = str(PROJECT / ".airflow-home")  # SQLite database and logs; git-ignore it
os.environ["AIRFLOW__CORE__DAGS_FOLDER"] = str(PROJECT / "dags")
os.environ["AIRFLOW__CORE__LOAD_EXAMPLES"] = "False"


@pytest.fixture(scope="session")
def airflow_db():
    """A migrated metadata database, once per session: dag.test() records its runs there."""
    subprocess.run([sys.executable, "-m", "airflow", "db", "migrate"], check=True, capture_output=True)


# [END testing_conftest]
