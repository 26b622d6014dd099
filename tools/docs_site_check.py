"""After ``make docs``: the reference holds the public surface and nothing internal, and every guide is there.

Sphinx already fails the build on a broken reference or include; this checks what a build cannot know it
should have:

- every name of docs/public-surface.txt (``module:Name``) has a reference entry, under its module or, for a
  re-export, where it is defined (``wire:AnalyticsClient`` is documented as ``wire.client.AnalyticsClient``);
- the sandbox's public classes (it keeps its own surface: every class whose name and module path have no
  leading ``_``, limited to ``__all__`` where a module has one) have one too;
- no internal module (a dotted-path component starting with ``_``) has a reference page;
- every guide page the documentation issue asks for is there.

The source is read with ``ast``; nothing of the package is imported.

Usage: ``python tools/docs_site_check.py build/docs/html`` (exit status 1 and a list when something is missing).
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

from sphinx.util.inventory import InventoryFile

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "airflow_provider_analytics"
SURFACE = ROOT / "docs" / "public-surface.txt"
SANDBOX = "airflow_provider_analytics.sandbox"
REFERENCE_ROLES = ("py:class", "py:exception", "py:function", "py:data", "py:attribute")
GUIDES = [
    "getting-started",
    "connection",
    "guides/index",
    "guides/execute-workflow",
    "guides/create-workflow",
    "guides/generate-report",
    "guides/download-report",
    "guides/create-chart",
    "guides/get-chart-data",
    "guides/connect-data-source",
    "guides/create-dashboard",
    "guides/update-dashboard",
    "guides/apply-definitions",
    "guides/export-definitions",
    "guides/review-definitions",
    "guides/data-source-synced",
    "guides/workflow-execution-sensor",
    "hook",
    "compatibility",
    "deployment",
    "metrics",
    "object-storage",
    "events",
    "lineage",
    "testing",
    "performance",
    "troubleshooting",
    "changelog",
    "reference",
    "api-contract",
    "operators",
    "sandbox",
]


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def declared_all(tree: ast.Module) -> set[str] | None:
    for statement in tree.body:
        if isinstance(statement, ast.Assign) and any(
            isinstance(target, ast.Name) and target.id == "__all__" for target in statement.targets
        ):
            return set(ast.literal_eval(statement.value))
    return None


def modules() -> dict[str, ast.Module]:
    """Every module of the package, parsed, by dotted name."""
    return {module_name(path): ast.parse(path.read_text(encoding="utf-8")) for path in sorted(PACKAGE.rglob("*.py"))}


def sandbox_classes(parsed: dict[str, ast.Module]) -> list[str]:
    """``module.Class`` for every public class defined in the sandbox."""
    found = []
    for module, tree in parsed.items():
        if not (module == SANDBOX or module.startswith(SANDBOX + ".")):
            continue
        if any(part.startswith("_") for part in module.split(".")):
            continue
        exported = declared_all(tree)
        for statement in tree.body:
            if not isinstance(statement, ast.ClassDef) or statement.name.startswith("_"):
                continue
            if exported is None or statement.name in exported:
                found.append(f"{module}.{statement.name}")
    return found


def listed_names() -> list[tuple[str, str]]:
    """``(module, Name)`` for each line of docs/public-surface.txt."""
    lines = SURFACE.read_text(encoding="utf-8").splitlines()
    pairs = [line.strip().partition(":") for line in lines if line.strip() and not line.startswith("#")]
    return [(module, name) for module, _, name in pairs]


def defined_at(parsed: dict[str, ast.Module], module: str, name: str) -> str:
    """``module.Name`` where a name is defined, following ``from ... import`` within the package."""
    for _ in range(10):
        tree = parsed.get(module)
        origin = None
        for node in ast.walk(tree) if tree else ():
            if isinstance(node, ast.ImportFrom) and any((a.asname or a.name) == name for a in node.names):
                [alias] = [a for a in node.names if (a.asname or a.name) == name]
                source = node.module or ""
                if node.level:
                    anchor = module.split(".")
                    is_package = (PACKAGE.joinpath(*anchor[1:]) / "__init__.py").is_file()
                    anchor = anchor if is_package else anchor[:-1]
                    source = ".".join([*anchor[: len(anchor) - (node.level - 1)], *([source] if source else [])])
                origin = (source, alias.name)
        if origin is None:
            break
        module, name = origin
    return f"{module}.{name}"


def internal_pages(modules_documented: set[str]) -> list[str]:
    """Reference pages of internal modules, which must have none."""
    found = []
    for module in sorted(modules_documented):
        if any(part.startswith("_") and not part.endswith("__") for part in module.split(".")):
            found.append(f"internal module with a reference page: {module}")
    return found


def main(site: Path) -> int:
    with (site / "objects.inv").open("rb") as stream:
        inventory = InventoryFile.load(stream, "", lambda base, target: target)
    documented = {name for kind in REFERENCE_ROLES for name in inventory.get(kind, {})}
    pages = set(inventory.get("std:doc", {}))
    parsed = modules()
    listed = listed_names()
    missing = [
        f"{module}:{name} (docs/public-surface.txt)"
        for module, name in listed
        if f"{module}.{name}" not in documented and defined_at(parsed, module, name) not in documented
    ]
    sandbox = sandbox_classes(parsed)
    missing += [name for name in sandbox if name not in documented]
    missing += [f"page {page}" for page in GUIDES if page not in pages]
    for name in missing:
        print(f"missing from the site: {name}")
    unwanted = internal_pages(set(inventory.get("py:module", {})))
    unwanted += [
        f"internal module with a reference page: {page}"
        for page in sorted(pages)
        if page.startswith("api/") and re.search(r"/_(?!_\w*__/)", page)
    ]
    for page in unwanted:
        print(f"must not be in the site: {page}")
    if missing or unwanted:
        print(f"docs site: {len(missing)} missing, {len(unwanted)} that must not be there")
        return 1
    print(
        f"docs site: all {len(listed)} public names and {len(sandbox)} sandbox classes in the reference, no "
        f"internal module pages, all {len(GUIDES)} guide pages there"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "build" / "docs" / "html"))
