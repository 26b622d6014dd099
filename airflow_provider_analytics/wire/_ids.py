"""Checks of ids and page sizes against the contract, before any request is built from them.

A module of its own, with nothing but the contract and the errors: operators check their ids when a DAG
file is parsed, and must not import the request builders to do so.
"""

from __future__ import annotations

from airflow_provider_analytics.wire._contract import ID_PATTERN, MAX_PAGE_SIZE
from airflow_provider_analytics.wire.errors import AnalyticsInputError

__all__ = ["validate_id", "validate_page_size"]


def validate_id(value: object, what: str) -> str:
    """Check an id against the contract's pattern, so no request is built from a bad one.

    :param value: the id to check.
    :param what: the parameter's name, for the message.
    """
    if not isinstance(value, str) or not ID_PATTERN.fullmatch(value):
        raise AnalyticsInputError(f"{what} must be 1-64 characters of letters, digits, '_' or '-', got {value!r}")
    return value


def validate_page_size(page_size: object) -> int:
    """Check a page size (1 to the contract's maximum of 100)."""
    if isinstance(page_size, bool) or not isinstance(page_size, int) or not 1 <= page_size <= MAX_PAGE_SIZE:
        raise AnalyticsInputError(f"page_size must be an integer from 1 to {MAX_PAGE_SIZE}, got {page_size!r}")
    return page_size
