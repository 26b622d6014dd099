"""Expecting a task step to fail for good: :class:`FinalFailure` raised in place of an error of a given type."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Generic, TypeVar

import pytest

from airflow_provider_analytics.operators.errors import FinalFailure

E = TypeVar("E", bound=BaseException)


@dataclass
class Caught(Generic[E]):
    """The error behind the :class:`FinalFailure`, once the block has raised (``value``, as pytest's)."""

    value: E = None  # type: ignore[assignment]
    final: FinalFailure = None  # type: ignore[assignment]


@contextlib.contextmanager
def raises_final(expected: type[E], match: str | None = None) -> Iterator[Caught[E]]:
    """Like ``pytest.raises(expected, match=...)`` for an error that a task step raised again as final.

    :param expected: the type of the error a retry cannot change.
    :param match: a regular expression searched in that error's message.
    """
    caught: Caught[E] = Caught()
    with pytest.raises(FinalFailure) as raised:
        yield caught
    final = raised.value
    # Not chained: Airflow's log would show the error's text twice (tests/operators/test_final_failure_text.py).
    assert final.__cause__ is None
    assert final.__suppress_context__
    assert isinstance(final.error, expected), f"{type(final.error).__name__}: {final.error}"
    if match is not None:
        assert re.search(match, str(final.error)), f"{match!r} not in {str(final.error)!r}"
    assert str(final).startswith(str(final.error)), "the error's own message comes first"
    assert "\n(not retried: " in str(final)
    caught.value, caught.final = final.error, final
