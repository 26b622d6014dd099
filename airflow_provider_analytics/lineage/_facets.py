"""OpenLineage facets for the operators: datasets, the platform's ids as a custom run facet.

Only the operators' ``get_openlineage_facets_*`` methods import this module (through
:mod:`airflow_provider_analytics.lineage._safe_entry`), and only this module imports OpenLineage, so a
deployment without ``apache-airflow-providers-openlineage`` never loads it.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any, ClassVar

import attr
from airflow.providers.openlineage.extractors import OperatorLineage
from openlineage.client.event_v2 import InputDataset, OutputDataset
from openlineage.client.facet_v2 import RunFacet

from airflow_provider_analytics import __version__
from airflow_provider_analytics.lineage._extract import DatasetName, TaskLineage, task_lineage

__all__ = ["FACET_NAME", "AnalyticsRunFacet", "OperatorLineage", "operator_lineage"]

log = logging.getLogger(__name__)

REPOSITORY = "https://github.com/airflow-provider-analytics/airflow-provider-analytics"
PRODUCER = f"{REPOSITORY}/tree/{__version__}"
# The facet's schema has its own version in its file name: a changed facet gets a new file, so every
# _schemaURL ever emitted keeps pointing at the schema its facets were written against.
FACET_SCHEMA_VERSION = "1-0-0"
FACET_SCHEMA_FILE = Path(__file__).with_name("schemas") / f"AnalyticsRunFacet-{FACET_SCHEMA_VERSION}.json"
FACET_SCHEMA_URL = (
    "https://raw.githubusercontent.com/airflow-provider-analytics/airflow-provider-analytics/main/"
    f"airflow_provider_analytics/lineage/schemas/{FACET_SCHEMA_FILE.name}#/$defs/AnalyticsRunFacet"
)
# The run facet's key: prefixed, as custom facets should be, so it never collides with a standard one.
FACET_NAME = "analyticsPlatform"


@attr.define(kw_only=True)
class AnalyticsRunFacet(RunFacet):
    """The Analytics Platform's side of a task run: where, what, and the platform's own ids.

    :param platform: the platform's namespace, ``analytics://<host>``.
    :param operation: what the task did (``execute_workflow``, ``generate_report``, ...).
    :param ids: the platform's ids of what the task touched (``workflow_id``, ``execution_id``, ...).
    :param status: the remote job's last known status (workflow executions and reports).
    :param details: small facts: a report's format, a file's size and sha-256, an execution's inputs.
    :param gaps: what could not be learned for this event, and why.
    """

    platform: str
    operation: str
    ids: dict[str, str] = attr.field(factory=dict)
    status: str | None = None
    details: dict[str, Any] = attr.field(factory=dict)
    gaps: list[str] = attr.field(factory=list)

    _additional_skip_redact: ClassVar[list[str]] = ["platform", "operation", "ids", "status"]

    @staticmethod
    def _get_schema() -> str:
        return FACET_SCHEMA_URL


def declared_datasets(operator: Any) -> tuple[list[Any], list[Any]]:
    """The task's own ``inlets`` and ``outlets`` as OpenLineage datasets (``analytics://``, ``file://``, ...).

    Returning datasets of our own stops the OpenLineage provider from reading ``inlets``/``outlets``
    itself, so they are added here: what a DAG author declared is never lost.

    :param operator: the operator.
    """
    from airflow.providers.common.compat.openlineage.utils.utils import translate_airflow_asset
    from airflow.providers.common.compat.sdk import Asset  # a Dataset on Airflow 2

    def convert(assets: Any) -> list[Any]:
        found = []
        for asset in assets or []:
            if isinstance(asset, Asset) and (dataset := translate_airflow_asset(asset, None)) is not None:
                found.append(dataset)
        return found

    return convert(operator.inlets), convert(operator.outlets)


def to_operator_lineage(
    lineage: TaskLineage | None, declared: tuple[list[Any], list[Any]]
) -> OperatorLineage[Any, Any]:
    """``OperatorLineage`` from the task's platform lineage (``None``: unknown) and its declared datasets.

    :param lineage: what the task read and wrote on the platform.
    :param declared: the task's declared inlets and outlets, already converted.
    """
    inputs = [InputDataset(namespace=namespace, name=name) for namespace, name in lineage.inputs] if lineage else []
    outputs = [OutputDataset(namespace=namespace, name=name) for namespace, name in lineage.outputs] if lineage else []
    _merge(inputs, declared[0], InputDataset)
    _merge(outputs, declared[1], OutputDataset)
    run_facets: dict[str, Any] = {}
    if lineage is not None:
        run_facets[FACET_NAME] = AnalyticsRunFacet(
            platform=lineage.platform,
            operation=lineage.operation,
            ids=lineage.ids,
            status=lineage.status,
            details=lineage.details,
            gaps=lineage.gaps,
            producer=PRODUCER,
        )
    return OperatorLineage(inputs=inputs, outputs=outputs, run_facets=run_facets)


def _merge(found: list[Any], declared: list[Any], kind: type[Any]) -> None:
    seen: set[DatasetName] = {(dataset.namespace, dataset.name) for dataset in found}
    for dataset in declared:
        if (dataset.namespace, dataset.name) not in seen:
            seen.add((dataset.namespace, dataset.name))
            found.append(kind(namespace=dataset.namespace, name=dataset.name, facets=dataset.facets))


def operator_lineage(operator: Any, task_instance: Any, operation: str, *, failed: bool) -> OperatorLineage[Any, Any]:
    """The whole lineage of one task; the platform part is left out (and logged) when it cannot be built.

    :param operator: the operator that ran.
    :param task_instance: its task instance.
    :param operation: what the operator does (a key of ``extract.OPERATIONS``).
    :param failed: the task failed.
    """
    try:
        declared = declared_datasets(operator)
    except Exception as exc:
        log.warning("Lineage: could not convert %s's inlets/outlets: %s", operator.task_id, exc)
        declared = ([], [])
    try:
        lineage: TaskLineage | None = task_lineage(operator, task_instance, operation, failed=failed)
    except Exception as exc:
        log.warning("Lineage: no platform lineage for %s: %s", operator.task_id, exc, exc_info=True)
        lineage = None
    return to_operator_lineage(lineage, declared)
