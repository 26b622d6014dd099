"""The provider's public surface, written down: ``docs/public-surface.txt`` is every public name, one a line.

A public module is one whose dotted path has no component starting with ``_`` (CONTRIBUTING.md), outside the
sandbox (which keeps its own surface, docs/sandbox.md). Its public names are its ``__all__``, and the list is the
union of them as ``module:Name``: the contract from the first publication on. Everything here reads the source
with :mod:`ast`; nothing is imported. The checks:

- every public module declares a literal ``__all__`` (a list or tuple of strings, or an annotated empty list);
- the list is exactly the union of those ``__all__``s, so adding or removing a public name shows up in review
  and needs a CHANGELOG ``[Unreleased]`` entry naming it;
- every exception class of the provider (outside the sandbox, its name without a leading ``_``) is exported by
  exactly one public module, so a user can catch it and knows where from;
- every name of a public ``__all__`` is bound in its module (defined, imported, a submodule of the package, or
  imported under ``if TYPE_CHECKING`` and loaded by the module's ``__getattr__``).

After changing an ``__all__``: ``.venv/bin/python tests/test_public_surface.py --write`` rewrites the list.
"""

from __future__ import annotations

import ast
import builtins
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "airflow_provider_analytics"
SURFACE = ROOT / "docs" / "public-surface.txt"
SANDBOX = "airflow_provider_analytics.sandbox"
HEADER = """\
# The public surface of airflow-provider-analytics: one line per public name, `module:Name`, sorted.
#
# A public module has no dotted-path component starting with "_" (CONTRIBUTING.md) and is outside the sandbox
# (which keeps its own surface); its public names are its __all__. tests/test_public_surface.py checks that this
# file is exactly the union of those __all__s, and the API reference (docs/conf.py, tools/docs_site_check.py)
# shows these names and no others.
#
# This list is the contract from the first publication on. Adding or removing a line is a change users see: it
# needs an entry in CHANGELOG.md's [Unreleased] section naming it. Once published, a name that moves keeps
# answering at its old path, with a DeprecationWarning, for at least one release, and a name is removed only in a
# major release. Regenerate this file with `.venv/bin/python tests/test_public_surface.py --write`.
"""
BUILTIN_EXCEPTIONS = frozenset(
    name for name, value in vars(builtins).items() if isinstance(value, type) and issubclass(value, BaseException)
)
# A base class from another library (``AirflowException``, ``httpx.HTTPError``) is read by its name.
FOREIGN_EXCEPTION = re.compile(r"(Exception|Error)$")


@dataclass(frozen=True)
class Module:
    """One module of the package, parsed."""

    name: str
    path: Path
    tree: ast.Module

    @property
    def is_package(self) -> bool:
        return self.path.name == "__init__.py"

    @property
    def is_public(self) -> bool:
        in_sandbox = self.name == SANDBOX or self.name.startswith(SANDBOX + ".")
        private = any(part.startswith("_") and not part.endswith("__") for part in self.name.split("."))
        return not (in_sandbox or private)

    def resolve(self, source: str | None, level: int) -> str:
        """The absolute module a ``from <source> import ...`` of this module names."""
        if not level:
            return source or ""
        parts = self.name.split(".")
        anchor = parts if self.is_package else parts[:-1]
        anchor = anchor[: len(anchor) - (level - 1)]
        return ".".join([*anchor, *([source] if source else [])])


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@cache
def all_modules() -> dict[str, Module]:
    """Every module of the package, the sandbox included, by dotted name."""
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        name = module_name(path)
        found[name] = Module(name, path, ast.parse(path.read_text(encoding="utf-8"), filename=str(path)))
    return found


def public_modules() -> list[Module]:
    return [module for module in all_modules().values() if module.is_public]


def _all_statements(tree: ast.Module) -> list[ast.stmt]:
    """The module-level statements that bind ``__all__`` (assign, annotate, extend)."""
    found: list[ast.stmt] = []
    for statement in _top_level(tree):
        if isinstance(statement, ast.Assign):
            targets = statement.targets
        elif isinstance(statement, ast.AnnAssign | ast.AugAssign):
            targets = [statement.target]
        else:
            continue
        if any(isinstance(target, ast.Name) and target.id == "__all__" for target in targets):
            found.append(statement)
    return found


def literal_all(module: Module) -> tuple[list[str] | None, str]:
    """``(names, "")`` for a literal ``__all__``, else ``(None, why not)``."""
    statements = _all_statements(module.tree)
    if not statements:
        return None, "declares no __all__"
    if len(statements) > 1:
        lines = ", ".join(str(statement.lineno) for statement in statements)
        return None, f"binds __all__ more than once (lines {lines}); write it once, as a literal"
    [statement] = statements
    where = f"{module.path.relative_to(ROOT)}:{statement.lineno}"
    value = statement.value if isinstance(statement, ast.Assign | ast.AnnAssign) else None
    if not isinstance(value, ast.List | ast.Tuple):
        return None, f"builds __all__ instead of listing it ({where}); write a list of string literals"
    names = [
        element.value for element in value.elts if isinstance(element, ast.Constant) and isinstance(element.value, str)
    ]
    if len(names) != len(value.elts):
        return None, f"has something other than a string literal in __all__ ({where})"
    duplicates = sorted({name for name in names if names.count(name) > 1})
    if duplicates:
        return None, f"lists {', '.join(duplicates)} twice in __all__ ({where})"
    return names, ""


def surface() -> set[str]:
    """``module:Name`` for every name of every public module's ``__all__``."""
    return {f"{module.name}:{name}" for module in public_modules() for name in literal_all(module)[0] or []}


def render(names: set[str]) -> str:
    return HEADER + "".join(f"{line}\n" for line in sorted(names))


def listed(text: str) -> list[str]:
    """The names a surface file lists (comments and blank lines skipped)."""
    return [line.strip() for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]


def _top_level(tree: ast.Module) -> Iterator[ast.stmt]:
    """Module-level statements, including those inside ``if``/``try``/``with`` blocks."""
    pending: list[ast.stmt] = list(tree.body)
    while pending:
        statement = pending.pop(0)
        yield statement
        if isinstance(statement, ast.If | ast.With):
            pending += statement.body + (statement.orelse if isinstance(statement, ast.If) else [])
        elif isinstance(statement, ast.Try):
            pending += statement.body + statement.orelse + statement.finalbody
            pending += [inner for handler in statement.handlers for inner in handler.body]


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _target_names(target: ast.expr) -> Iterator[str]:
    if isinstance(target, ast.Name):
        yield target.id
    elif isinstance(target, ast.Tuple | ast.List):
        for element in target.elts:
            yield from _target_names(element)


@dataclass(frozen=True)
class Binding:
    """How a module binds a name: ``origin`` is ``module.Name`` it was imported from, else ``None``."""

    origin: str | None
    type_checking_only: bool


@cache
def bindings(module: Module) -> dict[str, Binding]:
    """Every name ``module`` binds at module level, and where an imported one comes from."""
    found: dict[str, Binding] = {}

    def visit(statements: list[ast.stmt], type_checking: bool) -> None:
        for statement in statements:
            if isinstance(statement, ast.If):
                visit(statement.body, type_checking or _is_type_checking(statement.test))
                visit(statement.orelse, type_checking)
                continue
            if isinstance(statement, ast.Try):
                for block in (statement.body, statement.orelse, statement.finalbody):
                    visit(block, type_checking)
                for handler in statement.handlers:
                    visit(handler.body, type_checking)
                continue
            if isinstance(statement, ast.With):
                visit(statement.body, type_checking)
                continue
            names: list[tuple[str, str | None]] = []
            if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                names = [(statement.name, None)]
            elif isinstance(statement, ast.Assign):
                names = [(name, None) for target in statement.targets for name in _target_names(target)]
            elif isinstance(statement, ast.AnnAssign | ast.AugAssign):
                names = [(name, None) for name in _target_names(statement.target)]
            elif isinstance(statement, ast.Import):
                names = [(alias.asname or alias.name.split(".")[0], None) for alias in statement.names]
            elif isinstance(statement, ast.ImportFrom):
                source = module.resolve(statement.module, statement.level)
                names = [(alias.asname or alias.name, f"{source}.{alias.name}") for alias in statement.names]
            for name, origin in names:
                earlier = found.get(name)
                if earlier is None or earlier.type_checking_only:
                    found[name] = Binding(origin, type_checking)

    visit(module.tree.body, False)
    return found


def defining(module: str, name: str) -> str:
    """``module.Name`` where a name a module exports is defined, following imports within the package."""
    modules = all_modules()
    for _ in range(10):
        if module not in modules:
            break
        binding = bindings(modules[module]).get(name)
        if binding is None or binding.origin is None:
            break
        module, _, name = binding.origin.rpartition(".")
    return f"{module}.{name}"


def exception_classes() -> list[str]:
    """``module.Class`` of every exception class outside the sandbox whose name has no leading ``_``.

    A class is an exception when a base is a builtin exception, a foreign class named ``...Exception`` or
    ``...Error``, or (through the package's imports) one of the package's own exception classes.
    """
    classes: dict[str, list[str]] = {}  # module.Class -> where each base is defined
    for module in all_modules().values():
        if module.name == SANDBOX or module.name.startswith(SANDBOX + "."):
            continue
        for statement in module.tree.body:
            if isinstance(statement, ast.ClassDef):
                bases: list[str] = []
                for node in statement.bases:
                    if isinstance(node, ast.Name) and node.id not in bindings(module):
                        bases.append(f"builtins.{node.id}")
                    elif isinstance(node, ast.Name):
                        bases.append(defining(module.name, node.id))
                    elif isinstance(node, ast.Attribute):
                        bases.append(f"{ast.unparse(node.value)}.{node.attr}")
                classes[f"{module.name}.{statement.name}"] = bases
    exceptions: set[str] = set()
    changed = True
    while changed:
        changed = False
        for cls, bases in classes.items():
            if cls in exceptions:
                continue
            for base in bases:
                short = base.rpartition(".")[2]
                own = base in classes
                foreign = not own and not base.startswith(PACKAGE.name + ".")
                builtin = foreign and base.rpartition(".")[0] in ("", "builtins") and short in BUILTIN_EXCEPTIONS
                if (own and base in exceptions) or builtin or (foreign and FOREIGN_EXCEPTION.search(short)):
                    exceptions.add(cls)
                    changed = True
                    break
    return sorted(cls for cls in exceptions if not cls.rpartition(".")[2].startswith("_"))


def _changes(appeared: set[str], disappeared: set[str]) -> str:
    lines = [f"  + {name}" for name in sorted(appeared)] + [f"  - {name}" for name in sorted(disappeared)]
    return "\n".join(lines)


def test_every_public_module_declares_a_literal_all() -> None:
    problems = []
    for module in public_modules():
        names, why = literal_all(module)
        if names is None:
            problems.append(f"  {module.name} ({module.path.relative_to(ROOT)}) {why}")
    if problems:
        pytest.fail(
            "every public module says what it exports with a literal __all__ (`__all__: list[str] = []` when it "
            "exports nothing), or its path gets a leading `_` (internal, CONTRIBUTING.md):\n" + "\n".join(problems),
            pytrace=False,
        )


def test_the_surface_list_is_the_union_of_the_public_alls() -> None:
    text = SURFACE.read_text(encoding="utf-8") if SURFACE.exists() else ""
    written, actual = set(listed(text)), surface()
    changes = _changes(actual - written, written - actual)
    if changes:
        pytest.fail(
            f"the public names changed: {len(actual - written)} appeared (+), {len(written - actual)} disappeared (-) "
            f"relative to {SURFACE.relative_to(ROOT)}:\n{changes}\n"
            "That is a change users see. If it is meant, rewrite the list (`.venv/bin/python "
            "tests/test_public_surface.py --write`) and name each of these in CHANGELOG.md's [Unreleased] section "
            "(Added for +, Removed or Deprecated for -); if not, put the __all__ back.",
            pytrace=False,
        )
    if text != render(actual):
        pytest.fail(
            f"{SURFACE.relative_to(ROOT)} lists the right names but not in the generated form (header, sorted, "
            "one a line, no duplicates): `.venv/bin/python tests/test_public_surface.py --write`",
            pytrace=False,
        )


def test_each_exception_class_is_exported_by_exactly_one_public_module() -> None:
    homes: dict[str, list[str]] = {cls: [] for cls in exception_classes()}
    for line in surface():
        module, _, name = line.partition(":")
        target = defining(module, name)
        if target in homes:
            homes[target].append(module)
    problems = [f"  {cls}: in no public __all__" for cls, where in homes.items() if not where]
    problems += [
        f"  {cls}: in {len(where)}: {', '.join(sorted(where))}" for cls, where in homes.items() if len(where) > 1
    ]
    assert homes, "found no exception class at all: the scan is broken"
    if problems:
        pytest.fail(
            "a user catches an exception by importing it, so each is exported by exactly one public module "
            "(wire/errors.py for client errors, operators/errors.py for task failures; CONTRIBUTING.md):\n"
            + "\n".join(problems),
            pytrace=False,
        )


def test_every_public_name_is_bound_in_its_module() -> None:
    problems = []
    for module in public_modules():
        bound = bindings(module)
        lazy = "__getattr__" in bound
        for name in literal_all(module)[0] or []:
            binding = bound.get(name)
            submodule = module.is_package and f"{module.name}.{name}" in all_modules()
            if submodule or (binding is not None and (lazy or not binding.type_checking_only)):
                continue
            why = "imported only under TYPE_CHECKING, and no __getattr__ loads it" if binding else "bound nowhere"
            problems.append(f"  {module.name}:{name} ({why})")
    if problems:
        pytest.fail(
            "each name in a public __all__ must be bound in its module (`from m import *` fails on one that is "
            "not): define or import it there, or take it out of __all__ and the list:\n" + "\n".join(problems),
            pytrace=False,
        )


def test_the_checks_catch_what_they_forbid() -> None:
    """The rules themselves, on modules written for the purpose."""

    def parsed(name: str, source: str) -> Module:
        return Module(name, PACKAGE / "probe.py", ast.parse(source))

    assert literal_all(parsed("p.a", "__all__ = ['A', 'B']"))[0] == ["A", "B"]
    assert literal_all(parsed("p.a", "__all__: list[str] = []"))[0] == []
    for source in (
        "X = 1",
        "__all__ = [n for n in dir()]",
        "__all__ = ['A', NAME]",
        "__all__ = ['A']\n__all__ += ['B']",
    ):
        assert literal_all(parsed("p.a", source))[0] is None, source
    assert not parsed("p._internal", "__all__ = ['A']").is_public
    lazy = bindings(parsed("p.a", "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from p.b import C\n"))
    assert lazy["C"] == Binding("p.b.C", type_checking_only=True)
    assert bindings(parsed("p.a", "from .b import C as D"))["D"].origin == "p.b.C"
    assert listed(render({"m:B", "m:A"})) == ["m:A", "m:B"]


def main(argv: list[str]) -> int:
    if argv != ["--write"]:
        print(f"usage: {Path(__file__).name} --write   (rewrites {SURFACE.relative_to(ROOT)} from the source)")
        return 2
    before = set(listed(SURFACE.read_text(encoding="utf-8"))) if SURFACE.exists() else set()
    actual = surface()
    SURFACE.write_text(render(actual), encoding="utf-8")
    modules = {line.partition(":")[0] for line in actual}
    print(f"{SURFACE.relative_to(ROOT)}: {len(actual)} names of {len(modules)} modules")
    if actual != before:
        print("name these in CHANGELOG.md's [Unreleased] section:\n" + _changes(actual - before, before - actual))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
