"""The budget of a value an apply reads from Airflow (a connection's field or extra key, a variable): bytes, depth and
time, checked before the value is registered as a secret or put into a request. No Airflow, no I/O.

A secrets backend can hold anything: a variable of megabytes, an extra whose JSON nests thousands of levels deep, a
lone UTF-16 surrogate, ``nan``, an integer of twenty digits. Each of those used to fail late and untyped (a
``RecursionError`` or ``UnicodeEncodeError`` while the value was registered or encoded, with Airflow retrying the
task), or worse, reach the platform as something else. So every value read is checked here, and one over a budget
fails the apply before anything is sent, naming the reference (the variable's key, or the connection's id and
field), where the value goes, and what to change:

- **bytes**: at most :data:`MAX_SECRET_BYTES` as JSON (UTF-8) for one value, :data:`MAX_SECRETS_BYTES` for all of
  one apply's. Every value read is a secret that Airflow's log masker must hold for the rest of the task, in one
  pattern: Airflow 2.11's (``re2``) refuses a pattern of about 700 KB ("pattern too large"), and from then on masks
  nothing new in that process;
- **depth**: where it goes, the value may nest only as deep as the platform may list it back to a plan
  (``_read``: :data:`~airflow_provider_analytics.definitions._model.MAX_DEPTH` levels, the field counted);
- **content**: what JSON carries exactly and UTF-8 can encode: no lone surrogate, no ``nan`` or infinity, no
  integer beyond +/-(2**53 - 1), text keys only;
- **time**: the checks walk the value without recursion and stop where a budget is passed (the byte count first,
  so a value of gigabytes costs the budget's worth of work, never a serialisation of it whole). How long the
  secrets backend takes to answer is its own setting (its client's timeouts).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from airflow_provider_analytics.definitions._model import MAX_DEPTH
from airflow_provider_analytics.wire._request_bodies import MAX_INTEGER
from airflow_provider_analytics.wire._request_json import Unsendable, measure, shown_path

__all__ = ["MAX_SECRETS_BYTES", "MAX_SECRET_BYTES", "SecretBudget"]

MAX_SECRET_BYTES = 64 * 1024
MAX_SECRETS_BYTES = 256 * 1024
_CHANGE = "change the value kept in Airflow"


class SecretBudget:
    """What one apply has read from Airflow so far, against :data:`MAX_SECRETS_BYTES`."""

    def __init__(self) -> None:
        self.used = 0

    def problem(self, value: Any, path: tuple[str | int, ...]) -> str | None:
        """What is wrong with ``value`` (to follow the reference's name in a message), or ``None``; a value within
        the budget is counted against the apply's.

        :param value: the value read.
        :param path: where it goes inside its object's free-form field (a connection, chart options, a
            workflow's configuration): keys and indexes.
        """
        size = measure(value, MAX_SECRET_BYTES)
        if isinstance(size, Unsendable):
            if size.over_limit:
                return (
                    f"holds a value of over {MAX_SECRET_BYTES // 1024} KiB as JSON, more than a secret read from"
                    " Airflow may take (Airflow's log masker holds every secret of the task in one pattern, and Airflow"
                    f" 2.11's fails on one of about 700 KB): {_CHANGE} to a smaller one"
                )
            inside = f" at {shown_path(size.path)}" if size.path else ""
            return f"holds a value that cannot be sent as JSON: the value{inside} {size.problem}; {_CHANGE}"
        problem = _content_problem(value, MAX_DEPTH - 1 - len(path))
        if problem is not None:
            return problem
        if self.used + size > MAX_SECRETS_BYTES:
            return (
                f"would bring what this apply reads from Airflow to over {MAX_SECRETS_BYTES // 1024} KiB as JSON, more"
                " than one apply may read (each value is a secret Airflow's log masker holds for the rest of the"
                " task): apply these definitions in parts, or keep smaller secrets"
            )
        self.used += size
        return None


def _content_problem(value: Any, room: int) -> str | None:
    """A value nested deeper than ``room`` levels below where it goes, an integer JSON does not carry exactly, or a
    key that is not text. Walked with a stack of its own: ``measure`` bounded the value's size already."""
    stack: list[tuple[Any, int, tuple[str | int, ...]]] = [(value, 0, ())]
    while stack:
        item, depth, path = stack.pop()
        inside = f" at {shown_path(path)}" if path else ""
        if depth > room:
            return (
                f"holds a value nested more than {max(room, 0)} levels deep, which, where it goes, passes the"
                f" {MAX_DEPTH} levels a definition's value may nest (the platform's listing of the object would fail"
                f" every later plan): {_CHANGE} to a flatter one"
            )
        if isinstance(item, int) and not isinstance(item, bool) and abs(item) > MAX_INTEGER:
            return (
                f"holds{inside} an integer beyond the integers JSON carries exactly (-(2**53 - 1) to 2**53 - 1),"
                f" which a platform reading numbers as doubles would change silently: {_CHANGE}, writing the number"
                " as text"
            )
        if isinstance(item, Mapping):
            for key, inner in item.items():
                if not isinstance(key, str):
                    return f"holds{inside} a key that is not text ({type(key).__name__}): {_CHANGE}"
                stack.append((inner, depth + 1, (*path, key)))
        elif isinstance(item, (list, tuple)):
            stack += [(inner, depth + 1, (*path, index)) for index, inner in enumerate(item)]
    return None
