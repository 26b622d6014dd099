"""What a description of remote work says; the kinds are in the sibling modules, one per kind of work.

A :class:`RemoteJob` names one piece of platform work by its ids and knows everything about waiting for it:
the request that reads it, the verdict on what that read, the request that stops it and the words for it. A
:class:`StartableJob` is work a task starts itself, and adds how it is started, what of it a retry keeps
(``task_state_store``, XCom) and where it is in the platform's UI.

A description knows no client: :meth:`RemoteJob.fetch` and :meth:`RemoteJob.cancel` build
:class:`~airflow_provider_analytics.wire._calls.Call` objects that either client sends, so the worker's loop, the
sensor's poke and the trigger's loop send the very same requests. A fetch's answer is checked against the
question inside the call (:meth:`RemoteJob.checked`): an answer about another object is the client's
``AnswerMismatchError``, raised where every other malformed answer is, so no wait can take it for progress.

A description is imported when a task runs (through the operators' one seam, ``operators/_runtime.py``) or a
trigger starts, never at DAG parse time, so it imports the wire modules it uses at module level. It names no
trigger: the trigger imports it (``triggers/<thing>.py``), and the operator that defers names both. A
description is a value: equal, hashed and shown by its :attr:`~RemoteJob.target`, and read-only once made.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar, Literal, Self, TypeVar

from airflow_provider_analytics.wire._calls import Call
from airflow_provider_analytics.wire._times import parse_time
from airflow_provider_analytics.wire.errors import AnswerMismatchError, clean_text

if TYPE_CHECKING:
    from airflow_provider_analytics.hooks.analytics import AnalyticsHook
    from airflow_provider_analytics.wire._outcomes import Outcome

# The kind of work: an event's ``kind``, and the purpose in a start's Idempotency-Key (so never renamed).
JobKind = Literal["execution", "report", "sync"]
Answer = TypeVar("Answer", bound=Mapping[str, Any])

__all__ = ["JobKind", "RemoteJob", "StartableJob", "check_answer_ids"]


def check_answer_ids(resource: Mapping[str, Any], asked: Mapping[str, str], what: str, taken_as: str) -> None:
    """Check that an answer names the ids asked for (a missing field is not them either).

    :param resource: the answer.
    :param asked: the ids asked for, by the answer's field (``id``, ``workflow_id``, ``data_source_id``).
    :param what: how the message names what was asked about (``execution ex_1 of workflow wf_1``).
    :param taken_as: what the answer would have been taken as, for the message.
    :raises AnswerMismatchError: naming what was asked and what came back.
    """
    if all(resource.get(field) == value for field, value in asked.items()):
        return

    answered = ", ".join(
        f"{field} {clean_text(repr(resource.get(field)), 80)}" if field in resource else f"no {field}"
        for field in asked
    )
    wanted = ", ".join(f"{field} {value!r}" for field, value in asked.items())
    raise AnswerMismatchError(
        f"asked about {what} ({wanted}), the platform answered about another object ({answered}); "
        f"the answer was not taken as {taken_as}"
    )


class RemoteJob(ABC):
    """One piece of platform work to wait for, as plain data plus the requests that read and stop it."""

    __slots__ = ()

    kind: ClassVar[JobKind]
    # How a status reads after the work's name where "is <status>" is not English ("succeeded", not "is
    # succeeded"); a status not listed reads "is <status>" ("is running"), one the contract does not know too.
    status_phrases: ClassVar[Mapping[str, str]] = {}
    # The answer's fields that say when the work started and when it reached its final state (``work_duration``).
    timestamps: ClassVar[tuple[str, str]]

    @property
    @abstractmethod
    def target(self) -> dict[str, Any]:
        """The ids (and settings) naming the work: a trigger's kwargs and an event's ``target`` (JSON values)."""

    @classmethod
    @abstractmethod
    def from_target(cls, target: Mapping[str, Any]) -> Self:
        """The work an event's ``target`` (or a trigger's kwargs) names.

        :param target: as :attr:`target` made it.
        """

    @abstractmethod
    def fetch(self) -> Call[Any]:
        """The request that reads the work's current state, its answer :meth:`checked`."""

    @property
    @abstractmethod
    def answer_ids(self) -> dict[str, str]:
        """The ids an answer about this work carries, by field (``{"id": "ex_1", "workflow_id": "wf_1"}``)."""

    def checked(self, call: Call[Answer]) -> Call[Answer]:
        """``call``, whose answer must be about this work: each of :attr:`answer_ids` as asked.

        :param call: a request that reads this work.
        """

        def parse(body: Any) -> Answer:
            resource = call.parse(body)
            self.check_answer(resource)
            return resource

        return Call(call.spec, parse)

    def check_answer(self, resource: Mapping[str, Any]) -> None:
        """Check that an answer names this work's ids, so an answer about another object is never judged.

        :param resource: an answer about this work.
        :raises AnswerMismatchError: a field of :attr:`answer_ids` is missing or names another object.
        """
        check_answer_ids(resource, self.answer_ids, self.describe(), f"the {self.kind}'s state")

    @abstractmethod
    def outcome(self, resource: Mapping[str, Any]) -> Outcome | None:
        """``success``/``failure`` when the work is over, else ``None``.

        :param resource: the state :meth:`fetch` read.
        """

    def took(self, resource: Mapping[str, Any]) -> float | None:
        """Seconds from the work's start to its final state by the platform's :attr:`timestamps`, or ``None`` when
        the answer does not say (a field missing or unreadable, or the end before the start: a failed sync).

        :param resource: the work's final state, as :meth:`fetch` read it.
        """
        started, ended = (parse_time(resource.get(field)) for field in self.timestamps)
        if started is None or ended is None or ended < started:
            return None
        return float((ended - started).total_seconds())

    def cancel(self) -> Call[Any] | None:
        """The request that stops the work; ``None`` when this kind cannot be cancelled."""
        return None

    # A value, named by its target --------------------------------------------------------------------

    def _set(self, **ids: Any) -> None:
        """Set the description's fields, once, from its ``__init__`` (afterwards they are read-only)."""
        for name, value in ids.items():
            object.__setattr__(self, name, value)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"{type(self).__name__} is read-only: make a new one instead of setting {name}")

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and other.target == self.target

    def __hash__(self) -> int:
        return hash((type(self), tuple(self.target.items())))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(f'{key}={value!r}' for key, value in self.target.items())})"

    @abstractmethod
    def describe(self) -> str:
        """How logs and messages name the work, for the task and its trigger alike."""

    def state_of(self, resource: Mapping[str, Any]) -> str:
        """The work and its state as one clause of English, for log lines, events and failure messages.

        ``execution ex_1 of workflow wf_1 succeeded``, ``report rp_1 is being generated``.

        :param resource: the state :meth:`fetch` read.
        """
        # A status the contract does not know is platform text: folded and capped before it reaches a message.
        status = clean_text(resource.get("status", "unknown"), 200)
        return f"{self.describe()} {self.status_phrases.get(status, f'is {status}')}"


class StartableJob(RemoteJob):
    """Work a task starts itself: how it starts, how a retry finds it again, and how users follow it.

    Its verdict depends on its status alone (Airflow 3.3's ``ResumableJobMixin`` judges a status string).
    """

    __slots__ = ()

    # The work in messages: "execution", "report".
    noun: ClassVar[str]
    # The XCom key of the work's id, pushed as soon as it is known.
    xcom_key: ClassVar[str]
    # The name of the work in ``lineage/_extract.py`` (its ``OPERATIONS``).
    lineage_operation: ClassVar[str]
    # The task's arguments the start takes, by name; those that must render to a mapping (checked first, with
    # advice on templates).
    start_arguments: ClassVar[tuple[str, ...]]
    mapping_arguments: ClassVar[tuple[str, ...]] = ()
    # Arguments a task may give by name instead of by id: {name argument: the id argument it stands for}.
    name_arguments: ClassVar[Mapping[str, str]] = {}

    @classmethod
    def resolve_names(cls, hook: AnalyticsHook, **names: Any) -> dict[str, Any]:
        """The id arguments the given names stand for, from one listing; before anything is started.

        :param hook: the task's hook.
        :param names: the :attr:`name_arguments` the task was given (``None``: given by id).
        :raises AnalyticsInputError: a name that no object or several have, listing what was found.
        """
        return {}

    @classmethod
    @abstractmethod
    def validate(cls, **arguments: Any) -> None:
        """Check a task's (rendered) arguments before any request; raise with what to change.

        :param arguments: the start's arguments, as :meth:`start` takes them.
        """

    @classmethod
    @abstractmethod
    def start(cls, hook: AnalyticsHook, idempotency_key: str, **arguments: Any) -> Mapping[str, Any]:
        """Start the work (or replay its start: the platform keeps the first answer of a key); return it.

        :param hook: the task's hook.
        :param idempotency_key: the start's key (the same on every try that must find the same work).
        :param arguments: what the task starts it with.
        """

    @classmethod
    @abstractmethod
    def from_answer(cls, resource: Mapping[str, Any], **arguments: Any) -> Self:
        """The work a start's (or a read's) answer is about.

        :param resource: the platform's answer.
        :param arguments: the start's arguments, for an id the answer may leave out.
        """

    @property
    @abstractmethod
    def external_id(self) -> Any:
        """The JSON value a retry finds the work by (``task_state_store``, the next start's key): never reshaped."""

    @classmethod
    @abstractmethod
    def from_external_id(cls, external_id: Any) -> Self:
        """The work an external id names (as :attr:`external_id` made it, or as an earlier try stored it).

        :param external_id: the stored value.
        """

    @property
    @abstractmethod
    def xcom_value(self) -> str:
        """The id pushed under :attr:`xcom_key`."""

    @property
    @abstractmethod
    def ui_path(self) -> str:
        """The work's page in the platform UI, relative to the connection's ``ui_url``."""

    @classmethod
    @abstractmethod
    def verdict(cls, status: object) -> Outcome | None:
        """``success``/``failure`` for a terminal status, else ``None``.

        :param status: the work's ``status``.
        """

    def outcome(self, resource: Mapping[str, Any]) -> Outcome | None:
        return self.verdict(resource.get("status"))
