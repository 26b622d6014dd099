"""Which tests touch Airflow: the ones that do run on every release (``make test-compat``), the rest once.

:data:`AIRFLOW_FREE` lists the test folders and modules of the layers that import no Airflow. The list is a
claim, and ``make test`` proves it each time: ``pytest --airflow-free=only`` collects only the listed tests
and runs them in processes where Airflow cannot be imported at all. In those processes

- an ``import airflow`` (of any of its modules, at module level, in a fixture or in a test body) raises
  ``ModuleNotFoundError`` and fails the test during which it was tried, even if the code caught the error;
- a child process (``python -c``, the ``airflow`` command) finds a stand-in ``airflow`` package first on
  ``PYTHONPATH`` that refuses to import and records the attempt, which fails the test that started it too;
- an ``airflow`` module loaded before the tests (by a plugin or ``conftest.py``) stops the run at start.

So a listed test whose module, fixtures or subprocesses reach Airflow fails ``make test`` instead of silently
losing its other releases. ``pytest --airflow-free=exclude`` (``make test``'s second run, and each release of
``make test-compat``) collects everything else; ``all`` (the default) the whole suite, as before. A listed
path that is not there (a test moved or renamed) stops an ``only`` or ``exclude`` run, so the list cannot
shrink unseen; a new test is not listed, so it runs on every release until someone lists it.
"""

from __future__ import annotations

import importlib.abc
import os
import shutil
import sys
import tempfile
import traceback
from collections.abc import Generator, Sequence
from importlib.machinery import ModuleSpec
from pathlib import Path
from types import ModuleType

import pytest

TESTS = Path(__file__).resolve().parents[1]
# Relative to tests/: a folder takes everything under it. Add a folder or module here once its tests pass
# with --airflow-free=only; a listed test that reaches Airflow fails that run, never drops out quietly.
AIRFLOW_FREE: tuple[str, ...] = (
    # The metrics page against the names in the source.
    "metrics/test_metrics_page.py",
    # The sandbox server, through raw httpx.
    "sandbox",
    # The clients without Airflow (the other modules of wire/ go through a hook, a trigger or a child process
    # that imports the provider's Airflow side).
    "wire/test_endpoints.py",
    "wire/test_errors.py",
    "wire/test_hostile_answers.py",
    "wire/test_lifecycle_headers.py",
    "wire/test_long_cursors.py",
    "wire/test_long_retry_after.py",
    "wire/test_non_finite_numbers.py",
    "wire/test_observer.py",
    "wire/test_pagination.py",
    "wire/test_platform_text_errors.py",
    "wire/test_properties.py",
    "wire/test_properties_calls.py",
    "wire/test_properties_downloads.py",
    "wire/test_properties_socket.py",
    "wire/test_proxies_from_environment.py",
    "wire/test_retry.py",
    "wire/test_scrub_many_secrets.py",
    "wire/test_secret_rule.py",
    "wire/test_throttle.py",
    "wire/test_throttle_pauses.py",
    "wire/test_transfer_progress.py",
    "wire/test_transports.py",
    "wire/test_trickled_headers.py",
    "wire/test_unread_error_bodies.py",
    "wire/test_validation.py",
    "wire/test_deadline_steps.py",
    "wire/test_shared_limiter.py",
    "wire/test_store_faults.py",
    "wire/test_store_hostile.py",
    # The pure wait outcomes, checks that read the sources or the demo's environment, and this list's own.
    "test_airflow_free.py",
    "test_demo_env.py",
    "test_layers.py",
    "test_private_api_guard.py",
    "test_public_surface.py",
    "triggers/test_wait_outcomes.py",
)
OPTION = "--airflow-free"
ATTEMPTS_ENV = "APA_AIRFLOW_IMPORT_ATTEMPTS"  # the file a child process's stand-in airflow appends to
# The stand-in `airflow` package that children of an --airflow-free=only run find first on PYTHONPATH.
_CHILD_STANDIN = f"""\
import os, sys, traceback
with open(os.environ["{ATTEMPTS_ENV}"], "a") as attempts:
    attempts.write(f"a child process ({{sys.argv}}) imported airflow:\\n" + "".join(traceback.format_stack()) + "\\n")
raise ModuleNotFoundError("airflow is blocked: this test is listed in tests/support/airflow_free.py")
"""


def is_airflow_free(path: Path) -> bool:
    """Whether a test file or folder is listed in :data:`AIRFLOW_FREE` (or lies under a listed folder).

    :param path: a path under ``tests/``.
    """
    resolved = path.resolve()
    return any(resolved == TESTS / entry or (TESTS / entry) in resolved.parents for entry in AIRFLOW_FREE)


def _holds_airflow_free(path: Path) -> bool:
    """Whether a folder must be entered to reach a listed test (``tests/`` itself, say)."""
    resolved = path.resolve()
    return any(resolved in (TESTS / entry).parents for entry in AIRFLOW_FREE)


class _AirflowBlocker(importlib.abc.MetaPathFinder):
    """Refuses every ``airflow`` module and remembers who asked, so a caught refusal still fails the test."""

    def __init__(self) -> None:
        self.attempts: list[str] = []

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        if fullname != "airflow" and not fullname.startswith("airflow."):
            return None
        stack = "".join(traceback.format_stack(limit=12))
        self.attempts.append(f"import {fullname}:\n{stack}")
        raise ModuleNotFoundError(f"{fullname} is blocked: this test is listed in tests/support/airflow_free.py")


_BLOCKER = pytest.StashKey[_AirflowBlocker]()
_CHILD_ATTEMPTS = pytest.StashKey[Path]()


def pytest_addoption(parser: pytest.Parser) -> None:
    """Add ``--airflow-free=all|only|exclude``.

    :param parser: pytest's option parser.
    """
    parser.addoption(
        OPTION,
        choices=("all", "only", "exclude"),
        default="all",
        help="only: the tests listed in tests/support/airflow_free.py, with Airflow unimportable; "
        "exclude: every other test (what make test-compat runs on each release); all (the default): both",
    )


def pytest_configure(config: pytest.Config) -> None:
    """In ``only`` mode: refuse to start if Airflow is loaded already, then block it here and in children.

    :param config: the pytest configuration.
    """
    missing = [entry for entry in AIRFLOW_FREE if not (TESTS / entry).exists()]
    if missing and config.getoption(OPTION) != "all":
        raise pytest.UsageError(f"tests/support/airflow_free.py lists what is not there: {', '.join(missing)}")
    if config.getoption(OPTION) != "only":
        return
    loaded = sorted(name for name in sys.modules if name == "airflow" or name.startswith("airflow."))
    if loaded:
        raise pytest.UsageError(
            f"{OPTION}=only: Airflow was imported before the tests ({', '.join(loaded[:5])}); a plugin or "
            "conftest.py imports it, so no test can be proven free of it"
        )
    blocker = _AirflowBlocker()
    sys.meta_path.insert(0, blocker)
    config.stash[_BLOCKER] = blocker
    standin = Path(tempfile.mkdtemp(prefix="apa-no-airflow-"))
    (standin / "airflow").mkdir()
    (standin / "airflow" / "__init__.py").write_text(_CHILD_STANDIN)
    attempts = standin / "attempts.txt"
    attempts.touch()
    os.environ[ATTEMPTS_ENV] = str(attempts)
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(standin), os.environ.get("PYTHONPATH")]))
    config.stash[_CHILD_ATTEMPTS] = attempts


def pytest_unconfigure(config: pytest.Config) -> None:
    """Remove the stand-in package's folder: a suite leaves nothing in the temporary folder.

    :param config: the pytest configuration.
    """
    attempts = config.stash.get(_CHILD_ATTEMPTS, None)
    if attempts is not None:
        shutil.rmtree(attempts.parent, ignore_errors=True)


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """Collect only the listed tests (``only``) or only the others (``exclude``).

    :param collection_path: a file or folder pytest is about to collect.
    :param config: the pytest configuration.
    """
    mode = config.getoption(OPTION)
    if mode == "all" or TESTS not in [collection_path.resolve(), *collection_path.resolve().parents]:
        return None
    if mode == "only":
        return None if is_airflow_free(collection_path) or _holds_airflow_free(collection_path) else True
    return True if is_airflow_free(collection_path) else None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Deselect what a path given on the command line brought in past :func:`pytest_ignore_collect`.

    :param config: the pytest configuration.
    :param items: the collected tests, narrowed in place.
    """
    mode = config.getoption(OPTION)
    if mode == "all":
        return
    wanted = {path: is_airflow_free(path) == (mode == "only") for path in {item.path for item in items}}
    dropped = [item for item in items if not wanted[item.path]]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = [item for item in items if wanted[item.path]]


def _take_attempts(config: pytest.Config) -> list[str]:
    """The Airflow imports tried (here and in children) since the last call; empty outside ``only`` mode."""
    blocker = config.stash.get(_BLOCKER, None)
    if blocker is None:
        return []
    attempts = [*blocker.attempts]
    blocker.attempts.clear()
    child_file = config.stash[_CHILD_ATTEMPTS]
    if child_file.stat().st_size:
        attempts.append(child_file.read_text())
        child_file.write_text("")
    return attempts


def _fail_on_attempts(report: pytest.CollectReport | pytest.TestReport, config: pytest.Config, what: str) -> None:
    """Turn a report into a failure naming the Airflow imports tried since the last report, if any were.

    :param report: the collection's or the test phase's report, changed in place.
    :param config: the pytest configuration.
    :param what: the test or module and the phase, for the message.
    """
    attempts = _take_attempts(config)
    if attempts:
        report.outcome = "failed"
        report.longrepr = (
            f"{what} is listed in tests/support/airflow_free.py but tried to import Airflow; remove it from the "
            "list or from Airflow:\n\n" + "\n".join(attempts)
        )


@pytest.hookimpl(wrapper=True)
def pytest_make_collect_report(
    collector: pytest.Collector,
) -> Generator[None, pytest.CollectReport, pytest.CollectReport]:
    """Fail the collection of a listed module that tried to import Airflow, even where it caught the error.

    :param collector: the module (or folder) being collected.
    """
    report = yield
    _fail_on_attempts(report, collector.config, f"{collector.nodeid} (its import)")
    return report


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """Fail the phase (set-up, call, teardown) of a test during which something tried to import Airflow.

    :param item: the test.
    :param call: the phase's outcome.
    """
    report = yield
    _fail_on_attempts(report, item.config, f"{item.nodeid} ({call.when})")
    return report
