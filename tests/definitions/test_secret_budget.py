"""A value read from Airflow has a budget (bytes, depth, what JSON carries), against the sandbox: one over it fails the
apply with a typed error before anything is sent (not retried), naming the variable or the connection and field, and
what to change; never the value. Airflow's variables and connections come from ``AIRFLOW_VAR_<KEY>`` and
``AIRFLOW_CONN_<ID>``, as a deployment's environment backend gives them."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest

from airflow_provider_analytics.definitions._secret_budget import MAX_SECRET_BYTES, MAX_SECRETS_BYTES
from airflow_provider_analytics.hooks.analytics import AnalyticsHook
from airflow_provider_analytics.operators.definitions import ApplyDefinitionsOperator
from airflow_provider_analytics.operators.errors import FinalFailure
from airflow_provider_analytics.sandbox.server import SandboxServer
from airflow_provider_analytics.version_compat import AIRFLOW_V_3_0_PLUS
from airflow_provider_analytics.wire.errors import AnalyticsInputError
from tests.definitions.helpers import workspace, writes
from tests.support.context import make_context


def a_workflow_reading(name: str, reference: dict[str, str], at: str = "token") -> dict[str, Any]:
    return {"workflows": [{"name": name, "configuration": {"auth": {at: reference}}}]}


def kept_in_extra(monkeypatch: pytest.MonkeyPatch, value: Any, raw: str | None = None) -> dict[str, str]:
    """A connection whose extra ``value`` holds ``value`` (or, as JSON text, ``raw``); the reference to it."""
    conn_id = f"analytics_odd_{uuid.uuid4().hex[:8]}"
    extra = raw if raw is not None else json.dumps(value)
    monkeypatch.setenv(f"AIRFLOW_CONN_{conn_id.upper()}", '{"conn_type": "generic", "extra": {"value": ' + extra + "}}")
    return {"from_connection": conn_id, "field": "value"}


def kept_in_variable(monkeypatch: pytest.MonkeyPatch, value: str) -> dict[str, str]:
    key = f"analytics_odd_{uuid.uuid4().hex[:8]}"
    monkeypatch.setenv(f"AIRFLOW_VAR_{key.upper()}", value)
    return {"from_variable": key}


def refused_apply(hook: AnalyticsHook, sandbox: SandboxServer, definitions: dict[str, Any]) -> str:
    plan = hook.plan_definitions(definitions)
    before = len(sandbox.state.requests)
    with pytest.raises(AnalyticsInputError) as caught:
        hook.apply_plan(plan, key_seed="budget")
    assert writes(sandbox, before) == []
    return str(caught.value)


def test_a_variable_holding_a_lone_surrogate_is_a_typed_error_naming_it(
    empty: SandboxServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The environment backend reads "\udcff" for a byte that is not UTF-8; a backend may answer any text.
    reference = kept_in_variable(monkeypatch, "pre-\udcff-secretvalue")
    operator = ApplyDefinitionsOperator(task_id="apply", definitions=a_workflow_reading("sur", reference), retries=3)

    with pytest.raises(FinalFailure) as caught:  # an input error: Airflow does not retry it
        operator.execute(make_context())

    message = str(caught.value)
    assert writes(empty) == []
    variable = reference["from_variable"]
    if AIRFLOW_V_3_0_PLUS:
        assert f"configuration.auth.token: Airflow variable {variable!r} holds a value" in message
        assert "holds a lone UTF-16 surrogate (\\udcff at character 5)" in message
    else:  # Airflow 2.11's own masker (re2) fails on it while Variable.get reads it
        said = f"configuration.auth.token: reads Airflow variable {variable!r}, whose value Airflow failed on"
        assert said in message
        assert "(UnicodeEncodeError: text UTF-8 cannot encode" in message
    assert "change the value kept in Airflow" in message
    assert "secretvalue" not in message


@pytest.mark.parametrize(
    ("value", "says"),
    [
        (2**53, "an integer beyond the integers JSON carries exactly"),
        ({"n": [12345678901234567890]}, "at n[0] an integer beyond the integers JSON carries exactly"),
        (None, "the value at x is nan, which JSON cannot carry"),
        ("\u0085", None),  # NEL is text like any other: sent as read
    ],
)
def test_a_value_json_does_not_carry_exactly_is_refused_naming_the_connection_and_field(
    empty: SandboxServer, hook: AnalyticsHook, monkeypatch: pytest.MonkeyPatch, value: Any, says: str | None
) -> None:
    reference = kept_in_extra(monkeypatch, value, raw='{"x": NaN}' if value is None else None)
    definitions = a_workflow_reading(f"odd-{uuid.uuid4().hex[:6]}", reference)
    if says is None:
        hook.apply_plan(hook.plan_definitions(definitions), key_seed="nel")
        (workflow,) = workspace(empty).workflows.values()
        assert workflow.configuration == {"auth": {"token": value}}
        return

    message = refused_apply(hook, empty, definitions)

    assert f"field 'value' of Airflow connection {reference['from_connection']!r} holds" in message
    assert says in message
    assert "change the value kept in Airflow" in message


@pytest.mark.parametrize("depth", [99, 900])
def test_a_value_nested_deeper_than_a_definition_may_be_is_refused_before_any_write(
    empty: SandboxServer, hook: AnalyticsHook, monkeypatch: pytest.MonkeyPatch, depth: int
) -> None:
    raw = '{"k": ' * depth + '"leaf-secret"' + "}" * depth  # JSON text: json.dumps itself recurses
    reference = kept_in_extra(monkeypatch, None, raw=raw)

    message = refused_apply(hook, empty, a_workflow_reading("deep", reference))

    assert "holds a value nested more than 97 levels deep" in message  # configuration.auth.token is 2 levels in
    assert "leaf-secret" not in message


def test_a_value_nested_as_deep_as_the_platform_lists_back_is_sent(
    empty: SandboxServer, hook: AnalyticsHook, monkeypatch: pytest.MonkeyPatch
) -> None:
    raw = '{"k": ' * 97 + '"leaf"' + "}" * 97
    reference = kept_in_extra(monkeypatch, None, raw=raw)
    definitions = a_workflow_reading("as-deep-as-allowed", reference)

    hook.apply_plan(hook.plan_definitions(definitions), key_seed="deep")

    assert [change.action for change in hook.plan_definitions(definitions).changes] == ["unchanged"]


def test_a_variable_over_the_byte_budget_is_refused_unsent(
    empty: SandboxServer, hook: AnalyticsHook, monkeypatch: pytest.MonkeyPatch
) -> None:
    reference = kept_in_variable(monkeypatch, "H" * (3 * 1024 * 1024))

    message = refused_apply(hook, empty, a_workflow_reading("huge", reference))

    assert f"Airflow variable {reference['from_variable']!r} holds a value of over 64 KiB as JSON" in message
    assert "HHHHHHHHHH" not in message


def test_the_values_of_one_apply_have_a_budget_together(
    empty: SandboxServer, hook: AnalyticsHook, monkeypatch: pytest.MonkeyPatch
) -> None:
    each = MAX_SECRET_BYTES - 1024
    count = MAX_SECRETS_BYTES // each + 1
    references = [kept_in_variable(monkeypatch, uuid.uuid4().hex * (each // 32)) for _ in range(count)]
    definitions = {
        "workflows": [
            {"name": f"part-{index}", "configuration": {"token": reference}}
            for index, reference in enumerate(references)
        ]
    }

    message = refused_apply(hook, empty, definitions)

    assert "would bring what this apply reads from Airflow to over 256 KiB as JSON" in message
    assert message.count("would bring") == 1  # the ones before it fit


def test_a_file_of_thousands_of_secrets_fails_the_plan_at_once_before_any_request(
    empty: SandboxServer, tmp_path: Any
) -> None:
    # 2,000 secret values of 32 characters in a 100 KB file: Airflow's masker, which compiles all it holds again
    # for each new one, took 186 s and 458 MiB on them. The plan refuses them before reading the platform.
    lines = ["workflows:", "  - name: many-secrets", "    configuration:"]
    lines += [f"      api_token_{index}: s{index:04}-{uuid.uuid4().hex}" for index in range(2000)]
    path = tmp_path / "many.yaml"
    path.write_text("\n".join(lines) + "\n")
    operator = ApplyDefinitionsOperator(task_id="apply", definitions=str(path), plan_only=True, retries=3)

    with pytest.raises(FinalFailure, match=r"2,000 new secret values of .* bytes at once") as caught:
        operator.execute(make_context())

    assert empty.state.requests == []
    assert "split the definitions over tasks" in str(caught.value)


def test_secrets_found_in_a_value_read_are_checked_against_the_masker_s_bound_before_the_first_write(
    empty: SandboxServer, hook: AnalyticsHook, monkeypatch: pytest.MonkeyPatch
) -> None:
    # One text read from Airflow (registered whole), holding 600 URLs whose passwords the rule finds in the body
    # as sent: more new secrets than Airflow's masker takes at once. The first data source was created before.
    text = " ".join(f"postgres://svc:pw-{index:04}-{uuid.uuid4().hex[:6]}@db/sales" for index in range(600))
    reference = kept_in_variable(monkeypatch, text)
    definitions = {
        "data_sources": [
            {"name": "a-first", "type": "bigquery", "connection": {"project": "p"}},
            {"name": "b-second", "type": "postgres", "connection": {"host": "db", "dsn": reference}},
        ]
    }

    message = refused_apply(hook, empty, definitions)

    assert "600 new secret values of" in message
    assert "pw-0001" not in message
