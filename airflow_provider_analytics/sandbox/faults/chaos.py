"""Seeded random faults: a platform that throttles, stumbles, drops connections and answers too late.

:class:`Chaos` draws, for each ``/v1`` request, whether it gets a fault and which, from a ``random.Random``
seeded by ``--chaos-seed``: the same seed gives the same sequence of faults for the same sequence of
requests. It builds the faults with the same :class:`~.kinds.Fault` constructors the scripted queue uses, so
one implementation answers both. It also decides, from a second seeded stream, which new executions and
reports genuinely fail, and how long each piece of work takes. :class:`InjectedFaults` records every fault
applied (random or scripted), so a load test can compare faults injected with faults its client absorbed.
"""

from __future__ import annotations

import random
import re
import threading
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from airflow_provider_analytics.sandbox.faults.kinds import DOWNLOAD_PATH, Fault

# The kinds of random answer, in the order the draw checks them.
CHAOS_KINDS = ("rate_limited", "server_error", "reset", "slow")
_SERVER_ERRORS = (500, 502, 503)
_DOWNLOAD = re.compile(DOWNLOAD_PATH)


@dataclass(frozen=True)
class ChaosConfig:
    """What share of requests and of work goes wrong, and how.

    Every rate is a probability from 0 to 1; together the four request rates may not exceed 1.

    :param seed: seeds every draw; None turns chaos off (the other settings are then ignored).
    :param rate_limited: share of requests answered 429 with ``Retry-After: retry_after``.
    :param server_error: share answered 500, 502 or 503 before anything is processed.
    :param reset: share whose connection is reset mid-answer: a download is cut after a few bytes of its
        body, any other request is processed in full and then its answer is dropped.
    :param slow: share answered only after ``slow_seconds`` (set it longer than the client's timeout).
    :param execution_failure: share of new executions that fail (``error.type`` ``chaos``).
    :param report_failure: share of new reports that fail.
    :param retry_after: the ``Retry-After`` of a random 429, in seconds.
    :param slow_seconds: how late a slow answer comes.
    :param work_seconds: when set, each new execution and report takes a random time in this range
        (seconds, uniform) instead of the fixed timings.
    """

    seed: int | None = None
    rate_limited: float = 0.0
    server_error: float = 0.0
    reset: float = 0.0
    slow: float = 0.0
    execution_failure: float = 0.0
    report_failure: float = 0.0
    retry_after: int = 1
    slow_seconds: float = 35.0
    work_seconds: tuple[float, float] | None = field(default=None)

    def __post_init__(self) -> None:
        rates = {name: getattr(self, name) for name in (*CHAOS_KINDS, "execution_failure", "report_failure")}
        for name, rate in rates.items():
            if isinstance(rate, bool) or not isinstance(rate, (int, float)) or not 0 <= rate <= 1:
                raise ValueError(f"{name} must be a probability from 0 to 1, not {rate!r}")
        if sum(rates[kind] for kind in CHAOS_KINDS) > 1:
            raise ValueError("the request fault rates add up to more than 1")
        if self.retry_after < 0 or self.slow_seconds < 0:
            raise ValueError("retry_after and slow_seconds must not be negative")
        if self.work_seconds is not None:
            low, high = self.work_seconds
            if not 0 < low <= high:
                raise ValueError(f"work_seconds must be a range 0 < low <= high, not {self.work_seconds!r}")

    def as_json(self) -> dict[str, Any]:
        """The settings, as the admin endpoint shows them."""
        view: dict[str, Any] = {name: getattr(self, name) for name in self.__dataclass_fields__}
        view["work_seconds"] = list(self.work_seconds) if self.work_seconds else None
        return view


class Chaos:
    """The seeded draws of one sandbox: faults for requests, outcomes and durations for work.

    Each request takes exactly two numbers from the request stream (the kind, then its detail), whatever
    the request, so the sequence of kinds depends only on the seed and the number of requests.

    :param config: rates and seed.
    """

    def __init__(self, config: ChaosConfig) -> None:
        self.config = config
        self._lock = threading.Lock()
        self.reset()

    def reset(self) -> None:
        """Start every stream over from the seed."""
        seed = self.config.seed
        with self._lock:
            self._requests = random.Random(seed)
            self._work = random.Random(None if seed is None else seed + 1)

    @property
    def enabled(self) -> bool:
        """Whether requests and work are subject to chaos at all."""
        return self.config.seed is not None

    def fault_for(self, method: str, path: str) -> tuple[str, Fault] | None:
        """The random fault for the next request, with its chaos kind, or None for a normal answer.

        :param method: the request's method.
        :param path: the request's path.
        """
        if not self.enabled:
            return None
        with self._lock:
            draw, detail = self._requests.random(), self._requests.random()
        threshold = 0.0
        for kind in CHAOS_KINDS:
            threshold += getattr(self.config, kind)
            if draw < threshold:
                return kind, self._fault(kind, detail, method, path)
        return None

    def _fault(self, kind: str, detail: float, method: str, path: str) -> Fault:
        if kind == "rate_limited":
            return Fault.status(429, retry_after=self.config.retry_after)
        if kind == "server_error":
            return Fault.status(_SERVER_ERRORS[int(detail * len(_SERVER_ERRORS))])
        if kind == "reset":
            if method.upper() == "GET" and _DOWNLOAD.search(path):
                return Fault.truncate(at_bytes=int(detail * 4096))
            return Fault.drop(after_processing=True)
        return Fault.delay(self.config.slow_seconds)

    def work_fails(self, what: str) -> bool:
        """Whether a new piece of work genuinely fails.

        :param what: ``execution`` or ``report``.
        """
        rate = self.config.execution_failure if what == "execution" else self.config.report_failure
        if not self.enabled or not rate:
            return False
        with self._lock:
            return self._work.random() < rate

    def work_seconds(self) -> float | None:
        """How long a new piece of work takes, or None for the fixed timings."""
        if self.config.work_seconds is None:
            return None
        low, high = self.config.work_seconds
        with self._lock:
            return self._work.uniform(low, high)


@dataclass(frozen=True)
class InjectedFault:
    """One fault applied to one request.

    :param request_id: the request's ``X-Request-Id``.
    :param kind: the chaos kind (``rate_limited`` ...) or, for a scripted fault, its fault kind.
    :param source: ``chaos`` or ``script``.
    :param method: the request's method.
    :param path: the request's path.
    :param at: when (RFC 3339).
    """

    request_id: str
    kind: str
    source: str
    method: str
    path: str
    at: str

    def as_json(self) -> dict[str, str]:
        """The record, as the admin endpoint shows it."""
        return dict(self.__dict__)


class InjectedFaults:
    """Every fault applied since the last reset, in order, and the count of each kind."""

    def __init__(self) -> None:
        self._entries: list[InjectedFault] = []
        self._lock = threading.Lock()

    def record(self, entry: InjectedFault) -> None:
        """Note a fault applied.

        :param entry: the fault and its request.
        """
        with self._lock:
            self._entries.append(entry)

    def snapshot(self) -> list[InjectedFault]:
        """Every fault applied, in order."""
        with self._lock:
            return list(self._entries)

    def counts(self) -> dict[str, int]:
        """How many faults of each kind were applied."""
        with self._lock:
            return dict(Counter(entry.kind for entry in self._entries))

    def clear(self) -> None:
        """Forget every record."""
        with self._lock:
            self._entries.clear()
