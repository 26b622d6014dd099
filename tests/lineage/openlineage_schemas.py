"""Validating OpenLineage events offline: every facet against the schema its ``_schemaURL`` names.

The facet schemas come from the installed packages (the OpenLineage provider's ``facets/*.json``, this
provider's ``lineage/schemas``). The core spec file (``OpenLineage.json``) is not shipped by any installed
package and the tests have no network, so ``schemas/OpenLineage-2-0-2-core.json`` restates the parts of it
the events use; facet schemas refer to it by its real URL.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import urldefrag, urlsplit

import airflow.providers.openlineage
import jsonschema
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

import airflow_provider_analytics.lineage

CORE_URL = "https://openlineage.io/spec/2-0-2/OpenLineage.json"
_FOLDERS = [
    Path(__file__).with_name("schemas"),
    Path(airflow_provider_analytics.lineage.__file__).with_name("schemas"),
    Path(airflow.providers.openlineage.__file__).with_name("facets"),
]
FORMATS = jsonschema.FormatChecker()


@FORMATS.checks("uri", raises=ValueError)  # type: ignore[untyped-decorator]  # jsonschema ships no types
def _is_uri(value: object) -> bool:
    return not isinstance(value, str) or bool(urlsplit(value).scheme)


@FORMATS.checks("date-time", raises=ValueError)  # type: ignore[untyped-decorator]  # jsonschema ships no types
def _is_date_time(value: object) -> bool:
    return not isinstance(value, str) or ("T" in value and bool(datetime.fromisoformat(value.replace("Z", "+00:00"))))


def _documents() -> dict[str, dict[str, Any]]:
    """Schema documents by file name."""
    return {path.name: json.loads(path.read_text()) for folder in _FOLDERS for path in folder.glob("*.json")}


def registry() -> Registry:
    """Every known schema, under its ``$id`` and under the name facets use in their ``_schemaURL``."""
    resources = []
    for name, document in _documents().items():
        resource = Resource.from_contents(document, default_specification=DRAFT202012)
        resources.append((document.get("$id", name), resource))
        resources.append((name, resource))
    return Registry().with_resources(resources)


def schema_for(schema_url: str) -> tuple[str, str] | None:
    """``(document key, JSON pointer)`` of a ``_schemaURL`` whose document is known here, else ``None``."""
    url, fragment = urldefrag(schema_url)
    if url == CORE_URL:
        return CORE_URL, fragment
    name = url.rsplit("/", 1)[-1]
    return (name, fragment) if name in _documents() else None


def errors(document: Any, key: str, pointer: str = "", known: Registry | None = None) -> list[str]:
    """Validation errors of ``document`` against ``<key>#<pointer>`` (empty when valid)."""
    validator = jsonschema.Draft202012Validator(
        {"$ref": f"{key}#{pointer}"}, registry=known or registry(), format_checker=FORMATS
    )
    return [f"{list(error.absolute_path)}: {error.message}" for error in validator.iter_errors(document)]


def event_errors(event: dict[str, Any]) -> tuple[list[str], list[str]]:
    """Errors of a run event against the core model and of each facet against its own schema, and the
    ``_schemaURL``s that were not available offline (standard OpenLineage facets)."""
    known = registry()
    problems = errors(event, CORE_URL, "/$defs/RunEvent", known)
    unchecked = []
    facets = [*event["run"].get("facets", {}).items(), *event["job"].get("facets", {}).items()]
    for dataset in [*event.get("inputs", []), *event.get("outputs", [])]:
        facets.extend(dataset.get("facets", {}).items())
    for name, facet in facets:
        located = schema_for(facet["_schemaURL"])
        if located is None:
            unchecked.append(facet["_schemaURL"])
            continue
        problems.extend(f"{name}: {problem}" for problem in errors(facet, *located, known))
    return problems, unchecked
