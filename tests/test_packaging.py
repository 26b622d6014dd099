"""What the distribution declares and loads: dependencies, the ``sandbox`` extra, one version everywhere.

The built wheel itself is checked by ``make dist`` and, in clean virtualenvs, by ``make dist-releases``
(tools/dist_check.py); these tests check the same rules on the source tree, each import in a fresh
interpreter where it matters.
"""

from __future__ import annotations

import ast
import importlib.metadata
import json
import os
import re
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path
from typing import Any

import airflow_provider_analytics
from airflow_provider_analytics import __version__, sandbox
from airflow_provider_analytics.hooks.analytics import AnalyticsHook
from airflow_provider_analytics.provider_info import get_provider_info
from airflow_provider_analytics.sandbox.server import SandboxServer
from airflow_provider_analytics.version_compat import AIRFLOW_V_3_0_PLUS
from tests.support.names import CONN_ENV, DISTRIBUTION, SERVER_STACK
from tests.support.probes import RESULT_PREFIX, printed_result, run_without_connection

PACKAGE_DIR = Path(airflow_provider_analytics.__file__).parent
PYPROJECT = PACKAGE_DIR.parent / "pyproject.toml"
# The provider's own layers; lineage/ belongs to the `openlineage` extra.
CORE_PACKAGES = ("hooks", "operators", "sensors", "triggers", "wire", "_jobs", "connection", "destinations")
COMMON_COMPAT = "airflow.providers.common.compat"
# The modules that refuse to import on Airflow 2 (version_compat.require_airflow_3), with a sentence.
NEEDS_AIRFLOW_3 = {"airflow_provider_analytics.triggers.asset_events"}


def _module_files() -> dict[str, Path]:
    """Every module of the package by dotted name (packages included), with its source file."""
    modules = {}
    for path in sorted(PACKAGE_DIR.rglob("*.py")):
        parts = path.relative_to(PACKAGE_DIR.parent).with_suffix("").parts
        modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return modules


def _runtime_modules() -> list[str]:
    """Every module of the wheel except the sandbox: what a DAG, the scheduler or a worker may import."""
    return [name for name in _module_files() if not name.startswith(sandbox.__name__)]


def _top_level_imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            # common-compat is a distribution of its own inside Airflow's namespace package.
            compat = node.module == COMMON_COMPAT or node.module.startswith(COMMON_COMPAT + ".")
            found.add("apache-airflow-providers-common-compat" if compat else node.module.split(".")[0])
    return found - set(sys.stdlib_module_names) - {"__future__", airflow_provider_analytics.__name__}


def _third_party_imports(folders: list[Path]) -> set[str]:
    return {name for folder in folders for path in folder.rglob("*.py") for name in _top_level_imports(path)}


def _pyproject() -> dict[str, Any]:
    return tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))


def _requirement_names(requirements: list[str]) -> set[str]:
    return {re.split(r"[\s<>=!~;\[]", requirement, maxsplit=1)[0].lower() for requirement in requirements}


# In a fresh interpreter: import Airflow's modules first (they may load FastAPI or pydantic themselves),
# then ours, and report only what ours added. A module this Airflow release does not have is one our code
# imports only on other releases (version_compat.py), so it is passed over.
_ADDED_BY_OUR_IMPORTS = textwrap.dedent(
    """
    import importlib, importlib.util, json, sys
    airflow_modules, our_modules = json.loads(sys.argv[1]), json.loads(sys.argv[2])
    for module in airflow_modules:
        try:
            present = importlib.util.find_spec(module) is not None
        except ModuleNotFoundError:  # a parent package is missing
            present = False
        if present:
            importlib.import_module(module)
    before = set(sys.modules)
    refused = []
    for module in our_modules:
        try:
            importlib.import_module(module)
        except ImportError as error:  # version_compat.require_airflow_3's refusal on Airflow 2, nothing else
            if "needs Airflow 3.0 or later" not in str(error):
                raise
            refused.append(module)
    added = sorted(set(sys.modules) - before)
    print(sys.argv[3] + json.dumps({"added": added, "refused": refused}))
    """
)


def _added_by(our_modules: list[str]) -> list[str]:
    """The modules that importing ``our_modules`` adds once every Airflow module they name is loaded.

    Only the modules that say they need Airflow 3 may refuse to import, and only on Airflow 2.
    """
    files = _module_files()
    airflow_modules = sorted(
        {
            node.module
            for name in our_modules
            for node in ast.walk(ast.parse(files[name].read_text(encoding="utf-8")))
            if isinstance(node, ast.ImportFrom)
            and node.level == 0
            and node.module
            and node.module.startswith("airflow.")
        }
    )
    argv = [sys.executable, "-c", _ADDED_BY_OUR_IMPORTS, json.dumps(airflow_modules), json.dumps(our_modules)]
    result = printed_result(run_without_connection([*argv, RESULT_PREFIX], timeout=180).stdout)
    assert not AIRFLOW_V_3_0_PLUS or result["refused"] == [], result["refused"]
    assert set(result["refused"]) <= NEEDS_AIRFLOW_3, result["refused"]
    added: list[str] = result["added"]
    return added


def _offending(added: list[str]) -> list[str]:
    return [
        name
        for name in added
        if name.split(".")[0] in SERVER_STACK or name == sandbox.__name__ or name.startswith(sandbox.__name__ + ".")
    ]


def test_runtime_modules_never_import_the_sandbox_or_a_server_stack() -> None:
    modules = _runtime_modules()
    assert {f"{airflow_provider_analytics.__name__}.{package}" for package in CORE_PACKAGES} <= set(modules)
    assert _offending(_added_by(modules)) == []


def test_the_import_probe_sees_the_sandbox() -> None:
    # Guards the probe above: the same check flags a sandbox import and the server stack it pulls in.
    offending = _offending(_added_by([*_runtime_modules()[:3], f"{sandbox.__name__}.server"]))
    assert f"{sandbox.__name__}.server" in offending
    assert any(name.split(".")[0] == "uvicorn" for name in offending)


def test_the_sandbox_extra_is_exactly_what_the_sandbox_imports() -> None:
    extras = _pyproject()["project"]["optional-dependencies"]
    imported = _third_party_imports([PACKAGE_DIR / "sandbox"]) - {"pytest"}  # pytest loads its own plugin
    assert imported == set(sandbox.EXTRA_MODULES)
    assert _requirement_names(extras["sandbox"]) == set(sandbox.EXTRA_MODULES)


def test_the_runtime_declares_exactly_what_it_imports() -> None:
    declared = _requirement_names(_pyproject()["project"]["dependencies"])
    imported = _third_party_imports([PACKAGE_DIR / package for package in CORE_PACKAGES])
    imported |= {name for path in PACKAGE_DIR.glob("*.py") for name in _top_level_imports(path)}
    # Distributions imported by another name: `apache-airflow` as `airflow`, `opentelemetry-api` as `opentelemetry`.
    distribution = {"airflow": "apache-airflow", "opentelemetry": "opentelemetry-api"}
    assert {distribution.get(name, name) for name in imported} == declared


_WITHOUT_EXTRA = (
    "import sys\nfor name in ('uvicorn', 'fastapi'):\n    sys.modules[name] = None  # as if not installed\n"
)
SAID_WITHOUT_EXTRA = (
    "the Analytics sandbox needs the 'sandbox' extra, which is not installed (missing: fastapi, uvicorn): "
    'pip install "airflow-provider-analytics[sandbox]"'
)


def _run_python(code: str, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {key: value for key, value in os.environ.items() if key != CONN_ENV}
    return subprocess.run(
        [sys.executable, "-c", code, *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=120, check=False
    )


def test_without_the_extra_importing_the_sandbox_says_what_to_install() -> None:
    done = _run_python(
        _WITHOUT_EXTRA
        + textwrap.dedent(
            """
            import airflow_provider_analytics.sandbox.pytest_plugin  # loads in every pytest run
            from airflow_provider_analytics.sandbox import SandboxDependencyError
            for attempt in (
                "from airflow_provider_analytics.sandbox.server import SandboxServer",
                "from airflow_provider_analytics.sandbox import SandboxServer",
                "import airflow_provider_analytics.sandbox.routes.charts",
            ):
                try:
                    exec(attempt)
                except SandboxDependencyError as error:
                    print(error)
                else:
                    print("imported")
            import airflow_provider_analytics.sandbox.faults, airflow_provider_analytics.sandbox.domain.store
            print("hooks:", [type(hook).__name__ for hook in sys.meta_path if "analytics" in type(hook).__module__])
            """
        )
    )
    assert done.returncode == 0, done.stderr
    # The refusal comes from the packages that need the extra (no import hook); the plain parts still import.
    assert done.stdout.splitlines() == [SAID_WITHOUT_EXTRA] * 3 + ["hooks: []"]


def test_without_the_extra_the_command_line_says_what_to_install() -> None:
    done = _run_python(
        _WITHOUT_EXTRA + "import runpy\nrunpy.run_module('airflow_provider_analytics.sandbox', run_name='__main__')",
    )
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.splitlines() == [SAID_WITHOUT_EXTRA]


def test_without_the_extra_only_tests_using_the_fixture_fail(tmp_path: Path) -> None:
    # A user's own pytest run, with the plugin loaded from the provider's entry point.
    (tmp_path / "conftest.py").write_text(_WITHOUT_EXTRA)
    (tmp_path / "test_user.py").write_text(
        "def test_unrelated():\n    assert True\n\n\ndef test_with_sandbox(analytics_sandbox):\n    pass\n"
    )
    done = _run_python(
        "import sys, pytest\nsys.exit(pytest.main(['-q', '-p', 'no:cacheprovider', '--rootdir', sys.argv[1]]))",
        str(tmp_path),
        cwd=tmp_path,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert re.search(r"^1 passed, 1 error", done.stdout.splitlines()[-1]), done.stdout
    assert SAID_WITHOUT_EXTRA in done.stdout


def test_distribution_provider_info_and_user_agent_share_one_version(analytics_sandbox: SandboxServer) -> None:
    assert re.fullmatch(r"\d+\.\d+\.\d+", __version__)
    assert importlib.metadata.version(DISTRIBUTION) == __version__, "stale install: run make install"
    assert get_provider_info()["versions"] == [__version__]
    with AnalyticsHook() as hook:
        next(iter(hook.list_workflows()))
    assert {request.headers["user-agent"] for request in analytics_sandbox.state.requests} == {
        f"{DISTRIBUTION}/{__version__}"
    }
