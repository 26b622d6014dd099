"""Reading the platform's times: RFC 3339 strings with ``Z`` or an offset, nothing else."""

from __future__ import annotations

import pendulum

# A longer string is no time the platform sends; it is refused before the parser spends effort on it.
MAX_TIME_LENGTH = 64


def parse_time(value: object) -> pendulum.DateTime | None:
    """An RFC 3339 time from the platform (``Z`` or an offset) as Airflow's own date-time type.

    ``None`` for anything else: a time without an offset is ambiguous, and a platform that sends one is
    not trusted to mean UTC.

    :param value: what the platform sent (any JSON value).
    """
    if not isinstance(value, str) or not value or len(value) > MAX_TIME_LENGTH:
        return None
    try:
        parsed = pendulum.parse(value, exact=True, tz=None)
    except (ValueError, OverflowError):  # pendulum's ParserError is a ValueError
        return None
    if not isinstance(parsed, pendulum.DateTime) or parsed.tzinfo is None:
        return None
    return parsed
