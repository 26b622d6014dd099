"""Keeping secrets (API tokens, data-source passwords) out of everything the platform (or a proxy) says back.

A platform that repeats a request's ``Authorization`` header, or the password of a data source it could not
reach, would otherwise put the secret, whole, into the exception text, the task log, the trigger event Airflow
stores in its database and XCom. Every client remembers its token here when it is built, and the hook every
secret value it is about to send (:func:`remember_secrets`); every body it reads (JSON answers and error bodies,
never a downloaded report) and every text quoted in an error or a warning passes through :func:`scrub_text` (or
its byte-level twin :func:`scrub_body`), which replaces each remembered secret, and anything shaped like
``Bearer <token>``, with ``***``.

A secret is masked in every form a platform or proxy is known to echo it in: as written (also with ``/``
JSON-escaped), URL-encoded (``quote`` with and without ``/`` kept, ``quote_plus``; either case of hex digit),
and base64 (standard and URL-safe alphabet), alone or inside a longer encoded text such as
``Basic base64(user:token)``. Inside a longer text the secret's base64 depends on its byte offset there, modulo
3, and the characters at its two ends also encode the neighbouring bytes; so for each offset the characters that
encode only the secret's own bits are searched for, and the whole run of base64 characters around them is
masked (neighbours included: they are the same credential's other half).

Which values are secret is decided by one rule (``_secret_rule.py``: :func:`is_secret_key` on a key's name, secret
pairs, named secrets and credentials inside texts), for every section of every input.

Secrets are remembered for the life of the process, across connections: a triggerer serving many connections
hides every one of them in every connection's texts.
"""

from __future__ import annotations

import base64
import re
import threading
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, fields
from typing import Any, AnyStr, Generic, cast
from urllib.parse import quote, quote_plus

from airflow_provider_analytics.wire._secret_rule import secret_values
from airflow_provider_analytics.wire._text_credentials import BEARER

MASK = "***"
# Shorter secrets would mask ordinary words; a real token is far longer (Airflow's own masker skips them too).
MIN_SECRET_LENGTH = 5

# Characters JSON has outside its strings. A "secret" made of these alone (a number such as a TTL of 86400 under
# "token_ttl", "false" under "use_token") would be masked in a body's numbers and literals, breaking the JSON:
# such values are left to Airflow's masker, which only rewrites log lines.
_JSON_SYNTAX = frozenset("0123456789+-.eEtruefalsn ,:[]{}\t\r\n")

_STANDARD = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")
_URL_SAFE = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")

# A credential in the Authorization header's own shape, whoever's it is (the one rule's, _text_credentials.BEARER):
# the scheme is kept ("Bearer ***"); at least 8 characters, so that prose such as "send a Bearer token" stays.
_BEARER_TEXT = re.compile(BEARER)
_BEARER_BYTES = re.compile(BEARER.encode())


@dataclass(frozen=True)
class _Known(Generic[AnyStr]):
    """What one pass looks for, in one type (text or bytes): every spelling of every remembered secret, the shorter
    ones in one pattern of plain literals (grouped by their first two characters), the longer ones searched for as
    they are; and which of those are base64 middles (to grow into their whole run).

    Searched apart from the ``Bearer`` pattern: an alternation of literals alone is what the regular expression
    engine searches fastest; one pattern for both is about five times slower on a 1 MiB body. Grouped, because the
    engine tries an alternation's branches one by one at every position: 3,200 spellings (800 secrets) took 6 s on
    a 1.3 MB text as one flat alternation, 0.2 s grouped. Long spellings (over :data:`_LONG_SPELLING` characters, a
    key file, a certificate) are found with ``str.find``: compiled into the pattern, a 1 MiB secret took 11 s.
    """

    pattern: re.Pattern[AnyStr] | None
    long: tuple[AnyStr, ...]
    runs: dict[AnyStr, frozenset[AnyStr]]  # a base64 middle's spelling -> the alphabet its run extends over


_LONG_SPELLING = 4096
_lock = threading.Lock()
_secrets: set[str] = set()
# Every spelling of every remembered secret (base64 middles included), kept as secrets are remembered: each one adds
# its own, and the search is compiled once, on the next scrub after any was added (not once per secret: remembering
# 800 secrets one by one took 166 s when each compiled everything again).
_spellings: set[str] = set()
_runs: dict[str, frozenset[str]] = {}
_EMPTY_TEXT: _Known[str] = _Known(None, (), {})
_EMPTY_BYTES: _Known[bytes] = _Known(None, (), {})
_known: tuple[_Known[str], _Known[bytes]] | None = (_EMPTY_TEXT, _EMPTY_BYTES)


def remember_secrets(value: Any) -> list[str]:
    """Remember every secret of ``value`` (:func:`secret_values`); returns them, for Airflow's masker too.

    :param value: what is about to be sent: a connection, chart options, a workflow's configuration...
    """
    found = secret_values(value)
    for secret in found:
        remember_secret(secret)
    return found


def remember_all(values: Iterable[Any]) -> list[str]:
    """Remember every text and whole number in ``values``, at any depth, whatever its key (a value kept secret
    by where it came from, such as a connection field read from Airflow); returns them, for Airflow's masker too.

    :param values: the values, each plain JSON.
    """
    found: list[str] = []
    pending = list(values)
    while pending:  # a loop, not recursion: a value read from Airflow may nest deeply
        value = pending.pop()
        if isinstance(value, Mapping):
            pending += value.values()
        elif isinstance(value, (list, tuple)):
            pending += value
        elif isinstance(value, (str, int)) and not isinstance(value, bool):
            remember_secret(str(value))
            found.append(str(value))
    return found


def remember_secret(secret: str | None) -> None:
    """Mask ``secret``, in all its encodings, in every text :func:`scrub_text` and :func:`scrub_body` see from
    now on, in this process.

    :param secret: an API token or another secret (ignored when empty, shorter than :data:`MIN_SECRET_LENGTH`,
        or made only of characters JSON has outside its strings, such as ``86400`` or ``false``).
    """
    global _known
    secret = (secret or "").strip()
    if len(secret) < MIN_SECRET_LENGTH or secret in _secrets or set(secret) <= _JSON_SYNTAX:
        return
    spellings = {spelling for form in _literal_forms(secret) for spelling in _variants(form)}
    runs: dict[str, frozenset[str]] = {}
    for middle in _base64_middles(secret):
        runs.update(dict.fromkeys(_variants(middle), _run_alphabet(middle)))
    with _lock:
        _secrets.add(secret)
        _spellings.update(spellings)
        _runs.update(runs)
        _known = None  # compiled again by the next scrub


def _current() -> tuple[_Known[str], _Known[bytes]]:
    """What a scrub looks for now: compiled once after the secrets remembered since the last one."""
    global _known
    known = _known
    if known is not None:
        return known
    with _lock:
        if _known is None:
            every = _spellings | _runs.keys()
            short = [spelling for spelling in every if len(spelling) <= _LONG_SPELLING]
            long = tuple(sorted(every - set(short), key=len, reverse=True))
            choices = _grouped(short) if short else None
            _known = (
                _Known(re.compile(choices) if choices else None, long, dict(_runs)),
                _Known(
                    re.compile(choices.encode("utf-8", "surrogatepass")) if choices else None,
                    tuple(spelling.encode("utf-8", "surrogatepass") for spelling in long),
                    {
                        middle.encode("utf-8", "surrogatepass"): frozenset(char.encode() for char in chars)
                        for middle, chars in _runs.items()
                    },
                ),
            )
        return _known


def _grouped(spellings: list[str], level: int = 0) -> str:
    """One alternation of ``spellings``, as literals, grouped by first character and, in a large group, by second
    (``a(?:b(?:cdef|xyz)|q...)|...``): the longest first within each group, so a secret that contains another is
    masked whole, and the engine tries only the branches of the group whose characters match. Encoded in UTF-8,
    the same text is the bytes pattern (a character's bytes stay together)."""
    groups: dict[str, list[str]] = {}
    for spelling in spellings:
        groups.setdefault(spelling[:1], []).append(spelling[1:])
    parts = []
    for head in sorted(groups, key=lambda head: (not head, head)):  # a spelling that ended here comes last
        rests = sorted(groups[head], key=len, reverse=True)
        if head and level == 0 and len(rests) > 8:
            inner = _grouped(rests, level + 1)
        else:
            inner = "|".join(re.escape(rest) for rest in rests)
        parts.append(f"{re.escape(head)}(?:{inner})")
    return "|".join(parts)


def _literal_forms(secret: str) -> set[str]:
    """The secret as written and URL-encoded (each of the encoders a client or proxy commonly uses)."""
    # "surrogatepass": a secret may hold a lone surrogate (a value read from Airflow is refused for it later, but it
    # is remembered first, and masking must never fail).
    errors = "surrogatepass"
    return {
        secret,
        quote(secret, safe="", errors=errors),
        quote(secret, errors=errors),
        quote_plus(secret, errors=errors),
        quote_plus(secret, safe="/", errors=errors),
    }


def _variants(form: str) -> set[str]:
    """A form as it may be spelled: ``/`` also JSON-escaped (``\\/``), ``%XX`` escapes also in lower case.

    Spelled out as plain literals, not as ``(?i:...)`` or ``\\?/`` in the pattern: an alternation of literals
    is what the regular expression engine searches fastest (about 0.1 s for a 1 MiB body).
    """
    spellings = {form, re.sub(r"%[0-9A-F]{2}", lambda escape: escape.group().lower(), form)}
    return spellings | {spelling.replace("/", "\\/") for spelling in spellings}


def _base64_middles(secret: str) -> Iterator[str]:
    """For each byte offset modulo 3, the base64 characters that encode only the secret's own bits, in both
    alphabets: what any base64 text holding the secret at that offset contains, whatever its neighbours."""
    raw = secret.encode("utf-8", "surrogatepass")
    for offset in range(3):
        encoded = base64.b64encode(b"\0" * offset + raw).decode()
        # Character i encodes bits [6i, 6i + 6): it is the secret's alone when those lie in [8 * offset, 8 * end).
        middle = encoded[(8 * offset + 5) // 6 : (8 * (offset + len(raw))) // 6]
        if len(middle) >= MIN_SECRET_LENGTH:
            yield middle
            yield middle.translate(str.maketrans("+/", "-_"))


def _run_alphabet(middle: str) -> frozenset[str]:
    """What a base64 match extends over: a middle with ``+`` or ``/`` is in the standard alphabet, one with
    ``-`` or ``_`` in the URL-safe one, one with neither could be in either."""
    if "+" in middle or "/" in middle:
        return _STANDARD
    return _URL_SAFE if "-" in middle or "_" in middle else _STANDARD | _URL_SAFE


def scrub_text(text: str) -> str:
    """``text`` with every remembered secret (in every encoding), and every ``Bearer <credential>``, replaced by
    ``***``.

    :param text: a message, reason, header or body that came from the platform or the network.
    """
    return _scrub(text, _BEARER_TEXT, _current()[0], _TEXT_MARKS)


def holds_remembered(text: str) -> bool:
    """Whether ``text`` holds a remembered secret, in any of the encodings :func:`scrub_text` masks (not the
    ``Bearer`` shape, which the one rule counts: ``_secret_rule.py``). For data that must not carry one whole, where
    a mask would be wrong: an export refuses such a value rather than write the secret, or ``***`` in its place.

    :param text: a text the platform answered.
    """
    known = _current()[0]
    return (known.pattern is not None and known.pattern.search(text) is not None) or any(
        spelling in text for spelling in known.long
    )


def scrub_body(body: bytes) -> bytes:
    """:func:`scrub_text` on a body's raw bytes: one pass however large the body.

    A token hidden behind JSON ``\\u`` escapes survives this pass; :func:`scrub_value` then catches it in the
    decoded values.

    :param body: a decoded (not compressed) answer body.
    """
    return _scrub(body, _BEARER_BYTES, _current()[1], _BYTES_MARKS)


# What _scrub writes and reads, per type: the mask, the empty text, "/" as JSON escapes it, base64's padding.
_TEXT_MARKS = (MASK, "", "\\/", "=")
_BYTES_MARKS = (MASK.encode(), b"", b"\\/", b"=")


def _scrub(
    text: AnyStr, bearer: re.Pattern[AnyStr], known: _Known[AnyStr], marks: tuple[AnyStr, AnyStr, AnyStr, AnyStr]
) -> AnyStr:
    """Replace each credential and remembered secret by the mask; a base64 middle first grows to the whole run
    of base64 characters around it (and its ``=`` padding), found by scanning rather than by the pattern, whose
    leading ``[...]*`` would make a search over a long base64 body quadratic."""
    mask, empty, slash, pad = marks
    spans = [match.span() for match in known.pattern.finditer(text)] if known.pattern is not None else []
    for spelling in known.long:
        start = text.find(spelling)
        while start >= 0:
            spans.append((start, start + len(spelling)))
            start = text.find(spelling, start + len(spelling))
    for start, end in list(spans):
        alphabet = known.runs.get(text[start:end])
        if alphabet is not None:
            spans.append((_run_start(text, start, alphabet, slash), _run_end(text, end, alphabet, slash, pad)))
    # "Bearer " itself stays: what was hidden stays legible.
    spans += [(match.end("scheme"), match.end()) for match in bearer.finditer(text)]
    if not spans:
        return text
    pieces: list[AnyStr] = []
    done = 0  # text[:done] is in pieces already (a mask included)
    for start, end in sorted(spans):
        if end <= done:
            continue  # inside what is masked already
        if start >= done:
            pieces += [text[done:start], mask]
        done = end  # an overlap with the previous mask only makes that mask reach further
    pieces.append(text[done:])
    return empty.join(pieces)


def _run_start(text: AnyStr, start: int, alphabet: frozenset[AnyStr], slash: AnyStr) -> int:
    while start > 0:
        if text[start - 1 : start] in alphabet:
            start -= 1
        elif text[max(start - 2, 0) : start] == slash:
            start -= 2
        else:
            break
    return start


def _run_end(text: AnyStr, end: int, alphabet: frozenset[AnyStr], slash: AnyStr, pad: AnyStr) -> int:
    limit = len(text)
    while end < limit:
        if text[end : end + 1] in alphabet:
            end += 1
        elif text[end : end + 2] == slash:
            end += 2
        else:
            break
    while end < limit and text[end : end + 1] == pad:
        end += 1
    return end


def scrub_value(value: Any) -> Any:
    """A decoded JSON value with :func:`scrub_text` applied to every string in it (keys included).

    Walked without recursion: ``json.loads`` accepts nesting almost as deep as the interpreter's recursion
    limit, which a recursive walk on top of the caller's frames would pass.

    :param value: what ``json.loads`` returned.
    """
    if not isinstance(value, (list, dict)):
        return scrub_text(value) if isinstance(value, str) else value
    result: list[Any] | dict[str, Any] = [] if isinstance(value, list) else {}
    pending: list[tuple[Any, Any]] = [(value, result)]
    while pending:
        source, target = pending.pop()
        for key, item in enumerate(source) if isinstance(source, list) else source.items():
            if isinstance(item, (list, dict)):
                copy: Any = [] if isinstance(item, list) else {}
                pending.append((item, copy))  # filled later: it is already in place in its parent
            else:
                copy = scrub_text(item) if isinstance(item, str) else item
            if isinstance(target, list):
                target.append(copy)
            else:
                target[scrub_text(str(key))] = copy
    return result


def may_hide_escapes(body: bytes) -> bool:
    """Whether a JSON body has ``\\u`` escapes, behind which a token could pass :func:`scrub_body` unseen.

    :param body: the body as :func:`scrub_body` returned it.
    """
    return b"\\u" in body


class ScrubbedRepr:
    """A dataclass (declared with ``repr=False``) whose ``repr`` masks every secret this process remembers: what it
    holds was read unmasked (a listing, a field's value before and after) and a ``repr`` is output (a debugger, a
    log line, an exception's message)."""

    def __repr__(self) -> str:
        shown = ", ".join(f"{item.name}={getattr(self, item.name)!r}" for item in fields(cast(Any, self)) if item.repr)
        return scrub_text(f"{type(self).__name__}({shown})")
