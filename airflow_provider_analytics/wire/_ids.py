"""Checks of ids and page sizes against the contract, before any request is built from them, and of the ids an
answer hands over, before anything stores, links, logs or sends them.

A module of its own, with nothing but the contract and the errors: operators check their ids when a DAG
file is parsed, and must not import the request builders to do so.
"""

from __future__ import annotations

from airflow_provider_analytics.wire._contract import ID_PATTERN, MAX_PAGE_SIZE
from airflow_provider_analytics.wire.errors import AnalyticsInputError, UnexpectedResponseError, clean_text

__all__ = ["answered_id", "validate_id", "validate_page_size"]


def validate_id(value: object, what: str) -> str:
    """Check an id against the contract's pattern, so no request is built from a bad one.

    :param value: the id to check.
    :param what: the parameter's name, for the message.
    """
    if not isinstance(value, str) or not ID_PATTERN.fullmatch(value):
        raise AnalyticsInputError(f"{what} must be 1-64 characters of letters, digits, '_' or '-', got {value!r}")
    return value


def answered_id(value: object, what: str) -> str:
    """An id the platform answered with, checked against the contract's pattern as a caller's id is.

    The id of work a start answered with goes to XCom, ``task_state_store``, a link into the platform's UI, a
    trigger's kwargs and log lines, and into the path of every later request: ``../../admin`` must reach none of
    them. The rule is the one the listings use (``_names.py``).

    :param value: the answer's id.
    :param what: what the id names, for the message (``execution id``).
    :raises UnexpectedResponseError: it is not a string of 1-64 letters, digits, ``_`` or ``-``.
    """
    if not isinstance(value, str) or not ID_PATTERN.fullmatch(value):
        raise UnexpectedResponseError(
            f"the platform answered with the {what} {clean_text(repr(value), 80)}, which is not an id (ids are "
            "1-64 letters, digits, '_' or '-'): it was not stored, linked or used in a request"
        )
    return value


def validate_page_size(page_size: object) -> int:
    """Check a page size (1 to the contract's maximum of 100)."""
    if isinstance(page_size, bool) or not isinstance(page_size, int) or not 1 <= page_size <= MAX_PAGE_SIZE:
        raise AnalyticsInputError(f"page_size must be an integer from 1 to {MAX_PAGE_SIZE}, got {page_size!r}")
    return page_size
