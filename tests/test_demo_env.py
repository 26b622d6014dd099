"""``make demo`` and the offline install install what the examples need from ``uv.lock``, not the dev tools.

The Makefile's own command is read (``make -n -B demo``) and asked of uv as an export of the lock, so the test
sees the packages that command installs without installing them (uv reads ``uv.lock`` only: no network).
"""

from __future__ import annotations

import re
import shlex
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
UV = ROOT / ".tools" / "bin" / "uv"
DEV_TOOLS = {"mypy", "ruff", "pytest", "sphinx", "matplotlib", "hypothesis", "moto", "cfn-lint"}
NEEDED = {"apache-airflow", "apache-airflow-providers-common-compat", "httpx", "fastapi", "uvicorn", "pyyaml"}


def demo_sync_command() -> list[str]:
    """The ``uv sync`` that ``make demo`` runs, without its environment assignments."""
    planned = subprocess.run(
        ["make", "-n", "-B", "demo"], cwd=ROOT, capture_output=True, text=True, check=True, timeout=60
    ).stdout
    syncs = [line for line in planned.splitlines() if re.search(r"\buv sync\b", line)]
    assert len(syncs) == 1, planned
    words = [word for word in shlex.split(syncs[0]) if not re.fullmatch(r"[A-Z_]+=.*", word)]
    return words


def exported_names(options: list[str]) -> set[str]:
    """The packages ``uv export`` with ``options`` lists from ``uv.lock``."""
    exported = subprocess.run(
        [str(UV), "export", *options, "--no-header", "--no-annotate"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout
    lines = [line for line in exported.splitlines() if line[:1].isalnum()]
    return {re.split(r"[=<>\[; ]", line, maxsplit=1)[0].lower() for line in lines}


def test_make_demo_installs_the_examples_needs_and_no_dev_tool() -> None:
    command = demo_sync_command()
    uv_at = next(index for index, word in enumerate(command) if word.endswith("uv"))
    names = exported_names([*command[uv_at + 2 :], "--no-hashes", "--no-emit-project"])  # after "uv sync"
    assert names >= NEEDED, sorted(NEEDED - names)
    assert not DEV_TOOLS & names, sorted(DEV_TOOLS & names)


def test_the_readmes_install_without_github_exports_the_locked_runtime() -> None:
    # The README's command, as a user types it; "-o <file>" dropped so that it prints instead.
    [line] = [line for line in (ROOT / "README.md").read_text().splitlines() if line.startswith("uv export ")]
    words = shlex.split(line)[2:]
    if "-o" in words:
        del words[words.index("-o") : words.index("-o") + 2]
    names = exported_names(words)
    assert names >= NEEDED, sorted(NEEDED - names)
    assert not DEV_TOOLS & names, sorted(DEV_TOOLS & names)
