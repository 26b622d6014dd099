"""Budgets in bytes as well as values: a file's aliases may not stand for more text than the largest file read, and
no definition or request body is serialised before its size is known to fit the platform's 1 MiB.

A 650 KB file of 100,000 aliases of one 50,000-character text stands for 5 GB: it passed the budget of values (an
alias of a text is one value), and a plan took 2.2 GB and 273 s to end in ``MemoryError``. The files and bodies that
did that run in a child process with its memory capped, so that a regression ends the child, not the test run.
"""

from __future__ import annotations

import resource
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from airflow_provider_analytics.definitions._load import load_definitions
from airflow_provider_analytics.hooks.analytics import AnalyticsHook
from airflow_provider_analytics.sandbox.server import SandboxServer
from tests.definitions.helpers import sent
from tests.definitions.test_hostile_files import HEAD, PROBE, problems_of, written
from tests.support.probes import RESULT_PREFIX, printed_result

MIB = 1024 * 1024


def aliases_of_one_text(count: int, length: int) -> str:
    """``count`` aliases of one text of ``length`` characters."""
    return f"{HEAD}      big: &big {'x' * length}\n      many: [{', '.join(['*big'] * count)}]\n"


def in_capped_child(code: str, *argv: str) -> Any:
    """Run ``code`` in a fresh interpreter with 1 GiB of address space; what it printed after ``RESULT``."""

    def capped() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (1024**3, 1024**3))

    child = subprocess.run(
        [sys.executable, "-c", code, *argv],
        capture_output=True,
        text=True,
        timeout=60,  # only a regression gets near this: each takes well under a second
        preexec_fn=capped,
        check=False,
    )
    assert child.returncode == 0, child.stderr
    return printed_result(child.stdout)


def test_a_file_that_stands_for_gigabytes_of_text_is_refused_while_it_is_read(tmp_path: Path) -> None:
    path = written(tmp_path, "aliases.yaml", aliases_of_one_text(100_000, 50_000))

    [outcome] = in_capped_child(PROBE, str(path))

    assert outcome == (
        f"AnalyticsInputError:   - {path}: line 5, column 1262: the file stands for over 10 MiB of text, counting"
        " each alias (*name, and each merge key <<) as all it names: write fewer aliases, or split the file"
    )


def test_a_plan_of_a_file_over_the_text_budget_sends_nothing(
    hook: AnalyticsHook, sandbox: SandboxServer, tmp_path: Path
) -> None:
    path = written(tmp_path, "aliases.yaml", aliases_of_one_text(11_000, 1_000))  # 11 MB from 56 KB

    with pytest.raises(ValueError, match="the file stands for over 10 MiB of text"):
        hook.plan_definitions(str(path))

    assert sent(sandbox) == []


def test_what_the_text_budget_allows_still_loads(tmp_path: Path) -> None:
    anchor = f"{HEAD}      big: &big {'x' * 1000}\n"
    objects = "".join(
        f"  - name: w{number}\n    configuration: {{many: [{', '.join(['*big'] * 1000)}]}}\n" for number in range(10)
    )
    path = written(tmp_path, "allowed.yaml", anchor + objects)  # 10 million characters in 51 KB, 1 MB an object

    loaded = load_definitions(path)

    assert [len(workflow.configuration.get("many", ())) for workflow in loaded.workflows] == [0] + [1000] * 10


def test_a_definition_too_large_to_send_is_refused_naming_where_it_passes_the_bound(tmp_path: Path) -> None:
    text = aliases_of_one_text(2_000, 1_000).replace("many:", "z_many:")  # 2 MB: two requests' worth
    path = written(tmp_path, "large.yaml", text)

    assert problems_of(path) == [
        f"{path}: workflows[0] 'hostile': the workflow takes over 1 MiB as JSON (the limit is passed at"
        " configuration.z_many[1044]), more than the platform accepts in one request: make it smaller"
    ]


BODY_PROBE = f"""
import json
from airflow_provider_analytics.wire import _endpoints as endpoints
from airflow_provider_analytics.wire.errors import AnalyticsInputError
try:
    endpoints.create_workflow("w", {{"many": ["x" * 50_000] * 100_000}})
    outcome = "built"
except Exception as error:
    outcome = type(error).__name__ + ": " + str(error)
print({RESULT_PREFIX!r} + json.dumps(outcome))
"""


def test_a_request_body_is_measured_without_being_serialised_whole() -> None:
    outcome = in_capped_child(BODY_PROBE)  # 5 GB as JSON: json.dumps of it ends in MemoryError under the cap

    assert outcome == (
        "AnalyticsInputError: the workflow takes over 1 MiB as JSON (the limit is passed at configuration.many[20]);"
        " the platform accepts at most 1 MiB in one request: make it smaller"
    )
    assert MIB // 50_002 == 20  # each text is 50,002 bytes with its quotes
