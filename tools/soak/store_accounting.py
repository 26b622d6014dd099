"""The soak's rate limit store: which limiter paced the fleet, what the store held at the end, and its invariant.

By default every process on the token (the triggerer, each task process of the two workers) paces it through one
limiter kept in the deployment's Redis (the Celery broker's server, database ``STORE_DB``): the analytics connection
names the Redis connection ``STORE_CONN_ID`` in its extra ``rate_limit_redis_conn_id``, both created through the
REST API (soak_deployment.py). ``--no-store`` (``make soak SOAK_STORE=no``) leaves the extra out: each process paces
alone, learning its share of the limit from ``X-RateLimit-Remaining``; the limited phase's bound differs
(limit_accounting.py). ``collect`` in soak.py reads the store's keys at the end into :attr:`Collected.store`.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT / "tools" / "e2e"), str(ROOT)]  # as soak_deployment.py: tools/e2e, tests.support

from accounting import Collected, Violation  # noqa: E402
from cluster import STORE_CONN_ID, STORE_DB  # noqa: E402
from store_check import KEY_PREFIX, leaks  # noqa: E402

NO_TOKEN_IN_THE_STORE = "no token in the rate limit store"


def store_used(collected: Collected) -> str:
    """In words: which limiter paced the token's requests."""
    if collected.store is None:
        return "none (--no-store): each process paces the token alone, its share learnt from X-RateLimit-Remaining"
    return (f"Redis db {STORE_DB} of the broker's server (connection {STORE_CONN_ID!r}): every process paces the "
            "token through one limiter")  # fmt: skip


def no_token_in_the_store(collected: Collected) -> list[Violation]:
    """No key or value of the store holds a token the connection ever had, or 16 hex digits of its sha256."""
    if collected.store is None:
        return []
    found = leaks(collected.store, collected.tokens)
    return [Violation(NO_TOKEN_IN_THE_STORE, "", "", f"{text[:80]}...") for text in found[:20]]


def store_rows(collected: Collected) -> list[tuple[str, str]]:
    """Which limiter paced the fleet, and the accounts' states the store held at the end."""
    rows = [("rate limit store", store_used(collected))]
    if collected.store is None:
        return rows
    states = sorted(key for key in collected.store if key.startswith(KEY_PREFIX) and key.endswith(":state"))
    described = []
    for key in states:
        fields = collected.store[key]
        state = dict(zip(fields[::2], fields[1::2], strict=True))
        learnt = ", ".join(f"{name} {state[name]}" for name in ("th", "r", "v") if state.get(name))
        described.append(f"{{{learnt}}}")
    rows.append(("rate limit store at the end: accounts (one per token used: the rotation adds one), their state "
                 "(throttled, pace /s, version); keys in all",
                 f"{len(states)}: {'; '.join(described) or '-'}; {len(collected.store)}"))  # fmt: skip
    return rows


__all__ = ["NO_TOKEN_IN_THE_STORE", "no_token_in_the_store", "store_rows", "store_used"]
