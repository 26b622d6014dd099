"""Problems found before any request, reported together in one :class:`AnalyticsInputError`.

A user who fixes one problem per run would need as many runs as problems; so loading, planning and the checks
before applying collect every problem they find and raise once, one line each, saying where and what to change.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from airflow_provider_analytics.wire._redaction import scrub_text
from airflow_provider_analytics.wire.errors import AnalyticsInputError

__all__ = ["MAX_PROBLEMS_SHOWN", "Problems", "listed", "one_line", "raise_problems"]

MAX_PROBLEMS_SHOWN = 100
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]+")
_NOTHING_CHANGED = "nothing was changed on the platform"


def one_line(text: str) -> str:
    """``text`` with control characters folded into spaces.

    A name or key holding a line break must not start a line of its own in a message, a table or the task log.

    :param text: any text taken from the definitions or the platform.
    """
    return _CONTROL.sub(" ", text)


def listed(items: Sequence[str], most: int = 20) -> str:
    """``items`` joined with ``; ``, the first ``most`` of them and how many more: one log line for a whole
    workspace, not one per object.

    :param items: the phrases, one per object.
    :param most: how many to show.
    """
    more = len(items) - most
    return "; ".join(items[:most]) + (f"; and {more} more" if more > 0 else "")


def raise_problems(lines: Sequence[str], what: str, outcome: str = _NOTHING_CHANGED) -> None:
    """Raise one :class:`AnalyticsInputError` listing ``lines`` (the first :data:`MAX_PROBLEMS_SHOWN`); none: return.

    :param lines: one problem each, ``<where>: <field>: <what to change>``.
    :param what: the plural subject of the first sentence (``The definitions``).
    :param outcome: what was not done because of them, after the count.
    """
    if not lines:
        return
    shown = [f"  - {one_line(line)}" for line in lines[:MAX_PROBLEMS_SHOWN]]
    if len(lines) > MAX_PROBLEMS_SHOWN:
        shown.append(f"  ... and {len(lines) - MAX_PROBLEMS_SHOWN} more")
    count = f"{len(lines)} problem" + ("" if len(lines) == 1 else "s")
    # Masked: a problem may quote a platform's listing, which a plan reads unmasked (it is data; this is a message).
    raise AnalyticsInputError(scrub_text(f"{what} have {count}; {outcome}:\n" + "\n".join(shown)))


class Problems:
    """Every problem found so far, in the order found.

    :param what: the plural subject of the error's first sentence.
    :param outcome: what was not done because of them (:func:`raise_problems`).
    """

    def __init__(self, what: str = "The definitions", outcome: str = _NOTHING_CHANGED) -> None:
        self.what = what
        self.outcome = outcome
        self.lines: list[str] = []

    def add(self, line: str) -> None:
        """Record one problem.

        :param line: ``<where>: <field>: <what is wrong and what to do>``.
        """
        self.lines.append(line)

    def raise_if_any(self) -> None:
        """Raise the one error listing every problem recorded, if there is any."""
        raise_problems(self.lines, self.what, self.outcome)
