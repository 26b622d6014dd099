"""What a description of a wait says; the kinds are in the sibling modules, one per thing waited on."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from airflow_provider_analytics.wire.outcomes import Outcome

if TYPE_CHECKING:
    from airflow_provider_analytics.wire.calls import Call

WaitKind = Literal["execution", "report", "sync"]

__all__ = ["Outcome", "Wait", "WaitKind"]


class Wait(ABC):
    """One piece of platform work to wait for, as plain data plus the requests that read and stop it.

    It knows no client: :meth:`fetch` and :meth:`cancel` build :class:`~airflow_provider_analytics.wire.calls.Call`
    objects that either client sends (``client.call(call)``, ``await client.call(call)``), so the worker's
    loop and the trigger's loop send the very same requests.
    """

    kind: ClassVar[WaitKind]
    # How a status reads after the work's name where "is <status>" is not English ("succeeded", not "is
    # succeeded"); a status not listed reads "is <status>" ("is running"), one the contract does not know too.
    status_phrases: ClassVar[Mapping[str, str]] = {}

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

    def state_of(self, resource: Mapping[str, Any]) -> str:
        """The work and its state as one clause of English, for log lines, events and failure messages.

        ``execution ex_1 of workflow wf_1 succeeded``, ``report rp_1 is being generated``.

        :param resource: the state :meth:`fetch` read.
        """
        status = str(resource.get("status", "unknown"))
        return f"{self.describe()} {self.status_phrases.get(status, f'is {status}')}"
