"""Property-based tests (Hypothesis) of reading definitions and writing an export's files, without I/O.

Whatever a YAML or JSON file or a mapping holds (tags on any node, anchors, aliases and merge keys in any
arrangement, escapes of surrogates and control characters, values of no JSON type), reading it gives definitions
or an ``AnalyticsInputError``, never another exception: Airflow would retry that one as if it were transient. Merge
keys mean what they mean to PyYAML; a body's measured size is its encoded size; an export's files are visible,
distinct, and read back as what was exported, or the export is refused.
"""

from __future__ import annotations

import contextlib
import json
from typing import Any

import yaml  # type: ignore[import-untyped]  # PyYAML ships no type information
from hypothesis import example, given, settings
from hypothesis import strategies as st

from airflow_provider_analytics.definitions._export_files import definition_files
from airflow_provider_analytics.definitions._files import read_document
from airflow_provider_analytics.definitions._load import load_definitions, load_documents
from airflow_provider_analytics.definitions._problems import Problems
from airflow_provider_analytics.definitions._yaml import parse_yaml
from airflow_provider_analytics.wire._request_json import Unsendable, encoded, measure
from airflow_provider_analytics.wire.errors import AnalyticsInputError

SETTINGS = settings(max_examples=250, deadline=None)

# Hostile YAML, from the parts that broke the reader before --------------------------------------------------------

TAGS = ["", "", "", "!!str ", "!!int ", "!!float ", "!!bool ", "!!null ", "!!seq ", "!!map ", "!!set ", "!!omap "]
TAGS += ["!!pairs ", "!!binary ", "!!timestamp ", "!!merge ", "!!value ", "!local ", "!<tag:yaml.org,2002:map> "]
SCALARS = ["1", "x", "'q'", '"\\ud800"', '"\\udc00x"', '"\\x00"', "0755", "190:20:30", "2026-02-30", "~", "=", ".nan"]
SCALARS += ["9" * 30, "0x1F", "yes", "''", '"\\U0001F600"', "2026-01-01 10:00:00+99:00", "-", "1e999", "*a", "*b"]


def _flow_map(pairs: list[tuple[str, str]]) -> str:
    return "{" + ", ".join(f"{key}: {value}" for key, value in pairs) + "}"


keys = st.sampled_from(["a", "b", "<<", "a", "=", "1", "? [k]", "!!int x", "'<<'"])
scalars = st.sampled_from(SCALARS) | st.text(alphabet=st.characters(codec="utf-8"), max_size=4).map(json.dumps)
nodes = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4).map(lambda items: "[" + ", ".join(items) + "]"),
        st.lists(st.tuples(keys, inner), max_size=4).map(_flow_map),
        st.lists(inner, min_size=1, max_size=3).map(lambda merged: "{<<: [" + ", ".join(merged) + "], k: 1}"),
    ),
    max_leaves=12,
)
tagged = st.tuples(st.sampled_from(TAGS), st.sampled_from(["", "&a ", "&b "]), nodes).map("".join)


def yaml_documents(node: str, anchored: str) -> str:
    return f"workflows:\n  - name: w\n    configuration:\n      base: {anchored}\n      value: {node}\n"


def read_bytes(raw: bytes, kind: str) -> None:
    """What an apply does with a file's bytes: read them within the budgets, then check every value."""
    problems = Problems()
    document = read_document(raw, "hostile", kind, problems)
    problems.raise_if_any()
    assert document is not None
    load_documents([("hostile", document)], problems)


@SETTINGS
@given(tagged, tagged)
@example("!!map [1, 2]", "&a {x: 1}")
@example("{<<: {<<: {<<: *a}}}", "&a {x: 1}")
@example('"\\ud800"', "1")
def test_no_yaml_file_raises_anything_but_an_input_error(node: str, anchored: str) -> None:
    with contextlib.suppress(AnalyticsInputError):
        read_bytes(yaml_documents(node, anchored).encode(), "yaml")


@SETTINGS
@given(st.text(max_size=300), st.sampled_from(["yaml", "json"]))
@example("\ufeff\ufeffworkflows: []", "yaml")
@example('{"workflows": [{"name": "\\ud800"}]}', "json")
def test_no_text_at_all_raises_anything_but_an_input_error(text: str, kind: str) -> None:
    raw = text.encode("utf-8", "surrogatepass")  # bytes that are not UTF-8 too
    with contextlib.suppress(AnalyticsInputError):
        read_bytes(raw, kind)


# Mappings given directly, and JSON ----------------------------------------------------------------------------

json_keys = st.text(max_size=6) | st.sampled_from(["\ud800", "k\udfff", "name"])
odd = st.sampled_from([float("nan"), float("inf"), 2**60, 10**400, b"bytes", {1, 2}, (1, 2), None, True])
values = st.recursive(
    st.one_of(st.text(max_size=6), st.integers(-(2**53), 2**53), st.floats(allow_nan=False), odd),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(json_keys | st.integers(0, 3), inner, max_size=4),
    max_leaves=15,
)
objects = st.fixed_dictionaries(
    {"name": st.text(max_size=6) | st.just("\ud800")}, optional={"configuration": values, "description": values}
)


@SETTINGS
@given(st.lists(objects, max_size=3), st.sampled_from(["workflows", "charts", "dashboards", "data_sources"]))
def test_no_mapping_raises_anything_but_an_input_error(entries: list[Any], section: str) -> None:
    document = {section: entries}
    with contextlib.suppress(AnalyticsInputError):
        load_definitions(document)
    try:
        text = json.dumps(document)  # as a JSON file writes it: surrogates as \ud800 escapes
    except (TypeError, ValueError):
        return  # not JSON: only a mapping can hold it
    with contextlib.suppress(AnalyticsInputError):
        read_bytes(text.encode(), "json")


# What the parts promise -------------------------------------------------------------------------------------------

merge_keys = st.sampled_from(["a", "b", "c"])
plain_maps = st.dictionaries(merge_keys, st.integers(0, 9), max_size=3).map(
    lambda mapping: "{" + ", ".join(f"{key}: {value}" for key, value in mapping.items()) + "}"
)


@SETTINGS
@given(st.lists(plain_maps, min_size=1, max_size=4), st.lists(st.lists(st.integers(0, 3), max_size=3), max_size=4))
@example(["{}"], [[0]])  # a merge of an empty mapping: the merge key must go all the same
def test_merge_keys_mean_what_they_mean_to_pyyaml(anchored: list[str], merges: list[list[int]]) -> None:
    lines = [f"m{number}: &m{number} {mapping}" for number, mapping in enumerate(anchored)]
    for number, chosen in enumerate(merges):
        names = [f"*m{index % len(anchored)}" for index in chosen]
        merged = f"<<: [{', '.join(names)}], " if names else ""
        lines.append(f"r{number}: &r{number} {{{merged}own: {number}}}")
        if number:  # a merge of a mapping that merges
            lines.append(f"c{number}: {{<<: *r{number - 1}, a: {number}}}")
    text = "\n".join(lines) + "\n"

    assert parse_yaml(text) == yaml.safe_load(text)


json_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False, allow_infinity=False), st.text()),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4),
    max_leaves=20,
)


@SETTINGS
@given(json_values)
def test_a_measured_size_is_the_encoded_size(value: Any) -> None:
    size = measure(value, 1 << 40)
    if isinstance(size, Unsendable):  # a lone surrogate in a text or a key: UTF-8 cannot encode it
        assert "surrogate" in size.problem
        return
    assert size == len(encoded(value))
    if size > 0:  # one byte under its size, it is refused
        under = measure(value, size - 1)
        assert isinstance(under, Unsendable)
        assert under.over_limit


names = st.text(max_size=8) | st.sampled_from(["売上", "!!!", "Sales!", "sales?", "a x1", "\ud800", ".", ".."])


@SETTINGS
@given(st.lists(names, max_size=6, unique=True), st.sampled_from(["kind", "object"]))
def test_an_export_s_files_are_visible_distinct_and_read_back_or_it_is_refused(
    chosen: list[str], split_by: str
) -> None:
    entries = [{"name": name, "description": "", "configuration": {"n": name}} for name in chosen]
    try:
        files = definition_files({"workflows": entries}, split_by)
    except AnalyticsInputError as error:
        refused = str(error)
    else:
        refused = ""
    if refused:
        assert "none was written" in refused
        return
    paths = [file.path for file in files]
    assert len(set(paths)) == len(paths)
    for path in paths:
        assert all(part and not part.startswith(".") for part in path.split("/")), path
        assert path.isascii(), path
