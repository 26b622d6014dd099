"""What the platform lists is data a plan compares and an export writes, never masked text, against the sandbox: a
secret value the definitions hold (remembered for masking before the first request) that is also part of an object's
name or text must not rewrite the listings, or the plan stops matching the object and creates a duplicate at every
run, and the export writes ``***`` where the platform holds text. Log lines, messages and a plan's XCom value stay
masked; an export refuses to write a secret the task knows rather than write it, or ``***`` in its place."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest

from airflow_provider_analytics.definitions._review import moved_since
from airflow_provider_analytics.hooks.analytics import AnalyticsHook
from airflow_provider_analytics.sandbox.server import SandboxServer
from airflow_provider_analytics.wire.errors import UnexpectedResponseError
from tests.definitions.helpers import actions, logged, workspace
from tests.definitions.test_export_trust import export_to, plant


def a_secret(label: str) -> str:
    """A value no earlier test remembered: remembering lasts for the process, so a reused one proves nothing."""
    return f"{label}{uuid.uuid4().hex[:8]}"


def names_on_the_platform(sandbox: SandboxServer, kind: str) -> list[str]:
    with sandbox.state.lock:
        return [record.name for record in getattr(workspace(sandbox), kind).values()]


def test_a_secret_that_is_part_of_a_name_does_not_make_the_plan_create_it_again(
    empty: SandboxServer, hook: AnalyticsHook, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    secret = a_secret("churn")
    scoring = f"{secret}-scoring"
    plant(empty, wf_scoring=("workflow", scoring, {"schedule": "0 1 * * *"}))
    definitions: dict[str, Any] = {
        "workflows": [
            {"name": scoring, "configuration": {"schedule": "0 1 * * *"}},
            {"name": "tok", "configuration": {"tokenizer": secret}},  # a key the rule counts secret
        ]
    }

    for run in ("run-1", "run-2"):
        plan = hook.plan_definitions(definitions)
        hook.apply_plan(plan, key_seed=run)

    assert actions(plan) == [("workflow", scoring, "unchanged"), ("workflow", "tok", "unchanged")]
    assert names_on_the_platform(empty, "workflows").count(scoring) == 1
    assert secret not in logged(capsys, caplog)  # the log's table is masked, not the plan
    assert secret not in json.dumps(plan.to_dict())  # nor its XCom value: output, masked
    assert secret not in repr(plan) + repr(plan.changes[0])  # nor a repr (a debugger, a log line, a message)


def test_a_changed_field_s_values_read_unmasked_are_masked_in_every_repr(
    empty: SandboxServer, hook: AnalyticsHook
) -> None:
    secret = a_secret("held")
    plant(empty, wf_held=("workflow", "held", {"note": f"from {secret}"}))
    definitions = {"workflows": [{"name": "held", "configuration": {"note": "mine", "password": secret}}]}

    plan = hook.plan_definitions(definitions)

    [change] = plan.changes
    assert change.action == "cannot_apply"
    assert change.fields
    for shown in (repr(plan), repr(change), repr(change.fields[0]), str(change.fields)):
        assert secret not in shown
        assert "***" in shown


def test_a_secret_that_is_a_data_source_s_name_leaves_the_data_source_unchanged(
    empty: SandboxServer, hook: AnalyticsHook
) -> None:
    name = a_secret("warehouse")
    plant(empty, ds_named=("data_source", name, {"project": "p"}))
    definitions = {
        "data_sources": [{"name": name, "type": "bigquery", "connection": {"project": "p"}}],
        # A workflow naming the secret manager's entry it reads, under a secret-looking key: a name, not a secret.
        "workflows": [{"name": "loader", "configuration": {"password_secret_name": name}}],
    }

    hook.apply_plan(hook.plan_definitions(definitions), key_seed="first")
    plan = hook.plan_definitions(definitions)

    assert actions(plan) == [("data_source", name, "unchanged"), ("workflow", "loader", "unchanged")]
    assert names_on_the_platform(empty, "data_sources") == [name]


def test_a_plan_s_xcom_and_table_mask_what_the_listings_hold_and_a_review_of_it_still_matches(
    empty: SandboxServer, hook: AnalyticsHook, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    # A platform that wrote the connection's token into a dashboard: the plan compares it as data, and shows it
    # (in the table, in the XCom value) masked, like every output.
    board = hook.create_dashboard("Board", description=f"key {empty.token} do not share")
    definitions = {"dashboards": [{"name": "Board", "description": "rotated", "tags": [], "layout": []}]}

    plan = hook.plan_definitions(definitions)
    reviewed = plan.to_dict()
    again = hook.plan_definitions(definitions)
    moved = moved_since(reviewed, again.to_dict())
    applied = hook.apply_plan(again, key_seed="review")

    assert actions(plan) == [("dashboard", "Board", "update")]
    assert empty.token not in json.dumps(reviewed)
    assert empty.token not in logged(capsys, caplog)
    assert reviewed["changes"][0]["fields"][0]["before"] == "key *** do not share"
    assert moved == []  # made and masked alike, so the review matches
    assert [(item.id, item.action) for item in applied.written] == [(board["id"], "update")]


def test_an_export_refuses_an_object_holding_a_remembered_secret_rather_than_write_it(
    empty: SandboxServer, hook: AnalyticsHook, tmp_path: Path
) -> None:
    secret = a_secret("nightly")
    hook.plan_definitions({"workflows": [{"name": "tok", "configuration": {"api_token": secret}}]})  # remembers it
    plant(empty, wf_job=("workflow", f"{secret}-job", {"steps": [{"name": f"{secret} extract"}]}))

    with pytest.raises(UnexpectedResponseError) as caught:
        hook.export_definitions(names=[f"{secret}-job"])
    with pytest.raises(UnexpectedResponseError):
        export_to(tmp_path, names=[f"{secret}-job"])

    assert "workflow wf_job holds, in configuration.steps[0].name, the text of a secret" in str(caught.value)
    assert secret not in str(caught.value)
    assert list(tmp_path.iterdir()) == []  # nothing written, neither the secret nor *** in its place


@pytest.mark.parametrize(
    ("field", "value", "where"),
    [
        ("description", "{token}", "description"),
        ("configuration", {"note": "{token}"}, "configuration.note"),  # a key the rule does not count secret
        ("configuration", {"{token}": 1}, "a key of configuration"),
    ],
)
def test_an_export_refuses_the_connection_s_token_wherever_the_platform_wrote_it(
    empty: SandboxServer, tmp_path: Path, field: str, value: Any, where: str
) -> None:
    filled = json.loads(json.dumps(value).replace("{token}", empty.token))
    plant(empty, wf_echo=("workflow", "echo", {} if field == "description" else filled))
    if field == "description":
        with empty.state.lock:
            workspace(empty).workflows["wf_echo"].description = filled

    with pytest.raises(UnexpectedResponseError) as caught:
        export_to(tmp_path, names=["echo"])

    assert f"workflow wf_echo holds, in {where}, the text of a secret" in str(caught.value)
    assert empty.token not in str(caught.value)
    assert list(tmp_path.iterdir()) == []


def test_a_bearer_credential_the_platform_holds_is_exported_as_a_reference_never_masked(
    empty: SandboxServer, hook: AnalyticsHook, tmp_path: Path
) -> None:
    # Not a header line, which the rule reads whole: only the Bearer shape says this text holds a credential.
    plant(empty, wf_hdr=("workflow", "hdr", {"note": "call it with Bearer abcdefgh12345 upstream"}))

    export_to(tmp_path, names=["hdr"])

    text = (tmp_path / "workflows.yaml").read_text(encoding="utf-8")
    assert "from_variable: analytics_hdr_configuration_note" in text
    assert "***" not in text  # masked text was written here before
    assert "abcdefgh12345" not in text
    plan = hook.plan_definitions(f"{tmp_path}/*.yaml")
    assert [change.action for change in plan.changes if change.name == "hdr"] == ["unchanged"]


def test_a_dashboard_update_repeated_beside_a_remembered_secret_is_not_a_conflict(
    empty: SandboxServer, hook: AnalyticsHook
) -> None:
    secret = a_secret("finance")
    hook.plan_definitions({"workflows": [{"name": "tok", "configuration": {"api_token": secret}}]})  # remembers it
    dashboard = hook.create_dashboard("Board", description="old")

    description = f"{secret} daily figures"
    first = hook.update_dashboard(dashboard["id"], "Board", description=description, if_match=1)
    again = hook.update_dashboard(dashboard["id"], "Board", description=description, if_match=1)  # a retried task

    assert again["version"] == first["version"] == 2
    assert secret not in str(again)  # a hook method's answer is masked as ever


def test_what_an_apply_returns_masks_a_secret_a_name_holds(empty: SandboxServer, hook: AnalyticsHook) -> None:
    secret = a_secret("alpha")
    definitions = {"workflows": [{"name": f"scoring-{secret}", "configuration": {"api_token": secret}}]}

    applied = hook.apply_plan(hook.plan_definitions(definitions), key_seed="masked-output")

    assert names_on_the_platform(empty, "workflows") == [f"scoring-{secret}"]  # sent as written
    for shown in (repr(applied), repr(applied.written[0]), json.dumps(applied.to_dict())):
        assert secret not in shown
        assert "scoring-***" in shown
