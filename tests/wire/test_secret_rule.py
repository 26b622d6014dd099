"""The one secret rule (``wire/_secret_rule.py``, ``wire/_text_credentials.py``) on the shapes an outside pass found it
missing: passwords in URLs written raw, environment entries, DSN fields, header lines and bearer tokens in texts, and
keys, rows and named values in structures; and the texts it must leave alone. Every use (masking, registration,
digests, exports) goes through these functions, so what they find is what every use hides."""

from __future__ import annotations

from typing import Any

import pytest

from airflow_provider_analytics.wire._secret_rule import (
    credentials_in_text,
    is_secret_key,
    mask_credentials,
    secret_units,
    secret_values,
)

PASSWORD = "Tr0ub#d/r?[x]@77"
FULLWIDTH_PASSWORD = "".join(chr(ord(letter) + 0xFEE0) for letter in "password")


@pytest.mark.parametrize(
    ("text", "credential"),
    [
        ("postgres://svc:Tr0ub#dor77@db/sales", "Tr0ub#dor77"),
        ("postgresql://svc:Tr0ub?dor77@db/sales", "Tr0ub?dor77"),
        ("mysql://svc:Tr0ub/dor77@db/sales", "Tr0ub/dor77"),
        ("https://u:a/b@h", "a/b"),
        ("postgresql://svc:Tr0[ub]dor@db/sales", "Tr0[ub]dor"),
        ("postgresql://svc:Tr0ub@dor@db/sales", "Tr0ub@dor"),  # the URL's last @ ends the userinfo
        (f"postgres://svc:{PASSWORD}@[::1]:5432/sales", PASSWORD),
        ("postgres://me@corp.com:Tr0ubador@db/x", "Tr0ubador"),  # a user holding an @
        ("see http://docs.example.com/x,postgres://svc:Tr0ubador@db/x", "Tr0ubador"),
        ("DB_PASSWORD=Tr0ubEnv77", "Tr0ubEnv77"),
        ("export PGPASSWORD=Tr0ubEnv77", "Tr0ubEnv77"),
        ("host=db sslpassword=Tr0ubSsl77 sslmode=verify-full", "Tr0ubSsl77"),
        ("host=db password=Tr0ub&b77", "Tr0ub&b77"),  # a DSN's password may hold &
        ("jdbc:postgresql://db/sales?user=svc&password=Tr0ubQ77&ssl=true", "Tr0ubQ77"),  # a query's & ends it
        ("https://api.example.com/x?api_key=abcdef123456", "abcdef123456"),
        ("Driver={x};Server=db;Uid=svc;Pwd={Tr0u;bador};", "Tr0u;bador"),
        ("dbt run --password=Tr0ubFlag77", "Tr0ubFlag77"),
        ("Authorization: Basic dXNlcjpwYXNzd29yZA==", "dXNlcjpwYXNzd29yZA=="),
        ("X-Api-Key: Tr0ubHdr77", "Tr0ubHdr77"),
        ("accept: json\npassword: Tr0ubLine77\n", "Tr0ubLine77"),
        ("Authorization: Bearer abcdefgh12345", "abcdefgh12345"),
        # Serialised mappings inside a text (the third outside pass: an export wrote each of these in clear).
        (
            '{"type": "service_account", "private_key": "-----BEGIN KEY-----\\nMIIEkey77\\n-----END KEY-----"}',
            "-----BEGIN KEY-----\\nMIIEkey77\\n-----END KEY-----",
        ),
        ("{'user': 'svc', 'password': 'Tr0ubRepr77'}", "Tr0ubRepr77"),
        ('{"password": "Tr0ub\\"Esc77"}', 'Tr0ub\\"Esc77'),
        ("db: {host: h, password: Tr0ubFlow77}", "Tr0ubFlow77"),
        ("<config><user>svc</user><password>Tr0ubXml77</password></config>", "Tr0ubXml77"),
    ],
)
def test_a_credential_inside_a_text_is_found_whole_and_masked(text: str, credential: str) -> None:
    assert credential in credentials_in_text(text)
    masked = mask_credentials(text, "***")
    assert credential not in masked
    assert "***" in masked


@pytest.mark.parametrize(
    "text",
    [
        "select * from users where password = 'x'",  # spaces around "=": a query, not an assignment
        "max_tokens=100 tokenizer=bert",  # names that hold a secret key's word without naming a credential
        "https://example.com/path?page=2#top",
        "send a Bearer token in the header",
        "Password: must be at least twelve characters long",  # prose, not a header line
        "git@github.com:org/repo.git",
        "http://[::1]:8080/metrics",
        '{"max_tokens": 100, "token_limit": "low", "notes": "password rules"}',  # JSON, no credential named
        "<password_policy>twelve characters</password_policy>",
    ],
)
def test_texts_without_a_credential_are_left_as_they_are(text: str) -> None:
    assert credentials_in_text(text) == []
    assert mask_credentials(text, "***") == text


@pytest.mark.parametrize(
    ("value", "path", "secret"),
    [
        ({"pwd": "Tr0ubPwd77"}, ("pwd",), "Tr0ubPwd77"),
        ({FULLWIDTH_PASSWORD: "Tr0ubWide"}, (FULLWIDTH_PASSWORD,), "Tr0ubWide"),  # folds to "password"
        ({"TO\u212aEN": "Tr0ubKelvin"}, ("TO\u212aEN",), "Tr0ubKelvin"),  # the Kelvin sign folds to K
        ({"privatekey": "Tr0ubPk"}, ("privatekey",), "Tr0ubPk"),
        ({"privateKey": "Tr0ubPk"}, ("privateKey",), "Tr0ubPk"),
        ([["user", "svc"], ["password", "Tr0ubPair77"], ["flag"]], (1, 1), "Tr0ubPair77"),  # odd rows beside
        ([["password", "Tr0ubRow"], "flag"], (0, 1), "Tr0ubRow"),
        ([{"header": "Authorization", "value": "Bearer Tr0ubHdr78"}], (0, "value"), "Bearer Tr0ubHdr78"),
        ([{"name": "X-Api-Key", "value": "Tr0ubNamed"}], (0, "value"), "Tr0ubNamed"),
        ([{"key": "X-Api-Key", "val": "Tr0ubVal"}], (0, "val"), "Tr0ubVal"),
        ({"args": ["--user", "svc", "--password", "Tr0ubArg"]}, ("args", 3), "Tr0ubArg"),
        ({"env": ["DB_PASSWORD=Tr0ubEnv77"]}, ("env", 0), "DB_PASSWORD=Tr0ubEnv77"),
        ({"db_url": "postgres://svc:Tr0ub#dor77@db/sales"}, ("db_url",), "postgres://svc:Tr0ub#dor77@db/sales"),
    ],
)
def test_a_secret_in_a_structure_is_found_at_its_place(value: Any, path: tuple[Any, ...], secret: str) -> None:
    assert secret_units(value)[path] == secret


def test_a_text_holding_a_credential_registers_the_credential_not_the_text() -> None:
    registered = secret_values({"steps": [{"env": ["DB_PASSWORD=Tr0ubEnv77"], "url": "https://u:a/b@h"}]})

    assert "Tr0ubEnv77" in registered
    assert "a/b" in registered
    assert "DB_PASSWORD=Tr0ubEnv77" not in registered


@pytest.mark.parametrize("key", ["tokenizer_name", "max_tokens", "password_policy", "pwd_len"])
def test_the_key_rule_stays_a_rule_on_names(key: str) -> None:
    # Names that hold a secret's word are hidden, never left out (docs/hook.md, "Secrets"): the cost of one rule.
    assert is_secret_key(key)
