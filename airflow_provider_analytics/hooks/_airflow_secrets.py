"""Reading a definition's secret kept in Airflow: the resolver ``AnalyticsHook.apply_plan`` hands to the definitions.

The definitions import no Airflow (``definitions/_references.py``), so the hook layer reads the connection or
variable a reference names, through ``apache-airflow-providers-common-compat``: ``BaseHook.get_connection`` (which
raises ``AirflowNotFoundException`` for a connection no backend holds, on every supported release) and
``Variable.get`` with a default, passed by position because its name differs (``default_var`` on Airflow 2.11,
``default`` on 3.x). Imported only by ``apply_plan``, in the task's process.

A value read is never logged or put into a message; what is missing is named instead.

It also gives the definitions the deployment's key for their digests (:func:`deployment_key`): Airflow's
``[core] fernet_key``, read through common-compat's ``conf`` (``airflow.sdk.conf`` from 3.2, ``airflow.configuration``
before). Why that key, and its limits: docs/guides/review-definitions.md ("What a digest shows").
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from typing import Any

from airflow.providers.common.compat.sdk import AirflowNotFoundException, BaseHook, Variable, conf

from airflow_provider_analytics.definitions._digests import DigestKey
from airflow_provider_analytics.definitions._model import SecretRef
from airflow_provider_analytics.definitions._references import CONNECTION_FIELDS, Missing
from airflow_provider_analytics.hooks.base import AnalyticsBaseHook

__all__ = ["PROVIDER_CONN_TYPE", "deployment_key", "read_airflow_secret"]


def deployment_key() -> DigestKey:
    """The key secrets enter a plan's digests through: derived from Airflow's ``[core] fernet_key`` (its primary
    key), which every worker of a deployment shares (2.11 decrypts connections with it, 3.x's task SDK XCom
    serializers encrypt with it) and which neither the platform nor a reader of XCom or the UI ever sees.

    :return: that key; without a usable ``fernet_key`` (unset, or 3.x's unexpanded ``{FERNET_KEY}``), a key of this
        process only: a plan still works, but a reviewed plan holding a secret matches no other process's plan.
    """
    key = DigestKey.from_fernet_key(conf.get("core", "fernet_key", fallback=""))
    return DigestKey.of_this_process() if key is None else key


# The provider's own connection type: such a connection holds an API token of the platform (another workspace's,
# say), which no definition sends as a value unless the deployment named that connection exactly.
PROVIDER_CONN_TYPE = AnalyticsBaseHook.conn_type


def read_airflow_secret(ref: SecretRef, *, named_exactly: bool = False) -> Any:
    """The value ``ref`` names: a field of an Airflow connection, or an Airflow variable.

    :param ref: the reference, as loaded.
    :param named_exactly: the deployment's ``secret_sources`` holds the reference's very id (not through a
        wildcard): only then may a connection of the provider's own type (``analytics``) be read.
    :return: the value, or :class:`Missing` saying what is not there: the connection or variable is not
        defined, or the field is unset or empty, or the connection is an ``analytics`` one not named exactly.
    """
    if ref.source == "variable":
        try:
            value = Variable.get(ref.key, None)  # by position: the default's name differs between releases
        except Exception as error:
            return _unreadable(error, f"Airflow variable {ref.key!r}")
        if value is None or value == "":
            return Missing(
                f"reads Airflow variable {ref.key!r}, which is not defined (or is empty); define it, or correct"
                " from_variable"
            )
        return value
    field = ref.field or "password"
    try:
        connection = BaseHook.get_connection(ref.key)
        if connection.conn_type == PROVIDER_CONN_TYPE and not named_exactly:
            return Missing(
                f"reads Airflow connection {ref.key!r}, an {PROVIDER_CONN_TYPE!r} connection: it holds an API token"
                " of the platform, which a wildcard of secret_sources never admits; name its id exactly in the"
                " analytics connection's extra 'secret_sources' if the token is meant to be sent"
            )
        if field in CONNECTION_FIELDS:
            value = getattr(connection, field, None)
        else:
            extra = connection.extra_dejson
            value = extra.get(field) if isinstance(extra, Mapping) else None
    except AirflowNotFoundException:
        return Missing(
            f"reads field {field!r} of Airflow connection {ref.key!r}, which is not defined; define it, or correct"
            " from_connection"
        )
    except Exception as error:
        return _unreadable(error, f"field {field!r} of Airflow connection {ref.key!r}")
    if value is None or value == "":
        close = difflib.get_close_matches(field, CONNECTION_FIELDS, n=1, cutoff=0.75)
        hint = f"; did you mean {close[0]!r}?" if close and close[0] != field else ""
        return Missing(
            f"reads field {field!r} of Airflow connection {ref.key!r}, which has no such field set (the fields are"
            f" {', '.join(CONNECTION_FIELDS)}, or a key of its extra){hint}"
        )
    return value


def _unreadable(error: Exception, what: str) -> Missing:
    """The refusal of a value Airflow itself failed on while reading it: its secrets masker, which every release
    hands what it reads, raises ``UnicodeEncodeError`` for a lone surrogate on Airflow 2.11 (``re2`` cannot take
    one), or re2's own error class, which has no base to catch it by but ``Exception``, for a value it cannot hold
    ("pattern too large"); a value nested too deeply for Python's JSON raises ``RecursionError``.

    :raises Exception: ``error`` again when it is none of those (a database or backend that did not answer: a
        retry may find it).
    """
    if not isinstance(error, (ValueError, RecursionError)) and not type(error).__module__.startswith("re2"):
        raise error
    return Missing(
        f"reads {what}, whose value Airflow failed on while reading it ({type(error).__name__}: text UTF-8 cannot"
        " encode, such as a lone surrogate, a value too large for Airflow 2.11's log masker, or one nested too"
        " deeply); change the value kept in Airflow"
    )
