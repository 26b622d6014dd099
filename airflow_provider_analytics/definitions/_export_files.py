"""The files an export writes: :func:`definition_files` splits an export's definitions into YAML files.

No I/O: the operator writes what this returns (``operators/definitions.py``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from airflow_provider_analytics.wire.errors import UnexpectedResponseError

__all__ = ["SPLITS", "definition_files"]

# How an export is split into files: one per kind (``charts.yaml``), or one per object (``charts/revenue.yaml``).
SPLITS = ("kind", "object")
_HEADER = (
    "# Exported from the analytics platform by airflow-provider-analytics (ExportDefinitionsOperator).\n"
    "# Edit, then plan and apply with ApplyDefinitionsOperator. Secrets are never exported: a secret connection\n"
    "# field is a reference to an Airflow connection (from_connection) that the apply reads.\n"
)

_NOT_SLUG = re.compile(r"[^a-z0-9]+")
_MOST_SLUG = 60


def definition_files(definitions: Mapping[str, list[dict[str, Any]]], split_by: str) -> list[tuple[str, str]]:
    """The files an export writes: each one's path (relative, ``/``-separated) and YAML text, in a stable order.

    Every text is read back with the definitions' own YAML reader before it is returned, and must give back what
    was written: a value PyYAML would write so that it reads back otherwise is a bug caught here, not in a file.

    :param definitions: an export's definitions (``_export.Exported.definitions``).
    :param split_by: ``kind`` (``charts.yaml``: every section, even an empty one, so that a re-export empties it) or
        ``object`` (``charts/revenue.yaml``; a name that slugs like another's gets the object's id too).
    """
    documents: list[tuple[str, dict[str, Any]]] = []
    for section, entries in definitions.items():
        if split_by == "kind":
            documents.append((f"{section}.yaml", {section: entries}))
            continue
        stems = [_slug(entry["name"]) for entry in entries]
        counts = {stem: stems.count(stem) for stem in stems}
        used: set[str] = set()
        for entry, stem in zip(entries, stems, strict=True):
            ident = str(entry.get("id") or "")
            unique = stem and counts[stem] == 1 and "id" not in entry
            name = stem if unique else "-".join(part for part in (stem, ident) if part)
            while name in used:  # "a x1" slugs as the "a" of id x1: two objects never share a file
                name = f"{name}-{ident or len(used)}"
            used.add(name)
            documents.append((f"{section}/{name}.yaml", {section: [entry]}))
    return [(path, _rendered(document, path)) for path, document in documents]


def _slug(name: str) -> str:
    return _NOT_SLUG.sub("-", name.lower()).strip("-")[:_MOST_SLUG].strip("-")


def _rendered(document: dict[str, Any], path: str) -> str:
    import yaml  # type: ignore[import-untyped]  # PyYAML (installed with Airflow) ships no type information

    from airflow_provider_analytics.definitions._yaml import parse_yaml

    body: str = yaml.safe_dump(document, sort_keys=False, allow_unicode=True, default_flow_style=False, width=100)
    text = _HEADER + body
    if parse_yaml(text) != document:
        raise UnexpectedResponseError(f"{path}: the exported YAML does not read back as what was exported")
    return text
