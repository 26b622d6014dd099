"""Hiding what the provider is handed to send: every secret registered with the provider's scrubber
(``wire/_redaction.py``, which masks the platform's answers and every message) and with Airflow's secrets masker
(every log line), before the request that carries it. Which values are secret is the one rule
(``wire/_secret_rule.py``, docs/hook.md "Secrets").

Airflow's masker compiles every secret of the process into one pattern again for each new secret (quadratic in
their number), and 2.11's fails on one of about 700 KB in all, after which it hides nothing new. So the secrets
the provider hands it are bounded (:data:`MASKER_WORK_AT_ONCE`, the pattern compiled for one call's secrets,
and :data:`MASKED_BYTES_LIMIT` in a process, on every release alike), and secrets past them are refused, typed,
before anything carries them.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from typing import Any

from airflow_provider_analytics.wire.errors import AnalyticsInputError

__all__ = ["MASKED_BYTES_LIMIT", "MASKER_WORK_AT_ONCE", "register_secret_values", "register_secrets"]


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

    _mask_all(remember_secrets(value))


def register_secret_values(values: Iterable[Any]) -> None:
    """Hide each of ``values`` from now on, whatever key it is sent under: the scrubber and Airflow's masker, as
    :func:`register_secrets` does for the values under secret-looking keys.

    A connection field read from an Airflow connection or variable (``definitions/_references.py``) is a secret
    because the user kept it in Airflow, even under a key such as ``host``; so is every string inside one (an
    extra may hold JSON).

    :param values: the values read, before any is sent.
    """
    from airflow_provider_analytics.wire._redaction import remember_all

    _mask_all(remember_all(values))


# Airflow's masker compiles every secret it holds into one pattern again for each new one: handing it secrets one
# by one compiles, for each, everything it holds by then (about 1.2-2 ms a KB on 3.x; 2,000 secrets of 32
# characters in one definitions file took 186 s). So one registration (a definitions file's secrets, a call's) is
# refused when that work would pass MASKER_WORK_AT_ONCE bytes of pattern, which keeps it to a few seconds
# (docs/hook.md, "How many, how large"). And one process hands it at most MASKED_BYTES_LIMIT bytes in all: 2.11's
# masker fails outright on a pattern of about 700 KB ("pattern too large"), and then masks nothing new.
MASKER_WORK_AT_ONCE = 2 * 1024 * 1024
MASKED_BYTES_LIMIT = 512 * 1024
_masked_lock = threading.Lock()
_masked: set[str] = set()
_masked_bytes = 0


def _mask_all(secrets: list[str]) -> None:
    """Register ``secrets`` with Airflow's secrets masker, or refuse to go on without them: secrets the masker could
    not take in a bounded time or room (the bounds above, checked before any is handed over), or one it fails on,
    are refused before anything carries them. The provider's own scrubber has them already, so the messages and
    answers of this task still mask them.

    :raises AnalyticsInputError: the secrets are over the masker's bounds, or it refused one (nothing sent).
    """
    global _masked_bytes
    from airflow.providers.common.compat.sdk import mask_secret

    with _masked_lock:
        new = [secret for secret in dict.fromkeys(secrets) if secret not in _masked]
        sizes = [len(secret.encode("utf-8", "surrogatepass")) for secret in new]
        # What the masker compiles for each new secret: all it holds by then. What this process handed it before
        # is left out, so that one call's bound does not hang on earlier ones: MASKED_BYTES_LIMIT bounds that.
        added, work = 0, 0
        for size in sizes:
            added += size
            work += added
        held = _masked_bytes + added
        if work > MASKER_WORK_AT_ONCE:
            raise AnalyticsInputError(
                f"{len(new):,} new secret values of {sum(sizes):,} bytes at once: Airflow's secrets masker compiles"
                f" all the secrets it holds again for each new one, {work / 2**20:,.1f} MiB of patterns for these,"
                f" more than the {MASKER_WORK_AT_ONCE // 2**20} MiB (a few seconds) one call may take, and a secret"
                " it does not hold could show in the log: nothing was sent. Send fewer secrets in one task (split"
                " the definitions over tasks), or keep them small (a key or certificate is a few KB)"
            )
        if held > MASKED_BYTES_LIMIT:
            raise AnalyticsInputError(
                f"{sum(sizes):,} bytes of new secrets would bring the secrets this process hands Airflow's secrets"
                f" masker to over {MASKED_BYTES_LIMIT // 1024} KiB, more than it can hold on every supported release"
                " (Airflow 2.11's fails past about 700 KB, and then hides no new secret in the log): nothing was"
                " sent. Keep secrets small (a key or certificate is a few KB), or send fewer of them in one task"
            )
        for secret, size in zip(new, sizes, strict=True):
            try:
                mask_secret(secret)
            except Exception as error:  # any failure of the masker: the secret would show in Airflow's log
                raise AnalyticsInputError(
                    f"Airflow's secrets masker could not take a secret of {size:,} bytes ({type(error).__name__}),"
                    " so the task's log could show it: nothing was sent. Keep secrets small, or fewer of them in one"
                    " task"
                ) from None
            _masked.add(secret)
            _masked_bytes += size
