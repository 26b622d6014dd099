"""The sandbox's parts depend one way: ``domain`` and ``faults`` are plain Python, ``routes`` build on
them, ``http`` on all three.

Two kinds of check: which sub-packages each module imports (read from the source, so an import under
``TYPE_CHECKING`` counts too), and what importing the plain parts needs, in a fresh interpreter where
FastAPI, Starlette, pydantic and uvicorn cannot be imported (as without the ``sandbox`` extra).
"""

from __future__ import annotations

import ast
import json
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from airflow_provider_analytics import sandbox
from tests.support.probes import RESULT_PREFIX, printed_result, run_without_connection

SANDBOX_DIR = Path(sandbox.__file__).parent
# What each sub-package may import of the sandbox (besides the package itself, for require_dependencies).
MAY_IMPORT = {
    "domain": {"domain", "faults"},
    "faults": {"faults"},
    "routes": {"domain", "faults", "routes"},
    "http": {"domain", "faults", "routes", "http"},
}
# The only modules outside a sub-package: the command line, the pytest plugin and the documented import paths.
TOP_LEVEL = {"__init__", "__main__", "pytest_plugin", "server", "config"}
PLAIN_PARTS = ("domain", "faults")


def _modules(part: str) -> list[str]:
    return sorted(
        f"{sandbox.__name__}.{part}" + ("" if path.stem == "__init__" else f".{path.stem}")
        for path in (SANDBOX_DIR / part).glob("*.py")
    )


def _sandbox_parts_imported(path: Path) -> set[str]:
    """The sandbox sub-packages (or top-level modules) a source file imports, ``TYPE_CHECKING`` ones included."""
    names = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module == sandbox.__name__:
            names += [f"{node.module}.{alias.name}" for alias in node.names]  # from ...sandbox import faults
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.append(node.module)
        elif isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
    parts = {
        name[len(sandbox.__name__) + 1 :].split(".")[0] for name in names if name.startswith(sandbox.__name__ + ".")
    }
    return parts - {"require_dependencies"}  # the package's own check, which every part may call


def test_the_sandbox_is_made_of_its_parts() -> None:
    assert {path.stem for path in SANDBOX_DIR.glob("*.py")} == TOP_LEVEL
    assert {path.name for path in SANDBOX_DIR.iterdir() if path.is_dir() and path.name != "__pycache__"} == set(
        MAY_IMPORT
    )


@pytest.mark.parametrize("part", sorted(MAY_IMPORT))
def test_each_part_imports_only_the_parts_below_it(part: str) -> None:
    reached = {
        path.relative_to(SANDBOX_DIR).as_posix(): sorted(_sandbox_parts_imported(path) - MAY_IMPORT[part])
        for path in (SANDBOX_DIR / part).glob("*.py")
    }
    assert {module: parts for module, parts in reached.items() if parts} == {}


def test_the_import_reader_sees_an_edge_import() -> None:
    # Guards the check above: the gateway does import the routes' support and the domain.
    assert {"domain", "faults", "routes"} <= _sandbox_parts_imported(SANDBOX_DIR / "http" / "gateway.py")


_WITHOUT_SERVER_STACK = textwrap.dedent(
    """
    import importlib, json, sys
    for name in json.loads(sys.argv[1]):
        sys.modules[name] = None  # as if not installed
    import airflow_provider_analytics.sandbox
    before = set(sys.modules)
    refused = {}
    for module in json.loads(sys.argv[2]):
        try:
            importlib.import_module(module)
        except ImportError as error:
            refused[module] = f"{type(error).__name__}: {error}"
    added = sorted(set(sys.modules) - before)
    print(sys.argv[3] + json.dumps({"added": added, "refused": refused}))
    """
)


def _import_without_server_stack(modules: list[str]) -> dict[str, Any]:
    argv = [sys.executable, "-c", _WITHOUT_SERVER_STACK, json.dumps(sandbox.EXTRA_MODULES), json.dumps(modules)]
    result: dict[str, Any] = printed_result(run_without_connection([*argv, RESULT_PREFIX]).stdout)
    return result


def test_domain_and_faults_import_without_the_server_stack_or_the_edge() -> None:
    modules = [module for part in PLAIN_PARTS for module in _modules(part)]
    assert f"{sandbox.__name__}.domain.store" in modules
    assert f"{sandbox.__name__}.faults.hostile" in modules
    result = _import_without_server_stack(modules)
    assert result["refused"] == {}
    assert [
        name for name in result["added"] if name.startswith((f"{sandbox.__name__}.http", f"{sandbox.__name__}.routes"))
    ] == []


def test_the_edge_refuses_without_the_server_stack_and_says_what_to_install() -> None:
    # Guards the probe above: the same interpreter refuses the HTTP edge and the routes.
    modules = [f"{sandbox.__name__}.http.gateway", f"{sandbox.__name__}.routes.charts"]
    refused = _import_without_server_stack(modules)["refused"]
    assert isinstance(refused, dict)
    assert set(refused) == set(modules)
    assert all(
        said.startswith("SandboxDependencyError: ") and sandbox.INSTALL_EXTRA in said for said in refused.values()
    )
