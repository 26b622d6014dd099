"""A retried apply creates nothing twice: deterministic idempotency keys, and re-planning after a partial apply."""

from __future__ import annotations

import re

import pytest

from airflow_provider_analytics.definitions._apply import apply_plan, idempotency_key, plan_definitions
from airflow_provider_analytics.hooks.analytics import AnalyticsHook
from airflow_provider_analytics.sandbox.faults import Fault
from airflow_provider_analytics.sandbox.server import SandboxServer
from airflow_provider_analytics.wire.errors import InvalidRequestError
from tests.definitions.helpers import SEED, actions, definitions, workspace, writes
from tests.support.connections import new_hook


def counts(sandbox: SandboxServer) -> list[int]:
    state = sandbox.state
    return [
        len(objects("ws_default")) for objects in (state.data_sources, state.charts, state.dashboards, state.workflows)
    ]


def test_the_same_plan_applied_twice_creates_nothing_twice(
    hook: AnalyticsHook, empty: SandboxServer, fresh_hooks: list[AnalyticsHook]
) -> None:
    plan = plan_definitions(hook, definitions())  # made before the first apply: it lists every object as new
    first = apply_plan(hook, plan, key_seed=SEED).to_dict()
    posts = len(writes(empty))

    again = apply_plan(new_hook(fresh_hooks), plan, key_seed=SEED).to_dict()  # a retried task, a new process

    assert counts(empty) == [1, 2, 1, 1]
    assert again == first  # the platform replayed each create
    keys = [entry.headers["idempotency-key"] for entry in writes(empty)]
    assert keys[posts:] == keys[:posts]
    assert len(set(keys[:posts])) == posts


def test_another_seed_is_another_apply(hook: AnalyticsHook, empty: SandboxServer) -> None:
    plan = plan_definitions(hook, {"workflows": definitions()["workflows"]})
    apply_plan(hook, plan, key_seed=SEED)

    apply_plan(hook, plan, key_seed="another run")  # a stale plan under a new seed: the platform creates again

    assert counts(empty) == [0, 0, 0, 2]


def test_an_apply_interrupted_after_its_first_creates_is_finished_by_a_retry(
    hook: AnalyticsHook, empty: SandboxServer, fresh_hooks: list[AnalyticsHook]
) -> None:
    empty.state.inject(Fault.status(422, method="POST", path="^/v1/dashboards$"))
    with pytest.raises(InvalidRequestError):
        apply_plan(hook, plan_definitions(hook, definitions()), key_seed=SEED)
    assert counts(empty) == [1, 2, 0, 0]  # the data source and the charts were created

    retry = new_hook(fresh_hooks)
    plan = plan_definitions(retry, definitions())
    before = len(empty.state.requests)
    applied = apply_plan(retry, plan, key_seed=SEED).to_dict()

    assert actions(plan) == [
        ("data_source", "warehouse-v2", "unchanged"),
        ("chart", "Revenue", "unchanged"),
        ("chart", "Orders", "unchanged"),
        ("dashboard", "Sales", "create"),
        ("workflow", "enrich-sales", "create"),
    ]
    assert [(entry.method, entry.path) for entry in writes(empty, before)] == [
        ("POST", "/v1/dashboards"),
        ("POST", "/v1/workflows"),
    ]
    assert counts(empty) == [1, 2, 1, 1]
    chart_ids = [chart["id"] for chart in empty.state.charts("ws_default")]
    assert [item["chart_id"] for item in empty.state.dashboards("ws_default")[0]["layout"]] == chart_ids
    assert [item["action"] for item in applied["written"]] == ["create", "create"]


def test_a_create_whose_answer_was_lost_is_sent_again_with_its_key_and_made_once(
    hook: AnalyticsHook, empty: SandboxServer
) -> None:
    empty.state.inject(Fault.drop(method="POST", path="^/v1/charts$", after_processing=True))

    applied = apply_plan(hook, plan_definitions(hook, definitions()), key_seed=SEED).to_dict()

    assert counts(empty) == [1, 2, 1, 1]
    chart_posts = [entry for entry in writes(empty) if entry.path == "/v1/charts"]
    assert len(chart_posts) == 3  # Revenue twice (its first answer lost), Orders once
    assert chart_posts[0].headers["idempotency-key"] == chart_posts[1].headers["idempotency-key"]
    assert applied["written"][1]["id"] == empty.state.charts("ws_default")[0]["id"]


def test_a_changed_definition_gets_a_fresh_key(hook: AnalyticsHook, sandbox: SandboxServer) -> None:
    chart = {"name": "Revenue", "type": "line", "data_source": "warehouse", "query": "select 1"}
    apply_plan(hook, plan_definitions(hook, {"charts": [chart]}), key_seed=SEED)
    with sandbox.state.lock:  # someone deletes it on the platform
        records = workspace(sandbox).charts
        (created,) = [ident for ident, record in records.items() if record.name == "Revenue"]
        del records[created]

    changed = {**chart, "query": "select 2"}
    applied = apply_plan(hook, plan_definitions(hook, {"charts": [changed]}), key_seed=SEED).to_dict()

    first, second = (entry for entry in writes(sandbox) if entry.path == "/v1/charts")
    assert first.headers["idempotency-key"] != second.headers["idempotency-key"]
    (recreated,) = [item for item in sandbox.state.charts("ws_default") if item["name"] == "Revenue"]
    assert (recreated["id"], recreated["query"]) == (applied["written"][0]["id"], "select 2")
    assert recreated["id"] != created


def test_the_key_depends_on_what_is_sent_but_not_on_secret_values() -> None:
    def key(seed: str = SEED, **connection: object) -> str:
        body = {"name": "wh", "type": "postgres", "connection": {"host": "db", "password": "one", **connection}}
        return idempotency_key(seed, "data_source", "wh", body)

    assert key() == key(password="two")  # secret values are not hashed, at any depth
    assert key(nested={"token": "a"}) == key(nested={"token": "b"})
    assert len({key(), key(host="db2"), key(seed="other run"), key(nested={"token": "a"})}) == 4
    assert re.fullmatch(r"apa-def-data_source-[0-9a-f]{48}", key())
