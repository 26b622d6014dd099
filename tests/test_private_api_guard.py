"""No module of the package reads another library's private names (httpx, httpcore, Airflow above all).

A private attribute can change in any release, and the provider admits ranges of releases (``httpx>=0.27``,
``httpcore>=1.0``, ``apache-airflow>=2.11,<3.4``): one read of ``client._transport`` could break every
request the day a release moves it. The package's source is read with :mod:`ast`:

- the private names the provider once read (httpx's ``_transport`` and ``_mounts``, httpcore's ``_pool`` and
  ``_network_backend``, Airflow's ``_by_name`` and ``_by_uri``) appear nowhere, as an attribute or as a string,
  except Airflow's two in ``version_compat.ASSET_STATE_STORE_INTERNALS``, the one documented read (its tests:
  tests/triggers/test_asset_state_accessors.py);
- nothing imports a private module or name of httpx, httpcore or Airflow (``httpx._utils``);
- no attribute read, and no ``getattr``/``hasattr``/``setattr`` string, names a private attribute (``_x``,
  not ``__x__``) that the package does not define itself: a private name it reads is its own or nobody's.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import pytest

import airflow_provider_analytics

PACKAGE = Path(airflow_provider_analytics.__file__).parent
ONCE_READ = frozenset({"_transport", "_mounts", "_pool", "_network_backend", "_by_name", "_by_uri"})
# (file relative to the package, name): where a name of ONCE_READ may stand, and how often.
DOCUMENTED_READS = {("version_compat.py", "_by_name"): 1, ("version_compat.py", "_by_uri"): 1}
GUARDED_LIBRARIES = ("httpx", "httpcore", "airflow")
# Private names of other libraries the package may name, each with its reason.
ALLOWED_FOREIGN = {
    "_Decompress": "typeshed's name for the type of zlib.decompressobj(), in an annotation only (wire/_bodies.py)",
}
ATTRIBUTE_FUNCTIONS = frozenset({"getattr", "hasattr", "setattr", "delattr"})


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


@dataclass(frozen=True)
class Finding:
    """One private name in one place."""

    path: str
    line: int
    name: str
    why: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.name} ({self.why})"


def _defined_names(trees: dict[str, ast.Module]) -> set[str]:
    """Every name the package binds itself: functions, classes, assigned attributes and variables, arguments."""
    names: set[str] = set()
    for tree in trees.values():
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                names.add(node.name)
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store | ast.Del):
                names.add(node.attr)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.add(node.id)
            elif isinstance(node, ast.arg | ast.keyword) and node.arg:
                names.add(node.arg)
    return names


def _guarded_module(module: str | None) -> bool:
    return module is not None and module.split(".")[0] in GUARDED_LIBRARIES


def _private_imports(path: str, tree: ast.Module) -> list[Finding]:
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules = [(alias.name, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            modules = [(node.module or "", node.module or "")]
            modules += [(node.module or "", alias.name) for alias in node.names]
        else:
            continue
        for module, name in modules:
            if _guarded_module(module) and any(_private(part) for part in name.split(".")):
                found.append(Finding(path, node.lineno, name, f"a private part of {module.split('.')[0]}"))
    return found


def _attribute_function_name(call: ast.Call) -> str | None:
    """The name in ``getattr(obj, "name")`` and its siblings, when it is written out."""
    if not (isinstance(call.func, ast.Name) and call.func.id in ATTRIBUTE_FUNCTIONS and len(call.args) > 1):
        return None
    name = call.args[1]
    return name.value if isinstance(name, ast.Constant) and isinstance(name.value, str) else None


def scan(sources: dict[str, str]) -> list[Finding]:
    """Every private name the rules forbid in ``sources`` (file name relative to the package -> source).

    :param sources: the modules to read, all of one package (names defined in any of them count as its own).
    """
    trees = {path: ast.parse(source, filename=path) for path, source in sources.items()}
    own = _defined_names(trees) - ONCE_READ
    findings: list[Finding] = []
    for path, tree in trees.items():
        findings += _private_imports(path, tree)
        for node in ast.walk(tree):
            name: str | None = None
            if isinstance(node, ast.Attribute) and (isinstance(node.ctx, ast.Load) or node.attr in ONCE_READ):
                name = node.attr
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                name = node.value if node.value in ONCE_READ else None
            elif isinstance(node, ast.Call):
                name = _attribute_function_name(node)
            if name is None or not _private(name) or not isinstance(node, ast.expr):
                continue
            if name in ONCE_READ:
                findings.append(Finding(path, node.lineno, name, "a private name the provider once read"))
            elif name not in own and name not in ALLOWED_FOREIGN:
                findings.append(Finding(path, node.lineno, name, "private, and not defined by the package"))
    return findings


def _package_sources() -> dict[str, str]:
    return {str(path.relative_to(PACKAGE)): path.read_text(encoding="utf-8") for path in PACKAGE.rglob("*.py")}


def test_the_package_reads_no_private_name_of_another_library() -> None:
    findings = scan(_package_sources())
    documented = {(f.path, f.name) for f in findings if (f.path, f.name) in DOCUMENTED_READS}
    unexpected = [str(f) for f in findings if (f.path, f.name) not in DOCUMENTED_READS]
    assert unexpected == [], "\n".join(unexpected)
    counts = {key: sum(1 for f in findings if (f.path, f.name) == key) for key in DOCUMENTED_READS}
    assert counts == DOCUMENTED_READS, f"the documented read moved or grew: {counts}"
    assert documented == set(DOCUMENTED_READS)


CAUGHT = [
    pytest.param("pools = [http._transport, *http._mounts.values()]", "_transport", id="httpx-client-attribute"),
    pytest.param("backend = getattr(pool, '_network_backend', None)", "_network_backend", id="getattr-string"),
    pytest.param("pool._network_backend = wrapper", "_network_backend", id="assignment"),
    pytest.param("by_name = store._by_name", "_by_name", id="airflow-store"),
    pytest.param("from httpx._utils import get_environment_proxies", "httpx._utils", id="module"),
    pytest.param("import httpcore._backends.anyio", "httpcore._backends.anyio", id="import"),
    pytest.param("from airflow.sdk import _private_helper", "_private_helper", id="private-member"),
    pytest.param("value = conf._sections", "_sections", id="foreign-attribute"),
    pytest.param("ok = hasattr(hook, '_get_connection_from_env')", "_get_connection_from_env", id="hasattr"),
]


@pytest.mark.parametrize(("source", "name"), CAUGHT)
def test_the_scan_catches_what_it_forbids(source: str, name: str) -> None:
    """The rules themselves: each line the package once had, or could grow, is found."""
    found = [f.name for f in scan({"probe.py": source})]
    assert name in found, found


def test_the_scan_leaves_the_package_s_own_private_names_and_dunders_alone() -> None:
    source = (
        "from airflow import __version__\n"
        "class Client:\n"
        "    def __init__(self):\n"
        "        self._http = None\n"
        "    def close(self):\n"
        "        return self._http, getattr(self, '_http'), type(self).__name__\n"
    )
    assert scan({"probe.py": source}) == []
