"""Checks and conversions for the arguments of the hostile fault kinds (``Fault.respond`` and friends).

Every problem is a ``ValueError`` naming the argument, raised when the fault is built (in the test, or as
the admin endpoint's 422), never later as a broken answer: the server (uvicorn) cannot send a header
value with control characters, a non-numeric ``Content-Length`` or a status outside 100-999, so such
faults are refused here.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

HeaderValue = str | bytes
HeaderInput = Mapping[str, HeaderValue] | Sequence[tuple[str, HeaderValue]] | None
HeaderPairs = tuple[tuple[str, HeaderValue], ...]

_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")  # RFC 9110 token: what a header name may be
_UNSENDABLE = re.compile(rb"[\x00-\x08\x0a-\x1f\x7f]")  # control characters uvicorn refuses in a value


def header_name(name: object, what: str) -> str:
    """A header name, checked.

    :param name: the name.
    :param what: the argument it came from, for the error message.
    """
    if not isinstance(name, str) or not _TOKEN.fullmatch(name):
        raise ValueError(f"{what}: {name!r} is not a header name (letters, digits and !#$%&'*+-.^_`|~)")
    return name


def header_value(name: str, value: object, what: str) -> HeaderValue:
    """A header value, checked: ``str`` must be latin-1 (sent verbatim), ``bytes`` are sent raw.

    :param name: the header's name.
    :param value: the value.
    :param what: the argument it came from, for the error message.
    """
    if isinstance(value, (bytearray, memoryview)):
        value = bytes(value)
    if isinstance(value, str):
        try:
            raw = value.encode("latin-1")
        except UnicodeEncodeError:
            raise ValueError(f"{what}: the value of {name} is not latin-1; give it as bytes") from None
    elif isinstance(value, bytes):
        raw = value
    else:
        raise ValueError(f"{what}: the value of {name} must be a str or bytes, not {type(value).__name__}")
    if _UNSENDABLE.search(raw):
        raise ValueError(f"{what}: the value of {name} has control characters the server cannot send")
    if name.lower() == "content-length" and not raw.isdigit():
        raise ValueError(f"{what}: Content-Length must be a non-negative integer (the server cannot send {raw!r})")
    return value


def header_pairs(headers: object, what: str = "headers") -> HeaderPairs:
    """Headers given as a mapping or as (name, value) pairs, checked, in order.

    :param headers: the headers (None for none).
    :param what: the argument they came from, for the error message.
    """
    if headers is None:
        return ()
    if isinstance(headers, Mapping):
        items: list[Any] = list(headers.items())
    elif isinstance(headers, Sequence) and not isinstance(headers, (str, bytes)):
        items = list(headers)
    else:
        raise ValueError(f"{what} must be a mapping or a list of (name, value) pairs")
    pairs: list[tuple[str, HeaderValue]] = []
    for item in items:
        if isinstance(item, (str, bytes)) or not isinstance(item, Sequence) or len(item) != 2:
            raise ValueError(f"{what} must be a mapping or a list of (name, value) pairs, not {item!r}")
        name = header_name(item[0], what)
        pairs.append((name, header_value(name, item[1], what)))
    return tuple(pairs)


def header_names(names: object, what: str = "remove") -> tuple[str, ...]:
    """Header names (lower case) from a list of names; a single string is refused.

    :param names: the names.
    :param what: the argument they came from, for the error message.
    """
    if isinstance(names, (str, bytes)) or not isinstance(names, Sequence):
        raise ValueError(f"{what} must be a list of header names, not {names!r}")
    return tuple(header_name(name, what).lower() for name in names)


def raw_bytes(value: object, what: str) -> bytes:
    """Body bytes: ``bytes`` as they are, ``str`` as UTF-8.

    :param value: the value.
    :param what: the argument it came from, for the error message.
    """
    if isinstance(value, str):
        return value.encode()
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    raise ValueError(f"{what} must be bytes or a str, not {type(value).__name__}")


def from_base64(value: object, what: str) -> bytes:
    """Bytes given as base64 text in the admin endpoint's JSON.

    :param value: the base64 text.
    :param what: the field it came from, for the error message.
    """
    if not isinstance(value, str):
        raise ValueError(f"{what} must be a base64 string")
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raise ValueError(f"{what} is not valid base64") from None


def whole_number(value: object, what: str, minimum: int) -> int:
    """An integer (not a bool) of at least ``minimum``.

    :param value: the value.
    :param what: the argument it came from, for the error message.
    :param minimum: the smallest value allowed.
    """
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"{what} must be an integer >= {minimum}, not {value!r}")
    return value


def seconds(value: object, what: str) -> float:
    """A finite number of seconds >= 0.

    :param value: the value.
    :param what: the argument it came from, for the error message.
    """
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise ValueError(f"{what} must be a number of seconds >= 0, not {value!r}")
    return float(value)


def status_code(value: object, kind: str, lowest: int) -> int:
    """A status code between ``lowest`` and 599.

    :param value: the code.
    :param kind: the fault kind, for the error message.
    :param lowest: the smallest code allowed.
    """
    if isinstance(value, bool) or not isinstance(value, int) or not lowest <= value <= 599:
        raise ValueError(f"a {kind} fault needs a code between {lowest} and 599, not {value!r}")
    return value


def page_parts(items: object, extra: object) -> tuple[list[Any], dict[str, Any]]:
    """The ``data`` list and extra fields of a ``pages`` fault, checked to be JSON.

    :param items: every page's ``data`` (None for ``[]``).
    :param extra: more fields of every page (None for none).
    """
    items = [] if items is None else items
    extra = {} if extra is None else extra
    if not isinstance(items, list):
        raise ValueError(f"items must be a list, not {type(items).__name__}")
    if not isinstance(extra, dict) or not all(isinstance(key, str) for key in extra):
        raise ValueError("extra must be a dict with string keys")
    try:
        json.dumps([items, extra])
    except (TypeError, ValueError) as error:
        raise ValueError(f"items and extra must be JSON: {error}") from None
    return list(items), dict(extra)


def as_text(value: HeaderValue) -> str:
    """A header value for display (bytes read as latin-1).

    :param value: the value.
    """
    return value if isinstance(value, str) else value.decode("latin-1")
