"""What of a definition leaves the deployment in a plan's XCom and a create's header, and in which form: the digest a
review pins (:func:`digest_of`) and the body an ``Idempotency-Key`` hashes (:func:`key_body`). No I/O, no Airflow.

Both hold every field's content, so no edit escapes a review whatever its key is called; neither holds a secret in a
form that can be guessed back offline. A digest is published (the plan's XCom value, its log, a failure's message),
and a fast hash of a known definition with one weak password in it gives the password back to anyone who tries
words. So, by the one rule of ``wire/_secret_rule.py`` (the same that masks, registers and exports):

- in a **digest**, each secret enters as its HMAC-SHA256 under a :class:`DigestKey`, a key the deployment already
  keeps from the platform and from whoever reads XCom or the UI (the hook layer derives it from Airflow's
  ``[core] fernet_key``: ``hooks/_airflow_secrets.py``); the same content under the same key gives the same
  digest, in every process;
- in an **Idempotency-Key**, a secret does not enter at all (it is ``(secret)``): a key must be the same in every
  try of a task, on any worker, so it cannot depend on a key some worker might lack (a secret changed between two
  tries of one task instance is refused by the platform with 409 rather than created twice);
- a **reference** to a secret kept in Airflow enters both as what it names (``connection:warehouse_db:password``),
  never as what it reads: naming it is not secret, and the plan lists it anyway.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import hashlib
import hmac
import json
import secrets
from collections.abc import Callable
from typing import Any

from airflow_provider_analytics.definitions._compare import Pending, Ref
from airflow_provider_analytics.definitions._model import Definition, SecretRef
from airflow_provider_analytics.wire._secret_rule import Path, map_secrets

__all__ = ["SECRET", "DigestKey", "digest_of", "key_body", "reference_name"]

# What a secret is in an Idempotency-Key's body.
SECRET = "(secret)"
# Domain separation: the deployment key is Airflow's, and this derives a key of its own for one use.
_LABEL = b"airflow-provider-analytics/definitions/digest/v1"
_ID_LABEL = b"airflow-provider-analytics/definitions/digest-key-id/v1"
_PROCESS_SECRET = secrets.token_bytes(32)  # for a deployment without a key: this process only


class DigestKey:
    """The key of the keyed hash secrets enter a digest through; it never leaves the deployment.

    :param secret: the key's bytes (never shown: not in ``repr``, not in any message).
    :param configured: whether it is the deployment's own (the same in every process), or this process's only.
    """

    def __init__(self, secret: bytes, *, configured: bool) -> None:
        self._secret = hmac.new(secret, _LABEL, hashlib.sha256).digest()
        self.configured = configured
        self.used = False  # whether a digest held a secret: with a key of this process only, a review cannot pass

    def __repr__(self) -> str:
        return f"DigestKey(id={self.id!r}, configured={self.configured})"

    @classmethod
    def from_fernet_key(cls, text: object) -> DigestKey | None:
        """The key derived from Airflow's ``[core] fernet_key``: its first (primary) key, when that is a Fernet key.

        :param text: the setting as read (comma-separated keys, newest first, during a rotation).
        :return: ``None`` when unset, blank or not a Fernet key (32 bytes in URL-safe base64): Airflow 3's task
            configuration gives the unexpanded ``{FERNET_KEY}`` of its template when nothing sets the key.
        """
        if not isinstance(text, str):
            return None
        primary = text.split(",", 1)[0].strip()
        try:
            raw = base64.urlsafe_b64decode(primary.encode("ascii"))
        except (binascii.Error, UnicodeEncodeError, ValueError):
            return None
        return cls(raw, configured=True) if len(raw) == 32 else None

    @classmethod
    def of_this_process(cls) -> DigestKey:
        """A key no other process has: digests of secrets made with it match only in this process."""
        return cls(_PROCESS_SECRET, configured=False)

    @property
    def id(self) -> str:
        """What tells two keys apart without saying anything about either: an HMAC of a fixed text, cut short."""
        return hmac.new(self._secret, _ID_LABEL, hashlib.sha256).hexdigest()[:16]

    def of(self, value: Any) -> str:
        """The keyed hash of a secret (any JSON value): ``hmac-sha256:<hex>``.

        :param value: the secret, as written (a reference inside it counts as what it names).
        """
        self.used = True
        return "hmac-sha256:" + hmac.new(self._secret, _canonical(value).encode(), hashlib.sha256).hexdigest()


def reference_name(ref: SecretRef) -> str:
    """What a reference names, as it enters a digest and a key: ``connection:<id>:<field>`` or ``variable:<key>``.

    :param ref: the reference.
    """
    return f"variable:{ref.key}" if ref.source == "variable" else f"connection:{ref.key}:{ref.field}"


def _json(value: object) -> object:
    """``json.dumps``'s ``default``: a reference as what it names, a pending id as its text, a layout item's fields."""
    if isinstance(value, SecretRef):
        return {"$reference": reference_name(value)}
    if isinstance(value, Pending):
        return str(value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {field.name: getattr(value, field.name) for field in dataclasses.fields(value)}
    raise TypeError(f"{type(value).__name__} is not JSON")


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True, default=_json)


def _sealed(value: Any, secret: Callable[[Any], Any]) -> Any:
    """``value`` with each secret of the one rule replaced by ``secret(it)`` (a text holding a credential: the
    whole text), at any depth, references included."""

    def replace(_path: Path, found: Any) -> Any:
        return found if isinstance(found, SecretRef) else secret(found)

    return map_secrets(value, replace)


def digest_of(definition: Definition, refs: tuple[Ref, ...], key: DigestKey) -> str:
    """The sha256 of everything writing ``definition`` would hold: every field but its origin, each secret as its
    HMAC under ``key``, each reference to a secret kept in Airflow as what it names, and its resolved references
    to other objects. Two plans that would write the same under the same key have the same digest
    (``_review.py``); the digest tells nothing about a secret to whoever lacks the key.

    :param definition: the definition.
    :param refs: its resolved references to other objects (a chart's data source, a dashboard's charts).
    :param key: the deployment's key.
    """
    body = {field.name: getattr(definition, field.name) for field in dataclasses.fields(definition)}
    body.pop("origin")
    body["kind"] = definition.kind
    text = _canonical([_sealed(_plain(body), key.of), list(refs)])
    return hashlib.sha256(text.encode()).hexdigest()


def key_body(body: Any) -> Any:
    """What an ``Idempotency-Key`` hashes of a write's body: every field, each secret as ``(secret)``, each reference
    as what it names.

    :param body: the body as sent, before the references are read.
    """
    return json.loads(_canonical(_sealed(_plain(body), lambda _secret: SECRET)))


def _plain(value: Any) -> Any:
    """``value`` with tuples as lists and layout items as mappings (references kept), for the rule's walk."""
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    if dataclasses.is_dataclass(value) and not isinstance(value, (type, SecretRef)):
        return {field.name: _plain(getattr(value, field.name)) for field in dataclasses.fields(value)}
    return value
