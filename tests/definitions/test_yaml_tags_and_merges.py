"""Tags and merge keys as definitions files write them: a tag on the wrong kind of node, or one that is not a JSON
type, is an input error at its line and column (PyYAML raised a bare ``TypeError`` or ``ValueError``, or showed its
own node objects); merge keys are flattened as PyYAML does, without its recursion, so that a chain of merges loads
instead of ending the task in a ``RecursionError``."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml  # type: ignore[import-untyped]  # PyYAML ships no type information

from airflow_provider_analytics.definitions._load import load_definitions
from airflow_provider_analytics.definitions._yaml import parse_yaml
from airflow_provider_analytics.hooks.analytics import AnalyticsHook
from airflow_provider_analytics.sandbox.server import SandboxServer
from tests.definitions.helpers import sent
from tests.definitions.test_hostile_files import HEAD, problems_of, written

TAGS_TAKEN = "!!str, !!int, !!float, !!bool and !!null on a single value, !!seq on a list and !!map on a mapping"


def chained_merges(anchors: int = 12, depth: int = 95) -> str:
    """``anchors`` anchors, each a mapping that merges the one before through ``depth`` nested merge keys, and a
    mapping that merges the last one, built (PyYAML builds level by level) before any of them was."""
    rows = ["      defs:\n"]
    for number in range(anchors):
        merged = "{x: 0}" if number == 0 else f"*a{number - 1}"
        for _ in range(depth):
            merged = f"{{<<: {merged}}}"
        rows.append(f"        a{number}: &a{number} {merged}\n")
    rows.append(f"      top: {{<<: *a{anchors - 1}, y: 1}}\n")
    return HEAD + "".join(rows)


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ("!!map [1, 2]", "line 4, column 10: the tag !!map does not fit a list"),
        ("!!set [a]", "line 4, column 10: the tag !!set is not one definitions take"),
        ("!!map x", "line 4, column 10: the tag !!map does not fit a single value"),
        ("!!int [1]", "line 4, column 10: the tag !!int does not fit a list"),
        ("!!float {a: 1}", "line 4, column 10: the tag !!float does not fit a mapping"),
        ("!!seq {a: 1}", "line 4, column 10: the tag !!seq does not fit a mapping"),
        ("!!omap [a: 1]", "line 4, column 10: the tag !!omap is not one definitions take"),
        ("!!binary aGk=", "line 4, column 10: the tag !!binary is not one definitions take"),
        ("!!timestamp 2026-01-01", "line 4, column 10: the tag !!timestamp is not one definitions take"),
        ("!!python/name:os.system x", "line 4, column 10: the tag !!python/name:os.system is not one definitions"),
        ("!local x", "line 4, column 10: the tag !local is not one definitions take"),
        ("{<<: 1}", "line 4, column 15: a merge key (<<) takes a mapping or a list of mappings (an alias of one:"),
        ("{<<: [{}, [1]]}", "line 4, column 20: a merge key (<<) takes a mapping or a list of mappings (an alias"),
    ],
)
def test_a_tag_or_a_merge_that_does_not_fit_is_an_input_error_at_its_place(
    tmp_path: Path, value: str, problem: str
) -> None:
    path = written(tmp_path, "tagged.yaml", f"{HEAD}      a: {value}\n")

    (line,) = problems_of(path)

    assert line.startswith(f"{path}: {problem}")
    if "tag" in problem:
        assert line.endswith(f": remove it; definitions take {TAGS_TAKEN}")
    assert "Node(" not in line


def test_a_file_of_bad_tags_is_refused_before_any_request(
    hook: AnalyticsHook, sandbox: SandboxServer, tmp_path: Path
) -> None:
    path = written(tmp_path, "tagged.yaml", f"{HEAD}      a: !!map [1, 2]\n")

    assert problems_of(path) == [f"{path}: line 4, column 10: the tag !!map does not fit a list: remove it;"
                                 f" definitions take {TAGS_TAKEN}"]  # fmt: skip
    with pytest.raises(ValueError, match="the tag !!map does not fit a list"):
        hook.plan_definitions(str(path))
    assert sent(sandbox) == []


def test_the_tags_of_json_types_still_read_as_written(tmp_path: Path) -> None:
    text = f"{HEAD}      s: !!str 0755\n      i: !!int 12\n      f: !!float 1.5\n      b: !!bool yes\n"
    text += "      n: !!null ''\n      l: !!seq [1]\n      m: !!map {a: 1}\n      eq: =\n"
    path = written(tmp_path, "typed.yaml", text)

    (workflow,) = load_definitions(path).workflows

    expected = {"s": "0755", "i": 12, "f": 1.5, "b": True, "n": None, "l": [1], "m": {"a": 1}, "eq": "="}
    assert workflow.configuration == expected


def test_a_chain_of_merges_loads_as_pyyaml_merges_it_without_its_recursion(tmp_path: Path) -> None:
    text = chained_merges()
    path = written(tmp_path, "chained.yaml", text)
    assert len(text) < 8_000

    (workflow,) = load_definitions(path).workflows

    assert workflow.configuration["top"] == {"x": 0, "y": 1}
    try:  # PyYAML's own constructor recurses once per link: whether it overflows depends on the C stack
        theirs = yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except RecursionError:
        return
    assert workflow.configuration == theirs["workflows"][0]["configuration"]


@pytest.mark.parametrize(
    "text",
    [
        "a: &a {x: 1, y: 2}\nb: &b {y: 3, z: 4}\nc: {<<: [*a, *b], z: 5}\nd: {<<: *a, x: 9}\ne: {<<: [*b, *a]}\n",
        "a: &a {x: 1}\nf: {<<: {<<: *a, q: 1}, r: 2}\ng: {<<: *a, <<: {x: 2, w: 3}}\n",
        "a: &a {x: 1}\nb: &b {<<: *a, y: 2}\nc: &c {<<: *b, z: 3}\nd: {<<: [*c, *a], x: 0}\n",
    ],
)
def test_merged_keys_mean_what_they_mean_to_pyyaml(text: str) -> None:
    assert parse_yaml(text) == yaml.safe_load(text)


def test_a_key_written_twice_beside_a_merge_is_refused_but_one_a_merge_brings_is_overridden(tmp_path: Path) -> None:
    merged = written(tmp_path, "merged.yaml", f"{HEAD}      base: &b {{k: 1}}\n      over: {{<<: *b, k: 2}}\n")
    twice = written(tmp_path, "twice.yaml", f"{HEAD}      over: {{<<: {{k: 1}}, k: 2, k: 3}}\n")

    assert load_definitions(merged).workflows[0].configuration["over"] == {"k": 2}
    assert problems_of(twice) == [
        f"{twice}: invalid YAML at line 4, column 32: the key 'k' appears twice in one mapping; keep one"
    ]
