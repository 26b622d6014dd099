"""What ``make dist-releases``'s two parts share (tools/dist_check.py, tools/dist_releases.py): names, running a
command in a clean environment, and a sandbox server started from an installed venv and stopped by its pid.

Standard library only, like both users of it.
"""

from __future__ import annotations

import hashlib
import os
import select
import signal
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "airflow_provider_analytics"
DISTRIBUTION = "airflow-provider-analytics"
SANDBOX = f"{PACKAGE}.sandbox"


class CheckFailed(Exception):
    """One check did not hold; the message says which and shows the evidence."""


def clean_env(**extra: str) -> dict[str, str]:
    """This process's environment without anything that would point a tool at another Airflow or venv."""
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("AIRFLOW", "VIRTUAL_ENV", "PYTHON", "UV_PROJECT")) and key != "CONDA_PREFIX"
    }
    return {**env, **extra}


def run(command: list[str | Path], *, cwd: Path, env: dict[str, str] | None = None, timeout: float = 900) -> str:
    """Run a command; its stdout, or :class:`CheckFailed` with the tail of its output."""
    done = subprocess.run(
        [str(part) for part in command],
        cwd=cwd,
        env=env if env is not None else clean_env(),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    if done.returncode != 0:
        output = (done.stdout + done.stderr).strip().splitlines()[-25:]
        raise CheckFailed(f"{' '.join(map(str, command))} exited {done.returncode}:\n  " + "\n  ".join(output))
    return done.stdout


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@contextmanager
def sandbox(python: Path, *options: str, cwd: Path, env: dict[str, str], log: Path) -> Iterator[tuple[int, str]]:
    """Run ``python -m airflow_provider_analytics.sandbox --port 0 *options``; yields its pid and connection JSON.

    On leaving, SIGTERM goes to that pid and the server must exit 0 within 20 s; on an error inside the block
    (or a server that does not stop) the pid is killed, so nothing is left running either way.
    """
    # stderr to a file: a pipe nobody reads could fill up and block the server.
    with log.open("wb") as stderr:
        command = [str(python), "-m", SANDBOX, "--port", "0", *options]
        process = subprocess.Popen(command, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=stderr)
        try:
            assert process.stdout is not None
            ready, _, _ = select.select([process.stdout], [], [], 60)
            line = process.stdout.readline().decode() if ready else ""
            if not line.startswith("{"):
                tail = log.read_text(errors="replace").strip().splitlines()[-10:]
                raise CheckFailed(f"the sandbox printed no connection within 60 s: {line!r}\n  " + "\n  ".join(tail))
            yield process.pid, line.strip()
            os.kill(process.pid, signal.SIGTERM)
            status = process.wait(timeout=20)
            if status != 0:
                raise CheckFailed(f"the sandbox (pid {process.pid}) exited {status} on SIGTERM")
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
            if process.stdout is not None:
                process.stdout.close()
