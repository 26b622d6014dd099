"""Token rotation: the new token works at once, the old one until its grace period ends, then gets 401."""

from __future__ import annotations

import httpx

from airflow_provider_analytics.sandbox.domain.store import SandboxState


def status_with(client: httpx.Client, token: str) -> int:
    return client.get("/v1/workflows", headers={"Authorization": f"Bearer {token}"}).status_code


def test_the_old_token_works_through_its_grace_then_gets_401(
    client: httpx.Client, admin: httpx.Client, state: SandboxState
) -> None:
    old = state.config.primary_token
    rotated = admin.post("/_sandbox/tokens/rotate", json={"grace_seconds": 30})
    assert rotated.status_code == 200, rotated.text
    new = rotated.json()["token"]
    assert new != old
    assert rotated.json()["old_expires_at"] > admin.get("/_sandbox/health").json()["now"]
    assert (status_with(client, old), status_with(client, new)) == (200, 200)
    state.advance(29)
    assert status_with(client, old) == 200
    state.advance(2)
    refused = client.get("/v1/workflows", headers={"Authorization": f"Bearer {old}"})
    assert refused.status_code == 401
    assert refused.json()["error"]["type"] == "unauthenticated"
    assert status_with(client, new) == 200


def test_the_new_token_keeps_the_old_ones_access(
    client: httpx.Client, admin: httpx.Client, state: SandboxState
) -> None:
    new = admin.post("/_sandbox/tokens/rotate", json={"grace_seconds": 0, "new": "rotated-full"}).json()["token"]
    assert new == "rotated-full"
    marketing = {"Authorization": f"Bearer {new}", "X-Workspace-Id": "ws_marketing"}
    assert client.get("/v1/workflows", headers=marketing).status_code == 200
    assert status_with(client, state.config.primary_token) == 401  # no grace: refused at once


def test_a_second_rotation_retires_the_first_new_token(
    client: httpx.Client, admin: httpx.Client, state: SandboxState
) -> None:
    first = admin.post("/_sandbox/tokens/rotate", json={"grace_seconds": 5}).json()["token"]
    second = admin.post("/_sandbox/tokens/rotate", json={"old": first, "grace_seconds": 10}).json()["token"]
    state.advance(6)
    assert [status_with(client, t) for t in (state.config.primary_token, first, second)] == [401, 200, 200]
    state.advance(5)
    assert [status_with(client, t) for t in (first, second)] == [401, 200]


def test_refused_rotations(client: httpx.Client, admin: httpx.Client, state: SandboxState) -> None:
    for body in (
        {"old": "no-such-token", "grace_seconds": 5},
        {"grace_seconds": -1},
        {"grace_seconds": "soon"},
        {"new": "has space", "grace_seconds": 5},
        {"new": state.config.primary_token, "grace_seconds": 5},
    ):
        answer = admin.post("/_sandbox/tokens/rotate", json=body)
        assert answer.status_code == 422, (body, answer.text)
    assert status_with(client, state.config.primary_token) == 200


def test_reset_forgets_rotations(client: httpx.Client, admin: httpx.Client, state: SandboxState) -> None:
    new = admin.post("/_sandbox/tokens/rotate", json={"grace_seconds": 0}).json()["token"]
    admin.post("/_sandbox/reset")
    assert (status_with(client, state.config.primary_token), status_with(client, new)) == (200, 401)


def test_sync_history_lists_every_attempt(admin: httpx.Client, state: SandboxState) -> None:
    admin.post("/_sandbox/data-sources/ds_events/sync", json={})
    admin.post("/_sandbox/data-sources/ds_events/sync", json={"outcome": "failed"})  # supersedes the first
    state.advance(10)
    admin.post("/_sandbox/data-sources/ds_events/sync", json={})
    history = admin.get("/_sandbox/data-sources/ds_events/syncs").json()["data"]
    assert [attempt["outcome"] for attempt in history] == ["superseded", "failed", "synced"]
    assert history[0]["finished_at"] is None
    assert history[1]["finished_at"] > history[1]["started_at"]
    assert admin.get("/_sandbox/data-sources/ds_nope/syncs").status_code == 404
