"""The one secret rule where definitions use it, against the sandbox: the passwords an outside pass found it missing
(URLs written with ``#``, ``?`` or ``/`` in the password, environment entries, header objects and lines, rows beside
odd items, the key ``pwd``) are exported as references, never as values, and a plan shows and hashes none of them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from airflow_provider_analytics.definitions._digests import key_body
from airflow_provider_analytics.hooks.analytics import AnalyticsHook
from airflow_provider_analytics.sandbox.server import SandboxServer
from airflow_provider_analytics.wire.errors import UnexpectedResponseError
from tests.definitions.helpers import logged, workspace
from tests.definitions.test_export_trust import export_to, plant

# One password per shape the rule missed; none may reach a file, a log line or a plan.
MISSED = {
    "hash": "Tr0ub#dor77",
    "query": "Tr0ub?dor77",
    "slash": "Tr0ub/dor77",
    "env": "Tr0ubEnv77",
    "header": "Tr0ubHdr78",
    "line": "Tr0ubHdr77",
    "row": "Tr0ubPair77",
    "pwd": "Tr0ubPwd77",
}


def test_passwords_the_rule_missed_are_exported_as_references(
    empty: SandboxServer,
    hook: AnalyticsHook,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    configuration = {
        "db_url": f"postgresql://svc:{MISSED['hash']}@db/sales",
        "replica": f"postgresql://svc:{MISSED['query']}@replica/sales",
        "mysql": f"mysql://svc:{MISSED['slash']}@db/sales",
        "steps": [{"env": [f"DB_PASSWORD={MISSED['env']}", "LOG_LEVEL=info"]}],
        "headers": [{"header": "Authorization", "value": f"Bearer {MISSED['header']}"}],
        "raw_headers": [f"Authorization: Bearer {MISSED['line']}"],
        "params": [["user", "svc"], ["password", MISSED["row"]], ["flag"]],
        "pwd": MISSED["pwd"],
    }
    plant(empty, wf_missed=("workflow", "missed", configuration))

    result = export_to(tmp_path, names=["missed"])

    text = "\n".join(Path(uri).read_text(encoding="utf-8") for uri in result["files"])
    for secret in MISSED.values():
        assert secret not in text
    (workflow,) = hook.export_definitions(names=["missed"])["workflows"]
    variable = "analytics_missed_configuration_"
    assert workflow["configuration"] == {
        "db_url": {"from_variable": f"{variable}db_url"},
        "headers": [{"header": "Authorization", "value": {"from_variable": f"{variable}headers_0_value"}}],
        "mysql": {"from_variable": f"{variable}mysql"},
        "params": [["user", "svc"], ["password", {"from_variable": f"{variable}params_1_1"}], ["flag"]],
        "pwd": {"from_variable": f"{variable}pwd"},
        "raw_headers": [{"from_variable": f"{variable}raw_headers_0"}],
        "replica": {"from_variable": f"{variable}replica"},
        "steps": [{"env": [{"from_variable": f"{variable}steps_0_env_0"}, "LOG_LEVEL=info"]}],
    }
    plan = hook.plan_definitions(f"{tmp_path}/*.yaml")
    assert [change.action for change in plan.changes if change.name == "missed"] == ["unchanged"]
    said = logged(capsys, caplog)
    for secret in MISSED.values():
        assert secret not in said


def test_a_url_password_with_a_hash_is_neither_shown_nor_hashed_bare(empty: SandboxServer, hook: AnalyticsHook) -> None:
    old, new = "Old#pass99", "Summer#2026"
    plant(empty, wf_etl=("workflow", "etl", {"db_url": f"postgresql://svc:{old}@db/sales"}))
    configuration = {"db_url": f"postgresql://svc:{new}@db/sales"}

    plan = hook.plan_definitions({"workflows": [{"name": "etl", "configuration": configuration}]})

    (change,) = [change for change in plan.changes if change.name == "etl"]
    assert change.action == "cannot_apply"
    shown = json.dumps(plan.to_dict()) + plan.table()
    assert old not in shown
    assert new not in shown
    assert "postgresql://svc:***@db/sales" in shown  # the rest of the URL is legible
    # A create's Idempotency-Key hashes every secret as "(secret)": no bare hash of a password to guess at.
    assert key_body({"configuration": configuration}) == {"configuration": {"db_url": "(secret)"}}


def test_a_url_password_where_no_reference_can_stand_fails_the_export(empty: SandboxServer, tmp_path: Path) -> None:
    plant(empty, wf_desc=("workflow", "desc", {}))
    with empty.state.lock:
        workspace(empty).workflows["wf_desc"].description = "see postgresql://svc:Tr0ub#desc@db/x"

    with pytest.raises(UnexpectedResponseError) as caught:
        export_to(tmp_path, names=["desc"])

    assert "workflow 'desc' (wf_desc)" in str(caught.value)
    assert "in its description" in str(caught.value)
    assert "Tr0ub#desc" not in str(caught.value)
    assert list(tmp_path.iterdir()) == []
