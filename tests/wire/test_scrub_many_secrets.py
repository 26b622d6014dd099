"""The scrubber with many secrets, long ones and odd ones: every secret masked in every spelling, whatever else the
process remembers. (How fast it is with 800 secrets is measured, not asserted: docs/hook.md, "Secrets".)"""

from __future__ import annotations

import base64
import secrets
import string
from urllib.parse import quote

from airflow_provider_analytics.wire._redaction import (
    holds_remembered,
    remember_secret,
    remember_secrets,
    scrub_body,
    scrub_text,
)


def fresh(length: int = 24, alphabet: str = string.ascii_letters + string.digits) -> str:
    return "".join(secrets.choice(alphabet) for _ in range(length))


def test_many_secrets_sharing_their_first_characters_are_each_masked_whole() -> None:
    stem = fresh(3)
    # Few enough: what a process remembers stays for its life, and makes every later compile longer.
    many = [stem + fresh(20) for _ in range(40)] + [f"x{fresh(30)}" for _ in range(40)]
    remember_secrets({"tokens": many})  # one batch, as a definitions file's secrets are remembered
    shorter = many[0][:12]
    remember_secret(shorter)  # a secret that another one contains: the longer one is still masked whole

    text = " | ".join(many[::7]) + f" | {shorter}-tail"

    scrubbed = scrub_text(text)
    assert all(secret not in scrubbed for secret in many)
    assert scrubbed == " | ".join(["***"] * len(many[::7])) + " | ***-tail"
    assert scrub_body(text.encode()) == scrubbed.encode()


def test_secrets_remembered_one_at_a_time_between_scrubs_are_all_masked() -> None:
    remembered = []
    for _ in range(20):
        remembered.append(fresh())
        remember_secret(remembered[-1])
        assert scrub_text(f"now {remembered[-1]}") == "now ***"
    assert "".join(scrub_text(secret) for secret in remembered) == "***" * 20


def test_a_long_secret_is_masked_as_written_url_encoded_and_in_base64() -> None:
    key = "-----BEGIN KEY-----\n" + fresh(20_000, string.ascii_letters + "/+=") + "\n-----END KEY-----"
    remember_secret(key)

    for spelling in (key, quote(key, safe=""), base64.b64encode(b"user:" + key.encode()).decode()):
        assert scrub_text(f"before {spelling} after") == "before *** after"
        assert scrub_body(f'{{"v": "{spelling}"}}'.encode()) == b'{"v": "***"}'
    assert holds_remembered(f"x{key}x")
    assert not holds_remembered(key[:-30])


def test_a_secret_holding_a_lone_surrogate_is_remembered_without_failing() -> None:
    odd = f"pre-\udcff-{fresh()}"
    remember_secret(odd)

    assert scrub_text(f"[{odd}]") == "[***]"
    assert scrub_text(f"[{odd[5:]}]") == f"[{odd[5:]}]"  # its tail alone is not the secret
