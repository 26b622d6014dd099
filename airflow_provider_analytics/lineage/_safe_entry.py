"""The operators' safe entry to lineage: every ``get_openlineage_facets_*`` calls only this, and it never raises.

Without the OpenLineage provider it returns ``None`` (nothing to report, and nobody to report to), and any
error while building lineage is logged and becomes an empty lineage: lineage never fails a task.
"""

from __future__ import annotations

import logging
from typing import Any

log = logging.getLogger(__name__)


def lineage_for(operator: Any, task_instance: Any, operation: str, *, failed: bool = False) -> Any:
    """The task's ``OperatorLineage``, or ``None`` when the OpenLineage provider is not installed.

    :param operator: the operator that ran.
    :param task_instance: its task instance.
    :param operation: what the operator does (``execute_workflow``, ``create_chart``, ...).
    :param failed: the task failed (called from ``get_openlineage_facets_on_failure``).
    """
    try:
        from airflow_provider_analytics.lineage import _facets as facets
    except ImportError as exc:
        log.debug("OpenLineage is not installed (%s): no lineage for %s", exc, operator.task_id)
        return None
    try:
        return facets.operator_lineage(operator, task_instance, operation, failed=failed)
    except Exception as exc:
        log.warning("Lineage for %s failed (the task is not affected): %s", operator.task_id, exc, exc_info=True)
        return facets.OperatorLineage()
