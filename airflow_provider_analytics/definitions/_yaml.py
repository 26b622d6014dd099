"""YAML definitions read so that no file can take the process down: :func:`parse_yaml`.

PyYAML composes a document recursively (libyaml's composer, in C, when built: 50,000 ``[`` in 100 KB overflow the
C stack, a SIGSEGV before any Python check runs), and its constructor expands merge keys (``<<``) eagerly (seven
levels of ten merges in 600 bytes take minutes and gigabytes before any value is counted). So the document is
composed here, from the parser's event stream (a state machine that does not recurse), and budgeted at every
event: collections nest at most :data:`MAX_NESTING` deep, and the document stands for at most
:data:`~airflow_provider_analytics.definitions._model.MAX_VALUES` nodes, keys included, and :data:`MAX_TEXT`
characters of text, where an alias (a merge key's too) costs the whole expanded size of the anchor it names (100,000
aliases of one 50,000-character text are one value each, and 5 GB of text). An explicit tag must be one of JSON's
and fit its node (PyYAML's constructors meet ``!!map [1, 2]`` with a bare ``TypeError``). A key written twice in one
mapping is refused, and merge keys are flattened as each mapping ends, one level at a time (PyYAML's constructor
flattens them recursively: a chain of merges of merges ended in ``RecursionError``). Only then does PyYAML's safe
constructor build the values.

Values that YAML 1.1 reads as something other than what was written, or cannot build at all, become
:class:`~airflow_provider_analytics.definitions._model.Refused` in their place, so that the check names the object
and the field holding them: sexagesimal numbers (``190:20:30`` is 685230) and octal ones (``0755`` is 493; YAML 1.2
reads both otherwise), dates and times out of range, integers beyond
:data:`~airflow_provider_analytics.definitions._model.MAX_INTEGER`.
"""

from __future__ import annotations

import functools
from typing import Any

from airflow_provider_analytics.definitions._model import MAX_DEPTH, MAX_FILE_BYTES, MAX_INTEGER, MAX_VALUES, Refused
from airflow_provider_analytics.definitions._problems import one_line

__all__ = ["MAX_NESTING", "MAX_TEXT", "parse_yaml"]

# A free-form value sits inside the document's mapping, a section's list, an object and its field: four levels
# more than MAX_DEPTH, so that this limit refuses nothing the check of the values would have let through.
MAX_NESTING = MAX_DEPTH + 4
# The characters of text a file may stand for, aliases expanded: as many as the largest file read holds
# (MAX_FILE_BYTES), so a file without aliases never reaches it, and one with them stands for no more.
MAX_TEXT = MAX_FILE_BYTES
# Longer than any way of writing an integer within MAX_INTEGER (binary needs 53 digits): refused unconverted,
# since CPython refuses to convert over 4,300 decimal digits (a bare ValueError) and base 60 is quadratic.
_MAX_DIGITS = 64
_INTEGER_RANGE = "from -(2**53 - 1) to 2**53 - 1, the integers JSON carries exactly"


class _YamlProblem(Exception):
    """A file that is not YAML, or that exceeds a budget: the message says at which line and column.

    :param problem: what is wrong and what to change.
    :param mark: where the mistake starts (a PyYAML mark), if known.
    :param invalid: whether the text is not YAML at all (rather than YAML over a budget).
    """

    def __init__(self, problem: str, mark: Any = None, *, invalid: bool = False) -> None:
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        if invalid:
            super().__init__(f"invalid YAML{' at ' + where if where else ''}: {problem}")
        else:
            super().__init__(f"{where}: {problem}" if where else problem)


def parse_yaml(text: str) -> Any:
    """The one document of ``text`` as plain values (``None`` when it holds none).

    :param text: the file's text.
    :raises _YamlProblem: the text is not YAML, holds several documents, or exceeds a budget.
    """
    import yaml  # type: ignore[import-untyped]  # PyYAML (installed with Airflow) ships no type information

    loader = _loader_class()(text)
    try:
        root = _compose(loader, yaml)
        return None if root is None else loader.construct_document(root)
    except yaml.MarkedYAMLError as error:
        raise _YamlProblem(*_described(error, text), invalid=True) from None
    except yaml.YAMLError as error:
        raise _YamlProblem(str(error), invalid=True) from None
    finally:
        loader.dispose()


def _described(error: Any, text: str) -> tuple[str, Any]:
    """PyYAML's error as one sentence, and the mark where the mistake starts.

    PyYAML marks the problem where the parser noticed it; for a quote, bracket or block left open that is the
    end of the stream, while its context (``while scanning a quoted scalar``) marks where the open thing began.
    """
    problem = error.problem or error.context or "not valid YAML"
    context, mark = error.context_mark, error.problem_mark
    if mark is None or (context is not None and mark.index >= len(text.rstrip())):
        if mark is not None and context is not None:
            problem = f"{error.context} that is never closed: {problem}"
        mark = context or mark
    return problem, mark


def _refused(node: Any, what: str, advice: str) -> Refused:
    written = str(node.value)
    return Refused(written if len(written) <= 40 else written[:37] + "...", what, advice, node.start_mark.line + 1)


@functools.cache
def _loader_class() -> Any:
    """PyYAML's safe loader (its C parser when built) with the constructors above; composing is :func:`_compose`."""
    import yaml

    class DefinitionsLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
        def flatten_mapping(self, node: Any) -> None:
            """Nothing: :func:`_flatten` merged every mapping while composing (PyYAML's own recurses)."""

        def construct_yaml_int(self, node: Any) -> Any:
            written = str(node.value)
            if ":" in written:
                return _refused(node, "a YAML 1.1 sexagesimal (base 60) number", _SEXAGESIMAL)
            digits = written.replace("_", "").lstrip("+-")
            if len(digits) > 1 and digits[0] == "0" and digits[1] not in "bxBX":
                return _refused(node, "a YAML 1.1 octal number (0755 is 493; YAML 1.2 reads 755)", _OCTAL)
            if len(digits) > _MAX_DIGITS:
                return _refused(node, f"an integer of over {_MAX_DIGITS} digits", _BEYOND)
            value = _typed(node, "an integer", super().construct_yaml_int)
            if isinstance(value, int) and abs(value) > MAX_INTEGER:
                return _refused(node, f"the integer {value}", _BEYOND)
            return value

        def construct_yaml_float(self, node: Any) -> Any:
            if ":" in str(node.value):
                return _refused(node, "a YAML 1.1 sexagesimal (base 60) number", _SEXAGESIMAL)
            return _typed(node, "a number", super().construct_yaml_float)

        def construct_yaml_bool(self, node: Any) -> Any:
            return _typed(node, "a boolean", super().construct_yaml_bool)

        def construct_yaml_timestamp(self, node: Any) -> Any:
            return _typed(node, "a date or time that exists", super().construct_yaml_timestamp)

    for tag, method in (
        ("int", DefinitionsLoader.construct_yaml_int),
        ("float", DefinitionsLoader.construct_yaml_float),
        ("bool", DefinitionsLoader.construct_yaml_bool),
        ("timestamp", DefinitionsLoader.construct_yaml_timestamp),
    ):  # the base class registered its own functions by tag: register the overrides the same way
        DefinitionsLoader.add_constructor(f"tag:yaml.org,2002:{tag}", method)
    return DefinitionsLoader


def _typed(node: Any, what: str, construct: Any) -> Any:
    """``construct(node)``, or :class:`Refused` where PyYAML would raise a bare ``ValueError`` (``!!int abc``, a
    30 February, a time zone 99 hours off): an error no YAML check catches, which a task would retry."""
    try:
        return construct(node)
    except (ValueError, LookupError, OverflowError):
        return _refused(node, f"not {what} (a part out of range, or a tag that does not fit)", _AS_TEXT)


_SEXAGESIMAL = "YAML 1.1 reads it as a number in base 60, YAML 1.2 as text: quote it for text, or write the number"
_OCTAL = "write the number it means without leading zeros, or quote it to send it as text"
_BEYOND = f"the definitions take integers {_INTEGER_RANGE}: quote it to send it as text"
_AS_TEXT = "quote it to send it as text"


class _Open:
    """A collection being composed: its node, its anchor, its expanded size so far (values and characters), and a
    mapping's pending key."""

    __slots__ = ("anchor", "key", "node", "size", "text")

    def __init__(self, node: Any, anchor: str | None) -> None:
        self.node = node
        self.anchor = anchor
        self.size = 1
        self.text = 0
        self.key: Any = None


class _Budget:
    """What the document stands for so far, aliases expanded: values (keys included) and characters of text."""

    __slots__ = ("text", "values")

    def __init__(self) -> None:
        self.values = 0
        self.text = 0

    def spend(self, values: int, text: int, mark: Any) -> None:
        self.values += values
        self.text += text
        if self.values > MAX_VALUES:
            raise _YamlProblem(
                f"the file stands for over {MAX_VALUES:,} values, counting each alias (*name, and each merge key"
                " <<) as all it names: write fewer aliases, or split the file",
                mark,
            )
        if self.text > MAX_TEXT:
            raise _YamlProblem(
                f"the file stands for over {MAX_TEXT // (1024 * 1024)} MiB of text, counting each alias (*name, and"
                " each merge key <<) as all it names: write fewer aliases, or split the file",
                mark,
            )


def _compose(loader: Any, yaml: Any) -> Any:
    """The document's root node, composed from the event stream without recursion and within the budgets.

    Merge keys are flattened here, as each mapping ends (what it merges ended before it, flattened already), so
    that PyYAML's constructor, whose flattening recurses once per merge nested in a merge, never sees one.
    """
    root: Any = None
    documents = 0
    open_: list[_Open] = []
    # an anchor's node and what it stands for (values, characters); the size is None while the collection is open
    anchors: dict[str, tuple[Any, tuple[int, int] | None]] = {}
    budget = _Budget()
    while True:
        event = loader.get_event()
        mark = event.start_mark
        if isinstance(event, yaml.StreamEndEvent):
            return root
        if isinstance(event, yaml.DocumentStartEvent):
            documents += 1
            if documents > 1:
                raise _YamlProblem("a second YAML document (after '---'): write one document per file", mark)
            continue
        if not isinstance(event, (yaml.NodeEvent, yaml.CollectionEndEvent)):
            continue  # the stream's start and a document's end
        if isinstance(event, yaml.AliasEvent):
            node, cost = anchors.get(event.anchor, (None, None))
            if node is None:
                raise _YamlProblem(f"the alias *{event.anchor} names no anchor before it: define &{event.anchor}", mark)
            if cost is None:
                raise _YamlProblem(
                    f"the alias *{event.anchor} is inside what it names: JSON cannot carry a cycle", mark
                )
            budget.spend(*cost, mark)
        elif isinstance(event, (yaml.ScalarEvent, yaml.CollectionStartEvent)):
            if event.anchor is not None and event.anchor in anchors:
                raise _YamlProblem(f"the anchor &{event.anchor} is defined twice: rename one", mark)
            node = _node(loader, yaml, event)
            if isinstance(event, yaml.CollectionStartEvent):
                if len(open_) >= MAX_NESTING:
                    raise _YamlProblem(f"nests more than {MAX_NESTING} levels deep: flatten it", mark)
                open_.append(_Open(node, event.anchor))
                if event.anchor is not None:
                    anchors[event.anchor] = (node, None)
                budget.spend(1, 0, mark)
                continue
            cost = (1, len(event.value))
            budget.spend(*cost, mark)
            if event.anchor is not None:
                anchors[event.anchor] = (node, cost)
        else:  # the end of a collection: its parts are counted already
            done = open_.pop()
            node, cost = done.node, (done.size, done.text)
            node.end_mark = event.end_mark
            if isinstance(node, yaml.MappingNode):
                _flatten(node, yaml)
            if done.anchor is not None:
                anchors[done.anchor] = (node, cost)
        if not open_:
            root = node
            continue
        parent = open_[-1]
        parent.size += cost[0]
        parent.text += cost[1]
        if isinstance(parent.node, yaml.SequenceNode):
            parent.node.value.append(node)
        elif parent.key is None:
            parent.key = node
        else:
            parent.node.value.append((parent.key, node))
            parent.key = None


def _flatten(node: Any, yaml: Any) -> None:
    """Refuse a key written twice in the mapping ``node``, then put what its merge keys (``<<``) merge before its
    own pairs, as PyYAML does (a key of its own wins, then the first mapping merged that holds the key).

    What is merged ended before ``node``, so it is flattened already: this looks one level deep, never recurses.
    """
    seen: set[tuple[str, str]] = set()
    merged: list[Any] = []
    own: list[Any] = []
    for key_node, value_node in node.value:
        if key_node.tag != _MERGE:
            own.append((key_node, value_node))
            if isinstance(key_node, yaml.ScalarNode):
                marker = (key_node.tag, key_node.value)
                if marker in seen:
                    raise _YamlProblem(
                        f"the key {one_line(key_node.value)[:80]!r} appears twice in one mapping; keep one",
                        key_node.start_mark,
                        invalid=True,
                    )
                seen.add(marker)
            continue
        sources = value_node.value if isinstance(value_node, yaml.SequenceNode) else [value_node]
        wrong = next((source for source in sources if not isinstance(source, yaml.MappingNode)), None)
        if wrong is not None:
            what = _KIND_NAMES[type(wrong).__name__]
            raise _YamlProblem(
                "a merge key (<<) takes a mapping or a list of mappings (an alias of one: *name), not"
                f" {what if wrong is value_node else 'a list holding ' + what}",
                wrong.start_mark,
            )
        for source in reversed(sources):  # the first mapping listed wins: it goes last
            merged.extend(source.value)
    if len(own) < len(node.value):  # it had a merge key, maybe of an empty mapping: none may be left
        node.value = merged + own


_MERGE = "tag:yaml.org,2002:merge"
_CORE = "tag:yaml.org,2002:"
# The explicit tags a definitions file may write, by the kind of node they may tag: JSON's types only.
_TAGS_BY_KIND = {
    "ScalarNode": {f"{_CORE}{name}" for name in ("str", "int", "float", "bool", "null")},
    "SequenceNode": {f"{_CORE}seq"},
    "MappingNode": {f"{_CORE}map"},
}
_KIND_NAMES = {"ScalarNode": "a single value", "SequenceNode": "a list", "MappingNode": "a mapping"}
_TAGS_TAKEN = "!!str, !!int, !!float, !!bool and !!null on a single value, !!seq on a list and !!map on a mapping"


def _node(loader: Any, yaml: Any, event: Any) -> Any:
    """The node a scalar or a collection's start stands for, its tag resolved as PyYAML's composer does; an
    explicit tag must be one of JSON's types and fit the kind of node it tags."""
    if isinstance(event, yaml.ScalarEvent):
        kind = yaml.ScalarNode
    else:
        kind = yaml.SequenceNode if isinstance(event, yaml.SequenceStartEvent) else yaml.MappingNode
    if event.tag in (None, "!"):
        value = event.value if kind is yaml.ScalarNode else None
        tag = loader.resolve(kind, value, event.implicit)
        if tag == f"{_CORE}value":  # YAML 1.1 reads a lone "=" as the "value key", which no constructor builds
            tag = f"{_CORE}str"
    else:
        tag = event.tag
        if tag not in _TAGS_BY_KIND[kind.__name__]:
            written = f"!!{tag[len(_CORE) :]}" if tag.startswith(_CORE) else tag
            fits = any(tag in tags for tags in _TAGS_BY_KIND.values())
            what = f"does not fit {_KIND_NAMES[kind.__name__]}" if fits else "is not one definitions take"
            raise _YamlProblem(
                f"the tag {one_line(written)[:60]} {what}: remove it; definitions take {_TAGS_TAKEN}",
                event.start_mark,
            )
    if kind is yaml.ScalarNode:
        return yaml.ScalarNode(tag, event.value, event.start_mark, event.end_mark, style=event.style)
    return kind(tag, [], event.start_mark, None, flow_style=event.flow_style)
