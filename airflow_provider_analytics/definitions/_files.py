"""The sources of definitions: files (a path or a glob, YAML or JSON), mappings, or a list of those.

Each source gives one top-level mapping with a label for messages (the file's path, or ``definitions[i]``).
Reading is bounded and strict: a file over :data:`MAX_FILE_BYTES` is refused unread, a glob that matches no file
is an error (a typo in it would otherwise define nothing and the plan would look clean), and a key written twice
in one mapping is an error in YAML and JSON alike, where their parsers would keep the last one silently. Only
regular files are read: a FIFO, a device or a socket named ``x.yaml`` is refused without being opened (opening a
FIFO blocks until a writer comes). A string that is plainly not a path (a mapping rendered to text by a template)
is refused without being shown, as it may hold secrets; a path is shown cut to :data:`MAX_PATH_SHOWN` characters.
YAML is read by ``_yaml`` (budgeted while parsing); JSON integers beyond
:data:`~airflow_provider_analytics.definitions._model.MAX_INTEGER` are refused as YAML's are.
"""

from __future__ import annotations

import glob
import json
import os
import re
import stat
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from airflow_provider_analytics.definitions._model import KINDS, MAX_FILE_BYTES, MAX_INTEGER, SECTIONS, Refused
from airflow_provider_analytics.definitions._problems import Problems, one_line

__all__ = [
    "FORMATS",
    "MAX_FILE_BYTES",
    "MAX_PATH_SHOWN",
    "DefinitionsSource",
    "read_at_most",
    "read_document",
    "read_sources",
    "type_name",
]

MAX_PATH_SHOWN = 200
FORMATS = {".yaml": "yaml", ".yml": "yaml", ".json": "json"}
_GLOB_CHARACTERS = re.compile(r"[*?\[]")
_RENDERED = re.compile(r"(?:^|[/\\])\s*([{\[])")  # a part of the path that opens a mapping or a list

PathLike = str | os.PathLike[str]
DefinitionsSource = PathLike | Mapping[str, Any] | Sequence[PathLike | Mapping[str, Any]]


def type_name(value: object) -> str:
    """How a message names a value's type (``a mapping``, ``a list``, ``null``, ``int``).

    :param value: any parsed value.
    """
    if isinstance(value, Refused):
        return f"{value.shown}, {value.what}"
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
        return _files(source, "definitions", problems, seen_files)
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
            documents.extend(_files(item, f"definitions[{index}]", problems, seen_files))
        else:
            problems.add(f"definitions[{index}]: must be a path, a glob or a mapping, got {type_name(item)}")
    return documents


def _shown_path(text: str) -> str:
    """A path as messages show it: on one line, and cut, since a mistaken one can be any text at all."""
    text = one_line(text)
    return text if len(text) <= MAX_PATH_SHOWN else f"{text[: MAX_PATH_SHOWN - 40]}...{text[-30:]}"


def _not_a_path(text: str) -> str | None:
    """Why ``text`` is plainly not a path but something rendered to text (``None`` when it may be a path).

    A templated ``definitions`` rendered without native rendering arrives as the mapping's or list's text (the
    operator may have put the DAG's folder before it), which can hold passwords: it is described, never shown. A
    glob's ``[ab]`` stays a path: a rendered list ends with ``]`` or holds ``, `` or ``: ``.
    """
    if "\n" in text or "\r" in text:
        return f"is text of several lines ({len(text):,} characters), not a path"
    match = _RENDERED.search(text)
    if match is not None:
        tail = text[match.start(1) :].rstrip()
        kind = "mapping" if tail[0] == "{" else "list"
        if (kind == "mapping" and (":" in tail or tail == "{}")) or (
            kind == "list" and (tail.endswith("]") or ", " in tail or ": " in tail)
        ):
            return f"is text that reads as a {kind} ({len(text):,} characters), not a path"
    return None


def _files(pattern: PathLike, label: str, problems: Problems, seen: set[str]) -> list[tuple[str, Mapping[str, Any]]]:
    text = os.fspath(pattern)
    if not text.strip():
        problems.add(f"{label}: a path is empty; give a file or a glob such as 'definitions/*.yaml'")
        return []
    if "\x00" in text:  # os and glob raise ValueError on it, some of them, and glob.glob does
        problems.add(f"{label}: a path holds a NUL character (\\x00), which no file's path can; remove it")
        return []
    rendered = _not_a_path(text)
    if rendered is not None:
        problems.add(
            f"{label}: {rendered}; it is not shown, as it may hold secrets. A template rendered a mapping or a list"
            " to text: pass the mapping itself, or give the DAG render_template_as_native_obj=True"
        )
        return []
    shown = _shown_path(text)
    if _GLOB_CHARACTERS.search(text) and not os.path.isfile(text):  # a file named with [ or * is that file
        paths = sorted(path for path in glob.glob(text, recursive=True) if not os.path.isdir(path))
        if not paths:
            where = "" if os.path.isabs(text) else f" (relative to {_shown_path(os.getcwd())})"
            problems.add(f"{shown}: the glob matches no file{where}; check the pattern")
    elif os.path.isdir(text):
        problems.add(f"{shown}: is a folder; give a glob such as {os.path.join(shown, '*.yaml')!r}")
        return []
    elif not os.path.exists(text):
        problems.add(f"{shown}: no such file")
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


def _special(mode: int) -> str | None:
    """What a file that is not a regular file is, for the message (``None`` for a regular file)."""
    if stat.S_ISREG(mode):
        return None
    kinds = [(stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a character device")]
    kinds += [(stat.S_ISBLK, "a block device"), (stat.S_ISDIR, "a folder")]
    return next((name for test, name in kinds if test(mode)), "not a regular file")


def _read_bytes(path: str) -> bytes:
    """At most :data:`MAX_FILE_BYTES` + 1 bytes of the regular file ``path``.

    Checked with ``stat`` before opening, since opening a FIFO blocks until a writer comes; opened without
    blocking and checked again after, in case the path was replaced in between.
    """
    special = _special(os.stat(path).st_mode)
    if special is None:
        descriptor = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
        with open(descriptor, "rb") as stream:
            status = os.fstat(descriptor)
            special = _special(status.st_mode)
            if special is None:
                return read_at_most(stream, status.st_size, MAX_FILE_BYTES)
    raise _NotRegular(special)


def read_at_most(stream: Any, size: int, most: int) -> bytes:
    """At most ``most`` + 1 bytes of ``stream``, a file of ``size`` bytes when it was looked at: a buffer of its
    size is allocated, not one of ``most`` (``read(n)`` allocates ``n`` bytes first), and more is read if it grew.

    :param stream: a binary file open for reading.
    :param size: its size, from ``fstat``.
    :param most: the most bytes wanted (one more is read, to tell a larger file).
    """
    data: bytes = stream.read(min(size, most) + 1)
    if size < len(data) <= most:  # it grew since it was looked at
        data += stream.read(most + 1 - len(data))
    return data


class _NotRegular(Exception):
    """The path names something other than a regular file (the text says what)."""


def _read(path: str, problems: Problems) -> Mapping[str, Any] | None:
    kind = FORMATS.get(Path(path).suffix.lower())
    shown = _shown_path(path)
    if kind is None:
        problems.add(f"{shown}: is not a .yaml, .yml or .json file; rename it or narrow the glob")
        return None
    try:
        raw = _read_bytes(path)
    except _NotRegular as error:
        problems.add(f"{shown}: is {error}, not a regular file; definitions are read from regular files only")
        return None
    except OSError as error:
        problems.add(f"{shown}: cannot be read: {error.strerror or error}")
        return None
    return read_document(raw, shown, kind, problems)


def read_document(raw: bytes, shown: str, kind: str, problems: Problems) -> Mapping[str, Any] | None:
    """A file's top-level mapping, read from its bytes within every budget of this module; ``None`` with the
    problem recorded. What an export checks each file it writes with, before writing it.

    :param raw: the file's bytes (at most :data:`MAX_FILE_BYTES` + 1 of them are looked at).
    :param shown: how messages name the file.
    :param kind: ``yaml`` or ``json`` (:data:`FORMATS`).
    :param problems: where to record what is wrong.
    """
    if len(raw) > MAX_FILE_BYTES:
        problems.add(f"{shown}: is larger than {MAX_FILE_BYTES // (1024 * 1024)} MiB; split it into several files")
        return None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        problems.add(f"{shown}: is not UTF-8 text (byte {error.start}); save it as UTF-8")
        return None
    try:
        document = _parse_json(text) if kind == "json" else _parse_yaml(text)
    except _ParseError as error:
        problems.add(f"{shown}: {error}")
        return None
    if document is None:
        return {}  # an empty file defines nothing
    if not isinstance(document, Mapping):
        problems.add(
            f"{shown}: the top level must be a mapping of sections ({section_names()}), not {type_name(document)}"
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


def _json_integer(written: str) -> int | Refused:
    """A JSON integer, or :class:`Refused` beyond the range (unconverted when long: CPython refuses to convert over
    4,300 digits with a bare ``ValueError``)."""
    value = int(written) if len(written.lstrip("-")) <= 20 else None
    if value is not None and abs(value) <= MAX_INTEGER:
        return value
    shown = written if len(written) <= 40 else f"{written[:37]}..."
    what = f"the integer {written}" if value is not None else f"an integer of {len(written.lstrip('-')):,} digits"
    advice = "the definitions take integers from -(2**53 - 1) to 2**53 - 1, the integers JSON carries exactly"
    return Refused(shown, what, f"{advice}: write it as a string to send it as text")


def _parse_json(text: str) -> Any:
    try:
        document = json.loads(text, object_pairs_hook=_unique_keys, parse_int=_json_integer)
    except json.JSONDecodeError as error:
        raise _ParseError(f"invalid JSON at line {error.lineno}, column {error.colno}: {error.msg}") from None
    except RecursionError:
        raise _ParseError("invalid JSON: nested too deeply") from None
    if _SURROGATE_ESCAPE.search(text):  # rare: only then is each text looked at
        _refuse_lone_surrogates(text)
    return document


# A \u escape of a UTF-16 surrogate (D800-DFFF), maybe escaped itself (\\ud800 is a backslash and "ud800").
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
_JSON_TEXT = re.compile(r'"(?:[^"\\]|\\.)*"')  # a JSON text literal: in a valid document, found from its start
_ESCAPE = re.compile(r"\\(?:u([0-9a-fA-F]{4})|.)")


def _refuse_lone_surrogates(text: str) -> None:
    """Refuse the first ``\\ud800``-style escape that is not half of a surrogate pair (``\\ud83d\\ude00`` is one
    character): JSON reads it into a text that UTF-8 cannot encode, so no request could carry it."""
    for literal in _JSON_TEXT.finditer(text):
        lone = _lone_surrogate(literal.group())
        if lone is None:
            continue
        at = literal.start() + lone.start()
        line = text.count("\n", 0, at) + 1
        column = at - (text.rfind("\n", 0, at) + 1) + 1
        raise _ParseError(
            f"line {line}, column {column}: {lone.group()} is half of a UTF-16 surrogate pair, alone: the text it"
            " is in cannot be encoded as UTF-8, so no request could carry it; write the character itself, or both"
            " halves of its pair"
        )


def _lone_surrogate(literal: str) -> re.Match[str] | None:
    """The first escape of ``literal`` that is a surrogate without its other half, if any."""
    pending: re.Match[str] | None = None  # a high half, waiting for its low half right after it
    for escape in _ESCAPE.finditer(literal):
        code = int(escape.group(1), 16) if escape.group(1) else -1
        low = 0xDC00 <= code <= 0xDFFF
        if pending is not None:
            if low and escape.start() == pending.end():
                pending = None
                continue
            return pending
        if 0xD800 <= code <= 0xDBFF:
            pending = escape
        elif low:
            return escape
    return pending


def _parse_yaml(text: str) -> Any:
    from airflow_provider_analytics.definitions._yaml import _YamlProblem, parse_yaml

    try:
        return parse_yaml(text)
    except _YamlProblem as error:
        raise _ParseError(str(error)) from None
