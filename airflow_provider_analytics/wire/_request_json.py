"""A request's JSON body: measured within the platform's bound before it is encoded, then encoded one way.

:func:`measure` walks a value and adds up the bytes its compact UTF-8 JSON takes, stopping as soon as the sum
passes the limit: a value that stands for gigabytes (one long text referred to from a hundred thousand places, a
mapping that holds itself) is refused after about the limit's worth of work, never serialised first. It also
refuses what cannot be encoded at all, naming where: a lone UTF-16 surrogate (``"\\ud800"``, which UTF-8 cannot
encode), ``nan`` and the infinities, an integer of more digits than Python converts, a value of no JSON type.

:func:`encoded` is the one encoding every request body is sent in: compact, UTF-8, non-finite numbers refused.
The client sends those bytes itself, rather than httpx's ``json=``, whose encoding changed between releases
(0.27 escapes every non-ASCII character, 0.28 sends UTF-8 and raises ``UnicodeEncodeError`` on a surrogate): a
body's size is the size that was checked, on every httpx the provider installs with.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["Unsendable", "encoded", "measure", "shown_path"]

Path = tuple[str | int, ...]
# Where a value is while walking: its parent's place and its own key or index, built in constant time per value
# (a tuple per value would cost the depth each: quadratic in a mapping that holds itself).
_Place = tuple[Any, str | int] | None
_ESCAPED = json.encoder.encode_basestring  # the C function json.dumps(ensure_ascii=False) quotes a text with
_LITERALS = {None: 4, True: 4, False: 5}  # null, true, false
_SURROGATE = re.compile("[\ud800-\udfff]")
_KEY = "(a key)"  # tells _text_size that it measures a key, for its message


@dataclass(frozen=True)
class Unsendable:
    """Why a value cannot be sent as it is: over the size allowed, or not encodable as JSON.

    :param path: where, from the value measured: keys and list indexes.
    :param problem: what is wrong, and what to do.
    :param over_limit: the value is over the size allowed (else it cannot be encoded).
    """

    path: Path
    problem: str
    over_limit: bool = False


class _Stop(Exception):
    """Ends the walk where it found a problem (``place``: where, as the walk keeps it)."""

    def __init__(self, place: _Place, problem: str, *, over_limit: bool = False) -> None:
        super().__init__(problem)
        self.place, self.problem, self.over_limit = place, problem, over_limit

    def found(self) -> Unsendable:
        steps: list[str | int] = []
        place = self.place
        while place is not None:
            place, step = place
            steps.append(step)
        return Unsendable(tuple(reversed(steps)), self.problem, self.over_limit)


def encoded(document: Any) -> bytes:
    """``document`` as the body sent: compact JSON in UTF-8 (check it with :func:`json_size` first).

    :param document: a JSON value.
    """
    return json.dumps(document, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode("utf-8")


def measure(value: Any, limit: int, *, strict: bool = True) -> int | Unsendable:
    """The bytes :func:`encoded` gives for ``value``, counted without encoding it whole; or why it cannot be sent:
    over ``limit``, or not encodable, with where.

    :param value: the value to measure.
    :param limit: the most bytes allowed: the walk stops as soon as the count passes it.
    :param strict: refuse a value of no JSON type (what ``json.dumps`` refuses); ``False`` counts it as nothing,
        for input that a validation after this names in its own words (definitions as written).
    """
    try:
        return _size(value, limit, strict)
    except _Stop as stop:
        return stop.found()


def _size(value: Any, limit: int, strict: bool) -> int:
    size = _scalar_size(value, None, strict)
    # One frame per open container: its numbered children, where it is, whether it is a mapping. The walk holds one
    # frame per level it is in, never the children of a level all at once; a child container is entered (its frame
    # pushed, the loop over its parent's children left) and its parent's loop resumes where it was once it is done.
    frames: list[tuple[Iterator[tuple[int, Any]], _Place, bool]] = []
    opened = _children(value, strict)
    if opened is not None:
        frames.append((opened, None, isinstance(value, Mapping)))
        size += 2
    while frames:
        if size > limit:
            raise _Stop(frames[-1][1], _over(limit), over_limit=True)
        children, place, is_mapping = frames[-1]
        for index, child in children:  # kept tight: it runs once per value, a million times in a large file
            if index:
                size += 1  # the comma before it
            if is_mapping:
                key, child = child
                size += (_text_size(key, place, _KEY) if type(key) is str else _key_size(key, place, strict)) + 1
                where: _Place = (place, key if isinstance(key, (str, int)) else repr(key))
            else:
                where = (place, index)
            if type(child) is str:
                size += _text_size(child, where)
            else:
                size += _scalar_size(child, where, strict)
                opened = _children(child, strict)
                if opened is not None:
                    frames.append((opened, where, isinstance(child, Mapping)))
                    size += 2
                    break
            if size > limit:
                raise _Stop(where, _over(limit), over_limit=True)
        else:
            frames.pop()
    if size > limit:
        raise _Stop(None, _over(limit), over_limit=True)
    return size


def _over(limit: int) -> str:
    shown = f"{limit // (1024 * 1024)} MiB" if limit % (1024 * 1024) == 0 else f"{limit:,} bytes"
    return f"takes over {shown} as JSON, more than the platform accepts in one request: make it smaller"


_PLAIN_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_-]{0,39}")


def shown_path(path: Path) -> str:
    """``configuration.steps[0]['a b']``: a path as messages show it (each key on one line, cut to 40 characters).

    :param path: keys and list indexes, from the outside in.
    """
    text = ""
    for step in path:
        if isinstance(step, int):
            text += f"[{step}]"
        elif _PLAIN_KEY.fullmatch(step):
            text += f".{step}" if text else step
        else:
            text += f"[{_shown_key(step)}]"
    return text


def _shown_key(key: str) -> str:
    """A key as a message shows it: quoted, on one line, cut to 40 characters, a surrogate as its escape."""
    cut = key.encode("ascii", "backslashreplace").decode()
    cut = "".join(character if character.isprintable() else " " for character in cut)
    return "'" + (cut[:37] + "..." if len(cut) > 40 else cut) + "'"


def _children(value: Any, strict: bool) -> Iterator[tuple[int, Any]] | None:
    """A container's children, numbered (a mapping's as ``(key, value)``); ``None`` for a value that holds no
    others. Its brackets are 2 bytes; the separators are counted child by child, so that the walk names the child
    where the count passes the limit."""
    if isinstance(value, dict) or (not strict and isinstance(value, Mapping)):
        return enumerate(value.items())
    if isinstance(value, (list, tuple)):
        return enumerate(value)
    return None


def _scalar_size(value: Any, path: _Place, strict: bool) -> int:
    """The bytes of a value that holds no others (0 for a container: :func:`_children` counts those)."""
    if isinstance(value, str):
        return _text_size(value, path)
    if value is None or isinstance(value, bool):
        return _LITERALS[value]
    if isinstance(value, int):
        return _integer_size(value, path, strict)
    if isinstance(value, float):
        if not math.isfinite(value):
            if strict:
                raise _Stop(path, f"is {value!r}, which JSON cannot carry")
            return 0
        return len(float.__repr__(value))
    if isinstance(value, (dict, list, tuple)) or (not strict and isinstance(value, Mapping)):
        return 0
    if strict:
        raise _Stop(path, f"is of the type {type(value).__name__}, which JSON cannot carry")
    return 0


def _text_size(text: str, path: _Place, what: str = "") -> int:
    escaped = _ESCAPED(text)
    if escaped.isascii():  # a flag CPython keeps: no copy to count an ASCII text's bytes
        return len(escaped)
    try:
        return len(escaped.encode("utf-8"))
    except UnicodeEncodeError:
        found = _SURROGATE.search(text)
        at = f"\\u{ord(found.group()):04x} at character {found.start() + 1}" if found else "a surrogate"
        if what == _KEY:
            what = f"has the key {_shown_key(text)}, which "
        raise _Stop(
            path,
            f"{what}holds a lone UTF-16 surrogate ({at}), which UTF-8 cannot encode: write the character it was"
            " half of, or remove it",
        ) from None


def _integer_size(value: int, path: _Place, strict: bool) -> int:
    try:
        return len(int.__repr__(value))
    except ValueError:  # more digits than Python converts to text (4,300 by default)
        if strict:
            raise _Stop(path, "is an integer of more digits than JSON encoding takes") from None
        return int(value.bit_length() * math.log10(2)) + 1


def _key_size(key: Any, path: _Place, strict: bool) -> int:
    """The bytes of a mapping's key: a text as it is, a number or a literal as ``json.dumps`` writes it, quoted."""
    if isinstance(key, str):
        return _text_size(key, path, _KEY)
    if key is None or isinstance(key, bool):
        return _LITERALS[key] + 2
    if isinstance(key, int):
        return _integer_size(key, path, strict) + 2
    if isinstance(key, float) and math.isfinite(key):
        return len(float.__repr__(key)) + 2
    if strict:
        raise _Stop(path, f"has the key {key!r:.40}, which JSON cannot carry: keys must be text")
    return 2
