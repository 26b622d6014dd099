"""Keep, on the operator, what lineage needs from a run: the return value and the started job's id.

The OpenLineage listener by default builds lineage in a *forked* child of the task process. Reading XCom
there goes through the task's supervisor connection, which a fork cannot safely share (under ``dag.test()``
it hangs until the listener kills the child). Values kept in memory survive the fork, so the operators'
lineage reads them from here and asks the supervisor for nothing.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

RESULT = "_lineage_result"
STARTED = "_lineage_started"
_RECORDED = {"execute": RESULT, "execute_complete": RESULT}


def _keeping_result(method: Callable[..., Any], attribute: str) -> Callable[..., Any]:
    @functools.wraps(method)
    def run(self: Any, *args: Any, **kwargs: Any) -> Any:
        result = method(self, *args, **kwargs)
        self.__dict__[attribute] = result
        return result

    run._keeps_lineage = True  # type: ignore[attr-defined]
    return run


def _keeping_started(method: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(method)
    def run(self: Any, context: Any, external_id: Any) -> Any:
        self.__dict__[STARTED] = external_id  # before publishing: a failed push must not lose the id
        return method(self, context, external_id)

    run._keeps_lineage = True  # type: ignore[attr-defined]
    return run


class LineageRecorder:
    """Mixin: every subclass's own ``execute``/``execute_complete`` keep their return value, and its
    ``publish`` (remote jobs) keeps the started job's id, as attributes read by lineage."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        for name, attribute in _RECORDED.items():
            method = cls.__dict__.get(name)
            if callable(method) and not getattr(method, "_keeps_lineage", False):
                setattr(cls, name, _keeping_result(method, attribute))
        publish = cls.__dict__.get("publish")
        if callable(publish) and not getattr(publish, "_keeps_lineage", False):
            cls.publish = _keeping_started(publish)  # type: ignore[attr-defined]


def recorded(operator: Any, attribute: str) -> Any:
    """What the run kept under ``attribute`` (:data:`RESULT` or :data:`STARTED`), or ``None``."""
    return operator.__dict__.get(attribute)
