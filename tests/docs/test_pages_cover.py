"""The guides keep up with the code: each exception, operator and connection extra has its place on a page.

``make docs`` proves that what a page names exists; these tests prove the converse, that nothing the provider
adds is left off its page: an exception class without a troubleshooting entry, an operator without a guide that
shows its example, a connection extra missing from the connection page.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
from pathlib import Path
from types import ModuleType

import airflow_provider_analytics
from airflow_provider_analytics.provider_info import get_provider_info
from airflow_provider_analytics.version_compat import AIRFLOW_V_3_0_PLUS

DOCS = Path(__file__).resolve().parents[2] / "docs"
CLASS_ROLE = re.compile(r"\{py:class\}`~?([\w.]+)`")
# The sandbox server's own parts raise these inside the server; a user never sees them.
SERVER_INTERNALS = "airflow_provider_analytics.sandbox."


def public_modules() -> list[str]:
    names = [airflow_provider_analytics.__name__]
    for module in pkgutil.walk_packages(airflow_provider_analytics.__path__, prefix="airflow_provider_analytics."):
        if not any(part.startswith("_") for part in module.name.split(".")):
            names.append(module.name)
    return names


def imported_public_modules() -> list[ModuleType]:
    """Every public module of the package that this Airflow release can import."""
    modules = []
    for name in public_modules():
        try:
            modules.append(importlib.import_module(name))
        except ImportError as error:  # on Airflow 2, the event trigger's module says it needs Airflow 3
            if AIRFLOW_V_3_0_PLUS or "needs Airflow 3.0" not in str(error):
                raise
    return modules


def defined_classes() -> list[type]:
    """Every public class defined (not imported) in a public module of the package."""
    found = []
    for module in imported_public_modules():
        for attribute, value in vars(module).items():
            if inspect.isclass(value) and value.__module__ == module.__name__ and not attribute.startswith("_"):
                found.append(value)
    return found


def named_classes(page: Path) -> set[str]:
    return set(CLASS_ROLE.findall(page.read_text(encoding="utf-8")))


def full_name(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def test_every_exception_has_a_troubleshooting_entry() -> None:
    exceptions = [
        cls
        for cls in defined_classes()
        if issubclass(cls, BaseException) and not cls.__module__.startswith(SERVER_INTERNALS)
    ]
    assert len(exceptions) > 20  # the wire tree, the operators' and the trigger's, the sandbox's extra
    missing = sorted(
        full_name(cls) for cls in exceptions if full_name(cls) not in named_classes(DOCS / "troubleshooting.md")
    )
    assert not missing, f"add these to docs/troubleshooting.md (what it means, what to change): {missing}"


def test_every_operator_and_the_sensor_has_a_guide_with_its_example() -> None:
    from airflow.providers.common.compat.sdk import BaseOperator

    classes = [cls for cls in defined_classes() if issubclass(cls, BaseOperator)]
    concrete = [cls for cls in classes if not any(other is not cls and issubclass(other, cls) for other in classes)]
    assert len(concrete) == 13  # eleven operators and two sensors
    guides = {page: page.read_text(encoding="utf-8") for page in (DOCS / "guides").glob("*.md")}
    for cls in concrete:
        role = f"{{py:class}}`~{full_name(cls)}`"
        pages = [page for page, text in guides.items() if role in text.split("\n\n")[1]]  # the first paragraph
        assert pages, f"{full_name(cls)}: no page under docs/guides/ opens with it"
        assert "```{literalinclude} ../../example_dags/" in guides[pages[0]], f"{pages[0].name}: no example included"


def test_every_connection_extra_is_on_the_connection_page() -> None:
    [connection_type] = get_provider_info()["connection-types"]
    page = (DOCS / "connection.md").read_text(encoding="utf-8")
    missing = [name for name in connection_type["conn-fields"] if f"| `{name}` |" not in page]
    assert not missing, f"add these extras to docs/connection.md: {missing}"


def test_a_public_modules_docstring_links_the_guide_it_names() -> None:
    # A bare "docs/guides/x.md" is plain text on the site's reference page: the role makes it a link there.
    unlinked = []
    for module in imported_public_modules():
        docstring = inspect.getdoc(module) or ""
        for page in re.findall(r"docs/guides/([\w-]+)\.md", docstring):
            if f":doc:`/guides/{page}`" not in docstring:
                unlinked.append(f"{module.__name__}: docs/guides/{page}.md")
    assert unlinked == []
