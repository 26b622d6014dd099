"""Every Python snippet the README and the documentation site show runs here, against the sandbox.

A snippet is either a fenced ```` ```python ```` block in ``README.md`` or ``docs/**/*.md`` (run in order, one
namespace per file, as a reader runs them), or a file under ``docs/snippets/`` that a page includes. The
example DAGs the operator guides include are run by ``tests/test_example_dags.py``, ``make demo`` and
``make e2e``. Breaking a snippet fails here; a page that includes a marker the file no longer has fails
``make docs``.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from airflow_provider_analytics.sandbox.server import SandboxServer
from airflow_provider_analytics.version_compat import AIRFLOW_V_3_0_PLUS, AIRFLOW_V_3_1_PLUS, HAS_TASK_RETRY_POLICIES

ROOT = Path(__file__).resolve().parents[2]
SNIPPETS = ROOT / "docs" / "snippets"
FENCED_PYTHON = re.compile(r"^```python\n(.*?)^```$", re.MULTILINE | re.DOTALL)


def markdown_sources() -> list[Path]:
    """The Markdown a reader sees: the README and the site's pages (not the generated reference)."""
    pages = [path for path in (ROOT / "docs").rglob("*.md") if "api" not in path.relative_to(ROOT / "docs").parts]
    return [ROOT / "README.md", *sorted(pages)]


def python_blocks(path: Path) -> list[str]:
    return FENCED_PYTHON.findall(path.read_text(encoding="utf-8"))


WITH_BLOCKS = [path for path in markdown_sources() if python_blocks(path)]


def test_the_readme_shows_python_that_this_module_runs() -> None:
    assert ROOT / "README.md" in WITH_BLOCKS  # the ten-line example; if it moved, keep it run somewhere


@pytest.mark.parametrize("page", WITH_BLOCKS, ids=lambda path: str(path.relative_to(ROOT)))
def test_python_blocks_of_a_page_run(page: Path, sandbox: SandboxServer, tmp_path: Path, monkeypatch: Any) -> None:
    blocks = python_blocks(page)
    if not AIRFLOW_V_3_0_PLUS and any("from airflow.sdk import" in block for block in blocks):
        pytest.skip("the page's Python imports airflow.sdk, which Airflow 2 does not have")
    if not HAS_TASK_RETRY_POLICIES and any("operators.retry_policy import" in block for block in blocks):
        pytest.skip("the page's Python uses a task retry policy, which needs Airflow 3.3")
    if not AIRFLOW_V_3_1_PLUS and any("operators.hitl import" in block for block in blocks):
        pytest.skip("the page's Python uses Airflow's human-in-the-loop operators, which need Airflow 3.1")
    monkeypatch.chdir(tmp_path)  # a block that writes a file writes it here
    namespace: dict[str, Any] = {"__name__": f"snippets_of_{page.stem}"}
    for number, block in enumerate(blocks, start=1):
        code = compile(block, f"{page.relative_to(ROOT)} (python block {number})", "exec")
        exec(code, namespace)


def _load(path: Path) -> Any:
    spec = importlib.util.spec_from_file_location(f"snippet_{path.stem}", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_hook_in_a_task(sandbox: SandboxServer, tmp_path: Path) -> None:
    refresh_and_export = _load(SNIPPETS / "hook_in_a_task.py").refresh_and_export
    result = refresh_and_export.function("2026-11-23", str(tmp_path))
    assert result["execution"] == sandbox.state.executions()[0]["id"]
    assert result["workflows"] == len(sandbox.state.workflows(workspace_id="ws_default"))
    assert result["revenue"] > 0
    [report] = sandbox.state.reports()
    assert Path(result["file"]).parent == tmp_path
    assert Path(result["file"]).stat().st_size == report["size_bytes"]
    assert result["sha256"] == report["sha256"]


READ_BACK = textwrap.dedent(
    """
    import json, sys
    from airflow_provider_analytics.hooks.analytics import AnalyticsHook

    for conn_id in sys.argv[1:]:
        with AnalyticsHook(conn_id) as hook:
            config = hook.client.config
            print("READ " + json.dumps([conn_id, config.base_url, config.workspace_id, config.timeout, hook.ui_url]))
    """
)


def test_the_connection_forms_parse() -> None:
    """``source`` the page's exports, then read both connections as a task would (no request is sent)."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("AIRFLOW_CONN_")}
    script = f'set -eu; source "$1"; shift; exec "{sys.executable}" -c "$READ_BACK" "$@"'
    answer = subprocess.run(
        ["bash", "-c", script, "bash", str(SNIPPETS / "connection_env.sh"), "analytics_default", "analytics_finance"],
        env={**env, "READ_BACK": READ_BACK},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert answer.returncode == 0, answer.stderr[-3000:]
    lines = [line.removeprefix("READ ") for line in answer.stdout.splitlines() if line.startswith("READ ")]
    assert lines == [
        '["analytics_default", "https://api.analytics.example.com", "ws_finance", 30.0, '
        '"https://app.analytics.example.com"]',
        '["analytics_finance", "https://api.analytics.example.com", "ws_finance", 30.0, null]',
    ]


def test_the_testing_guide_runs_as_a_users_own_suite(tmp_path: Path) -> None:
    """docs/testing.md's files, copied into a project of their own and run with pytest as a user would."""
    project = tmp_path / "project"
    shutil.copytree(SNIPPETS / "testing", project, ignore=shutil.ignore_patterns("__pycache__"))
    env = {key: value for key, value in os.environ.items() if not key.startswith(("AIRFLOW", "PYTEST"))}
    answer = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert answer.returncode == 0, answer.stdout[-4000:] + answer.stderr[-2000:]
    assert "3 passed" in answer.stdout
