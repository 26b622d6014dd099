"""Definitions are read from YAML and JSON files or mappings and checked whole, before any request.

Each bad definition fails ``plan_definitions`` with one error that names the file, the object and the field,
and the sandbox's request log shows that nothing, not even a listing, was sent.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from airflow_provider_analytics.definitions._apply import plan_definitions
from airflow_provider_analytics.definitions._files import MAX_FILE_BYTES
from airflow_provider_analytics.hooks.analytics import AnalyticsHook
from airflow_provider_analytics.sandbox.server import SandboxServer
from airflow_provider_analytics.wire.errors import AnalyticsInputError
from tests.definitions.helpers import actions, definitions, write_file


def refused(hook: AnalyticsHook, sandbox: SandboxServer, source: Any) -> list[str]:
    """The problems ``source`` is refused with (one per line), after checking that nothing was sent."""
    with pytest.raises(AnalyticsInputError) as caught:
        plan_definitions(hook, source)
    assert sandbox.state.requests == []
    first, *problems = str(caught.value).splitlines()
    assert first.endswith("; nothing was changed on the platform:")
    assert all(line.startswith("  - ") for line in problems)
    return [line[4:] for line in problems]


def test_yaml_and_json_files_and_a_glob_over_them_are_read(
    hook: AnalyticsHook, empty: SandboxServer, tmp_path: Path
) -> None:
    document = definitions()
    write_file(tmp_path, "1-sources.yml", {"data_sources": document["data_sources"]})
    write_file(tmp_path, "2-charts.json", {"charts": document["charts"]})
    write_file(tmp_path, "3-rest.yaml", {"dashboards": document["dashboards"], "workflows": document["workflows"]})
    (tmp_path / "4-empty.yaml").write_text("# nothing yet\n", encoding="utf-8")

    by_glob = plan_definitions(hook, str(tmp_path / "*"))
    rest = {"dashboards": document["dashboards"], "workflows": document["workflows"]}
    by_list = plan_definitions(hook, [tmp_path / "1-sources.yml", str(tmp_path / "2-charts.json"), rest])

    assert [action for _, _, action in actions(by_glob)] == ["create"] * 5
    assert by_glob.sources == tuple(
        str(tmp_path / name) for name in ("1-sources.yml", "2-charts.json", "3-rest.yaml", "4-empty.yaml")
    )
    assert by_glob.changes[1].definition is not None
    assert str(by_glob.changes[1].definition.origin) == f"{tmp_path / '2-charts.json'}: charts[0] 'Revenue'"
    assert actions(by_list) == actions(by_glob)
    assert by_list.sources == (str(tmp_path / "1-sources.yml"), str(tmp_path / "2-charts.json"), "definitions[2]")


def test_unknown_sections_and_fields_are_errors_with_the_nearest_name(
    hook: AnalyticsHook, sandbox: SandboxServer, tmp_path: Path
) -> None:
    document = definitions()
    document["charts"][0]["data_source_id"] = document["charts"][0].pop("data_source")
    document["dashboards"][0]["layout"][0]["chart_id"] = document["dashboards"][0]["layout"][0].pop("chart")
    document["dashboard"] = []
    path = write_file(tmp_path, "sales.yaml", document)

    problems = refused(hook, sandbox, path)

    assert problems == [
        f"{path}: charts[0] 'Revenue': data_source_id: is not a known field of a chart; the fields are name, type,"
        " data_source, query, options, id; did you mean 'data_source'?",
        f"{path}: charts[0] 'Revenue': data_source: is required",
        f"{path}: dashboards[0] 'Sales': layout[0].chart_id: is not a known field of a layout item; the fields are"
        " chart, x, y, w, h; did you mean 'chart'?",
        f"{path}: dashboards[0] 'Sales': layout[0].chart: is required (a chart's name or id)",
        f"{path}: 'dashboard': is not a known section; the sections are data_sources, charts, dashboards, workflows;"
        " did you mean 'dashboards'?",
    ]


def test_wrong_types_are_named_field_by_field(hook: AnalyticsHook, sandbox: SandboxServer, tmp_path: Path) -> None:
    path = tmp_path / "wrong.yaml"
    path.write_text(
        "data_sources:\n"
        "  - {name: wh, type: postgres, connection: [host, db]}\n"
        "charts:\n"
        "  - {name: 2024, type: lien, data_source: wh, query: ''}\n"
        "  - {name: Dated, type: bar, data_source: wh, query: q, options: {since: 2026-01-01}}\n"
        "dashboards:\n"
        "  - {name: Board, tags: [a, a, 3], layout: [{chart: Dated, x: -1, y: 0, w: 2.5}]}\n"
        "workflows:\n"
        "  - name: wf\n"
        "  - just a string\n",
        encoding="utf-8",
    )

    problems = refused(hook, sandbox, path)

    assert problems == [
        f"{path}: data_sources[0] 'wh': connection: must be a mapping, got a list",
        f"{path}: charts[0]: name: must be a string, got int 2024; quote it in YAML",
        f"{path}: charts[0]: type: must be one of line, bar, area, pie, table, number, scatter, got 'lien'; did you"
        " mean 'line'?",
        f"{path}: charts[0]: query: must not be empty",
        f"{path}: charts[1] 'Dated': options.since: is a date, which JSON cannot carry; quote it to send it as text",
        f"{path}: dashboards[0] 'Board': tags[1]: 'a' is listed twice; keep one",
        f"{path}: dashboards[0] 'Board': tags[2]: must be a non-empty string, got int 3",
        f"{path}: dashboards[0] 'Board': layout[0].x: must be a whole number of at least 0, got int -1",
        f"{path}: dashboards[0] 'Board': layout[0].w: must be a whole number of at least 1, got float 2.5",
        f"{path}: dashboards[0] 'Board': layout[0].h: is required: give each chart's grid position and size"
        " (x, y, w, h)",
        f"{path}: workflows[0] 'wf': configuration: is required (a mapping)",
        f"{path}: workflows[1]: must be a mapping with the fields name, configuration, description, id, not a string",
    ]


def test_a_name_defined_twice_across_two_files_names_both_places(
    hook: AnalyticsHook, sandbox: SandboxServer, tmp_path: Path
) -> None:
    chart = definitions()["charts"][0]
    first = write_file(tmp_path, "a.yaml", {"charts": [chart]})
    second = write_file(tmp_path, "b.json", {"charts": [definitions()["charts"][1], chart]})

    problems = refused(hook, sandbox, [first, second])

    assert problems == [
        f"{second}: charts[1] 'Revenue': name: charts already has 'Revenue' at {first}: charts[0] 'Revenue'; a name"
        " identifies a chart on the platform, so each must be unique in its section: rename one, or give each the"
        " 'id' of the platform chart it manages"
    ]


def test_a_glob_matching_no_file_is_an_error(hook: AnalyticsHook, sandbox: SandboxServer, tmp_path: Path) -> None:
    write_file(tmp_path, "sales.yaml", definitions())

    problems = refused(hook, sandbox, [str(tmp_path / "*.yaml"), str(tmp_path / "*.ymal")])

    assert problems == [f"{tmp_path / '*.ymal'}: the glob matches no file; check the pattern"]


@pytest.mark.parametrize(
    ("name", "text", "problem"),
    [
        (
            "bad.yaml",
            "charts:\n  - name: a\n    type: [line\n",
            "invalid YAML at line 3, column 11: while parsing a flow sequence that is never closed: did not find",
        ),
        ("twice.yaml", "charts: []\ncharts: []\n", "invalid YAML at line 2, column 1: the key 'charts' appears twice"),
        ("bad.json", '{"charts": [}', "invalid JSON at line 1, column 13: Expecting value"),
        ("twice.json", '{"charts": [], "charts": []}', "invalid JSON: the key 'charts' appears twice in one object"),
        ("list.yaml", "- name: a\n", "the top level must be a mapping of sections (data_sources, charts,"),
        ("notes.txt", "charts: []\n", "is not a .yaml, .yml or .json file; rename it or narrow the glob"),
    ],
)
def test_files_that_do_not_parse_say_where(
    hook: AnalyticsHook, sandbox: SandboxServer, tmp_path: Path, name: str, text: str, problem: str
) -> None:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")

    (line,) = refused(hook, sandbox, [path, definitions()])

    assert line.startswith(f"{path}: {problem}")


def test_what_is_read_is_bounded(hook: AnalyticsHook, sandbox: SandboxServer, tmp_path: Path) -> None:
    large = tmp_path / "large.json"
    with large.open("wb") as stream:
        stream.truncate(MAX_FILE_BYTES + 1)
    aliases = tmp_path / "aliases.yaml"  # each level ten times the one before: 10**7 values from a few lines
    levels = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    levels += [f"a{n}: &a{n} [{', '.join([f'*a{n - 1}'] * 10)}]" for n in range(1, 7)]
    aliases.write_text(
        "workflows:\n  - name: expands\n    configuration:\n" + "".join(f"      {level}\n" for level in levels),
        encoding="utf-8",
    )

    problems = refused(hook, sandbox, [str(large), str(aliases)])

    assert problems[0] == f"{large}: is larger than 10 MiB; split it into several files"
    assert problems[1].startswith(f"{aliases}: line 9, column ")  # stopped while parsing a5, before building it
    assert problems[1].endswith("as all it names: write fewer aliases, or split the file")


def test_sources_of_the_wrong_kind_are_refused(hook: AnalyticsHook, sandbox: SandboxServer, tmp_path: Path) -> None:
    assert refused(hook, sandbox, []) == ["definitions: the list is empty; give at least one path, glob or mapping"]
    assert refused(hook, sandbox, [{"charts": {"name": "x"}}, 3, str(tmp_path)]) == [
        "definitions[1]: must be a path, a glob or a mapping, got int",
        f"{tmp_path}: is a folder; give a glob such as {os.path.join(tmp_path, '*.yaml')!r}",
        "definitions[0]: charts: must be a list of charts, not a mapping",
    ]


def test_a_file_whose_name_looks_like_a_glob_is_read_as_that_file(
    hook: AnalyticsHook, empty: SandboxServer, tmp_path: Path
) -> None:
    path = write_file(tmp_path, "sales[prod].yaml", {"workflows": definitions()["workflows"]})

    assert actions(plan_definitions(hook, path)) == [("workflow", "enrich-sales", "create")]
