"""Keep, on the operator, what lineage needs from a run: the return value and the started job's id.

The OpenLineage listener by default builds lineage in a *forked* child of the task process. Reading XCom
there goes through the task's supervisor connection, which a fork cannot safely share (under ``dag.test()``
it hangs until the listener kills the child). Values kept in memory survive the fork, so the operators'
lineage reads them from here and asks the supervisor for nothing.
"""

from __future__ import annotations

from typing import Any

RESULT = "_lineage_result"
STARTED = "_lineage_started"


def keep(operator: Any, attribute: str, value: Any) -> None:
    """Keep ``value`` on the operator for lineage, under ``attribute`` (:data:`RESULT` or :data:`STARTED`).

    Called where the value is made: by ``operators._common.task_step`` for what ``execute``/``execute_complete``
    return, and by the job operators for the started work's id, before they publish it (a failed XCom push
    must not lose the id).

    :param operator: the running operator.
    :param attribute: :data:`RESULT` or :data:`STARTED`.
    :param value: what to keep.
    """
    operator.__dict__[attribute] = value


def recorded(operator: Any, attribute: str) -> Any:
    """What the run kept under ``attribute`` (:data:`RESULT` or :data:`STARTED`), or ``None``."""
    return operator.__dict__.get(attribute)
