"""Hiding what the provider is handed to send: every secret registered with the provider's scrubber
(``wire/_redaction.py``, which masks the platform's answers and every message) and with Airflow's secrets masker
(every log line), before the request that carries it. Which values are secret is the one rule
(``wire/_secret_rule.py``, docs/hook.md "Secrets").

Airflow's masker has a limit on some releases: 2.11's compiles every secret of the process into one ``re2`` pattern
and fails on one of about 700 KB in all, after which it hides nothing new. So the secrets the provider hands it are
bounded (:data:`MASKED_BYTES_LIMIT`, on every release alike), and a secret it cannot hold is refused, typed, before
anything carries it.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from typing import Any

from airflow_provider_analytics.wire.errors import AnalyticsInputError

__all__ = ["MASKED_BYTES_LIMIT", "register_secret_values", "register_secrets"]


def register_secrets(value: Any) -> None:
    """Hide every secret of ``value`` from now on, before it is sent: in what the platform says back (the wire
    scrubber, ``wire/_redaction.py``) and in every log line Airflow writes (its secrets masker).

    Which values are secret is the one rule of :func:`~airflow_provider_analytics.wire._redaction.is_secret_key`
    (docs/hook.md, "Secrets"): the values under a secret-looking key at any depth, and a URL's password.
    ``mask_secret`` comes from common-compat, which finds it on every supported release (``airflow.sdk.log`` on
    3.x, ``airflow.utils.log.secrets_masker`` on 2.11): no difference for ``version_compat.py`` to hold.

    :param value: a data source's connection, chart options, a workflow's configuration or inputs, a report's
        parameters: anything the provider is handed to send.
    """
    from airflow_provider_analytics.wire._redaction import remember_secrets

    for secret in remember_secrets(value):
        _mask(secret)


def register_secret_values(values: Iterable[Any]) -> None:
    """Hide each of ``values`` from now on, whatever key it is sent under: the scrubber and Airflow's masker, as
    :func:`register_secrets` does for the values under secret-looking keys.

    A connection field read from an Airflow connection or variable (``definitions/_references.py``) is a secret
    because the user kept it in Airflow, even under a key such as ``host``; so is every string inside one (an
    extra may hold JSON).

    :param values: the values read, before any is sent.
    """
    from airflow_provider_analytics.wire._redaction import remember_all

    for secret in remember_all(values):
        _mask(secret)


# The most the provider hands Airflow's secrets masker in one process, in UTF-8 bytes (a secret counted once).
# Airflow 2.11's masker compiles every secret of the process into one re2 pattern and fails on one of about 700 KB
# ("pattern too large"); from then on it masks nothing new, and every later secret fails the same way. This leaves
# room for what Airflow and other providers register, on every release alike.
MASKED_BYTES_LIMIT = 512 * 1024
_masked_lock = threading.Lock()
_masked: set[str] = set()
_masked_bytes = 0


def _mask(secret: str) -> None:
    """Register ``secret`` with Airflow's secrets masker, or refuse to go on without it: a secret the masker could
    not hold (:data:`MASKED_BYTES_LIMIT`, or a masker that fails) is refused before anything carries it. The
    provider's own scrubber has it already, so the messages and answers of this task still mask it.

    :raises AnalyticsInputError: the secret is over the masker's room, or the masker refused it (nothing sent).
    """
    global _masked_bytes
    from airflow.providers.common.compat.sdk import mask_secret

    size = len(secret.encode("utf-8", "surrogatepass"))
    with _masked_lock:
        known = secret in _masked
        if not known and _masked_bytes + size > MASKED_BYTES_LIMIT:
            raise AnalyticsInputError(
                f"a secret of {size:,} bytes would bring the secrets this process hands Airflow's secrets masker to"
                f" over {MASKED_BYTES_LIMIT // 1024} KiB, more than it can hold on every supported release (Airflow"
                " 2.11's fails past about 700 KB, and then hides no new secret in the log): nothing was sent. Keep"
                " secrets small (a key or certificate is a few KB), or send fewer of them in one task"
            )
        try:
            mask_secret(secret)
        except Exception as error:  # any failure of the masker: the secret would show in Airflow's log
            raise AnalyticsInputError(
                f"Airflow's secrets masker could not take a secret of {size:,} bytes ({type(error).__name__}), so"
                " the task's log could show it: nothing was sent. Keep secrets small, or fewer of them in one task"
            ) from None
        if not known:
            _masked.add(secret)
            _masked_bytes += size
