"""Platform objects kept as code: definitions loaded and checked, compared with the platform, applied as a plan.

What users see are the results: :class:`Plan` (what applying would do, per object: a list of :class:`Change`) from
``AnalyticsHook.plan_definitions``, and :class:`AppliedPlan` (what was written: a list of :class:`Written`) from
``AnalyticsHook.apply_plan``; ``ApplyDefinitionsOperator`` returns both as plain dicts. The modules are internal:
``_load`` reads the files or mappings and validates them (``_schemas``: the request bodies' pydantic models) into
records (``_model``), ``_plan`` compares them with what the platform holds without any I/O, ``_read`` reads the
platform (and exports it), and ``_apply`` sends the writes a plan lists. Nothing here imports Airflow, and PyYAML is
imported only when a YAML file is read. This package is imported only when a task plans or applies, never when a
DAG file is parsed.
"""

from __future__ import annotations

from airflow_provider_analytics.definitions._apply import AppliedPlan, Written
from airflow_provider_analytics.definitions._plan import Change, Plan

__all__ = ["AppliedPlan", "Change", "Plan", "Written"]
