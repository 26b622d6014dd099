"""Definitions plan and apply through a client, without a hook: the hook only hands them its client.

Found by issue 34: ``definitions/_apply.py`` wrote through the hook's wrappers, and the hook called back into it
(an import circle), while each write's request was built twice by two copies of one switch.
"""

from __future__ import annotations

import logging

import pytest

from airflow_provider_analytics.definitions._apply import apply_plan, plan_definitions
from airflow_provider_analytics.sandbox.server import SandboxServer
from airflow_provider_analytics.wire.client import AnalyticsClient
from tests.definitions.helpers import CREATES, READS, SEED, definitions, sent, writes
from tests.support.fixtures import make_config


def test_a_client_plans_and_applies_with_the_requests_a_hook_sends(
    empty: SandboxServer, caplog: pytest.LogCaptureFixture
) -> None:
    log = logging.getLogger("test.definitions.client")
    caplog.set_level(logging.INFO, logger=log.name)

    with AnalyticsClient(make_config(empty)) as client:
        plan = plan_definitions(client, definitions(), log)
        applied = apply_plan(client, plan, key_seed=SEED, log=log)

    assert sent(empty)[:4] == READS
    posts = writes(empty, 4)
    assert [(entry.method, entry.path) for entry in posts] == CREATES
    assert len(sent(empty)) == 4 + 5  # four listings, five writes, nothing else
    assert [item.action for item in applied.written] == ["create"] * 5
    created = [record.getMessage() for record in caplog.records if record.name == log.name]
    assert sum(message.startswith("Created ") for message in created) == 5


def test_a_second_apply_through_a_client_replays_every_create(empty: SandboxServer) -> None:
    """The keys of writes built before the first is sent (no reference to a new object) are the ones sent."""
    with AnalyticsClient(make_config(empty)) as client:
        plan = plan_definitions(client, definitions())
        first = apply_plan(client, plan, key_seed=SEED)
        again = apply_plan(client, plan, key_seed=SEED)  # the same plan and seed: a retried task

    assert [item.id for item in again.written] == [item.id for item in first.written]
    keys = [entry.headers["idempotency-key"] for entry in writes(empty)]
    assert keys[:5] == keys[5:]
