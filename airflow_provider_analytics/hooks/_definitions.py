"""What ``AnalyticsHook``'s definitions methods do around ``definitions/``: the part that knows Airflow.

The definitions import no Airflow; the hook's ``plan_definitions``, ``apply_plan`` and ``export_definitions`` hand
them the hook's client and logger through the functions here, which add what the hook layer decides: which Airflow
secrets a reference may name (the connection's ``secret_sources``), the deployment's key for the digests, an
apply's default key seed, the reader of secrets kept in Airflow (``hooks/_airflow_secrets.py``), and the check of
an export's filters. Imported inside those methods only, in the task's process, with the definitions: never when a
DAG file is parsed.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from airflow_provider_analytics.connection._notes import connection_name
from airflow_provider_analytics.connection._secret_sources import secret_sources_of
from airflow_provider_analytics.connection._store import rate_limit_store_id
from airflow_provider_analytics.definitions import _apply, _read
from airflow_provider_analytics.definitions._allowed import (
    DEFAULT_OWN_CONNECTIONS,
    DEFAULT_SECRET_SOURCES,
    SecretSources,
)
from airflow_provider_analytics.definitions._export import checked_filters
from airflow_provider_analytics.hooks._airflow_secrets import deployment_key, read_airflow_secret

if TYPE_CHECKING:
    from airflow_provider_analytics.connection._protocol import ConnectionLike
    from airflow_provider_analytics.definitions import AppliedPlan, Plan
    from airflow_provider_analytics.definitions._files import DefinitionsSource
    from airflow_provider_analytics.definitions._model import SecretRef
    from airflow_provider_analytics.wire._calls import Sender
    from airflow_provider_analytics.wire._progress import InfoLog

__all__ = ["apply_plan", "export_definitions", "own_connections", "plan_definitions", "secret_sources"]


def secret_sources(connection: ConnectionLike) -> SecretSources:
    """The Airflow connections and variables the analytics connection lets a definition's references name.

    :param connection: the analytics connection.
    :raises AnalyticsInputError: its ``secret_sources`` extra is malformed.
    """
    patterns = secret_sources_of(connection)
    name = connection_name(connection.conn_id)
    own = own_connections(connection)
    if patterns is None:
        return SecretSources(DEFAULT_SECRET_SOURCES, f"the default: {name} sets no extra 'secret_sources'", own)
    return SecretSources(patterns, f"the extra 'secret_sources' of {name}", own)


def own_connections(connection: ConnectionLike) -> frozenset[str]:
    """The ids of the Airflow connections the provider itself uses: ``analytics_default``, the analytics
    connection's own id and its rate limit store's (``rate_limit_redis_conn_id``). No definition reads them through
    a wildcard (``definitions/_allowed.py``), and an export never refers to them.

    :param connection: the analytics connection.
    """
    store = rate_limit_store_id(connection)
    own = {*DEFAULT_OWN_CONNECTIONS, *((connection.conn_id,) if connection.conn_id else ())}
    return frozenset({*own, store} if store else own)


def plan_definitions(client: Sender, connection: ConnectionLike, definitions: DefinitionsSource, log: Any) -> Plan:
    """``AnalyticsHook.plan_definitions``: plan with the connection's ``secret_sources`` and the deployment's key.

    :param client: the hook's client.
    :param connection: the analytics connection.
    :param definitions: what to plan.
    :param log: the hook's logger (a WARNING when a secret was digested without the deployment's key).
    """
    key = deployment_key()
    plan = _apply.plan_definitions(client, definitions, log, secret_sources=secret_sources(connection), key=key)
    if key.used and not key.configured:
        log.warning(
            "Airflow's [core] fernet_key is not set (or not a Fernet key) in this process, so the plan's digests of"
            " secret values use a key of this process only: an apply given this plan as reviewed_plan, in another"
            " task, refuses its rows that hold a secret. Set the same [core] fernet_key on every worker"
        )
    return plan


def apply_plan(
    client: Sender, connection: ConnectionLike, plan: Plan, key_seed: str | None, log: InfoLog
) -> AppliedPlan:
    """``AnalyticsHook.apply_plan``: send the plan's writes, reading the secrets kept in Airflow it needs, each
    one only if the connection's ``secret_sources`` allows it.

    :param client: the hook's client.
    :param connection: the analytics connection.
    :param plan: the plan to apply.
    :param key_seed: the seed of the creates' idempotency keys; ``None``: one unique to this call.
    :param log: the hook's logger.
    """
    # Not derived from the plan: a later run's plan of the same definitions is the same plan, and the platform
    # would answer its creates with objects made (and perhaps deleted) by an earlier run.
    seed = f"call-{uuid.uuid4().hex}" if key_seed is None else key_seed
    # Secrets kept in Airflow are read here, at apply time only, into what is sent.
    allowed = secret_sources(connection)

    def read(ref: SecretRef) -> Any:
        return read_airflow_secret(ref, named_exactly=ref.key in allowed.patterns)

    return _apply.apply_plan(client, plan, key_seed=seed, log=log, secrets=read, secret_sources=allowed)


def export_definitions(
    client: Sender,
    connection: ConnectionLike,
    kinds: Sequence[str] | None,
    names: Sequence[str] | None,
    log: Any,
) -> dict[str, list[dict[str, Any]]]:
    """``AnalyticsHook.export_definitions``: the filters checked (before any request), then the export, whose
    references never name a connection the provider itself uses (:func:`own_connections`).

    :param client: the hook's client.
    :param connection: the analytics connection.
    :param kinds: which sections (``None``: all).
    :param names: only the objects of these names (``None``: every object).
    :param log: the hook's logger (the export's notes are WARNINGs).
    """
    chosen, only = checked_filters(kinds, names)
    return _read.export(client, chosen, only, log, own=own_connections(connection)).definitions
