"""What ``AnalyticsHook``'s definitions methods do around ``definitions/``: the part that knows Airflow.

The definitions import no Airflow; the hook's ``apply_plan`` and ``export_definitions`` hand them the hook's client
and logger through the functions here, which add what the hook layer decides: an apply's default key seed, the
reader of connection fields kept in Airflow (``hooks/_airflow_secrets.py``), and the check of an export's filters
(``plan_definitions`` adds nothing, and calls ``definitions/_apply.py`` itself). Imported inside those methods
only, in the task's process, with the definitions: never when a DAG file is parsed.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from airflow_provider_analytics.definitions import _apply, _read
from airflow_provider_analytics.definitions._export import checked_filters
from airflow_provider_analytics.hooks._airflow_secrets import read_airflow_secret

if TYPE_CHECKING:
    from airflow_provider_analytics.definitions import AppliedPlan, Plan
    from airflow_provider_analytics.wire._calls import Sender
    from airflow_provider_analytics.wire._progress import InfoLog

__all__ = ["apply_plan", "export_definitions"]


def apply_plan(client: Sender, plan: Plan, key_seed: str | None, log: InfoLog) -> AppliedPlan:
    """``AnalyticsHook.apply_plan``: send the plan's writes, reading the connection fields kept in Airflow.

    :param client: the hook's client.
    :param plan: the plan to apply.
    :param key_seed: the seed of the creates' idempotency keys; ``None``: one unique to this call.
    :param log: the hook's logger.
    """
    # Not derived from the plan: a later run's plan of the same definitions is the same plan, and the platform
    # would answer its creates with objects made (and perhaps deleted) by an earlier run.
    seed = f"call-{uuid.uuid4().hex}" if key_seed is None else key_seed
    # Connection fields kept in Airflow are read here, at apply time only, into what is sent.
    return _apply.apply_plan(client, plan, key_seed=seed, log=log, secrets=read_airflow_secret)


def export_definitions(
    client: Sender, kinds: Sequence[str] | None, names: Sequence[str] | None, log: Any
) -> dict[str, list[dict[str, Any]]]:
    """``AnalyticsHook.export_definitions``: the filters checked (before any request), then the export.

    :param client: the hook's client.
    :param kinds: which sections (``None``: all).
    :param names: only the objects of these names (``None``: every object).
    :param log: the hook's logger (the export's notes are WARNINGs).
    """
    chosen, only = checked_filters(kinds, names)
    return _read.export(client, chosen, only, log).definitions
