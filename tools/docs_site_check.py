"""After ``make docs``: the built site has a reference entry for every public class and a page for every guide.

Sphinx already fails the build on a broken reference or include; this checks what a build cannot know it
should have: that nothing public is missing. Public classes are read from the source (``ast``, no import):
every class whose name and module path have no leading ``_``, limited to ``__all__`` where a module has one
(the rule sphinx-autoapi follows). The guides are the pages the documentation issue asks for.

Usage: ``python tools/docs_site_check.py build/docs/html`` (exit status 1 and a list when something is missing).
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

from sphinx.util.inventory import InventoryFile

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "airflow_provider_analytics"
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
    "guides/data-source-synced",
    "hook",
    "compatibility",
    "deployment",
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


def public_classes() -> list[str]:
    """``module.Class`` for every public class defined in the package."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        module = module_name(path)
        if any(part.startswith("_") for part in module.split(".")):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        exported = declared_all(tree)
        for statement in tree.body:
            if not isinstance(statement, ast.ClassDef) or statement.name.startswith("_"):
                continue
            if exported is None or statement.name in exported:
                found.append(f"{module}.{statement.name}")
    return found


def main(site: Path) -> int:
    with (site / "objects.inv").open("rb") as stream:
        inventory = InventoryFile.load(stream, "", lambda base, target: target)
    documented = {name for kind in ("py:class", "py:exception") for name in inventory.get(kind, {})}
    pages = set(inventory.get("std:doc", {}))
    classes = public_classes()
    missing = [name for name in classes if name not in documented]
    missing += [f"page {page}" for page in GUIDES if page not in pages]
    for name in missing:
        print(f"missing from the site: {name}")
    if not missing:
        print(f"docs site: all {len(classes)} public classes in the reference, all {len(GUIDES)} guide pages there")
    else:
        print(f"docs site: {len(missing)} missing")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "build" / "docs" / "html"))
