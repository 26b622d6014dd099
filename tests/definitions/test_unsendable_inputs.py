"""Input that no request could carry, or no plan holds, is refused before the first request, as an input error
(which Airflow does not retry) saying where: a lone UTF-16 surrogate (``"\\ud800"``) in a JSON file or a mapping,
and a reviewed plan nested thousands of levels deep.

A JSON file with a lone surrogate in a workflow used to load and plan; its apply created the dashboard, then
died on the workflow with ``UnicodeEncodeError`` (httpx 0.28 encodes bodies as UTF-8), though every body is
promised to be checked before the first write. A reviewed plan 5,000 levels deep ended the task in
``RecursionError``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from airflow_provider_analytics.definitions._model import MAX_DEPTH
from airflow_provider_analytics.definitions._review import moved_since
from airflow_provider_analytics.operators.definitions import ApplyDefinitionsOperator
from airflow_provider_analytics.operators.errors import FinalFailure
from airflow_provider_analytics.sandbox.server import SandboxServer
from tests.definitions.helpers import definitions, sent
from tests.definitions.test_hostile_files import problems_of
from tests.support.context import make_context

SURROGATE = "half of a UTF-16 surrogate pair, alone: the text it is in cannot be encoded as UTF-8"


def test_a_json_file_with_a_lone_surrogate_fails_before_the_first_write(empty: SandboxServer, tmp_path: Path) -> None:
    document = {
        "dashboards": [{"name": "Board"}],  # applied first: it was created before the workflow failed
        "workflows": [{"name": "w", "configuration": {"note": "caf\ud800"}}],
    }
    path = tmp_path / "definitions.json"
    path.write_text(json.dumps(document, indent=1), encoding="ascii")  # json.dumps writes it as \ud800
    operator = ApplyDefinitionsOperator(task_id="apply", definitions=str(path), retries=3)

    with pytest.raises(FinalFailure) as raised:
        operator.execute(make_context())

    assert f"{path}: line 11, column 17: \\ud800 is {SURROGATE}" in str(raised.value)
    assert sent(empty) == []
    assert empty.state.dashboards("ws_default") == []


def test_a_surrogate_pair_is_one_character_and_loads(empty: SandboxServer, tmp_path: Path) -> None:
    path = tmp_path / "pair.json"
    path.write_text('{"workflows": [{"name": "w", "configuration": {"face": "\\ud83d\\ude00"}}]}', encoding="ascii")

    result = ApplyDefinitionsOperator(task_id="apply", definitions=str(path)).execute(make_context())

    assert result["applied"]["counts"]["create"] == 1
    [workflow] = [item for item in empty.state.workflows("ws_default") if item["name"] == "w"]
    assert workflow["configuration"] == {"face": "\U0001f600"}


def test_a_mapping_with_a_lone_surrogate_is_refused_naming_where() -> None:
    document: dict[str, Any] = definitions()
    document["charts"][0]["query"] = "select \udc00"
    document["dashboards"][0]["tags"] = ["ok", "\ud800"]
    document["workflows"][0]["configuration"] = {"k\udfff": 1}

    assert problems_of(document) == [
        "definitions: charts[0] 'Revenue': query: holds a lone UTF-16 surrogate (\\udc00 at character 8), which UTF-8"
        " cannot encode: write the character it was half of, or remove it",
        "definitions: dashboards[0] 'Sales': tags[1]: holds a lone UTF-16 surrogate (\\ud800 at character 1), which"
        " UTF-8 cannot encode: write the character it was half of, or remove it",
        "definitions: workflows[0] 'enrich-sales': configuration: has the key 'k\\udfff', which holds a lone UTF-16"
        " surrogate (\\udfff at character 2), which UTF-8 cannot encode: write the character it was half of, or"
        " remove it",
    ]


def nested(depth: int) -> Any:
    value: Any = "bottom"
    for _ in range(depth - 1):
        value = [value]
    return value


@pytest.mark.parametrize(
    ("where", "problem"),
    [
        ("fields", "reviewed_plan['changes'][0]['fields'][0][0][0][0][0]... nests more than 106 levels deep"),
        ("digest", "reviewed_plan['changes'][0]['digest'][0][0][0][0][0]... nests more than 106 levels deep"),
        ("pinned_id", "reviewed_plan['changes'][0]['pinned_id'][0][0][0][0][0]... nests more than 106 levels deep"),
    ],
)
def test_a_reviewed_plan_nested_thousands_deep_is_refused_before_any_request(
    empty: SandboxServer, where: str, problem: str
) -> None:
    reviewed = {"changes": [{"kind": "dashboard", "name": "Sales", "action": "create", where: nested(5000)}]}
    # What a task does when "{{ ti.xcom_pull(...) }}" renders natively: the operator prepared for execution gets
    # the rendered value (Airflow's own walk of the arguments of an operator being built would recurse into it).
    operator = ApplyDefinitionsOperator(task_id="apply", definitions=definitions(), retries=3).prepare_for_execution()
    operator.reviewed_plan = reviewed

    with pytest.raises(FinalFailure) as raised:
        operator.execute(make_context())

    assert f"{problem}, deeper than any plan: it is not a plan task's return value" in str(raised.value)
    assert sent(empty) == []


@pytest.mark.parametrize(
    ("row", "problem"),
    [
        ({"id": ["x"]}, "has id a list, not a string or null"),
        ({"version": "3"}, "has version a str, not a whole number or null"),
        ({"version": True}, "has version a bool, not a whole number or null"),
        ({"fields": [{"field": "a", 1: "b"}]}, "reviewed_plan['changes'][0]['fields'][0] has the key 1"),
        ({"fields": [{"before": 1}]}, "has fields that are not a list of mappings, each naming its field"),
        # Python writes at most 4,300 digits as text: ValueError before, when the rows were compared.
        ({"version": 10**5000}, "reviewed_plan['changes'][0]['version'] is an integer of about 5,000 digits"),
        (
            {"action": "update", "fields": [{"field": "tags", "before": -(10**4400)}]},
            "reviewed_plan['changes'][0]['fields'][0]['before'] is an integer of about 4,400 digits",
        ),
    ],
)
def test_a_reviewed_row_of_the_wrong_types_is_refused_before_any_request(
    empty: SandboxServer, row: dict[Any, Any], problem: str
) -> None:
    reviewed = {"changes": [{"kind": "dashboard", "name": "Sales", "action": "create", **row}]}
    operator = ApplyDefinitionsOperator(task_id="apply", definitions=definitions(), reviewed_plan=reviewed)

    with pytest.raises(FinalFailure) as raised:
        operator.execute(make_context())

    assert problem in str(raised.value)
    assert sent(empty) == []


def test_a_plan_holding_values_as_deep_as_definitions_allow_is_a_reviewed_plan(empty: SandboxServer) -> None:
    deep = {"workflows": [{"name": "deep", "configuration": {"a": nested(MAX_DEPTH - 1)}}]}
    ApplyDefinitionsOperator(task_id="apply", definitions=deep).execute(make_context())
    deep["workflows"][0]["configuration"] = {"a": nested(MAX_DEPTH - 2)}  # the API cannot update a workflow
    plan_task = ApplyDefinitionsOperator(task_id="plan", definitions=deep, plan_only=True)

    result = plan_task.execute(make_context())

    [row] = [row for row in result["plan"]["changes"] if row["name"] == "deep"]
    assert row["action"] == "cannot_apply"
    assert row["fields"][0]["field"] == "configuration"
    assert moved_since(result, result["plan"]) == []  # as deep as a plan gets, in the operator's result
