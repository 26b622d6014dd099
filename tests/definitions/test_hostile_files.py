"""No definitions file can take the process down, and every value the definitions refuse is an input error.

Files that crashed or hung the process before (50,000 nested ``[``, a FIFO) are loaded in a child process with
its memory capped and a deadline, so that on a regression the child dies, not the test run. Every problem names
the file and the line, or the file, the object and the field, and is an ``AnalyticsInputError`` (not retried).
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from airflow_provider_analytics.definitions._load import MAX_VALUES, load_definitions
from airflow_provider_analytics.wire.errors import AnalyticsInputError
from tests.definitions.helpers import PASSWORD, definitions
from tests.support.probes import RESULT_PREFIX, printed_result

HEAD = "workflows:\n  - name: hostile\n    configuration:\n"
PROBE = f"""
import json, sys
from airflow_provider_analytics.definitions._load import load_definitions
outcomes = []
for path in sys.argv[1:]:
    try:
        load_definitions(path)
        outcomes.append("loaded")
    except Exception as error:
        outcomes.append(type(error).__name__ + ": " + str(error).splitlines()[-1])
print({RESULT_PREFIX!r} + json.dumps(outcomes))
"""


def problems_of(source: Any) -> list[str]:
    """The problems ``load_definitions`` refuses ``source`` with, one per line."""
    with pytest.raises(AnalyticsInputError) as caught:
        load_definitions(source)
    return [line[4:] for line in str(caught.value).splitlines()[1:]]


def written(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return path


def merge_keys(levels: int) -> str:
    """Merge keys ten wide, ``levels`` deep: each level stands for ten copies of the one before."""
    rows = ["      m0: &m0 {a: 1, b: 2, c: 3, d: 4, e: 5, f: 6, g: 7, h: 8, i: 9, j: 10}\n"]
    for level in range(1, levels + 1):
        rows.append(f"      m{level}: &m{level} {{<<: [{', '.join([f'*m{level - 1}'] * 10)}], k{level}: 0}}\n")
    return HEAD + "".join(rows)


def fifo(folder: Path) -> Path:
    path = folder / "x.yaml"
    os.mkfifo(path)  # opening it for reading would block until a writer came
    return path


@pytest.mark.parametrize(
    ("make", "problem"),
    [
        (
            lambda folder: written(folder, "deep.yaml", HEAD + "      deep: " + "[" * 50_000),
            "line 4, column 113: nests more than 104 levels deep: flatten it",
        ),
        (fifo, "is a FIFO, not a regular file; definitions are read from regular files only"),
    ],
    ids=["50000-brackets", "fifo"],
)
def test_files_that_crashed_or_hung_the_process_are_refused_in_it(
    tmp_path: Path, make: Callable[[Path], Path], problem: str
) -> None:
    path = make(tmp_path)

    def capped() -> None:  # a regression ends the child with MemoryError or SIGSEGV, never the machine
        resource.setrlimit(resource.RLIMIT_AS, (1024**3, 1024**3))

    child = subprocess.run(
        [sys.executable, "-c", PROBE, str(path)],
        capture_output=True,
        text=True,
        timeout=30,  # only a regression (a hang) gets near this: the probe takes under a second
        preexec_fn=capped,
        check=False,
    )

    assert child.returncode == 0, child.stderr
    assert printed_result(child.stdout) == [f"AnalyticsInputError:   - {path}: {problem}"]


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        (merge_keys(5), "line 9, column 36: the file stands for over 1,000,000 values, counting each alias"),
        (
            HEAD + "      a0: &a0 [" + ", ".join(["x"] * 1000) + "]\n      many: [" + ", ".join(["*a0"] * 1000) + "]",
            "line 5, column 4999: the file stands for over 1,000,000 values, counting each alias",
        ),
        (HEAD + "      loop: &loop [1, *loop]\n", "line 4, column 23: the alias *loop is inside what it names"),
        (HEAD + "      a: &x 1\n      b: &x 2\n", "line 5, column 10: the anchor &x is defined twice: rename one"),
        (HEAD + "      a: *nowhere\n", "line 4, column 10: the alias *nowhere names no anchor before it"),
        ("workflows: []\n---\ncharts: []\n", "line 2, column 1: a second YAML document (after '---')"),
    ],
    ids=["merge-keys", "aliases", "cycle", "anchor-twice", "no-anchor", "two-documents"],
)
def test_aliases_and_merge_keys_are_budgeted_while_parsing(tmp_path: Path, text: str, problem: str) -> None:
    path = written(tmp_path, "bomb.yaml", text)

    (line,) = problems_of(path)

    assert line.startswith(f"{path}: {problem}")


def test_what_the_budget_allows_still_loads_and_the_values_are_counted_across_sources(tmp_path: Path) -> None:
    anchor = "[" + ", ".join(["x"] * 1000) + "]"
    aliases = ", ".join(["*a0"] * 100)
    allowed = written(tmp_path, "allowed.yaml", HEAD + f"      a0: &a0 {anchor}\n      many: [{aliases}]")
    # 900 objects of 1,000 values each: each one well within what one request carries
    more = {"workflows": [{"name": f"more-{number}", "configuration": {"many": ["x"] * 1000}} for number in range(900)]}

    loaded = load_definitions(allowed)
    over = problems_of([allowed, more])  # 100,000 values and more in the file, 900,000 in the mapping

    assert loaded.workflows[0].configuration["many"] == [["x"] * 1000] * 100
    budget = f"the definitions hold over {MAX_VALUES:,} values (YAML aliases expanding?); split them"
    assert over == [
        f"definitions[1]: workflows[897] 'more-897': configuration.many[101]: {budget}",
        f"definitions[1]: workflows[898] 'more-898': configuration: {budget}",
        f"definitions[1]: workflows[899] 'more-899': configuration: {budget}",
    ]


def test_values_yaml_would_change_or_python_would_raise_on_are_input_errors(tmp_path: Path) -> None:
    huge = "7" * 5000
    path = written(
        tmp_path,
        "values.yaml",
        "charts:\n"
        "  - {name: c, type: line, data_source: d, query: q, options: {since: 2026-02-30, t: 190:20:30, f: 1:30.5}}\n"
        "workflows:\n"
        f"  - name: w\n    configuration: {{n: {huge}, big: 9007199254740992, ok: 9007199254740991}}\n"
        "  - {name: z, configuration: {at: 2026-01-01 10:00:00+99:00, tagged: !!int abc, 190:20:30: x}}\n"
        "dashboards:\n  - {name: d, layout: [{chart: c, x: 0x20000000000000, y: 0, w: 1, h: 1}]}\n",
    )

    problems = problems_of(path)

    integers = "the definitions take integers from -(2**53 - 1) to 2**53 - 1, the integers JSON carries exactly"
    sexagesimal = "YAML 1.1 reads it as a number in base 60, YAML 1.2 as text: quote it for text, or write the number"
    assert problems == [
        f"{path}: charts[0] 'c': options.since: '2026-02-30' (line 2) is not a date or time that exists (a part out"
        " of range, or a tag that does not fit); quote it to send it as text",
        f"{path}: workflows[0] 'w': configuration.n: '{'7' * 37}...' (line 5) is an integer of over 64 digits;"
        f" {integers}: quote it to send it as text",
        f"{path}: workflows[1] 'z': configuration.at: '2026-01-01 10:00:00+99:00' (line 6) is not a date or time that"
        " exists (a part out of range, or a tag that does not fit); quote it to send it as text",
        f"{path}: dashboards[0] 'd': layout[0].x: must be a whole number of at least 0, got '0x20000000000000' (line"
        " 8), the integer 9007199254740992",
    ]
    # each object reports its first bad value; the others of the same objects, one by one once those are fixed
    again = written(
        tmp_path,
        "again.yaml",
        "workflows:\n  - {name: t, configuration: {t: 190:20:30}}\n  - {name: f, configuration: {f: 1:30.5}}\n"
        "  - {name: o, configuration: {mode: 0755, zero: 0, hex: 0x1F}}\n",
    )
    assert problems_of(again) == [
        f"{again}: workflows[0] 't': configuration.t: '190:20:30' (line 2) is a YAML 1.1 sexagesimal (base 60)"
        f" number; {sexagesimal}",
        f"{again}: workflows[1] 'f': configuration.f: '1:30.5' (line 3) is a YAML 1.1 sexagesimal (base 60)"
        f" number; {sexagesimal}",
        f"{again}: workflows[2] 'o': configuration.mode: '0755' (line 4) is a YAML 1.1 octal number (0755 is 493;"
        " YAML 1.2 reads 755); write the number it means without leading zeros, or quote it to send it as text",
    ]


def test_json_and_mappings_refuse_integers_beyond_the_range_too(tmp_path: Path) -> None:
    path = written(tmp_path, "big.json", '{"workflows": [{"name": "w", "configuration": {"n": ' + "9" * 5000 + "}}]}")
    mapping = definitions()
    mapping["dashboards"][0]["layout"][0]["x"] = 2**53
    mapping["workflows"][0]["configuration"]["limit"] = -(2**60)
    mapping["workflows"][0]["description"] = 10**5000  # str() of it would raise ValueError

    assert problems_of(path) == [
        f"{path}: workflows[0] 'w': configuration.n: '{'9' * 37}...' is an integer of 5,000 digits; the"
        " definitions take integers from -(2**53 - 1) to 2**53 - 1, the integers JSON carries exactly: write it as"
        " a string to send it as text"
    ]
    assert problems_of(mapping) == [
        "definitions: dashboards[0] 'Sales': layout[0].x: is int 9007199254740992, beyond the integers JSON carries"
        " exactly (-(2**53 - 1) to 2**53 - 1); write it as a string to send it as text",
        "definitions: workflows[0] 'enrich-sales': configuration.limit: is int -1152921504606846976, beyond the"
        " integers JSON carries exactly (-(2**53 - 1) to 2**53 - 1); write it as a string to send it as text",
        "definitions: workflows[0] 'enrich-sales': description: must be a string, got an integer of about 5,001"
        " digits; quote it in YAML",
    ]


def test_a_syntax_error_points_where_the_mistake_starts(tmp_path: Path) -> None:
    path = written(tmp_path, "quote.yaml", "workflows:\n  - name: w\n    description: 'unclosed\n\n    x: 1\n")

    assert problems_of(path) == [
        f"{path}: invalid YAML at line 3, column 18: while scanning a quoted scalar that is never closed: found"
        " unexpected end of stream"
    ]


@pytest.mark.parametrize(
    "rendered",
    [
        str(definitions()),  # what Jinja gives for a mapping without render_template_as_native_obj
        str([definitions()]),
        os.path.join("/opt/airflow/dags", str(definitions())),  # the operator puts the DAG's folder before it
        "data_sources:\n  - name: x\n    connection: {password: " + PASSWORD + "}\n",
    ],
    ids=["mapping", "list", "in-dag-folder", "yaml-text"],
)
def test_a_rendered_mapping_is_refused_without_being_shown(rendered: str) -> None:
    (problem,) = problems_of(rendered)
    (in_list,) = problems_of([rendered])

    assert PASSWORD not in problem
    assert problem.startswith("definitions: is text ")
    assert problem.endswith(
        "it is not shown, as it may hold secrets. A template rendered a mapping or a list to text: pass the mapping"
        " itself, or give the DAG render_template_as_native_obj=True"
    )
    assert in_list == problem.replace("definitions:", "definitions[0]:", 1)


def test_a_path_is_shown_cut(tmp_path: Path) -> None:
    long = str(tmp_path / ("x" * 1000)) + PASSWORD + "y" * 1000 + "*.yaml"

    (problem,) = problems_of(long)

    assert PASSWORD not in problem
    assert problem.endswith(": the glob matches no file; check the pattern")
    assert len(problem) < 300  # the path cut to 200 characters, and the sentence


def test_a_field_whose_name_is_not_a_string_is_named_as_written(tmp_path: Path) -> None:
    path = written(
        tmp_path,
        "keys.yaml",
        "charts:\n  - {name: c, type: line, data_source: d, query: q, 190:20:30: x, true: y}\n"
        "dashboards:\n  - {name: d, layout: [{chart: c, x: 0, y: 0, w: 1, h: 1, 5: z}]}\n",
    )

    fields = "the fields are name, type, data_source, query, options, id"
    assert problems_of(path) == [
        f"{path}: charts[0] 'c': '190:20:30' (line 2) is a YAML 1.1 sexagesimal (base 60) number; YAML 1.1 reads it"
        " as a number in base 60, YAML 1.2 as text: quote it for text, or write the number: is not a known field of"
        f" a chart; {fields}",
        f"{path}: charts[0] 'c': True: is not a known field of a chart; {fields}",
        f"{path}: dashboards[0] 'd': layout[0].5: is not a known field of a layout item; the fields are chart, x, y,"
        " w, h",
    ]
