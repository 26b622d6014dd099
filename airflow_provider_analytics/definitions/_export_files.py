"""The files an export writes: :func:`definition_files` splits an export's definitions into YAML files, each
checked as an apply would read it before any is written. No I/O: the operator writes what this returns
(``operators/definitions.py``), and :func:`written_by_an_export` tells its files from others in the destination.

What an export writes is what an apply reads:

- **Every file is read back by the apply's own reader**, from its bytes and within its limits (the file's size,
  its text, its values; ``_files.read_document``), and must give back what was exported; then all of them are
  checked together as one apply of the folder checks them (``_load.load_documents``: every value, the budget the
  files share). A file over the limit, or one the reader refuses, fails the export before anything is written,
  never a success that the next apply refuses.
- **A value no file can carry** (a lone UTF-16 surrogate the platform answered, an integer beyond what JSON
  carries exactly) fails the export naming the object and the field, not the YAML the user never wrote; a text
  holding U+0085, a line break to YAML 1.1, is written double-quoted (``\\N``) so that it reads back as itself.
- **Every file has a name one can see**: a name is written as a slug of its ASCII letters and digits
  (``Weekly revenue`` is ``weekly-revenue.yaml``); one without any (``売上``), or one whose slug another name
  shares, gets a short digest of the name too (``workflow-3b0c44298fc1.yaml``, ``sales-7d1a2b3c4d5e.yaml``): the
  same name gives the same file at every export, and no name gives a dot-file (``.yaml``, which ``*.yaml``
  skips). Objects exported with their ``id`` (a name the platform shares) get the id.
- **Each file says it was exported, and what it held**: its header ends with the SHA-256 of what follows it, so a
  later export tells its own unedited files from files someone wrote or edited, and replaces only its own unless
  told to (``overwrite=True``).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from airflow_provider_analytics.definitions._files import read_document
from airflow_provider_analytics.definitions._load import load_documents
from airflow_provider_analytics.definitions._model import KINDS, LABELS, MAX_INTEGER, SECTIONS
from airflow_provider_analytics.definitions._problems import Problems, one_line
from airflow_provider_analytics.definitions._schemas import shown
from airflow_provider_analytics.wire._request_json import Unsendable, measure, shown_path

__all__ = ["SPLITS", "ExportFile", "definition_files", "written_by_an_export"]

# How an export is split into files: one per kind (``charts.yaml``), or one per object (``charts/revenue.yaml``).
SPLITS = ("kind", "object")
_HEADER = (
    "# Exported from the analytics platform by airflow-provider-analytics (ExportDefinitionsOperator).\n"
    "# Edit, then plan and apply with ApplyDefinitionsOperator. Secrets are never exported: each is a reference to\n"
    "# an Airflow connection (from_connection) or variable (from_variable) that the apply reads; {$literal: ...}\n"
    "# holds a value the platform wrote in a reference's shape, sent as written.\n"
)
# The header's last line: the SHA-256 of the text after it. An export replaces a file only while it matches.
_DIGEST_LINE = "# export-sha256 (of the lines below): {}\n"
_DIGEST = re.compile(rb"# export-sha256 \(of the lines below\): ([0-9a-f]{64})\n")
_NOT_SLUG = re.compile(r"[^a-z0-9]+")
_MOST_SLUG = 60
_LABEL_OF = {SECTIONS[kind]: LABELS[kind].replace(" ", "-") for kind in KINDS}
_ADVICE = {
    "kind": "export with split_by='object' (a file per object), or fewer objects at a time (kinds=, names=)",
    "object": "leave those objects out (names=), or make them smaller on the platform",
}
_NONE_WRITTEN = "none was written"


@dataclass(frozen=True)
class ExportFile:
    """One file of an export: where it goes, relative to the destination (``/``-separated), and its bytes.

    :param path: ``charts.yaml`` or ``charts/weekly-revenue.yaml``.
    :param data: the file's content, UTF-8.
    """

    path: str
    data: bytes


def definition_files(definitions: Mapping[str, list[dict[str, Any]]], split_by: str) -> list[ExportFile]:
    """The files an export writes, in a stable order, each checked as an apply would read it.

    :param definitions: an export's definitions (``_export.Exported.definitions``).
    :param split_by: ``kind`` (``charts.yaml``: every section, even an empty one, so that a re-export empties it) or
        ``object`` (``charts/weekly-revenue.yaml``).
    :raises AnalyticsInputError: a value no file can carry, or a file an apply would refuse (too large, over a
        budget): nothing is written; the message names the object or the file, and what to change.
    """
    problems = Problems("The exported files", _NONE_WRITTEN)
    for section, entries in definitions.items():
        for entry in entries:
            _check_text(section, entry, problems)
    problems.raise_if_any()
    documents = _documents(definitions, split_by)
    files = [ExportFile(path, _rendered(document)) for path, document in documents]
    problems = Problems("The exported files", f"{_NONE_WRITTEN}; to fix it, {_ADVICE[split_by]}")
    read: list[tuple[str, Mapping[str, Any]]] = []
    for file, (_, document) in zip(files, documents, strict=True):
        back = read_document(file.data, file.path, "yaml", problems)
        if back is None:
            continue
        if back != document:  # PyYAML writing a value that reads back as another: a bug, caught here
            problems.add(
                f"{file.path}: does not read back as what was exported ({_first_difference(document, back)}), which"
                " no value the checks above refuse explains: leave that object out (names=) or change the value on"
                " the platform, and report it as a bug, with the value's characters"
            )
        read.append((file.path, back))
    problems.raise_if_any()
    # Every value, and the budget the files share, as an apply of the whole folder checks them.
    load_documents(read, Problems("The exported files", f"{_NONE_WRITTEN}; export fewer objects (kinds=, names=)"))
    return files


def written_by_an_export(data: bytes) -> bool:
    """Whether ``data`` is a file an export wrote, unedited since: its header, and the digest of what follows.

    :param data: the file's content.
    """
    if not data.startswith(_HEADER.encode().partition(b"(")[0]):  # "# Exported from ... airflow-provider-analytics"
        return False
    # The digest line ends the header's comment lines (a later release may word the lines before it otherwise).
    start = 0
    while data.startswith(b"#", start):
        found = _DIGEST.match(data, start)
        if found is not None:
            return found.group(1).decode() == hashlib.sha256(data[found.end() :]).hexdigest()
        end = data.find(b"\n", start)
        if end < 0:
            return False
        start = end + 1
    return False


def _check_text(section: str, entry: Mapping[str, Any], problems: Problems) -> None:
    """Record a value of ``entry`` that no definitions file can carry, naming the object and field: a text with a
    lone UTF-16 surrogate, or an integer beyond what JSON carries exactly (which the reader refuses)."""
    error = measure(entry, 1 << 62, strict=False)  # a walk of every text; no size is too large here
    found = (shown_path(error.path), error.problem) if isinstance(error, Unsendable) else _inexact_integer(entry)
    if found is not None:
        name = entry.get("name")
        shown = one_line(name.encode("utf-8", "backslashreplace").decode())[:100] if isinstance(name, str) else "?"
        label = _LABEL_OF.get(section, section).replace("-", " ")
        problems.add(
            f"the platform's {label} {shown!r}: {found[0]}: {found[1]}. No definitions file can carry it: change it"
            " on the platform, or leave the object out (names=, kinds=)"
        )


def _inexact_integer(entry: Mapping[str, Any]) -> tuple[str, str] | None:
    """Where ``entry`` holds an integer beyond +/-(2**53 - 1), and what to do; walked with a stack of its own."""
    stack: list[tuple[Any, tuple[str | int, ...]]] = [(entry, ())]
    while stack:
        value, path = stack.pop()
        if isinstance(value, int) and not isinstance(value, bool) and abs(value) > MAX_INTEGER:
            return shown_path(path), (
                f"is {shown(value)}, beyond the integers JSON carries exactly (-(2**53 - 1) to 2**53 - 1), which"
                " definitions refuse (a platform or tool that reads numbers as doubles would change it silently);"
                " store it as a string"
            )
        if isinstance(value, Mapping):
            stack += [(item, (*path, str(key))) for key, item in value.items()]
        elif isinstance(value, list):
            stack += [(item, (*path, index)) for index, item in enumerate(value)]
    return None


def _first_difference(written: Any, back: Any) -> str:
    """Where the first value that read back as another is, and its type each way (never the values)."""
    stack: list[tuple[Any, Any, tuple[str | int, ...]]] = [(written, back, ())]
    while stack:
        one, other, path = stack.pop()
        if isinstance(one, Mapping) and isinstance(other, Mapping) and one.keys() == other.keys():
            stack += [(one[key], other[key], (*path, str(key))) for key in one]
        elif isinstance(one, list) and isinstance(other, list) and len(one) == len(other):
            stack += [(a, b, (*path, index)) for index, (a, b) in enumerate(zip(one, other, strict=True))]
        elif one != other:
            return f"at {shown_path(path) or 'the top'}: {type(one).__name__} written, {type(other).__name__} read"
    return "somewhere"


def _documents(definitions: Mapping[str, list[dict[str, Any]]], split_by: str) -> list[tuple[str, dict[str, Any]]]:
    """Each file's path and the document it holds."""
    documents: list[tuple[str, dict[str, Any]]] = []
    for section, entries in definitions.items():
        if split_by == "kind":
            documents.append((f"{section}.yaml", {section: entries}))
            continue
        stems = [_slug(entry["name"]) for entry in entries]
        counts = {stem: stems.count(stem) for stem in stems}
        used: set[str] = set()
        for entry, stem in zip(entries, stems, strict=True):
            if "id" in entry:  # pinned: a name the platform shares, told apart by the id
                ident = str(entry["id"])
                # Lower case, as slugs are: a case-insensitive disk (macOS, Windows) holds wf_ABC and wf_abc as one
                # file. An id with capitals gets its own digest, the same every time, so the two stay apart.
                told = ident.lower() + (f"-{_name_digest(ident)[:6]}" if ident != ident.lower() else "")
                name = "-".join(part for part in (stem, told) if part)
            elif stem and counts[stem] == 1:
                name = stem
            else:  # no letter or digit, or a slug another name shares: the name's digest, the same every time
                name = f"{stem or _LABEL_OF.get(section, 'object')}-{_name_digest(entry['name'])}"
            # "a x1" slugs as the "a" of id x1, and Windows reserves con, nul, com1...: never such a file.
            while name in used or name.split(".")[0] in _RESERVED_STEMS:
                name = f"{name}-{_name_digest(name)[:6]}"
            used.add(name)
            documents.append((f"{section}/{name}.yaml", {section: [entry]}))
    return documents


# The names Windows reserves for devices, whatever follows a dot ("con.yaml" opens the console there).
_RESERVED_STEMS = frozenset(
    {"con", "prn", "aux", "nul", *(f"com{digit}" for digit in range(10)), *(f"lpt{digit}" for digit in range(10))}
)


def _slug(name: str) -> str:
    return _NOT_SLUG.sub("-", name.lower()).strip("-")[:_MOST_SLUG].strip("-")


def _name_digest(name: str) -> str:
    return hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:12]


def _rendered(document: dict[str, Any]) -> bytes:
    import yaml  # type: ignore[import-untyped]  # PyYAML (installed with Airflow) ships no type information

    class Dumper(yaml.SafeDumper):  # type: ignore[misc]  # PyYAML is untyped
        """PyYAML's safe dumper, writing a text that holds U+0085 (NEL) double-quoted, where it is escaped ``\\N``.

        YAML 1.1 counts NEL as a line break, and PyYAML writes it as one, raw, inside a plain or single-quoted
        scalar, where the reader folds a line break into a space: ``"a\\x85b"`` came back as ``"a b"`` (issue 44, F7).
        Double-quoted, it reads back as itself.
        """

    def text(dumper: Any, data: str) -> Any:
        style = '"' if "\x85" in data else None
        return dumper.represent_scalar("tag:yaml.org,2002:str", data, style=style)

    Dumper.add_representer(str, text)
    body: str = yaml.dump(
        document, Dumper=Dumper, sort_keys=False, allow_unicode=True, default_flow_style=False, width=100
    )
    content = body.encode("utf-8")
    return (_HEADER + _DIGEST_LINE.format(hashlib.sha256(content).hexdigest())).encode() + content
