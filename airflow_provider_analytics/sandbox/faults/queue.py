"""The queue of injected faults: each matching request consumes one use of the first match."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from airflow_provider_analytics.sandbox.faults.kinds import Fault


@dataclass
class _Entry:
    """One queued fault and how many of its uses were taken (``pages`` numbers its pages by it)."""

    fault: Fault
    used: int = 0


class FaultQueue:
    """Faults in injection order; each matching request consumes one use of the first match."""

    def __init__(self) -> None:
        self._entries: list[_Entry] = []
        self._lock = threading.Lock()

    def add(self, fault: Fault) -> None:
        """Queue a fault.

        :param fault: the fault to queue.
        """
        with self._lock:
            self._entries.append(_Entry(fault))

    def take(self, method: str, path: str) -> Fault | None:
        """Consume one use of the first queued fault that matches, if any.

        :param method: the request method.
        :param path: the URL path.
        """
        return self.take_use(method, path)[0]

    def take_use(self, method: str, path: str) -> tuple[Fault | None, int]:
        """Like :meth:`take`, with the use's number (1 for the fault's first use), which ``pages`` counts.

        :param method: the request method.
        :param path: the URL path.
        """
        with self._lock:
            for entry in self._entries:
                if entry.fault.matches(method, path):
                    entry.used += 1
                    if entry.used >= entry.fault.times:
                        self._entries.remove(entry)
                    return entry.fault, entry.used
        return None, 0

    def pending(self) -> list[tuple[Fault, int]]:
        """Queued faults with their remaining uses."""
        with self._lock:
            return [(entry.fault, entry.fault.times - entry.used) for entry in self._entries]

    def clear(self) -> None:
        """Forget every queued fault."""
        with self._lock:
            self._entries.clear()
