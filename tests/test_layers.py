"""The runtime package has no import circle (its layers, which point down, are import-linter's: ``make lint``).

import-linter reads imports as Python's ``import`` statements make them; the circles are read here too, because
some were closed by ``importlib.import_module``.

The imports are read from the source with ``ast``, so every import counts wherever it stands: at module level,
inside a function, under ``TYPE_CHECKING``, relative or absolute, and ``importlib.import_module("...")`` with a
literal name. An edge goes to the module an import names (``from a.b import c`` is an edge to ``a.b``, and to
``a.b.c`` when that is a module); the package ``__init__`` files Python runs on the way are not edges, as in
``farm-studio look``. The sandbox is a program of its own beside the runtime package (``tests/sandbox/test_layers.py``
checks its parts), so its modules are not read here.
"""

from __future__ import annotations

import ast
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest

import airflow_provider_analytics

PACKAGE_DIR = Path(airflow_provider_analytics.__file__).parent
PACKAGE = airflow_provider_analytics.__name__
OUTSIDE_THE_RUNTIME = (f"{PACKAGE}.sandbox",)


def _module_name(path: Path, root: Path, package: str) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join([package, *parts])


def _within(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(prefix + ".")


def _imported_names(tree: ast.Module, module: str, is_package: bool) -> Iterator[str]:
    """Every module name ``tree`` imports, anywhere in it; ``from x import y`` gives ``x`` and ``x.y``."""
    here = module if is_package else module.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = here
            for _ in range(node.level - 1):
                base = base.rpartition(".")[0]
            source = (node.module or "") if node.level == 0 else ".".join(filter(None, [base, node.module]))
            yield source
            yield from (f"{source}.{alias.name}" for alias in node.names if alias.name != "*")
        elif isinstance(node, ast.Call) and _is_import_module(node.func) and node.args:
            first = node.args[0]
            if isinstance(first, ast.Constant) and isinstance(first.value, str):
                yield first.value if not first.value.startswith(".") else f"{here}{first.value}"


def _is_import_module(func: ast.expr) -> bool:
    if isinstance(func, ast.Attribute):
        return func.attr == "import_module"
    return isinstance(func, ast.Name) and func.id in {"import_module", "__import__"}


def import_graph(root: Path, package: str, outside: tuple[str, ...] = ()) -> dict[str, set[str]]:
    """Each module of the package under ``root`` (those under ``outside`` left out) -> the package's modules it
    imports.

    :param root: the package's folder.
    :param package: its import name.
    :param outside: module prefixes that are not part of the graph (neither read nor counted as targets).
    """
    sources = {_module_name(path, root, package): path for path in sorted(root.rglob("*.py"))}
    modules = {name: path for name, path in sources.items() if not any(_within(name, out) for out in outside)}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        imported = _imported_names(tree, name, path.name == "__init__.py")
        graph[name] = {target for target in imported if target in modules and target != name}
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of two or more modules (Tarjan), each sorted, the list sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:  # recursion depth is bounded by the package's ~100 modules
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found)


def described(group: list[str], graph: dict[str, set[str]]) -> list[str]:
    """A circle as the edges that tie it, ``a -> b``, for the failure message."""
    return [f"{source} -> {target}" for source in group for target in sorted(graph[source]) if target in group]


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    return import_graph(PACKAGE_DIR, PACKAGE, OUTSIDE_THE_RUNTIME)


def test_the_runtime_package_has_no_import_circle(graph: dict[str, set[str]]) -> None:
    found = ["circle: " + ", ".join(described(group, graph)) for group in circles(graph)]
    assert not found, "\n".join(found)


def test_the_graph_leaves_the_sandbox_out_and_reads_the_rest(graph: dict[str, set[str]]) -> None:
    # Guards the checks above: the graph has the runtime modules and the edges the code is known to have.
    assert not [name for name in graph if _within(name, f"{PACKAGE}.sandbox")]
    assert f"{PACKAGE}.wire.errors" in graph[f"{PACKAGE}.wire._error_answers"]
    assert f"{PACKAGE}._jobs.events" in graph[f"{PACKAGE}.operators.waiting"]


def _write(root: Path, files: dict[str, str]) -> None:
    for relative, text in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def test_the_reader_finds_a_circle_hidden_in_a_function_under_type_checking_or_by_import_module(
    tmp_path: Path,
) -> None:
    # The three places a circle hides in this package's history, each closing a circle of its own.
    _write(
        tmp_path,
        {
            "__init__.py": "",
            "low/__init__.py": "",
            "low/events.py": "from pkg.high.errors import Failed\n",
            "high/__init__.py": "",
            "high/errors.py": "def fields():\n    from ..low import events\n",
            "conn/__init__.py": "",
            "conn/config.py": "from .notes import name\n",
            "conn/notes.py": "import typing\nif typing.TYPE_CHECKING:\n    from pkg.conn.config import Like\n",
            "jobs/__init__.py": "",
            "jobs/job.py": "import importlib\nTRIGGER = importlib.import_module('pkg.jobs.trigger')\n",
            "jobs/trigger.py": "from . import job\n",
        },
    )
    graph = import_graph(tmp_path, "pkg")
    assert circles(graph) == [
        ["pkg.conn.config", "pkg.conn.notes"],
        ["pkg.high.errors", "pkg.low.events"],
        ["pkg.jobs.job", "pkg.jobs.trigger"],
    ]
    tied = described(circles(graph)[1], graph)
    assert tied == ["pkg.high.errors -> pkg.low.events", "pkg.low.events -> pkg.high.errors"]


def test_the_reader_leaves_out_what_is_outside(tmp_path: Path) -> None:
    _write(tmp_path, {"__init__.py": "", "a.py": "from pkg import b\n", "b.py": "import pkg.a\n"})
    assert circles(import_graph(tmp_path, "pkg")) == [["pkg.a", "pkg.b"]]
    assert circles(import_graph(tmp_path, "pkg", ("pkg.b",))) == []


def test_the_declared_layers_cover_every_part_of_the_runtime_package() -> None:
    """A new folder or top-level module is placed in pyproject.toml's layers, or import-linter would not check it."""
    contracts = tomllib.loads((PACKAGE_DIR.parent / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    layers = next(contract for contract in contracts if contract["type"] == "layers")
    declared = {part.strip() for layer in layers["layers"] for part in layer.split("|")}
    parts = {
        path.stem if path.is_file() else path.name
        for path in PACKAGE_DIR.iterdir()
        if (path.suffix == ".py" and path.stem != "__init__") or (path / "__init__.py").is_file()
    }
    assert parts - {"sandbox"} == declared
