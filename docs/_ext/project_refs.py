"""Resolve the provider's own names in the reference the way Python resolves them in its modules.

The reference is generated from the source by sphinx-autoapi, which writes names as the code does: ``T``
in a signature of ``wire/client.py`` means that module's ``T``, and ``:class:`ConflictError``` in a
docstring of ``hooks/analytics.py`` means the ``ConflictError`` that module imports. Sphinx looks an
unqualified name up across the whole site instead, so the eight modules that define a ``T`` make it
ambiguous and an imported name is "not found". Before Sphinx resolves references, this transform
rewrites such a name to the one object it means:

1. a name written in a docstring role is looked up in its class, then its module (annotations skip the
   class: Python evaluates them in the module's scope);
2. a name of Python's builtins in an annotation (``type[...]``) and a type variable (``T``, which the
   reference does not list) stay plain text, as Sphinx's own builtin resolver leaves builtins;
3. otherwise a name that exactly one of the provider's objects ends with (an imported name, a
   ``:mod:`..provider_info``` written relative to its package) links to that object;
4. a private name (``_Body``, a private base class) stays plain text: private names are not documented.

Anything else is left to Sphinx, so a name that means nothing, or more than one thing, still fails the
nitpicky build.
"""

from __future__ import annotations

import ast
import builtins
from collections import defaultdict
from pathlib import Path
from typing import Any

from docutils import nodes
from sphinx.addnodes import pending_xref
from sphinx.application import Sphinx
from sphinx.pycode import ModuleAnalyzer
from sphinx.transforms.post_transforms import SphinxPostTransform

PACKAGE = "airflow_provider_analytics"
BUILTINS = frozenset(dir(builtins))
TYPE_VARIABLE_FACTORIES = frozenset({"TypeVar", "ParamSpec", "TypeVarTuple"})


def type_variables(package_dir: Path) -> frozenset[str]:
    """The names the package's modules bind to a ``TypeVar``/``ParamSpec`` (``T``, ``ModelT``, ``Fetched``).

    :param package_dir: the package's folder.
    """
    names = set()
    for path in package_dir.rglob("*.py"):
        for statement in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(statement, ast.Assign) and isinstance(statement.value, ast.Call):
                factory = statement.value.func
                factory_name = factory.id if isinstance(factory, ast.Name) else getattr(factory, "attr", "")
                if factory_name in TYPE_VARIABLE_FACTORIES:
                    names.update(target.id for target in statement.targets if isinstance(target, ast.Name))
    return frozenset(names)


def module_name(package_dir: Path, path: Path) -> str:
    parts = path.relative_to(package_dir.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_names(package_dir: Path) -> dict[str, str]:
    """``{"<module>.<name as bound>": "<where it comes from>.<name>"}`` for every ``from ... import`` of the package.

    :param package_dir: the package's folder.
    """
    found = {}
    for path in package_dir.rglob("*.py"):
        module = module_name(package_dir, path)
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        for statement in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(statement, ast.ImportFrom):
                base = statement.module or ""
                if statement.level:  # relative: from .x import y, from .. import z
                    anchor = package.split(".")[: len(package.split(".")) - (statement.level - 1)]
                    base = ".".join([*anchor, *([base] if base else [])])
                for alias in statement.names:
                    found[f"{module}.{alias.asname or alias.name}"] = f"{base}.{alias.name}"
    return found


def skip_type_variables(app: Sphinx, what: str, name: str, obj: Any, skip: bool, options: Any) -> bool | None:
    """autoapi: leave type variables out of the reference (a ``T`` entry per module says nothing)."""
    if what == "data" and str(getattr(obj, "value", "")).split("(", 1)[0] in TYPE_VARIABLE_FACTORIES:
        return True
    return None


class ResolveProjectNames(SphinxPostTransform):
    """Rewrite unqualified or relative Python references to the provider's object they mean."""

    default_priority = 5  # before Sphinx's ReferencesResolver (10)

    def run(self, **kwargs: Any) -> None:
        objects = self.env.get_domain("py").objects  # type: ignore[attr-defined]
        self.type_variables = self.app.config.project_refs_type_variables
        self.imported = self.app.config.project_refs_imported_names
        by_last_part: dict[str, list[str]] = defaultdict(list)
        for fullname in objects:
            if fullname.startswith(PACKAGE + "."):
                by_last_part[fullname.rsplit(".", 1)[-1]].append(fullname)
        for node in list(self.document.findall(pending_xref)):
            if node.get("refdomain") == "py":
                self.resolve(node, objects, by_last_part)

    def resolve(self, node: pending_xref, objects: Any, by_last_part: dict[str, list[str]]) -> None:
        target = str(node["reftarget"])
        name = target.lstrip(".")
        if not name or (name in objects and name == target):
            return
        if name.startswith(PACKAGE + ".") and name == target:  # a name the code imported from where it is defined
            defined = self.follow_imports(name)
            if defined != name:
                node["reftarget"] = defined
            return
        in_docstring = "refexplicit" in node.attributes  # a role; annotations are written by Sphinx itself
        module, cls = node.get("py:module"), node.get("py:class")
        scopes = [f"{module}.{cls}" if cls else None, module] if in_docstring else [module]
        for scope in filter(None, scopes):
            if f"{scope}.{name}" in objects:
                node["reftarget"] = f"{scope}.{name}"
                return
            if f"{scope}.{name}" in self.imported:
                node["reftarget"] = self.follow_imports(f"{scope}.{name}")
                return
        if not in_docstring and (name in BUILTINS or name in self.type_variables):
            node.replace_self(node.children or [nodes.literal(text=name)])
            return
        matches = [full for full in by_last_part.get(name.rsplit(".", 1)[-1], []) if full.endswith("." + name)]
        local = [full for full in matches if module and full.startswith(f"{module}.")]
        if len(local) == 1 or len(matches) == 1:
            node["reftarget"] = (local or matches)[0]
            return
        last = name.rsplit(".", 1)[-1]
        if last.startswith("_") and not last.startswith("__"):
            node.replace_self(node.children or [nodes.literal(text=name)])

    def follow_imports(self, name: str) -> str:
        """Where a name bound by ``from ... import`` comes from, through re-exports (at most a few hops)."""
        for _ in range(5):
            if name not in self.imported:
                break
            name = self.imported[name]
        return name


def module_source(app: Sphinx, modname: str) -> tuple[str, dict[str, Any]] | None:
    """viewcode: a module's source and tags read from its file, so that viewcode never imports it (and Airflow).

    :param modname: the module's dotted name.
    """
    if modname != PACKAGE and not modname.startswith(PACKAGE + "."):
        return None
    package_dir = Path(app.config.project_refs_package_dir)
    parts = modname.split(".")[1:]
    candidates = [package_dir.joinpath(*parts, "__init__.py")]
    if parts:
        candidates.insert(0, package_dir.joinpath(*parts[:-1], parts[-1] + ".py"))
    for path in candidates:
        if path.is_file():
            source = path.read_text(encoding="utf-8")
            analyzer = ModuleAnalyzer.for_string(source, modname, str(path))
            analyzer.find_tags()
            return source, analyzer.tags
    return None


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_config_value("project_refs_package_dir", "", "env")
    app.connect("viewcode-find-source", module_source)
    app.add_config_value("project_refs_type_variables", frozenset(), "env")
    app.add_config_value("project_refs_imported_names", {}, "env")
    app.add_post_transform(ResolveProjectNames)
    app.connect("autoapi-skip-member", skip_type_variables)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
