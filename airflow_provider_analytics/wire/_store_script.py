"""The store's side of the shared rate limiter: the script it runs (Lua, in Redis), the queue of turns a fleet
shares kept atomic, and how the learnt state is written there (:func:`learned_from`, :func:`fields_of`).

One script, six operations; a call carries any number of them (a process's waits that ask at once share one round
trip), run one after another on the one state, each answered, then the state after them all:

- ``take``: a request asks to go. Not throttled, it goes (its send is logged); throttled, it takes the next turn (or
  keeps the turn it was refused on) and is told to go or how long to wait.
- ``check``: a waiting turn asks again; with the pace the asker computed from what was learnt (``_learning.py``),
  applied only if nothing was learnt since (its version).
- ``update``: what a process learnt (a refusal, headers), written only if nothing was learnt since it read the state
  (a version check), with what the queue must do about it (``_learning.QueueOp``: start, restart, rate, pause).
- ``forget``: a waiting turn is given up (its call's deadline came); a turn whose asker does not ask again within
  :data:`~._store_link.HELD_GRACE_SECONDS` of when it was told to is given up for it (a process that died).
- ``recover``: pacing ends, if nothing was learnt and no turn waited since the asker read the state (when it ends
  is ``_learning.Learned.recovers``).
- ``peek``: a refusal of a request sent at the given time: the state, and the rate the refusal came at: the most
  requests the platform accepted of the fleet's sends of one second of the last ten (turn ``1``), or when it
  accepted none, the rate the fleet sent at.

The schedule is the one of ``_pace.LocalQueue``: turn k may go at ``atm + (k - at) / qr``, and no span of
``SPAN`` seconds holds more sends than the pace allows (the list of recent send times). Times are the store's own
clock (``TIME``), so hosts whose clocks differ share one schedule. A state that is gone (a flushed or restarted
store) starts afresh under a new incarnation (``e``): turns of the old one are void and their askers take new ones.
Every key expires after ``ttl`` ms without use. The learning itself is never here: it is Python's, written once.
"""

from __future__ import annotations

import hashlib
import math
import time
from collections.abc import Mapping
from dataclasses import replace
from importlib import resources
from typing import Any

from airflow_provider_analytics.wire._learning import DEFAULT_MAX_PAUSE, Learned
from airflow_provider_analytics.wire._pace import MIN_RATE
from airflow_provider_analytics.wire._rate_headers import MAX_WINDOW_SECONDS, Pause
from airflow_provider_analytics.wire._share import ShareOfLimit

__all__ = [
    "MAX_PAUSE_HELD",
    "SCRIPT",
    "SCRIPT_SHA",
    "differs",
    "fields_of",
    "learned_from",
    "one_answer",
    "split_answers",
    "whole",
]

# How the store writes "never" (no refusal yet, no request delayed yet): a float every Lua reads.
_NEVER = -1e18
# What the state read from the store is held to: no pace a platform would allow, no pause longer than a client holds
# one by default (the retry policy's max_retry_after).
MAX_RATE = 1_000_000.0
MAX_PAUSE_HELD = DEFAULT_MAX_PAUSE

# The script itself is Lua, in the file beside this module (read once, when the store is first used).
SCRIPT = resources.files(__package__).joinpath("_store_script.lua").read_text(encoding="utf-8")

SCRIPT_SHA = hashlib.sha1(SCRIPT.encode(), usedforsecurity=False).hexdigest()


def _number(fields: Mapping[str, str], key: str, default: float) -> float:
    try:
        value = float(fields[key])
    except (KeyError, ValueError):
        return default
    return value if math.isfinite(value) else default


def whole(fields: Mapping[str, str], key: str) -> int:
    """A count kept in the store (a turn's number), 0 when missing or not a number in range.

    :param fields: the state's fields.
    :param key: the field.
    """
    return int(_within(_number(fields, key, 0.0), 0.0, 1e15))


def _optional(fields: Mapping[str, str], key: str) -> float | None:
    value = _number(fields, key, math.nan)
    return None if math.isnan(value) else value


def learned_from(fields: Mapping[str, str], store_now: float) -> Learned:
    """The learnt state as the store keeps it (its field names are short: it is read at every round trip).

    Read as untrusted, like an answer: a value out of range (a store written by something else, or damaged) is
    brought back in range, so that it can neither stop the fleet (a pause of a year, a pace of zero) nor let it
    rush (a pace of millions).

    :param fields: the state's fields.
    :param store_now: the store's clock now.
    """
    cap = min(MAX_PAUSE_HELD, max(0.0, _number(fields, "pcap", MAX_PAUSE_HELD)))
    pause_until = min(_number(fields, "pu", 0.0), store_now + MAX_PAUSE_HELD)
    paused_by = None
    if fields.get("ph"):
        asked = min(max(0.0, _number(fields, "pa", 0.0)), 10 * MAX_WINDOW_SECONDS)
        wall = time.time()
        asked_until = _number(fields, "pau", 0.0)
        if not wall - MAX_WINDOW_SECONDS <= asked_until <= wall + 10 * MAX_WINDOW_SECONDS:
            asked_until = wall + max(0.0, pause_until - store_now)  # written by a host whose clock is far off
        paused_by = Pause(fields["ph"][:80], asked, asked_until, pause_until, cap)
    return Learned(
        throttled=fields.get("th") == "1",
        rate=_within(_number(fields, "r", MIN_RATE), MIN_RATE, MAX_RATE),
        ceiling=_within(_number(fields, "c", 0.0), 0.0, MAX_RATE),
        probe_from=_within(_number(fields, "pf", store_now), store_now - 10 * MAX_WINDOW_SECONDS, store_now + 1),
        header_cap=_within_or_none(_optional(fields, "hc"), MIN_RATE, MAX_RATE),
        window=_within_or_none(_optional(fields, "w"), 1.0, MAX_WINDOW_SECONDS),  # Reset is whole seconds
        limit=whole(fields, "lim") or None,
        last_reset=_optional(fields, "lr"),
        pause_until=pause_until,
        paused_by=paused_by,
        episode_at=_number(fields, "ea", _NEVER),
        last_delayed=_number(fields, "ld", _NEVER),
        since=_number(fields, "si", 0.0),
        source=fields.get("src", "")[:80],
        share=ShareOfLimit(learns=False),  # the fleet's own limiter: all of the token's limit is its to pace
    )


def _within(value: float, low: float, high: float) -> float:
    return min(high, max(low, value))


def _within_or_none(value: float | None, low: float, high: float) -> float | None:
    return None if value is None else _within(value, low, high)


def _values(learned: Learned) -> dict[str, str]:
    """The learnt state as the store keeps it."""
    values: dict[str, str] = {
        "th": "1" if learned.throttled else "0",
        "r": f"{learned.rate:.6f}",
        "c": f"{learned.ceiling:.6f}",
        "pf": f"{learned.probe_from:.6f}",
        "hc": "" if learned.header_cap is None else f"{learned.header_cap:.6f}",
        "w": "" if learned.window is None else f"{learned.window:.6f}",
        "lim": "" if learned.limit is None else str(learned.limit),
        "lr": "" if learned.last_reset is None else f"{learned.last_reset:.6f}",
        "pu": f"{learned.pause_until:.6f}",
        "ea": f"{max(_NEVER, learned.episode_at):.6f}",
        "ld": f"{max(_NEVER, learned.last_delayed):.6f}",
        "si": f"{learned.since:.6f}",
        "src": learned.source,
    }
    if learned.paused_by is not None:
        pause = learned.paused_by
        values.update(ph=pause.header, pa=f"{pause.asked:.6f}", pau=f"{pause.asked_until:.6f}", pcap=f"{pause.cap:.6f}")
    return values


def fields_of(learned: Learned, before: Learned) -> list[str]:
    """The fields of ``learned`` that differ from ``before``, as the store keeps them: name, value, name, value..."""
    previous = _values(before)
    return [item for key, value in _values(learned).items() if previous.get(key) != value for item in (key, value)]


def differs(before: Learned, after: Learned) -> bool:
    """Whether ``after`` learnt something worth a round trip (``last_delayed`` only when it moved a second)."""
    if after.last_delayed - before.last_delayed >= 1.0:
        return True
    return fields_of(replace(after, last_delayed=before.last_delayed), before) != []


def split_answers(reply: Any, count: int) -> list[list[Any]]:
    """The script's answer to ``count`` operations, as ``count`` answers of one operation each (each with the state).

    :param reply: what the script returned: the count, each operation's three values, the clock, the state's fields.
    :param count: the operations sent.
    :raises ValueError: it is not the script's answer to that many operations.
    """
    if not isinstance(reply, list) or len(reply) < 2 + 3 * count or _text(reply[0]) != str(count):
        raise ValueError(f"the store answered {type(reply).__name__}, not the script's answer to {count} operations")
    tail = reply[1 + 3 * count :]
    return [[b"1", *reply[1 + 3 * index : 4 + 3 * index], *tail] for index in range(count)]


def one_answer(reply: Any) -> tuple[tuple[str, int | None, float, float], dict[str, str], float]:
    """The script's answer to one operation: (status, turn, its number: a wait or a count, the store's clock), the
    state's fields, and the store's clock.

    :param reply: what the script returned for one operation.
    :raises ValueError: it is not the script's answer (a store that speaks something else, or damaged).
    """
    if not isinstance(reply, list) or len(reply) < 5 or (len(reply) - 5) % 2 or _text(reply[0]) != "1":
        raise ValueError(f"the store answered {type(reply).__name__}, not the script's answer to one operation")
    text = [_text(item) for item in reply]
    status, turn, number, store_now = text[1], text[2], float(text[3]), float(text[4])
    if not math.isfinite(store_now) or not math.isfinite(number):
        raise ValueError("the store answered a time or a count that is not a number")
    fields = dict(zip(text[5::2], text[6::2], strict=True))
    return (status, int(turn) if turn else None, number, store_now), fields, store_now


def _text(item: Any) -> str:
    return item.decode("utf-8", "replace")[:200] if isinstance(item, bytes) else str(item)[:200]
