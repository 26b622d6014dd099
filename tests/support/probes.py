"""Run a probe in a fresh Python process and read the one result line it prints."""

from __future__ import annotations

import json
import os
import subprocess
from typing import Any

from tests.support.names import CONN_ENV

RESULT_PREFIX = "RESULT "


def run_without_connection(argv: list[str], timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """Run ``argv`` with this environment (the session's AIRFLOW_HOME) minus ``analytics_default``; check it exits 0.

    :param argv: the command and its arguments.
    :param timeout: seconds before the probe counts as hung.
    """
    env = dict(os.environ)
    env.pop(CONN_ENV, None)
    completed = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=timeout, check=False)
    assert completed.returncode == 0, completed.stderr
    return completed


def printed_result(stdout: str) -> Any:
    """The JSON a probe printed after :data:`RESULT_PREFIX` (other lines, such as logs, are skipped).

    :param stdout: the probe's whole standard output.
    """
    line = next(line for line in stdout.splitlines() if line.startswith(RESULT_PREFIX))
    return json.loads(line[len(RESULT_PREFIX) :])
