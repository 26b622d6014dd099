"""Sphinx configuration of the documentation site (``make docs``; CONTRIBUTING.md, "Documentation")."""

from __future__ import annotations

import sys
from pathlib import Path

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
