"""Sphinx configuration of the documentation site (``make docs``; CONTRIBUTING.md, "Documentation")."""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path
from typing import Any

from sphinx.application import Sphinx
from sphinx.util.docstrings import prepare_docstring

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(DOCS / "_ext"))

import project_refs  # noqa: E402

from airflow_provider_analytics import __version__  # noqa: E402  (plain module: imports no Airflow)

project = "airflow-provider-analytics"
author = "airflow-provider-analytics contributors"
copyright = "2026, airflow-provider-analytics contributors"
release = __version__
version = __version__

extensions = [
    "myst_parser",
    "autoapi.extension",
    "sphinx.ext.viewcode",
    "project_refs",  # _ext/project_refs.py: the provider's unqualified names, resolved as Python does
]

source_suffix = {".md": "markdown", ".rst": "restructuredtext"}
root_doc = "index"
exclude_patterns = ["_includes", "snippets"]  # included into pages, not pages of their own

# Every cross-reference must resolve: make docs runs with -n -W --keep-going.
nitpicky = True
# Names of other projects. There is no network for intersphinx inventories, so references into the standard
# library and third-party packages stay plain text. Only whole foreign packages are listed: a name of this
# provider (airflow_provider_analytics...) that does not resolve always fails the build.
nitpick_ignore_regex = [
    # the standard library
    (r"py:.*", r"(abc|asyncio|collections|contextlib|datetime|enum|os|pathlib|re|ssl|time|types|typing|urllib)(\..*)?"),
    # Airflow and the libraries the provider and its sandbox are built on
    (r"py:.*", r"(airflow|httpx|httpcore|fastapi|starlette|pydantic|pendulum|openlineage|pytest|uvicorn)(\..*)?"),
    # the provider's internal modules (a name that starts with "_", CONTRIBUTING.md): not in the reference, so a
    # public signature that names one (``RemoteJob``) shows it as plain text; a public name must still resolve
    (r"py:.*", r"airflow_provider_analytics(\.[a-z]\w*)*\._\w+(\..*)?"),
]

autoapi_type = "python"
autoapi_dirs = [str(ROOT / "airflow_provider_analytics")]
autoapi_root = "api"  # generated at build time, never committed
autoapi_add_toctree_entry = False
autoapi_keep_files = False
autoapi_member_order = "groupwise"
autoapi_options = ["members", "undoc-members", "show-inheritance", "show-module-summary", "special-members"]
autoapi_python_class_content = "both"
# sphinx-autoapi already leaves out private modules and names (no "private-members" above), a name missing from
# its module's __all__, inherited members (no "inherited-members") and, in a module without __all__, what it
# imports. skip_member (below) narrows that to docs/public-surface.txt, the list tests/test_public_surface.py
# keeps equal to the public __all__s.
PACKAGE_DIR = ROOT / "airflow_provider_analytics"
SANDBOX = "airflow_provider_analytics.sandbox"  # keeps its own public surface (docs/sandbox.md)
PUBLIC_SURFACE = frozenset(
    tuple(line.strip().split(":", 1))
    for line in (DOCS / "public-surface.txt").read_text(encoding="utf-8").splitlines()
    if line.strip() and not line.startswith("#")
)


def _read_package() -> tuple[frozenset[str], frozenset[str]]:
    """Every string statement of the package (docstrings, attribute docstrings) as autoapi prepares them, and
    ``module.name`` for each name a module outside the sandbox defines that docs/public-surface.txt leaves out.
    """
    texts, left_out = set(), set()
    for path in PACKAGE_DIR.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Expr)
                and isinstance(node.value, ast.Constant)
                and isinstance(node.value.value, str)
            ):
                texts.add("\n".join(prepare_docstring(node.value.value)))
        module = project_refs.module_name(PACKAGE_DIR, path)
        if module == SANDBOX or module.startswith(SANDBOX + "."):
            continue
        for statement in tree.body:
            if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                names = [statement.name]
            elif isinstance(statement, ast.Assign | ast.AnnAssign):
                targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
                names = [target.id for target in targets if isinstance(target, ast.Name)]
            else:
                continue
            left_out.update(f"{module}.{name}" for name in names if (module, name) not in PUBLIC_SURFACE)
    return frozenset(texts), frozenset(left_out)


PACKAGE_TEXTS, LEFT_OUT = _read_package()


def _is_module(name: str) -> bool:
    parts = name.split(".")[1:]
    path = PACKAGE_DIR.joinpath(*parts)
    return name == PACKAGE_DIR.name or path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def _own_docstring_only(obj: Any) -> None:
    """Drop a docstring autoapi took from a class outside the package (Airflow's ``BaseOperator.execute``).

    autoapi gives a member without a docstring its ancestor's; a docstring the package never wrote is that.
    """

    def foreign(doc: str) -> bool:
        return bool(doc) and doc not in PACKAGE_TEXTS

    own = obj.obj.get("doc", "")
    if obj.type in ("class", "exception"):
        constructor = obj.constructor.obj.get("doc", "") if obj.constructor else ""
        if foreign(own) or foreign(constructor):
            obj.docstring = "\n".join(doc for doc in (own, constructor) if doc and not foreign(doc))
    elif obj.type not in ("module", "package") and foreign(own):
        obj.docstring = ""


def skip_member(app: Sphinx, what: str, name: str, obj: Any, skip: bool, options: Any) -> bool | None:
    """autoapi: the reference shows a module's names only when docs/public-surface.txt lists them."""
    _own_docstring_only(obj)
    if what in ("module", "package"):
        return None  # autoapi's own rule: a public module has a page, an internal one none
    module, _, short = name.rpartition(".")
    if module == SANDBOX or module.startswith(SANDBOX + ".") or not _is_module(module):
        return None  # the sandbox's own rules, or a member of a class
    if (module, short) not in PUBLIC_SURFACE:
        return True
    if obj.imported:  # a re-export: documented where it is defined when that module lists it, else here
        home, _, original = obj.obj.get("original_path", "").rpartition(".")
        return (home, original) in PUBLIC_SURFACE
    return None


project_refs_package_dir = str(ROOT / "airflow_provider_analytics")
project_refs_type_variables = project_refs.type_variables(ROOT / "airflow_provider_analytics")
project_refs_imported_names = project_refs.imported_names(ROOT / "airflow_provider_analytics")

# viewcode finds the source through autoapi; following imported members would import the package, and with it
# Airflow (which writes ~/airflow when AIRFLOW_HOME is unset).
viewcode_follow_imported_members = False

myst_heading_anchors = 3
myst_enable_extensions = ["colon_fence", "deflist"]

html_theme = "furo"
html_title = f"airflow-provider-analytics {release}"
html_static_path = ["_static"]
html_css_files = ["site.css"]
TITLE = re.compile(r"<h1>([^<]*)")


def break_titles_at_dots(app: Sphinx, pagename: str, templatename: str, context: dict[str, Any], doctree: Any) -> None:
    """A module page's title (``airflow_provider_analytics.operators.workflows``) may wrap after a dot only."""
    if pagename.startswith("api/") and "body" in context:
        context["body"] = TITLE.sub(lambda title: "<h1>" + title[1].replace(".", ".<wbr>"), context["body"], count=1)


def left_out_as_text(app: Sphinx, env: Any, node: Any, contnode: Any) -> Any:
    """A docstring's reference to a name its module defines but does not export (``:data:`KINDS```) shows as
    plain text, as one to a private name does: the reference leaves it out. Any other unresolved name still fails.
    """
    if node.get("refdomain") != "py":
        return None
    target = str(node["reftarget"]).lstrip(".~")
    if target in LEFT_OUT or f"{node.get('py:module')}.{target}" in LEFT_OUT:
        return contnode
    return None


def setup(app: Sphinx) -> None:
    app.connect("autoapi-skip-member", skip_member)
    app.connect("missing-reference", left_out_as_text)
    app.connect("html-page-context", break_titles_at_dots)
