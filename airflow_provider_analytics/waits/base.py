"""What a description of a wait says; the kinds are in the sibling modules, one per thing waited on."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import Any, ClassVar, Literal

from airflow_provider_analytics.wire.calls import Call
from airflow_provider_analytics.wire.outcomes import Outcome

WaitKind = Literal["execution", "report", "sync"]

__all__ = ["Outcome", "Wait", "WaitKind"]


class Wait(ABC):
    """One piece of platform work to wait for, as plain data plus the requests that read and stop it.

    It knows no client: :meth:`fetch` and :meth:`cancel` build :class:`~airflow_provider_analytics.wire.calls.Call`
    objects that either client sends (``client.call(call)``, ``await client.call(call)``), so the worker's
    loop and the trigger's loop send the very same requests.
    """

    kind: ClassVar[WaitKind]

    @property
    @abstractmethod
    def target(self) -> dict[str, Any]:
        """The ids (and settings) naming the wait: a trigger's kwargs and an event's ``target`` (JSON values)."""

    @classmethod
    @abstractmethod
    def from_target(cls, target: Mapping[str, Any]) -> Wait:
        """The wait an event's ``target`` (or a trigger's kwargs) names.

        :param target: as :attr:`target` made it.
        """

    @abstractmethod
    def fetch(self) -> Call[Any]:
        """The request that reads the work's current state."""

    @abstractmethod
    def outcome(self, resource: Mapping[str, Any]) -> Outcome | None:
        """``success``/``failure`` when the work is over, else ``None``.

        :param resource: the state :meth:`fetch` read.
        """

    def cancel(self) -> Call[Any] | None:
        """The request that stops the work; ``None`` when this kind cannot be cancelled."""
        return None

    @abstractmethod
    def describe(self) -> str:
        """How logs and messages name the work, for the task and its trigger alike."""
