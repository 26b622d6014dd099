"""The sources of definitions: files (a path or a glob, YAML or JSON), mappings, or a list of those.

Each source gives one top-level mapping with a label for messages (the file's path, or ``definitions[i]``).
Reading is bounded and strict: a file over :data:`MAX_FILE_BYTES` is refused unread, a glob that matches no file
is an error (a typo in it would otherwise define nothing and the plan would look clean), and a key written twice
in one mapping is an error in YAML and JSON alike, where their parsers would keep the last one silently.
"""

from __future__ import annotations

import functools
import glob
import json
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from airflow_provider_analytics.definitions._model import KINDS, SECTIONS
from airflow_provider_analytics.definitions._problems import Problems

__all__ = ["FORMATS", "MAX_FILE_BYTES", "DefinitionsSource", "read_sources", "type_name"]

MAX_FILE_BYTES = 10 * 1024 * 1024
FORMATS = {".yaml": "yaml", ".yml": "yaml", ".json": "json"}
_GLOB_CHARACTERS = re.compile(r"[*?\[]")

PathLike = str | os.PathLike[str]
DefinitionsSource = PathLike | Mapping[str, Any] | Sequence[PathLike | Mapping[str, Any]]


def type_name(value: object) -> str:
    """How a message names a value's type (``a mapping``, ``a list``, ``null``, ``int``).

    :param value: any parsed value.
    """
    names = {dict: "a mapping", list: "a list", str: "a string", bool: "a boolean", type(None): "null"}
    return names.get(type(value), type(value).__name__)


def section_names() -> str:
    """The known sections, in dependency order, for messages."""
    return ", ".join(SECTIONS[kind] for kind in KINDS)


def read_sources(source: object, problems: Problems) -> list[tuple[str, Mapping[str, Any]]]:
    """Each source's top-level mapping with its label; problems are recorded, not raised.

    :param source: a path or glob (``str`` or ``os.PathLike``), a mapping, or a list of those.
    :param problems: where to record what is wrong.
    """
    seen_files: set[str] = set()
    if isinstance(source, Mapping):
        return [("definitions", source)]
    if isinstance(source, (str, os.PathLike)):
        return _files(source, problems, seen_files)
    if not isinstance(source, (list, tuple)):
        problems.add(f"definitions: must be a path, a glob, a mapping or a list of them, got {type_name(source)}")
        return []
    if not source:
        problems.add("definitions: the list is empty; give at least one path, glob or mapping")
    documents: list[tuple[str, Mapping[str, Any]]] = []
    for index, item in enumerate(source):
        if isinstance(item, Mapping):
            documents.append((f"definitions[{index}]", item))
        elif isinstance(item, (str, os.PathLike)):
            documents.extend(_files(item, problems, seen_files))
        else:
            problems.add(f"definitions[{index}]: must be a path, a glob or a mapping, got {type_name(item)}")
    return documents


def _files(pattern: PathLike, problems: Problems, seen: set[str]) -> list[tuple[str, Mapping[str, Any]]]:
    text = os.fspath(pattern)
    if not text.strip():
        problems.add("definitions: a path is empty; give a file or a glob such as 'definitions/*.yaml'")
        return []
    if _GLOB_CHARACTERS.search(text) and not os.path.isfile(text):  # a file named with [ or * is that file
        paths = sorted(path for path in glob.glob(text, recursive=True) if os.path.isfile(path))
        if not paths:
            where = "" if os.path.isabs(text) else f" (relative to {os.getcwd()})"
            problems.add(f"{text}: the glob matches no file{where}; check the pattern")
    elif os.path.isdir(text):
        problems.add(f"{text}: is a folder; give a glob such as {os.path.join(text, '*.yaml')!r}")
        return []
    elif not os.path.exists(text):
        problems.add(f"{text}: no such file")
        return []
    else:
        paths = [text]
    documents = []
    for path in paths:
        real = os.path.realpath(path)
        if real in seen:  # two globs that overlap: the file is read once, not its objects defined twice
            continue
        seen.add(real)
        document = _read(path, problems)
        if document is not None:
            documents.append((path, document))
    return documents


def _read(path: str, problems: Problems) -> Mapping[str, Any] | None:
    kind = FORMATS.get(Path(path).suffix.lower())
    if kind is None:
        problems.add(f"{path}: is not a .yaml, .yml or .json file; rename it or narrow the glob")
        return None
    try:
        with open(path, "rb") as stream:
            raw = stream.read(MAX_FILE_BYTES + 1)
    except OSError as error:
        problems.add(f"{path}: cannot be read: {error.strerror or error}")
        return None
    if len(raw) > MAX_FILE_BYTES:
        problems.add(f"{path}: is larger than {MAX_FILE_BYTES // (1024 * 1024)} MiB; split it into several files")
        return None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        problems.add(f"{path}: is not UTF-8 text (byte {error.start}); save it as UTF-8")
        return None
    try:
        document = _parse_json(text) if kind == "json" else _parse_yaml(text)
    except _ParseError as error:
        problems.add(f"{path}: {error}")
        return None
    if document is None:
        return {}  # an empty file defines nothing
    if not isinstance(document, Mapping):
        problems.add(
            f"{path}: the top level must be a mapping of sections ({section_names()}), not {type_name(document)}"
        )
        return None
    return document


class _ParseError(Exception):
    """A file that does not parse; the text says where."""


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    document: dict[str, Any] = {}
    for key, value in pairs:
        if key in document:
            raise _ParseError(f"invalid JSON: the key {key!r} appears twice in one object; keep one")
        document[key] = value
    return document


def _parse_json(text: str) -> Any:
    try:
        return json.loads(text, object_pairs_hook=_unique_keys)
    except json.JSONDecodeError as error:
        raise _ParseError(f"invalid JSON at line {error.lineno}, column {error.colno}: {error.msg}") from None
    except RecursionError:
        raise _ParseError("invalid JSON: nested too deeply") from None


def _parse_yaml(text: str) -> Any:
    import yaml  # type: ignore[import-untyped]  # PyYAML (installed with Airflow) ships no type information

    try:
        return yaml.load(text, Loader=_strict_yaml_loader())  # a SafeLoader: builds plain values, runs no code
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        raise _ParseError(f"invalid YAML{where}: {error.problem or error.context or 'not valid YAML'}") from None
    except yaml.YAMLError as error:
        raise _ParseError(f"invalid YAML: {error}") from None
    except RecursionError:
        raise _ParseError("invalid YAML: nested too deeply") from None


@functools.cache
def _strict_yaml_loader() -> Any:
    """PyYAML's safe loader (its C version when built) refusing a key written twice in one mapping."""
    import yaml

    class StrictSafeLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
        def construct_mapping(self, node: Any, deep: bool = False) -> Any:
            seen: set[tuple[str, str]] = set()
            for key_node, _ in node.value:
                if not isinstance(key_node, yaml.ScalarNode) or key_node.tag == "tag:yaml.org,2002:merge":
                    continue  # a merge key (<<) may be overridden: that is what it is for
                marker = (key_node.tag, key_node.value)
                if marker in seen:
                    problem = f"the key {key_node.value!r} appears twice in one mapping; keep one"
                    raise yaml.constructor.ConstructorError(None, None, problem, key_node.start_mark)
                seen.add(marker)
            return super().construct_mapping(node, deep=deep)

    return StrictSafeLoader
